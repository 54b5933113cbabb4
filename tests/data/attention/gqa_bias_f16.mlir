// Grouped-query attention: 8 query heads share 2 K/V heads (K and V broadcast across heads through
// unsqueeze -> multibroadcast -> reshape, as MIGraphX writes GQA), a scale, an additive bias, the softmax op.
func.func @mlir_gqa(%arg0: !migraphx.shaped<1x8x16x32xf16, 4096x512x32x1>, %arg1: !migraphx.shaped<1x2x24x32xf16, 1536x768x32x1>, %arg2: !migraphx.shaped<1x2x24x32xf16, 1536x768x32x1>, %arg3: !migraphx.shaped<1x8x16x24xf16, 3072x384x24x1>) -> !migraphx.shaped<1x8x16x32xf16, 4096x512x32x1> {
  %s = migraphx.literal(dense<0.1767> : tensor<1xf16>) : <1xf16, 0>
  %k1 = migraphx.unsqueeze %arg1 {axes = [2]} : <1x2x24x32xf16, 1536x768x32x1> -> <1x2x1x24x32xf16, 1536x768x768x32x1>
  %k2 = migraphx.multibroadcast %k1 {out_lens = [1, 2, 4, 24, 32]} : <1x2x1x24x32xf16, 1536x768x768x32x1> -> <1x2x4x24x32xf16, 1536x768x0x32x1>
  %k3 = migraphx.contiguous %k2 : <1x2x4x24x32xf16, 1536x768x0x32x1> -> <1x2x4x24x32xf16, 6144x3072x768x32x1>
  %k4 = migraphx.reshape %k3 {dims = [1, 8, 24, 32]} : <1x2x4x24x32xf16, 6144x3072x768x32x1> -> <1x8x24x32xf16, 6144x768x32x1>
  %kt = migraphx.transpose %k4 {permutation = [0, 1, 3, 2]} : <1x8x24x32xf16, 6144x768x32x1> -> <1x8x32x24xf16, 6144x768x1x32>
  %v1 = migraphx.unsqueeze %arg2 {axes = [2]} : <1x2x24x32xf16, 1536x768x32x1> -> <1x2x1x24x32xf16, 1536x768x768x32x1>
  %v2 = migraphx.multibroadcast %v1 {out_lens = [1, 2, 4, 24, 32]} : <1x2x1x24x32xf16, 1536x768x768x32x1> -> <1x2x4x24x32xf16, 1536x768x0x32x1>
  %v3 = migraphx.contiguous %v2 : <1x2x4x24x32xf16, 1536x768x0x32x1> -> <1x2x4x24x32xf16, 6144x3072x768x32x1>
  %v4 = migraphx.reshape %v3 {dims = [1, 8, 24, 32]} : <1x2x4x24x32xf16, 6144x3072x768x32x1> -> <1x8x24x32xf16, 6144x768x32x1>
  %0 = migraphx.dot %arg0, %kt : <1x8x16x32xf16, 4096x512x32x1>, <1x8x32x24xf16, 6144x768x1x32> -> <1x8x16x24xf16, 3072x384x24x1>
  %1 = migraphx.multibroadcast %s {out_lens = [1, 8, 16, 24]} : <1xf16, 0> -> <1x8x16x24xf16, 0x0x0x0>
  %2 = migraphx.mul %0, %1 : <1x8x16x24xf16, 3072x384x24x1>, <1x8x16x24xf16, 0x0x0x0> -> <1x8x16x24xf16, 3072x384x24x1>
  %3 = migraphx.add %2, %arg3 : <1x8x16x24xf16, 3072x384x24x1>, <1x8x16x24xf16, 3072x384x24x1> -> <1x8x16x24xf16, 3072x384x24x1>
  %4 = migraphx.softmax %3 {axis = 3 : i64} : <1x8x16x24xf16, 3072x384x24x1> -> <1x8x16x24xf16, 3072x384x24x1>
  %5 = migraphx.dot %4, %v4 : <1x8x16x24xf16, 3072x384x24x1>, <1x8x24x32xf16, 6144x768x32x1> -> <1x8x16x32xf16, 4096x512x32x1>
  return %5 : !migraphx.shaped<1x8x16x32xf16, 4096x512x32x1>
}
