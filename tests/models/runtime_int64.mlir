module {
  func.func @main(%a: tensor<3x7xi64>, %b: tensor<3x7xi64>) -> tensor<3x7xi64> {
    %0 = tosa.add %a, %b : (tensor<3x7xi64>, tensor<3x7xi64>) -> tensor<3x7xi64>
    return %0 : tensor<3x7xi64>
  }
}
