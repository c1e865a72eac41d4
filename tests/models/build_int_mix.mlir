module {
  func.func @main(%a: tensor<2x3xi8>, %b: tensor<2x3xi32>) -> (tensor<2x3xi8>, tensor<2x3xi32>) {
    %m = "tosa.const"() {values = dense<1073741824> : tensor<1xi32>} : () -> tensor<1xi32>
    %s = "tosa.const"() {values = dense<31> : tensor<1xi8>} : () -> tensor<1xi8>
    %izp = "tosa.const"() {values = dense<3> : tensor<1xi8>} : () -> tensor<1xi8>
    %ozp = "tosa.const"() {values = dense<-2> : tensor<1xi8>} : () -> tensor<1xi8>
    %0 = tosa.rescale %a, %m, %s, %izp, %ozp {scale32 = true, rounding_mode = SINGLE_ROUND, per_channel = false, input_unsigned = false, output_unsigned = false} : (tensor<2x3xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<2x3xi8>
    %c = "tosa.const"() {values = dense<[[1,2,3],[4,5,6]]> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %sh = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
    %1 = tosa.mul %b, %c, %sh : (tensor<2x3xi32>, tensor<2x3xi32>, tensor<1xi8>) -> tensor<2x3xi32>
    %r = tosa.const_shape {values = dense<[3, 2]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %2 = tosa.reshape %1, %r : (tensor<2x3xi32>, !tosa.shape<2>) -> tensor<3x2xi32>
    %3 = tosa.transpose %2 {perms = array<i32: 1, 0>} : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %e = "tosa.const"() {values = dense<7> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %4 = tosa.add %3, %e : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    return %0, %4 : tensor<2x3xi8>, tensor<2x3xi32>
  }
}
