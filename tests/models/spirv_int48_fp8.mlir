module {
  func.func @main(%x: tensor<1x2x2x2xi16>, %f: tensor<1x2x2xf8E4M3FN>) -> (tensor<1x2x2x2xi48>, tensor<1x2x2xf32>) {
    %w = "tosa.const"() <{values = dense<[[[[1, 2]]], [[[3, -4]]]]> : tensor<2x1x1x2xi8>}> : () -> tensor<2x1x1x2xi8>
    %b = "tosa.const"() <{values = dense<[7, -9]> : tensor<2xi48>}> : () -> tensor<2xi48>
    %izp = "tosa.const"() <{values = dense<0> : tensor<1xi16>}> : () -> tensor<1xi16>
    %wzp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %c = tosa.conv2d %x, %w, %b, %izp, %wzp {acc_type = i48, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x2x2xi16>, tensor<2x1x1x2xi8>, tensor<2xi48>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x2x2x2xi48>
    %g = tosa.cast %f : (tensor<1x2x2xf8E4M3FN>) -> tensor<1x2x2xf32>
    return %c, %g : tensor<1x2x2x2xi48>, tensor<1x2x2xf32>
  }
}
