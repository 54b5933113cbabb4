// Attention as MIGraphX's fuse_attention writes it (the softmax decomposed into reduce_max, sub, exp,
// reduce_sum, div, in f32 between two f16 gemms), modelled on the modules of ROCm/rocMLIR issue 2376 and
// the ComfyUI_MIGraphX issue 13 log (../shared/corpus/traces/017_* and 026_*): K given
// transposed (-transK true), a scale, 2 batches x 3 heads, 40 queries, 56 keys, head dim 24 / 20.
func.func @mlir_dot_convert_mul_reduce_max_sub_exp_reduce_sum_div_convert_dot(%arg0: !migraphx.shaped<6x40x24xf16, 960x24x1>, %arg1: !migraphx.shaped<6x56x24xf16, 1344x24x1>, %arg2: !migraphx.shaped<6x56x20xf16, 1120x20x1>) -> !migraphx.shaped<6x40x20xf16, 800x20x1> {
  %0 = migraphx.literal(dense<0.204> : tensor<1xf32>) : <1xf32, 0>
  %1 = migraphx.transpose %arg1 {permutation = [0, 2, 1]} : <6x56x24xf16, 1344x24x1> -> <6x24x56xf16, 1344x1x24>
  %2 = migraphx.dot %arg0, %1 : <6x40x24xf16, 960x24x1>, <6x24x56xf16, 1344x1x24> -> <6x40x56xf16, 2240x56x1>
  %3 = migraphx.convert %2 {target_type = 2 : i64} : <6x40x56xf16, 2240x56x1> to <6x40x56xf32, 2240x56x1>
  %4 = migraphx.multibroadcast %0 {out_lens = [6, 40, 56]} : <1xf32, 0> -> <6x40x56xf32, 0x0x0>
  %5 = migraphx.mul %3, %4 : <6x40x56xf32, 2240x56x1>, <6x40x56xf32, 0x0x0> -> <6x40x56xf32, 2240x56x1>
  %6 = migraphx.reduce_max %5 {axes = [2]} : <6x40x56xf32, 2240x56x1> -> <6x40x1xf32, 40x1x1>
  %7 = migraphx.multibroadcast %6 {out_lens = [6, 40, 56]} : <6x40x1xf32, 40x1x1> -> <6x40x56xf32, 40x1x0>
  %8 = migraphx.sub %5, %7 : <6x40x56xf32, 2240x56x1>, <6x40x56xf32, 40x1x0> -> <6x40x56xf32, 2240x56x1>
  %9 = migraphx.exp %8 : <6x40x56xf32, 2240x56x1> -> <6x40x56xf32, 2240x56x1>
  %10 = migraphx.reduce_sum %9 {axes = [2]} : <6x40x56xf32, 2240x56x1> -> <6x40x1xf32, 40x1x1>
  %11 = migraphx.multibroadcast %10 {out_lens = [6, 40, 56]} : <6x40x1xf32, 40x1x1> -> <6x40x56xf32, 40x1x0>
  %12 = migraphx.div %9, %11 : <6x40x56xf32, 2240x56x1>, <6x40x56xf32, 40x1x0> -> <6x40x56xf32, 2240x56x1>
  %13 = migraphx.convert %12 {target_type = 1 : i64} : <6x40x56xf32, 2240x56x1> to <6x40x56xf16, 2240x56x1>
  %14 = migraphx.dot %13, %arg2 : <6x40x56xf16, 2240x56x1>, <6x56x20xf16, 1120x20x1> -> <6x40x20xf16, 800x20x1>
  return %14 : !migraphx.shaped<6x40x20xf16, 800x20x1>
}
