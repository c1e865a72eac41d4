module {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x4xf32>) -> (tensor<3x4xf32>, tensor<2x3xf32>, tensor<1x10xf32>, tensor<2x1xf32>) {
    %cat = tosa.concat %a, %b, %c {axis = 1 : i32} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x10xf32>
    %rs = tosa.const_shape {values = dense<[5, 4]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %r = tosa.reshape %cat, %rs : (tensor<2x10xf32>, !tosa.shape<2>) -> tensor<5x4xf32>
    %st = tosa.const_shape {values = dense<[1, 0]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %sz = tosa.const_shape {values = dense<[3, 4]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %sl = tosa.slice %r, %st, %sz : (tensor<5x4xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<3x4xf32>
    %eq = tosa.greater %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %sel = tosa.select %eq, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %t = tosa.transpose %cat {perms = array<i32: 1, 0>} : (tensor<2x10xf32>) -> tensor<10x2xf32>
    %red = tosa.reduce_sum %t {axis = 1 : i32} : (tensor<10x2xf32>) -> tensor<10x1xf32>
    %tt = tosa.transpose %red {perms = array<i32: 1, 0>} : (tensor<10x1xf32>) -> tensor<1x10xf32>
    %pc = "tosa.const"() <{values = dense<-1.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %pp = tosa.const_shape {values = dense<[0, 0, 0, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %cs = "tosa.const"() <{values = dense<[[1.0, 2.0]]> : tensor<1x2xf32>}> : () -> tensor<1x2xf32>
    %cst = tosa.const_shape {values = dense<[2, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %cr = tosa.reshape %cs, %cst : (tensor<1x2xf32>, !tosa.shape<2>) -> tensor<2x1xf32>
    %mx = tosa.reduce_max %a {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x1xf32>
    %add = tosa.add %mx, %cr : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    return %sl, %sel, %tt, %add : tensor<3x4xf32>, tensor<2x3xf32>, tensor<1x10xf32>, tensor<2x1xf32>
  }
}
