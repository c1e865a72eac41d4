module {
  func.func @main(%a: tensor<1x8x8x4xf32>) -> tensor<1x8x8x8xf32> {
    %w = "tosa.const"() {values = dense<0.5> : tensor<8x3x3x4xf32>} : () -> tensor<8x3x3x4xf32>
    %b = "tosa.const"() {values = dense<[1.0,2.0,3.0,4.0,5.0,6.0,7.0,8.0]> : tensor<8xf32>} : () -> tensor<8xf32>
    %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
    %0 = tosa.conv2d %a, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<8x3x3x4xf32>, tensor<8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x8xf32>
    %1 = tosa.clamp %0 {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
    return %1 : tensor<1x8x8x8xf32>
  }
}
