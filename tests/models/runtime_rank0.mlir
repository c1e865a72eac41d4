module {
  func.func @main(%a: tensor<f32>, %b: tensor<2x3xf32>, %k: tensor<i32>) -> (tensor<f32>, tensor<2x3xf32>, tensor<i32>) {
    %c = "tosa.const"() <{values = dense<2.5> : tensor<f32>}> : () -> tensor<f32>
    %sum = tosa.add %a, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %e = tosa.exp %sum : (tensor<f32>) -> tensor<f32>
    %shape = tosa.const_shape {values = dense<[1, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %r = tosa.reshape %sum, %shape : (tensor<f32>, !tosa.shape<2>) -> tensor<1x1xf32>
    %bb = tosa.add %b, %r : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
    %kk = tosa.add %k, %k : (tensor<i32>, tensor<i32>) -> tensor<i32>
    return %e, %bb, %kk : tensor<f32>, tensor<2x3xf32>, tensor<i32>
  }
}
