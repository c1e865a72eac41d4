module {
  func.func @main(%re: tensor<2x4x8xf32>, %im: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x5xf32>) {
    %f:2 = tosa.fft2d %re, %im {inverse = true, local_bound = false} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    %0 = tosa.add %f#1, %re : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %r:2 = tosa.rfft2d %im {local_bound = true} : (tensor<2x4x8xf32>) -> (tensor<2x4x5xf32>, tensor<2x4x5xf32>)
    return %f#0, %0, %r#1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x5xf32>
  }
}
