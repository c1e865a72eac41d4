module {
  func.func @main(%a: tensor<1x4xf32>, %b: tensor<1x4xf32>, %c: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = tosa.add %a, %c : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
}
