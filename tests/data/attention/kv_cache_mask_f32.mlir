// KV-cache decoding: one new query per sequence, the first 40 of a 64-entry K/V cache taken by slice,
// a boolean-as-i8 mask through where (-inf where masked), softmax, the second gemm, the heads transposed
// back and flattened.
func.func @mlir_decode(%arg0: !migraphx.shaped<2x4x1x32xf32, 128x32x32x1>, %arg1: !migraphx.shaped<2x4x64x32xf32, 8192x2048x32x1>, %arg2: !migraphx.shaped<2x4x64x32xf32, 8192x2048x32x1>, %arg3: !migraphx.shaped<2x4x1x40xi8, 160x40x40x1>) -> !migraphx.shaped<2x1x128xf32, 128x128x1> {
  %ninf = migraphx.literal(dense<0xFF800000> : tensor<1xf32>) : <1xf32, 0>
  %k = migraphx.slice %arg1 {axes = [2], ends = [40], starts = [0]} : <2x4x64x32xf32, 8192x2048x32x1> -> <2x4x40x32xf32, 8192x2048x32x1>
  %v = migraphx.slice %arg2 {axes = [2], ends = [40], starts = [0]} : <2x4x64x32xf32, 8192x2048x32x1> -> <2x4x40x32xf32, 8192x2048x32x1>
  %kt = migraphx.transpose %k {permutation = [0, 1, 3, 2]} : <2x4x40x32xf32, 8192x2048x32x1> -> <2x4x32x40xf32, 8192x2048x1x32>
  %0 = migraphx.dot %arg0, %kt : <2x4x1x32xf32, 128x32x32x1>, <2x4x32x40xf32, 8192x2048x1x32> -> <2x4x1x40xf32, 160x40x40x1>
  %1 = migraphx.multibroadcast %ninf {out_lens = [2, 4, 1, 40]} : <1xf32, 0> -> <2x4x1x40xf32, 0x0x0x0>
  %2 = migraphx.where %arg3, %0, %1 : <2x4x1x40xi8, 160x40x40x1>, <2x4x1x40xf32, 160x40x40x1>, <2x4x1x40xf32, 0x0x0x0> -> <2x4x1x40xf32, 160x40x40x1>
  %3 = migraphx.softmax %2 {axis = 3 : i64} : <2x4x1x40xf32, 160x40x40x1> -> <2x4x1x40xf32, 160x40x40x1>
  %4 = migraphx.dot %3, %v : <2x4x1x40xf32, 160x40x40x1>, <2x4x40x32xf32, 8192x2048x32x1> -> <2x4x1x32xf32, 128x32x32x1>
  %5 = migraphx.transpose %4 {permutation = [0, 2, 1, 3]} : <2x4x1x32xf32, 128x32x32x1> -> <2x1x4x32xf32, 128x32x32x1>
  %6 = migraphx.reshape %5 {dims = [2, 1, 128]} : <2x1x4x32xf32, 128x32x32x1> -> <2x1x128xf32, 128x128x1>
  return %6 : !migraphx.shaped<2x1x128xf32, 128x128x1>
}
