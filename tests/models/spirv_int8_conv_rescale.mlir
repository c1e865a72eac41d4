module {
  func.func @main(%x: tensor<1x6x6x3xi8>) -> (tensor<1x6x6x4xi8>, tensor<1x6x6x4xi32>) {
    %w = "tosa.const"() <{values = dense<"0xFA02335AA2B84059CDDA49F0D241CFED1C09ADA1493243073FDDF639B4D8B4F65FB6E8EC50C400D09F32A8D4FFFDB360315CAE2CD60854D32DBCDC5DF003D6B3F018F737E4163653F1A32B054AF7E5A8F71C3646C6123CD0E043100122026032A6B9093FA92433394AC20B3C"> : tensor<4x3x3x3xi8>}> : () -> tensor<4x3x3x3xi8>
    %b = "tosa.const"() <{values = dense<[100, -200, 300, 0]> : tensor<4xi32>}> : () -> tensor<4xi32>
    %izp = "tosa.const"() <{values = dense<-3> : tensor<1xi8>}> : () -> tensor<1xi8>
    %wzp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %c = tosa.conv2d %x, %w, %b, %izp, %wzp {acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x6x6x3xi8>, tensor<4x3x3x3xi8>, tensor<4xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x6x6x4xi32>
    %mult = "tosa.const"() <{values = dense<[1073741824, 1518500250, 1276901417, 2147483647]> : tensor<4xi32>}> : () -> tensor<4xi32>
    %shift = "tosa.const"() <{values = dense<[38, 39, 37, 40]> : tensor<4xi8>}> : () -> tensor<4xi8>
    %rizp = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
    %rozp = "tosa.const"() <{values = dense<5> : tensor<1xi8>}> : () -> tensor<1xi8>
    %r = tosa.rescale %c, %mult, %shift, %rizp, %rozp {input_unsigned = false, output_unsigned = false, per_channel = true, rounding_mode = SINGLE_ROUND, scale32 = true} : (tensor<1x6x6x4xi32>, tensor<4xi32>, tensor<4xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x6x6x4xi8>
    return %r, %c : tensor<1x6x6x4xi8>, tensor<1x6x6x4xi32>
  }
}
