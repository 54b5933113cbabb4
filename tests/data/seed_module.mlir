module {
  func.func @mlir_transpose_reshape_dot_add(%arg0: tensor<1x384x768xf16>, %arg1: tensor<1x12x384x64xf16>, %arg2: tensor<1x768x768xf16>) -> tensor<1x384x768xf16> attributes {arch = "gfx90a:sramecc+:xnack-", kernel = "mixr", num_cu = 110 : i64} {
    %0 = migraphx.multibroadcast(%arg2) {out_dyn_dims = [], out_lens = [1, 768, 768]} : (tensor<1x768x768xf16>) -> tensor<1x768x768xf16>
    %1 = migraphx.transpose(%arg1) {permutation = [0, 2, 1, 3]} : (tensor<1x12x384x64xf16>) -> tensor<1x384x12x64xf16>
    %2 = migraphx.reshape(%1) {dims = [0, 0, 768]} : (tensor<1x384x12x64xf16>) -> tensor<1x384x768xf16>
    %3 = migraphx.dot(%2, %0) : (tensor<1x384x768xf16>, tensor<1x768x768xf16>) -> tensor<1x384x768xf16>
    %4 = migraphx.add(%3, %arg0) : (tensor<1x384x768xf16>, tensor<1x384x768xf16>) -> tensor<1x384x768xf16>
    return %4 : tensor<1x384x768xf16>
  }
}
