module {
  func.func @main(%a: tensor<3x5xf16>, %b: tensor<3x5xf16>) -> tensor<3x5xf16> {
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %0 = tosa.mul %a, %b, %shift : (tensor<3x5xf16>, tensor<3x5xf16>, tensor<1xi8>) -> tensor<3x5xf16>
    return %0 : tensor<3x5xf16>
  }
}
