// A ShuffleNet v1 unit (stage 2: 240 channels, 3 groups, 28x28) as MIGraphX splits it into three fused ops:
//   1. grouped 1x1 convolution + bias + relu            (240 -> 60 channels, group 3)
//   2. channel shuffle (reshape, transpose, reshape) folded into the depthwise 3x3 convolution + bias
//   3. grouped 1x1 convolution + bias + the unit's residual add + relu   (60 -> 240 channels, group 3)
// Pick one with --func: mlirtrace tune examples/shufflenet_unit.mlir --func mlir_convolution_broadcast_add_relu
module {
  func.func @mlir_convolution_broadcast_add_relu(%arg0: !migraphx.shaped<60xf32, 1>, %arg1: !migraphx.shaped<60x80x1x1xf32, 80x1x1x1>, %arg2: !migraphx.shaped<1x240x28x28xf32, 188160x784x28x1>) -> !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1> attributes {arch = "gfx942", kernel = "mixr", num_cu = 304 : i64} {
    %0 = migraphx.convolution %arg2, %arg1 {dilation = [1, 1], group = 3 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x240x28x28xf32, 188160x784x28x1>, <60x80x1x1xf32, 80x1x1x1> -> <1x60x28x28xf32, 47040x784x28x1>
    %1 = migraphx.broadcast %arg0 {axis = 1 : i64, out_lens = [1, 60, 28, 28]} : <60xf32, 1> -> <1x60x28x28xf32, 0x1x0x0>
    %2 = migraphx.add %0, %1 : <1x60x28x28xf32, 47040x784x28x1>, <1x60x28x28xf32, 0x1x0x0> -> <1x60x28x28xf32, 47040x784x28x1>
    %3 = migraphx.relu %2 : <1x60x28x28xf32, 47040x784x28x1> -> <1x60x28x28xf32, 47040x784x28x1>
    return %3 : !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1>
  }
  func.func @mlir_reshape_transpose_reshape_convolution_broadcast_add(%arg0: !migraphx.shaped<60xf32, 1>, %arg1: !migraphx.shaped<60x1x3x3xf32, 9x9x3x1>, %arg2: !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1>) -> !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1> attributes {arch = "gfx942", kernel = "mixr", num_cu = 304 : i64} {
    %0 = migraphx.reshape %arg2 {dims = [1, 3, 20, 28, 28]} : <1x60x28x28xf32, 47040x784x28x1> -> <1x3x20x28x28xf32, 47040x15680x784x28x1>
    %1 = migraphx.transpose %0 {permutation = [0, 2, 1, 3, 4]} : <1x3x20x28x28xf32, 47040x15680x784x28x1> -> <1x20x3x28x28xf32, 47040x784x15680x28x1>
    %2 = migraphx.reshape %1 {dims = [1, 60, 28, 28]} : <1x20x3x28x28xf32, 47040x784x15680x28x1> -> <1x60x28x28xf32, 47040x784x28x1>
    %3 = migraphx.convolution %2, %arg1 {dilation = [1, 1], group = 60 : i64, padding = [1, 1, 1, 1], padding_mode = 0 : i64, stride = [1, 1]} : <1x60x28x28xf32, 47040x784x28x1>, <60x1x3x3xf32, 9x9x3x1> -> <1x60x28x28xf32, 47040x784x28x1>
    %4 = migraphx.broadcast %arg0 {axis = 1 : i64, out_lens = [1, 60, 28, 28]} : <60xf32, 1> -> <1x60x28x28xf32, 0x1x0x0>
    %5 = migraphx.add %3, %4 : <1x60x28x28xf32, 47040x784x28x1>, <1x60x28x28xf32, 0x1x0x0> -> <1x60x28x28xf32, 47040x784x28x1>
    return %5 : !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1>
  }
  func.func @mlir_convolution_broadcast_add_add_relu(%arg0: !migraphx.shaped<240xf32, 1>, %arg1: !migraphx.shaped<1x240x28x28xf32, 188160x784x28x1>, %arg2: !migraphx.shaped<240x20x1x1xf32, 20x1x1x1>, %arg3: !migraphx.shaped<1x60x28x28xf32, 47040x784x28x1>) -> !migraphx.shaped<1x240x28x28xf32, 188160x784x28x1> attributes {arch = "gfx942", kernel = "mixr", num_cu = 304 : i64} {
    %0 = migraphx.convolution %arg3, %arg2 {dilation = [1, 1], group = 3 : i64, padding = [0, 0, 0, 0], padding_mode = 0 : i64, stride = [1, 1]} : <1x60x28x28xf32, 47040x784x28x1>, <240x20x1x1xf32, 20x1x1x1> -> <1x240x28x28xf32, 188160x784x28x1>
    %1 = migraphx.broadcast %arg0 {axis = 1 : i64, out_lens = [1, 240, 28, 28]} : <240xf32, 1> -> <1x240x28x28xf32, 0x1x0x0>
    %2 = migraphx.add %0, %1 : <1x240x28x28xf32, 188160x784x28x1>, <1x240x28x28xf32, 0x1x0x0> -> <1x240x28x28xf32, 188160x784x28x1>
    %3 = migraphx.add %2, %arg1 : <1x240x28x28xf32, 188160x784x28x1>, <1x240x28x28xf32, 188160x784x28x1> -> <1x240x28x28xf32, 188160x784x28x1>
    %4 = migraphx.relu %3 : <1x240x28x28xf32, 188160x784x28x1> -> <1x240x28x28xf32, 188160x784x28x1>
    return %4 : !migraphx.shaped<1x240x28x28xf32, 188160x784x28x1>
  }
}
