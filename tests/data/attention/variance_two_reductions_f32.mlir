// Two reductions sharing one kernel (the first lines of AMDMIGraphX PR 3076's module, at a testable size): the
// mean of x and the mean of x*x over the last axis, then their difference (a variance), broadcast back and
// subtracted from x.
func.func @mlir_variance(%arg0: !migraphx.shaped<2x6x50xf32, 300x50x1>) -> !migraphx.shaped<2x6x50xf32, 300x50x1> {
  %0 = migraphx.reduce_mean %arg0 {axes = [2]} : <2x6x50xf32, 300x50x1> -> <2x6x1xf32, 6x1x1>
  %1 = migraphx.mul %arg0, %arg0 : <2x6x50xf32, 300x50x1>, <2x6x50xf32, 300x50x1> -> <2x6x50xf32, 300x50x1>
  %2 = migraphx.reduce_mean %1 {axes = [2]} : <2x6x50xf32, 300x50x1> -> <2x6x1xf32, 6x1x1>
  %3 = migraphx.mul %0, %0 : <2x6x1xf32, 6x1x1>, <2x6x1xf32, 6x1x1> -> <2x6x1xf32, 6x1x1>
  %4 = migraphx.sub %2, %3 : <2x6x1xf32, 6x1x1>, <2x6x1xf32, 6x1x1> -> <2x6x1xf32, 6x1x1>
  %5 = migraphx.multibroadcast %4 {out_lens = [2, 6, 50]} : <2x6x1xf32, 6x1x1> -> <2x6x50xf32, 6x1x0>
  %6 = migraphx.sub %arg0, %5 : <2x6x50xf32, 300x50x1>, <2x6x50xf32, 6x1x0> -> <2x6x50xf32, 300x50x1>
  return %6 : !migraphx.shaped<2x6x50xf32, 300x50x1>
}
