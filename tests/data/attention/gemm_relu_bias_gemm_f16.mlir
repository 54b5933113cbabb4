// Gemm-gemm with an epilogue between the gemms (bias add, relu) and one after the second (a residual add),
// batched over 3; the third operand given transposed.
func.func @mlir_dot_add_relu_dot_add(%arg0: !migraphx.shaped<3x20x12xf16, 240x12x1>, %arg1: !migraphx.shaped<3x12x28xf16, 336x28x1>, %arg2: !migraphx.shaped<3x20x28xf16, 560x28x1>, %arg3: !migraphx.shaped<3x36x28xf16, 1008x28x1>, %arg4: !migraphx.shaped<3x20x36xf16, 720x36x1>) -> !migraphx.shaped<3x20x36xf16, 720x36x1> {
  %0 = migraphx.dot %arg0, %arg1 : <3x20x12xf16, 240x12x1>, <3x12x28xf16, 336x28x1> -> <3x20x28xf16, 560x28x1>
  %1 = migraphx.add %0, %arg2 : <3x20x28xf16, 560x28x1>, <3x20x28xf16, 560x28x1> -> <3x20x28xf16, 560x28x1>
  %2 = migraphx.relu %1 : <3x20x28xf16, 560x28x1> -> <3x20x28xf16, 560x28x1>
  %3 = migraphx.transpose %arg3 {permutation = [0, 2, 1]} : <3x36x28xf16, 1008x28x1> -> <3x28x36xf16, 1008x1x28>
  %4 = migraphx.dot %2, %3 : <3x20x28xf16, 560x28x1>, <3x28x36xf16, 1008x1x28> -> <3x20x36xf16, 720x36x1>
  %5 = migraphx.add %4, %arg4 : <3x20x36xf16, 720x36x1>, <3x20x36xf16, 720x36x1> -> <3x20x36xf16, 720x36x1>
  return %5 : !migraphx.shaped<3x20x36xf16, 720x36x1>
}
