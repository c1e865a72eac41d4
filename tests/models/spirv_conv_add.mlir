module {
  func.func @main(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x2xf32>) -> (tensor<1x4x4x2xf32>, tensor<1x4x4x8xf32>) {
    %w = "tosa.const"() <{values = dense<[[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]], [[[0.5, -1.0, 1.5, -2.0, 0.25, 0.0, 1.0, -0.5]]]]> : tensor<2x1x1x8xf32>}> : () -> tensor<2x1x1x8xf32>
    %bias = "tosa.const"() <{values = dense<[0.5, -0.5]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %c = tosa.conv2d %a, %w, %bias, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<2x1x1x8xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x4x4x2xf32>
    %s = tosa.add %c, %b : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
    %one = "tosa.const"() <{values = dense<1.5> : tensor<1x4x4x8xf32>}> : () -> tensor<1x4x4x8xf32>
    %m = tosa.add %a, %one : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
    return %s, %m : tensor<1x4x4x2xf32>, tensor<1x4x4x8xf32>
  }
}
