module {
  func.func @main(%a: tensor<1x4x8xf32>) -> (tensor<1x4x5xf32>, tensor<1x4x5xf32>) {
    %re, %im = tosa.rfft2d %a {local_bound = false} : (tensor<1x4x8xf32>) -> (tensor<1x4x5xf32>, tensor<1x4x5xf32>)
    return %re, %im : tensor<1x4x5xf32>, tensor<1x4x5xf32>
  }
}
