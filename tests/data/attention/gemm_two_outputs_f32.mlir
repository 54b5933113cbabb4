// A gemm + bias + residual returning both the sum and its relu (rocMLIR multi-output fusion, as in
// fusion/e2e/migraphx-multi-output.mlir with consistent shapes).
func.func @test_mo(%arg0: !migraphx.shaped<1x40x24xf32, 960x24x1>, %arg1: !migraphx.shaped<1x24x36xf32, 864x36x1>, %arg2: !migraphx.shaped<1x40x1xf32, 40x1x1>, %arg3: !migraphx.shaped<1x40x36xf32, 1440x36x1>) -> (!migraphx.shaped<1x40x36xf32, 1440x36x1>, !migraphx.shaped<1x40x36xf32, 1440x36x1>) {
  %0 = migraphx.dot %arg0, %arg1 : <1x40x24xf32, 960x24x1>, <1x24x36xf32, 864x36x1> -> <1x40x36xf32, 1440x36x1>
  %1 = migraphx.multibroadcast %arg2 {out_lens = [1, 40, 36]} : <1x40x1xf32, 40x1x1> -> <1x40x36xf32, 40x1x0>
  %2 = migraphx.add %0, %1 : <1x40x36xf32, 1440x36x1>, <1x40x36xf32, 40x1x0> -> <1x40x36xf32, 1440x36x1>
  %3 = migraphx.add %2, %arg3 : <1x40x36xf32, 1440x36x1>, <1x40x36xf32, 1440x36x1> -> <1x40x36xf32, 1440x36x1>
  %4 = migraphx.relu %3 : <1x40x36xf32, 1440x36x1> -> <1x40x36xf32, 1440x36x1>
  return %3, %4 : !migraphx.shaped<1x40x36xf32, 1440x36x1>, !migraphx.shaped<1x40x36xf32, 1440x36x1>
}
