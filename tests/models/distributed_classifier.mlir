module {
  func.func @main(%x: tensor<1x10xf32>) -> tensor<1x10xf32> {
    %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %w = "tosa.const"() <{values = dense<[[0.5, -1.0, 2.0, 1.5, -0.5, 1.0, 0.25, -2.0, 3.0, 0.75]]> : tensor<1x10xf32>}> : () -> tensor<1x10xf32>
    %b = "tosa.const"() <{values = dense<[[0.1, 0.2, -0.3, 0.0, 0.5, -0.1, 0.05, 0.3, -0.2, 0.4]]> : tensor<1x10xf32>}> : () -> tensor<1x10xf32>
    %0 = tosa.mul %x, %w, %shift : (tensor<1x10xf32>, tensor<1x10xf32>, tensor<1xi8>) -> tensor<1x10xf32>
    %1 = tosa.add %0, %b : (tensor<1x10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32>
    return %1 : tensor<1x10xf32>
  }
}
