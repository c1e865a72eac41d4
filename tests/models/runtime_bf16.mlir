module {
  func.func @main(%a: tensor<4x4xbf16>, %b: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
    %0 = tosa.maximum %a, %b {nan_mode = "PROPAGATE"} : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
    return %0 : tensor<4x4xbf16>
  }
}
