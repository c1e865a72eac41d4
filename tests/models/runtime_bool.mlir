module {
  func.func @main(%a: tensor<2x5xi1>, %b: tensor<2x5xi1>) -> (tensor<2x5xi1>, tensor<2x5xi1>) {
    %0 = tosa.logical_and %a, %b : (tensor<2x5xi1>, tensor<2x5xi1>) -> tensor<2x5xi1>
    %1 = tosa.logical_not %a : (tensor<2x5xi1>) -> tensor<2x5xi1>
    return %0, %1 : tensor<2x5xi1>, tensor<2x5xi1>
  }
}
