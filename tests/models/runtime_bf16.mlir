module {
  func.func @main(%a: tensor<4x4xbf16>, %b: tensor<4x4xbf16>) -> (tensor<4x4xbf16>, tensor<4x4xbf16>) {
    %0 = tosa.add %a, %b : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    %1 = tosa.sub %a, %b : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    return %0, %1 : tensor<4x4xbf16>, tensor<4x4xbf16>
  }
}
