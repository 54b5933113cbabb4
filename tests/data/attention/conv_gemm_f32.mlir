// A convolution feeding a gemm (rocMLIR's conv-gemm fusion): a padded, strided 3x3 conv, a bias and relu,
// the NCHW result flattened to [n, h*w, k] through transpose + reshape, then a gemm with a weight matrix.
func.func @mlir_conv_add_relu_dot(%arg0: !migraphx.shaped<2x3x9x9xf32, 243x81x9x1>, %arg1: !migraphx.shaped<8x3x3x3xf32, 27x9x3x1>, %arg2: !migraphx.shaped<8xf32, 1>, %arg3: !migraphx.shaped<2x8x6xf32, 48x6x1>) -> !migraphx.shaped<2x25x6xf32, 150x6x1> {
  %0 = migraphx.convolution %arg0, %arg1 {dilation = [1, 1], group = 1 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [2, 2]} : <2x3x9x9xf32, 243x81x9x1>, <8x3x3x3xf32, 27x9x3x1> -> <2x8x5x5xf32, 200x25x5x1>
  %1 = migraphx.broadcast %arg2 {axis = 1 : i64, out_lens = [2, 8, 5, 5]} : <8xf32, 1> -> <2x8x5x5xf32, 0x1x0x0>
  %2 = migraphx.add %0, %1 : <2x8x5x5xf32, 200x25x5x1>, <2x8x5x5xf32, 0x1x0x0> -> <2x8x5x5xf32, 200x25x5x1>
  %3 = migraphx.relu %2 : <2x8x5x5xf32, 200x25x5x1> -> <2x8x5x5xf32, 200x25x5x1>
  %4 = migraphx.transpose %3 {permutation = [0, 2, 3, 1]} : <2x8x5x5xf32, 200x25x5x1> -> <2x5x5x8xf32, 200x5x1x25>
  %5 = migraphx.contiguous %4 : <2x5x5x8xf32, 200x5x1x25> -> <2x5x5x8xf32, 200x40x8x1>
  %6 = migraphx.reshape %5 {dims = [2, 25, 8]} : <2x5x5x8xf32, 200x40x8x1> -> <2x25x8xf32, 200x8x1>
  %7 = migraphx.dot %6, %arg3 : <2x25x8xf32, 200x8x1>, <2x8x6xf32, 48x6x1> -> <2x25x6xf32, 150x6x1>
  return %7 : !migraphx.shaped<2x25x6xf32, 150x6x1>
}
