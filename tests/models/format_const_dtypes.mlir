module {
  func.func @main(%a: tensor<4x16xi8>, %b: tensor<4x16xi16>, %c: tensor<4x16xi32>, %d: tensor<4x16xf16>, %e: tensor<4x16xbf16>, %f: tensor<4x16xf32>) -> (tensor<4x16xi8>, tensor<4x16xi16>, tensor<4x16xi32>, tensor<4x16xf16>, tensor<4x16xbf16>, tensor<4x16xf32>) {
    %ca = "tosa.const"() <{values = dense<3> : tensor<4x16xi8>}> : () -> tensor<4x16xi8>
    %cb = "tosa.const"() <{values = dense<300> : tensor<4x16xi16>}> : () -> tensor<4x16xi16>
    %cc = "tosa.const"() <{values = dense<70000> : tensor<4x16xi32>}> : () -> tensor<4x16xi32>
    %cd = "tosa.const"() <{values = dense<1.5> : tensor<4x16xf16>}> : () -> tensor<4x16xf16>
    %ce = "tosa.const"() <{values = dense<2.5> : tensor<4x16xbf16>}> : () -> tensor<4x16xbf16>
    %cf = "tosa.const"() <{values = dense<0.25> : tensor<4x16xf32>}> : () -> tensor<4x16xf32>
    %0 = tosa.bitwise_and %a, %ca : (tensor<4x16xi8>, tensor<4x16xi8>) -> tensor<4x16xi8>
    %1 = tosa.bitwise_and %b, %cb : (tensor<4x16xi16>, tensor<4x16xi16>) -> tensor<4x16xi16>
    %2 = tosa.add %c, %cc : (tensor<4x16xi32>, tensor<4x16xi32>) -> tensor<4x16xi32>
    %3 = tosa.add %d, %cd : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
    %4 = tosa.add %e, %ce : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
    %5 = tosa.add %f, %cf : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<4x16xi8>, tensor<4x16xi16>, tensor<4x16xi32>, tensor<4x16xf16>, tensor<4x16xbf16>, tensor<4x16xf32>
  }
}
