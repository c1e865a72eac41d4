module {
  func.func @main(%a: tensor<2x3x4xi8>) -> tensor<4x2x3xi8> {
    %0 = tosa.clamp %a {min_val = -20 : i8, max_val = 50 : i8} : (tensor<2x3x4xi8>) -> tensor<2x3x4xi8>
    %1 = tosa.transpose %0 {perms = array<i32: 2, 0, 1>} : (tensor<2x3x4xi8>) -> tensor<4x2x3xi8>
    return %1 : tensor<4x2x3xi8>
  }
}
