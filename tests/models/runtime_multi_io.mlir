module {
  func.func @main(%a: tensor<2x3xf32>, %unused: tensor<4xi32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %0 = tosa.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = tosa.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    return %1, %0 : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
