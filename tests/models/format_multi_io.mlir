module {
  func.func @main(%x: tensor<3xi32>, %y: tensor<2x2xf16>, %z: tensor<5xf32>) -> (tensor<5xf32>, tensor<3xi32>, tensor<2x2xf16>) {
    %0 = tosa.abs %z : (tensor<5xf32>) -> tensor<5xf32>
    %1 = tosa.add %x, %x : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %2 = tosa.add %y, %y : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
    return %0, %1, %2 : tensor<5xf32>, tensor<3xi32>, tensor<2x2xf16>
  }
}
