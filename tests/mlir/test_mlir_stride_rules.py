"""The strides the MLIR parser takes are rocMLIR's: one test per rule.

rocMLIR gives the strides of a value inside a func no meaning (its ops work on logical tensors); the func's
arguments and results are laid out in memory by ``asMemoryLayoutTensor``, whose rules are in
``ir.shape.layout_problem`` (tests/ir/test_ir_stride_rules.py).  So: any printed strides rocMLIR can lay out
are taken -- permuted (a convolution writing NHWC), padded, broadcast views -- and kept in the module; a layout
no memory has, a computed value printed as a broadcast, and a broadcast kernel output are refused, each with
file line:col.  rocMLIR's own test of these rules is in tests/data/mlir.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_mlirtrace._internal import mlir
from pytest_mlirtrace._internal.ir import evaluate, random_inputs
from pytest_mlirtrace._internal.mlir import parse_mlir, parse_mlir_module
from pytest_mlirtrace._internal.vocab import Status
from tests.corpus import MISSING, ROCMLIR

from ..settings import DEVICE

DATA = Path(__file__).resolve().parents[1] / "data" / "mlir"
ROCMLIR_STRIDES = DATA / "rocmlir__Conversion__MIGraphXToTosa__migraphx-to-tosa-non-contiguous-strides.mlir"


def _both(text: str):
    """The funcs as the fast path and as xDSL read them (they must agree)."""
    fast = parse_mlir(text, "s.mlir")
    mlir.parse.FAST = False
    try:
        slow = parse_mlir(text, "s.mlir")
    finally:
        mlir.parse.FAST = True
    assert [(f.status, f.reason) for f in fast] == [(f.status, f.reason) for f in slow]
    return fast


def test_rule_argument_strides_need_a_memory_layout():
    text = ("func.func @f(%arg0: !migraphx.shaped<4x24x24xf16, 1152x48x2>) "
            "-> !migraphx.shaped<4x24x24xf16, 576x24x1> {\n"
            "  %0 = migraphx.relu %arg0 : <4x24x24xf16, 1152x48x2> -> <4x24x24xf16, 576x24x1>\n"
            "  return %0 : !migraphx.shaped<4x24x24xf16, 576x24x1>\n}\n")
    [f] = _both(text)
    assert f.invalid == ("argument %arg0 at 1:14: strides [1152, 48, 2]: the smallest stride is 2, not 1 "
                         "(no in-memory layout has it)")
    with pytest.raises(mlir.MLIRVerifyError) as e:
        parse_mlir_module(text, "s.mlir")
    assert (e.value.line, e.value.column) == (1, 14)


def test_rule_a_kernel_output_cannot_be_a_broadcast():
    # rocMLIR: "writing to tensors with broadcasts is unsupported"
    text = ("func.func @f(%arg0: !migraphx.shaped<1x24xf16, 24x1>) -> !migraphx.shaped<4x24xf16, 0x1> {\n"
            "  %0 = migraphx.multibroadcast %arg0 {out_lens = [4, 24]} : <1x24xf16, 24x1> -> <4x24xf16, 0x1>\n"
            "  return %0 : !migraphx.shaped<4x24xf16, 0x1>\n}\n")
    [f] = _both(text)
    assert f.invalid == ("result 0 of @f (!migraphx.shaped<4x24xf16, 0x1>) at 3:3: strides [0, 1] make a broadcast "
                         "(a 0 stride on a dim longer than 1); a kernel output cannot be one")


def test_rule_a_computed_value_cannot_be_a_broadcast():
    text = ("func.func @f(%arg0: !migraphx.shaped<4x24xf16, 24x1>) -> !migraphx.shaped<4x24xf16, 24x1> {\n"
            "  %0 = migraphx.exp %arg0 : <4x24xf16, 24x1> -> <4x24xf16, 0x1>\n"
            "  %1 = migraphx.exp %0 : <4x24xf16, 0x1> -> <4x24xf16, 24x1>\n"
            "  return %1 : !migraphx.shaped<4x24xf16, 24x1>\n}\n")
    [f] = _both(text)
    assert f.invalid.startswith("migraphx.exp at 2:3: result strides [0, 1] make a broadcast")


def test_rule_every_printed_value_needs_a_memory_layout():
    text = ("func.func @f(%arg0: !migraphx.shaped<4x24xf16, 24x1>) -> !migraphx.shaped<24x4xf16, 4x1> {\n"
            "  %0 = migraphx.transpose %arg0 {permutation = [1, 0]} : <4x24xf16, 24x1> -> <24x4xf16, 1x10>\n"
            "  %1 = migraphx.exp %0 : <24x4xf16, 1x10> -> <24x4xf16, 4x1>\n"
            "  return %1 : !migraphx.shaped<24x4xf16, 4x1>\n}\n")
    [f] = _both(text)
    assert f.invalid == ("migraphx.transpose at 2:3: result strides [1, 10]: stride 10 is smaller than 24, the span "
                         "of the dims inside it (stride 1 x length 24); dims would overlap")


def test_rule_views_may_print_any_layout_rocmlir_can_lay_out():
    # a transpose whose result keeps its input's written strides (standard), as rocMLIR's tests print it
    keep = ("func.func @f(%arg0: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<3x2xf32, 2x1> {\n"
            "  %0 = migraphx.transpose %arg0 {permutation = [1, 0]} : <2x3xf32, 3x1> -> <3x2xf32, 2x1>\n"
            "  %1 = migraphx.relu %0 : <3x2xf32, 2x1> -> <3x2xf32, 2x1>\n"
            "  return %1 : !migraphx.shaped<3x2xf32, 2x1>\n}\n")
    [f] = _both(keep)
    assert f.ok, f.reason
    # a 5-D multibroadcast whose result strides carry a 0 in the middle
    mb = ("func.func @g(%arg0: !migraphx.shaped<2x2x1x32x32xf16, 2048x1024x1024x32x1>, "
          "%arg1: !migraphx.shaped<2x2x7x32x32xf16, 14336x7168x1024x32x1>) -> !migraphx.shaped<2x2x7x32x32xf16, "
          "14336x7168x1024x32x1> {\n"
          "  %0 = migraphx.multibroadcast %arg0 {out_lens = [2, 2, 7, 32, 32]} : <2x2x1x32x32xf16, 2048x1024x1024x32x1>"
          " -> <2x2x7x32x32xf16, 2048x1024x0x32x1>\n"
          "  %1 = migraphx.add %0, %arg1 : <2x2x7x32x32xf16, 2048x1024x0x32x1>, <2x2x7x32x32xf16, 14336x7168x1024x32x1>"
          " -> <2x2x7x32x32xf16, 14336x7168x1024x32x1>\n"
          "  return %1 : !migraphx.shaped<2x2x7x32x32xf16, 14336x7168x1024x32x1>\n}\n")
    [g] = _both(mb)
    assert g.ok, g.reason
    assert g.module.get("@2").shape.strides == (2048, 1024, 0, 32, 1)


@pytest.mark.skipif(not (ROCMLIR / "fusion__pr-e2e__conv-gemm__mixr-conv1x1-gemm-scale-bias.mlir").exists(),
                    reason=MISSING)
def test_rule_a_computed_value_may_be_written_in_a_permuted_layout():
    """rocMLIR's conv + gemm test: the convolution writes NHWC memory (<2x16x8x8xf16, 2048x1x128x16>); the module
    keeps those strides and the views after it read them."""
    [f] = parse_mlir((ROCMLIR / "fusion__pr-e2e__conv-gemm__mixr-conv1x1-gemm-scale-bias.mlir").read_text(), "cg")
    assert f.ok, f.reason
    conv = next(i for i in f.module.instructions if i.op == "convolution")
    assert conv.shape.strides == (2048, 1, 128, 16)
    outs = evaluate(f.module, random_inputs(f.module, seed=2))
    assert [o.shape for o in outs] == [s.lens for s in f.module.output_shapes()]


def test_rocmlir_own_stride_test_takes_and_refuses_what_rocmlir_does():
    funcs = _both(ROCMLIR_STRIDES.read_text())
    got = [(f.name, f.status) for f in funcs]
    assert got == [("mlir_dot_sigmoid", "ok"), ("mlir_dot_sigmoid", "ok"), ("no_unit_stride", "invalid"),
                   ("stride_not_divisible", "invalid"), ("write_to_broadcast", "invalid"),
                   ("stride_too_small", "invalid")]
    # each refusal is the one rocMLIR's expected-error names, at the op that writes the value
    assert "at 40:3: result strides [1152, 48, 2]: the smallest stride is 2" in funcs[2].invalid
    assert "at 49:3: result strides [1000, 100, 1]: stride 1000 is smaller than 2400" in funcs[3].invalid
    assert "at 58:3: result strides [0, 24, 1] make a broadcast" in funcs[4].invalid
    assert "at 67:3: result strides [576, 10, 1]: stride 576 is not a multiple of the inner stride 10" in \
        funcs[5].invalid
    # the padded outputs are the module's output layout
    assert funcs[0].module.output_shapes()[0].strides == (1152, 24, 1)


def test_multibroadcast_follows_its_result_type_with_a_note():
    """rocMLIR's lowering reads a multibroadcast's result type, never out_lens (two rocMLIR tests carry
    out_lens = [1, 768, 768] for a 1x256x768 result and run)."""
    text = ("func.func @f(%arg0: tensor<1x256x1xf32>, %arg1: tensor<1x256x768xf32>) -> tensor<1x256x768xf32> {\n"
            "  %0 = migraphx.multibroadcast %arg0 {out_lens = [1, 768, 768]} : tensor<1x256x1xf32> -> "
            "tensor<1x256x768xf32>\n"
            "  %1 = migraphx.add %0, %arg1 : tensor<1x256x768xf32>, tensor<1x256x768xf32> -> tensor<1x256x768xf32>\n"
            "  return %1 : tensor<1x256x768xf32>\n}\n")
    [f] = _both(text)
    assert f.ok, f.reason
    assert f.module.get("@2").attrs["out_lens"] == [1, 256, 768]
    assert f.notes == ["migraphx.multibroadcast at 2:3: out_lens = [1, 768, 768] disagrees with the result type's "
                       "lens [1, 256, 768]; the result type is followed, as rocMLIR's lowering does"]
    # the re-emitted module says what it computes
    assert "out_lens = [1, 256, 768]" in mlir.emit_func(f.module, name="f")
    # an input that broadcasts to neither is still refused, by the shape rule
    bad = text.replace("tensor<1x256x1xf32>", "tensor<1x3x1xf32>")
    [b] = _both(bad)
    assert b.invalid and "cannot broadcast input lens [1, 3, 1]" in b.invalid


@pytest.mark.parametrize("path", sorted(ROCMLIR.glob("*multi*output*.mlir")) if ROCMLIR.is_dir() else [],
                         ids=lambda p: p.name)
def test_rocmlir_multi_output_tests_are_valid(path):
    funcs = parse_mlir(path.read_text(), path.name)
    mo = [f for f in funcs if f.name == "test_mo"]
    assert mo and all(f.ok for f in mo), [f.reason for f in mo]
    assert all("the result type is followed" in f.notes[0] for f in mo)
    m = mo[0].module
    outs = evaluate(m, random_inputs(m, seed=5))
    assert len(outs) == 2 and all(o.shape == (1, 256, 768) for o in outs)


@pytest.fixture(scope="module")
def device():
    from pytest_mlirtrace._internal.runtime import resolve_device

    return resolve_device(DEVICE)


def test_padded_output_layout_runs_and_matches_the_oracle(device, tmp_path):
    """rocMLIR's second padded-output func (a dot + sigmoid written with rows padded to 12) runs through the
    worker pool and matches the oracle on fresh random inputs."""
    from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase

    funcs = parse_mlir(ROCMLIR_STRIDES.read_text(), ROCMLIR_STRIDES.name)
    m = funcs[1].module
    assert m.output_shapes()[0].strides == (288, 24, 1)
    inputs = random_inputs(m, 17)
    [ref] = evaluate(m, inputs)
    res = Pipeline(device, database=TuningDatabase(tmp_path / "t.json"), inject="").run(m, inputs=inputs)
    assert res.status == Status.OK, res.detail
    np.testing.assert_allclose(np.asarray(res.outputs[0], np.float64), np.asarray(ref, np.float64),
                               rtol=2e-3, atol=2e-3)
