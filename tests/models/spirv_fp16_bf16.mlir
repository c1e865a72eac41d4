module {
  func.func @main(%a: tensor<1x3x5xf16>, %b: tensor<1x3x5xbf16>) -> (tensor<1x3x5xf32>, tensor<1x3x5xbf16>, tensor<1x3x5xf16>) {
    %ca = tosa.cast %a : (tensor<1x3x5xf16>) -> tensor<1x3x5xf32>
    %cb = tosa.cast %b : (tensor<1x3x5xbf16>) -> tensor<1x3x5xf32>
    %s = tosa.add %ca, %cb : (tensor<1x3x5xf32>, tensor<1x3x5xf32>) -> tensor<1x3x5xf32>
    %k = "tosa.const"() <{values = dense<[[[0.5, 1.0, 1.5, 2.0, 2.5], [-0.5, -1.0, -1.5, -2.0, -2.5], [0.125, 3.0, 8.0, -4.0, 0.0]]]> : tensor<1x3x5xbf16>}> : () -> tensor<1x3x5xbf16>
    %m = tosa.add %b, %k : (tensor<1x3x5xbf16>, tensor<1x3x5xbf16>) -> tensor<1x3x5xbf16>
    %sh = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %h = "tosa.const"() <{values = dense<0.25> : tensor<1x1x5xf16>}> : () -> tensor<1x1x5xf16>
    %p = tosa.mul %a, %h, %sh : (tensor<1x3x5xf16>, tensor<1x1x5xf16>, tensor<1xi8>) -> tensor<1x3x5xf16>
    return %s, %m, %p : tensor<1x3x5xf32>, tensor<1x3x5xbf16>, tensor<1x3x5xf16>
  }
}
