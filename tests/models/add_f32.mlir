module {
  func.func @main(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
    %0 = tosa.add %a, %b : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    return %0 : tensor<1x4x4x8xf32>
  }
}
