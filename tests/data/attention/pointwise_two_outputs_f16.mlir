// A pointwise module returning two values of different types (the sum in f16, exp of it in f32).
func.func @pw_mo(%arg0: !migraphx.shaped<4x33xf16, 33x1>, %arg1: !migraphx.shaped<4x33xf16, 33x1>) -> (!migraphx.shaped<4x33xf16, 33x1>, !migraphx.shaped<4x33xf32, 33x1>) {
  %0 = migraphx.add %arg0, %arg1 : <4x33xf16, 33x1>, <4x33xf16, 33x1> -> <4x33xf16, 33x1>
  %1 = migraphx.exp %0 : <4x33xf16, 33x1> -> <4x33xf16, 33x1>
  %2 = migraphx.convert %1 {target_type = 2 : i64} : <4x33xf16, 33x1> to <4x33xf32, 33x1>
  return %0, %2 : !migraphx.shaped<4x33xf16, 33x1>, !migraphx.shaped<4x33xf32, 33x1>
}
