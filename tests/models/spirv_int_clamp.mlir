module {
  func.func @main(%a: tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi8> {
    %s = "tosa.const"() <{values = dense<3> : tensor<1x2x2x4xi32>}> : () -> tensor<1x2x2x4xi32>
    %m = tosa.add %a, %s : (tensor<1x2x2x4xi32>, tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi32>
    %k = tosa.cast %m : (tensor<1x2x2x4xi32>) -> tensor<1x2x2x4xi8>
    %c = tosa.clamp %k {min_val = -5 : i8, max_val = 100 : i8} : (tensor<1x2x2x4xi8>) -> tensor<1x2x2x4xi8>
    return %c : tensor<1x2x2x4xi8>
  }
}
