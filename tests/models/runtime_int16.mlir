module {
  func.func @main(%a: tensor<6x2xi16>, %b: tensor<6x3xi16>) -> tensor<6x5xi16> {
    %0 = tosa.concat %a, %b {axis = 1 : i32} : (tensor<6x2xi16>, tensor<6x3xi16>) -> tensor<6x5xi16>
    return %0 : tensor<6x5xi16>
  }
}
