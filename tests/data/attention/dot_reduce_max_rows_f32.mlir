// A gemm followed by a reduction over its rows (axis 1, the M axis) -- reduce_max -- then a pointwise op:
// the reduction kernel with the dot computed inline.
func.func @mlir_dot_reduce_max_exp(%arg0: !migraphx.shaped<2x30x17xf32, 510x17x1>, %arg1: !migraphx.shaped<2x17x9xf32, 153x9x1>) -> !migraphx.shaped<2x1x9xf32, 9x9x1> {
  %0 = migraphx.dot %arg0, %arg1 : <2x30x17xf32, 510x17x1>, <2x17x9xf32, 153x9x1> -> <2x30x9xf32, 270x9x1>
  %1 = migraphx.reduce_max %0 {axes = [1]} : <2x30x9xf32, 270x9x1> -> <2x1x9xf32, 9x9x1>
  %2 = migraphx.tanh %1 : <2x1x9xf32, 9x9x1> -> <2x1x9xf32, 9x9x1>
  return %2 : !migraphx.shaped<2x1x9xf32, 9x9x1>
}
