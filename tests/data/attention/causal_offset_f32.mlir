// Causal attention of 4 new queries over a 10-key cache (query i sees keys 0 .. 6 + i), the mask computed
// from index literals as MIGraphX writes it: greater(key iota, query iota + 6) -> where(-inf).
func.func @mlir_causal(%arg0: !migraphx.shaped<3x4x16xf32, 64x16x1>, %arg1: !migraphx.shaped<3x16x10xf32, 160x10x1>, %arg2: !migraphx.shaped<3x10x12xf32, 120x12x1>) -> !migraphx.shaped<3x4x12xf32, 48x12x1> {
  %kio = migraphx.literal(dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xsi32>) : <10xsi32, 1>
  %qio = migraphx.literal(dense<[6, 7, 8, 9]> : tensor<4xsi32>) : <4xsi32, 1>
  %ninf = migraphx.literal(dense<0xFF800000> : tensor<1xf32>) : <1xf32, 0>
  %0 = migraphx.dot %arg0, %arg1 : <3x4x16xf32, 64x16x1>, <3x16x10xf32, 160x10x1> -> <3x4x10xf32, 40x10x1>
  %1 = migraphx.multibroadcast %kio {out_lens = [3, 4, 10]} : <10xsi32, 1> -> <3x4x10xsi32, 0x0x1>
  %2 = migraphx.reshape %qio {dims = [4, 1]} : <4xsi32, 1> -> <4x1xsi32, 1x1>
  %3 = migraphx.multibroadcast %2 {out_lens = [3, 4, 10]} : <4x1xsi32, 1x1> -> <3x4x10xsi32, 0x1x0>
  %4 = migraphx.greater %1, %3 : <3x4x10xsi32, 0x0x1>, <3x4x10xsi32, 0x1x0> -> <3x4x10xsi32, 40x10x1>
  %5 = migraphx.convert %4 {target_type = 0 : i64} : <3x4x10xsi32, 40x10x1> to <3x4x10xsi8, 40x10x1>
  %6 = migraphx.multibroadcast %ninf {out_lens = [3, 4, 10]} : <1xf32, 0> -> <3x4x10xf32, 0x0x0>
  %7 = migraphx.where %5, %6, %0 : <3x4x10xsi8, 40x10x1>, <3x4x10xf32, 0x0x0>, <3x4x10xf32, 40x10x1> -> <3x4x10xf32, 40x10x1>
  %8 = migraphx.softmax %7 {axis = 2 : i64} : <3x4x10xf32, 40x10x1> -> <3x4x10xf32, 40x10x1>
  %9 = migraphx.dot %8, %arg2 : <3x4x10xf32, 40x10x1>, <3x10x12xf32, 120x12x1> -> <3x4x12xf32, 48x12x1>
  return %9 : !migraphx.shaped<3x4x12xf32, 48x12x1>
}
