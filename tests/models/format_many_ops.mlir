module {
  func.func @main(%a: tensor<1x8x8x4xf32>, %b: tensor<1x8x8x4xf32>, %c: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) {
    %w = "tosa.const"() <{values = dense<[[[[0.5, -1.0, 2.0, 0.25]]]]> : tensor<1x1x1x4xf32>}> : () -> tensor<1x1x1x4xf32>
    %big = "tosa.const"() <{values = dense<0.125> : tensor<1x8x8x4xf32>}> : () -> tensor<1x8x8x4xf32>
    %0 = tosa.add %a, %b : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %1 = tosa.sub %0, %w : (tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x8x8x4xf32>
    %2 = tosa.maximum %1, %c : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %3 = tosa.abs %2 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %4 = tosa.minimum %3, %big : (tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %5 = tosa.exp %4 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %6 = tosa.reciprocal %5 : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    return %6, %2 : tensor<1x8x8x4xf32>, tensor<1x8x8x4xf32>
  }
}
