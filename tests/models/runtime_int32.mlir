module {
  func.func @main(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
    %0 = tosa.add %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    %1 = tosa.bitwise_xor %a, %b : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    return %0, %1 : tensor<8xi32>, tensor<8xi32>
  }
}
