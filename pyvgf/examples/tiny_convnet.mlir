// The example model of `pyvgf run --example`: y = relu(conv3x3(x) + bias) + skip, fp32.
// Rebuild the .vgf beside it with: model-converter -i tiny_convnet.mlir -o tiny_convnet.vgf
module {
  func.func @main(%x: tensor<1x8x8x3xf32>, %skip: tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32> {
    %w = "tosa.const"() <{values = dense<[[[[0.125, 0.397, 0.276], [-0.275, -0.200, 0.374], [-0.495, 0.321, 0.297]], [[-0.032, -0.197, -0.222], [-0.245, -0.055, 0.005], [0.053, 0.496, 0.293]], [[0.122, 0.489, -0.285], [-0.340, 0.113, -0.456], [-0.464, 0.015, -0.034]]], [[[0.417, 0.129, 0.014], [-0.003, -0.252, -0.488], [-0.308, 0.192, -0.299]], [[-0.130, -0.496, 0.330], [-0.346, -0.232, 0.380], [0.010, 0.347, 0.140]], [[0.242, -0.409, 0.041], [0.008, 0.371, -0.139], [0.098, -0.441, -0.112]]], [[[-0.177, -0.350, 0.316], [-0.121, 0.479, 0.090], [0.105, 0.138, 0.176]], [[-0.349, -0.060, -0.260], [-0.098, -0.403, 0.468], [-0.285, 0.172, -0.200]], [[0.374, 0.162, -0.368], [0.345, 0.445, 0.404], [0.070, -0.355, -0.308]]], [[[0.428, 0.052, -0.319], [0.384, 0.142, 0.070], [-0.124, -0.089, -0.261]], [[-0.462, 0.376, -0.032], [0.048, -0.178, 0.251], [-0.475, -0.128, -0.470]], [[-0.377, 0.467, 0.158], [-0.072, 0.024, 0.373], [-0.156, 0.090, 0.184]]]]> : tensor<4x3x3x3xf32>}> : () -> tensor<4x3x3x3xf32>
    %b = "tosa.const"() <{values = dense<[-0.029, 0.004, 0.053, 0.082]> : tensor<4xf32>}> : () -> tensor<4xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %0 = tosa.conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x4xf32>
    %1 = tosa.clamp %0 {min_val = 0.0 : f32, max_val = 3.40282347E+38 : f32} : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %2 = tosa.add %1, %skip : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    return %2 : tensor<1x8x8x4xf32>
  }
}
