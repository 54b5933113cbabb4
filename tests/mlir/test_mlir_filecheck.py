"""FileCheck patterns on emitted MLIR, where a pattern says more than equality would."""
import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
from filecheck.matcher import Matcher
from filecheck.options import parse_argv_options

from pytest_mlirtrace._internal.ir import Module, parse_module
from pytest_mlirtrace._internal.mlir import emit_mlir

DATA = Path(__file__).resolve().parents[1] / "data"


def filecheck(text: str, checks: str, tmp_path: Path, *flags: str) -> None:
    """Run the (Python) FileCheck in-process: ``filecheck [flags] checks.mlir < text``."""
    check_file, input_file = tmp_path / "checks.mlir", tmp_path / "input.mlir"
    check_file.write_text(checks)
    input_file.write_text(text)
    out = io.StringIO()
    opts = parse_argv_options(["filecheck", *flags, "--input-file", str(input_file), str(check_file)])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = Matcher.from_opts(opts).run()
    assert rc == 0, f"filecheck failed:\n{out.getvalue()}\n--- input:\n{text}"


def seed_module():
    return parse_module((DATA / "seed_module.txt").read_text())


def test_seed_tensor_syntax(tmp_path):
    filecheck(emit_mlir(seed_module(), arch="gfx90a:sramecc+:xnack-", num_cu=110), r"""
// CHECK-LABEL: func.func @mlir_transpose_reshape_dot_add(
// CHECK-SAME: %arg0: tensor<1x384x768xf16>, %arg1: tensor<1x12x384x64xf16>, %arg2: tensor<1x768x768xf16>
// CHECK-SAME: attributes {arch = "gfx90a:sramecc+:xnack-", kernel = "mixr", num_cu = 110 : i64}
// CHECK-NOT: contiguous
// CHECK: %[[MB:[0-9]+]] = migraphx.multibroadcast(%arg2) {out_dyn_dims = [], out_lens = [1, 768, 768]}
// CHECK: %[[TR:[0-9]+]] = migraphx.transpose(%arg1) {permutation = [0, 2, 1, 3]} : (tensor<1x12x384x64xf16>) -> tensor<1x384x12x64xf16>
// CHECK: %[[RS:[0-9]+]] = migraphx.reshape(%[[TR]]) {dims = [0, 0, 768]}
// CHECK: %[[DOT:[0-9]+]] = migraphx.dot(%[[RS]], %[[MB]]) : (tensor<1x384x768xf16>, tensor<1x768x768xf16>) -> tensor<1x384x768xf16>
// CHECK-NEXT: %[[ADD:[0-9]+]] = migraphx.add(%[[DOT]], %arg0)
// CHECK-NEXT: return %[[ADD]] : tensor<1x384x768xf16>
// CHECK-NOT: contiguous
""", tmp_path)  # noqa: E501 (verbatim MIGraphX / MLIR text)


def test_seed_shaped_syntax(tmp_path):
    filecheck(emit_mlir(seed_module(), type_syntax="shaped"), r"""
// CHECK-LABEL: func.func @mlir_transpose_reshape_dot_add
// CHECK-SAME: (%arg0: !migraphx.shaped<1x384x768xf16, 294912x768x1>,
// CHECK-SAME: -> !migraphx.shaped<1x384x768xf16, 294912x768x1> attributes {arch = "pocl-cpu", kernel = "mixr", num_cu = 1 : i64}
// CHECK-NOT: tensor<
// CHECK: migraphx.transpose %arg1 {permutation = [0, 2, 1, 3]} : <1x12x384x64xf16, 294912x24576x64x1> -> <1x384x12x64xf16, 294912x64x24576x1>
// the reshape reads the transpose directly: its contiguous is gone
// CHECK-NEXT: migraphx.reshape %1 {dims = [0, 0, 768]} : <1x384x12x64xf16, 294912x64x24576x1>
// CHECK: migraphx.dot %{{[0-9]+}}, %{{[0-9]+}} : <1x384x768xf16, {{[0-9x]+}}>, <1x768x768xf16, 589824x768x1> -> <1x384x768xf16, 294912x768x1>
""", tmp_path)  # noqa: E501 (verbatim MIGraphX / MLIR text)


def test_ops_without_attributes_print_none_and_lists_are_plain(tmp_path):
    m = Module()
    a = m.add_param("a", "f32", [4, 8])
    b = m.add_param("b", "f32", [8])
    bb = m.add("broadcast", b, axis=1, out_lens=[4, 8])
    s = m.add("slice", m.add("add", a, bb), axes=[1], starts=[2], ends=[6])
    r = m.add("reduce_sum", s, axes=[1])
    m.add_return(m.add("softmax", m.add("relu", r), axis=0))
    filecheck(emit_mlir(m), r"""
// CHECK-LABEL: func.func @mlir_broadcast_add_slice_reduce_sum_relu_softmax
// CHECK: migraphx.broadcast(%arg1) {axis = 1 : i64, out_lens = [4, 8]} : (tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: migraphx.add(%arg0, %0) : (
// CHECK: migraphx.slice(%1) {axes = [1], ends = [6], starts = [2]} : (tensor<4x8xf32>) -> tensor<4x4xf32>
// CHECK: migraphx.reduce_sum(%2) {axes = [1]} : (tensor<4x4xf32>) -> tensor<4x1xf32>
// CHECK: migraphx.relu(%3) : (tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK: migraphx.softmax(%4) {axis = 0 : i64}
""", tmp_path)


def test_convert_has_no_target_type_but_bool_keeps_it(tmp_path):
    m = Module()
    a = m.add_param("a", "f16", [3])
    c = m.add("convert", a, target_type=2)
    z = m.add("convert", c, target_type=0)
    m.add_return(m.add("where", z, c, c))
    filecheck(emit_mlir(m, type_syntax="shaped"), r"""
// CHECK: migraphx.convert %arg0 : <3xf16, 1> to <3xf32, 1>
// CHECK-NOT: target_type = 2
// CHECK: migraphx.convert %0 {target_type = 0 : i64} : <3xf32, 1> to <3xsi8, 1>
// CHECK: migraphx.where %1, %0, %0 : <3xsi8, 1>, <3xf32, 1>, <3xf32, 1> -> <3xf32, 1>
""", tmp_path)


def test_literal_and_multiple_results(tmp_path):
    m = Module()
    a = m.add_param("a", "f32", [2, 2])
    k = m.add_literal(np.array([[1.0, 2.0], [3.0, 4.0]]), "f32")
    m.add_return(m.add("mul", a, k), m.add("add", a, k))
    filecheck(emit_mlir(m), r"""
// CHECK: -> (tensor<2x2xf32>, tensor<2x2xf32>) attributes
// CHECK: %[[K:[0-9]+]] = migraphx.literal() {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
// CHECK: %[[M:[0-9]+]] = migraphx.mul(%arg0, %[[K]])
// CHECK: %[[A:[0-9]+]] = migraphx.add(%arg0, %[[K]])
// CHECK: return %[[M]], %[[A]] : tensor<2x2xf32>, tensor<2x2xf32>
""", tmp_path)  # noqa: E501 (verbatim MIGraphX / MLIR text)


def test_filecheck_itself_catches_a_wrong_pattern(tmp_path):
    with pytest.raises(AssertionError, match="filecheck failed"):
        filecheck(emit_mlir(seed_module()), "// CHECK: migraphx.contiguous\n", tmp_path)
