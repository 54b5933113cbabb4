// One gemm then a softmax over its columns (the first half of an attention): the softmax kernel reading the
// dot inline.
func.func @mlir_dot_softmax(%arg0: !migraphx.shaped<4x12x40xf16, 480x40x1>, %arg1: !migraphx.shaped<4x40x33xf16, 1320x33x1>) -> !migraphx.shaped<4x12x33xf16, 396x33x1> {
  %0 = migraphx.dot %arg0, %arg1 : <4x12x40xf16, 480x40x1>, <4x40x33xf16, 1320x33x1> -> <4x12x33xf16, 396x33x1>
  %1 = migraphx.softmax %0 {axis = 2 : i64} : <4x12x33xf16, 396x33x1> -> <4x12x33xf16, 396x33x1>
  return %1 : !migraphx.shaped<4x12x33xf16, 396x33x1>
}
