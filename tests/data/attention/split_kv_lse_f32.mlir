// Split-KV (flash-decoding) attention: the keys split in 2 chunks of 24, each chunk's attention computed
// with the softmax written out, returning the partial result and the chunk's log-sum-exp
// (log(sum) + max: rocMLIR's -return_lse true) for the later combine step.
func.func @mlir_split_kv(%arg0: !migraphx.shaped<2x2x3x16xf32, 96x48x16x1>, %arg1: !migraphx.shaped<2x48x16xf32, 768x16x1>, %arg2: !migraphx.shaped<2x48x8xf32, 384x8x1>) -> (!migraphx.shaped<2x2x3x8xf32, 48x24x8x1>, !migraphx.shaped<2x2x3x1xf32, 6x3x1x1>) {
  %k0 = migraphx.reshape %arg1 {dims = [2, 2, 24, 16]} : <2x48x16xf32, 768x16x1> -> <2x2x24x16xf32, 768x384x16x1>
  %k1 = migraphx.transpose %k0 {permutation = [0, 1, 3, 2]} : <2x2x24x16xf32, 768x384x16x1> -> <2x2x16x24xf32, 768x384x1x16>
  %v0 = migraphx.reshape %arg2 {dims = [2, 2, 24, 8]} : <2x48x8xf32, 384x8x1> -> <2x2x24x8xf32, 384x192x8x1>
  %0 = migraphx.dot %arg0, %k1 : <2x2x3x16xf32, 96x48x16x1>, <2x2x16x24xf32, 768x384x1x16> -> <2x2x3x24xf32, 144x72x24x1>
  %1 = migraphx.reduce_max %0 {axes = [3]} : <2x2x3x24xf32, 144x72x24x1> -> <2x2x3x1xf32, 6x3x1x1>
  %2 = migraphx.multibroadcast %1 {out_lens = [2, 2, 3, 24]} : <2x2x3x1xf32, 6x3x1x1> -> <2x2x3x24xf32, 6x3x1x0>
  %3 = migraphx.sub %0, %2 : <2x2x3x24xf32, 144x72x24x1>, <2x2x3x24xf32, 6x3x1x0> -> <2x2x3x24xf32, 144x72x24x1>
  %4 = migraphx.exp %3 : <2x2x3x24xf32, 144x72x24x1> -> <2x2x3x24xf32, 144x72x24x1>
  %5 = migraphx.reduce_sum %4 {axes = [3]} : <2x2x3x24xf32, 144x72x24x1> -> <2x2x3x1xf32, 6x3x1x1>
  %6 = migraphx.multibroadcast %5 {out_lens = [2, 2, 3, 24]} : <2x2x3x1xf32, 6x3x1x1> -> <2x2x3x24xf32, 6x3x1x0>
  %7 = migraphx.div %4, %6 : <2x2x3x24xf32, 144x72x24x1>, <2x2x3x24xf32, 6x3x1x0> -> <2x2x3x24xf32, 144x72x24x1>
  %8 = migraphx.dot %7, %v0 : <2x2x3x24xf32, 144x72x24x1>, <2x2x24x8xf32, 384x192x8x1> -> <2x2x3x8xf32, 48x24x8x1>
  %9 = migraphx.log %5 : <2x2x3x1xf32, 6x3x1x1> -> <2x2x3x1xf32, 6x3x1x1>
  %10 = migraphx.add %9, %1 : <2x2x3x1xf32, 6x3x1x1>, <2x2x3x1xf32, 6x3x1x1> -> <2x2x3x1xf32, 6x3x1x1>
  return %8, %10 : !migraphx.shaped<2x2x3x8xf32, 48x24x8x1>, !migraphx.shaped<2x2x3x1xf32, 6x3x1x1>
}
