"""quantizelinear, dequantizelinear, clip and greater_or_equal in MLIR: emitted in both type syntaxes, parsed back
to the same module by both parse paths (fast and xDSL), rocMLIR's own spellings read, and clear reasons for
programs that break the rules."""
from __future__ import annotations

import pytest

from pytest_mlirtrace._internal.ir import Module
from pytest_mlirtrace._internal.mlir import emit_mlir, normalise_mlir, parse_mlir, parse_mlir_module
from pytest_mlirtrace._internal.mlir import parse as parse_mod
from pytest_mlirtrace._internal.mlir.emit import param_names

from .test_mlir_fast_parse import module_difference_strict


def quant_module(ft: str = "f32", zt: str = "i8") -> Module:
    """Every new op once: per-axis quantize with a zero point, one without (out_type), dequantize, clip, >=."""
    m = Module()
    x = m.add_param("x", ft, [2, 3, 4])
    s = m.add_param("s", ft, [3])
    z = m.add_param("z", zt, [3])
    sb = m.add("broadcast", s, axis=1, out_lens=[2, 3, 4])
    zb = m.add("broadcast", z, axis=1, out_lens=[2, 3, 4])
    q = m.add("quantizelinear", x, sb, zb)
    q8 = m.add("quantizelinear", x, sb, out_type=5)
    d = m.add("dequantizelinear", q, sb, zb)
    lo = m.add("multibroadcast", m.add_literal(-1.0, ft, [1]), out_lens=[2, 3, 4])
    hi = m.add("multibroadcast", m.add_literal(2.0, ft, [1]), out_lens=[2, 3, 4])
    c = m.add("clip", d, lo, hi)
    g = m.add("greater_or_equal", c, x)
    m.add_return(c, q8, g)
    return m


def _parse_both(text: str):
    fast = parse_mlir(text)
    parse_mod.FAST = False
    try:
        slow = parse_mlir(text)
    finally:
        parse_mod.FAST = True
    return fast, slow


@pytest.mark.parametrize("syntax", ["tensor", "shaped"])
@pytest.mark.parametrize("ft,zt", [("f32", "i8"), ("f16", "u8"), ("bf16", "i32")])
def test_new_ops_round_trip(syntax, ft, zt):
    m = quant_module(ft, zt)
    text = emit_mlir(m, type_syntax=syntax)
    assert normalise_mlir(text) == text
    fast, slow = _parse_both(text)
    assert [f.status for f in fast] == ["ok"] and [f.status for f in slow] == ["ok"], (fast[0].reason, slow[0].reason)
    assert module_difference_strict(fast[0].module, slow[0].module) is None
    back = parse_mlir_module(text, param_names=param_names(m))
    params = {p.param: (p.shape.dtype, p.shape.lens) for p in back.params()}
    assert params == {p.param: (p.shape.dtype, p.shape.lens) for p in m.params()}
    body = [(i.op, i.shape.dtype, i.shape.lens, i.attrs) for i in m.instructions if i.op not in ("@param", "@return")]
    assert [(i.op, i.shape.dtype, i.shape.lens, i.attrs) for i in back.instructions
            if i.op not in ("@param", "@return")] == body
    assert emit_mlir(back, type_syntax=syntax) == text


def test_emitted_spellings():
    m = quant_module()
    t = emit_mlir(m)
    # arguments in param-name order: %arg0 = s, %arg1 = x, %arg2 = z
    assert ("%2 = migraphx.quantizelinear(%arg1, %0, %1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xi8>) "
            "-> tensor<2x3x4xi8>") in t
    assert "%3 = migraphx.quantizelinear(%arg1, %0) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xi8>" in t
    assert "out_type" not in t                                     # rocMLIR's op has no attributes: the type says it
    assert ("%10 = migraphx.greater_or_equal(%9, %arg1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) "
            "-> tensor<2x3x4xi8>") in t
    s = emit_mlir(m, type_syntax="shaped")
    assert ("%2 = migraphx.quantizelinear %arg1, %0, %1 : <2x3x4xf32, 12x4x1>, <2x3x4xf32, 0x1x0>, "
            "<2x3x4xsi8, 0x1x0> -> <2x3x4xsi8, 12x4x1>") in s
    assert ("%4 = migraphx.dequantizelinear %2, %0, %1 : <2x3x4xsi8, 12x4x1>, <2x3x4xf32, 0x1x0>, "
            "<2x3x4xsi8, 0x1x0> -> <2x3x4xf32, 12x4x1>") in s
    assert ("%9 = migraphx.clip %4, %6, %8 : <2x3x4xf32, 12x4x1>, <2x3x4xf32, 0x0x0>, <2x3x4xf32, 0x0x0> "
            "-> <2x3x4xf32, 12x4x1>") in s


ROCMLIR_STYLE = """
func.func @q(%x: !migraphx.shaped<1x4x2x2xf32, 16x4x2x1>, %s: !migraphx.shaped<1x4x1x1xf32, 4x1x1x1>,
             %w: !migraphx.shaped<1x4x2x2xi32, 16x4x2x1>) -> !migraphx.shaped<1x4x2x2xsi8, 16x4x2x1> {
  %0 = migraphx.literal (dense<0> : tensor<1xsi8>) : <1xsi8, 0>
  %1 = migraphx.multibroadcast %s {out_dyn_dims = [], out_lens = [1, 4, 2, 2]} : <1x4x1x1xf32, 4x1x1x1> -> <1x4x2x2xf32, 4x1x0x0>
  %2 = migraphx.multibroadcast %0 {out_dyn_dims = [], out_lens = [1, 4, 2, 2]} : <1xsi8, 0> -> <1x4x2x2xsi8, 0x0x0x0>
  %3 = migraphx.dequantizelinear %w, %1 : <1x4x2x2xi32, 16x4x2x1>, <1x4x2x2xf32, 4x1x0x0> -> <1x4x2x2xf32, 16x4x2x1>
  %4 = migraphx.relu %3 : <1x4x2x2xf32, 16x4x2x1> -> <1x4x2x2xf32, 16x4x2x1>
  %5 = migraphx.clip %4, %3, %4 : <1x4x2x2xf32, 16x4x2x1>, <1x4x2x2xf32, 16x4x2x1>, <1x4x2x2xf32, 16x4x2x1> -> <1x4x2x2xf32, 16x4x2x1>
  %6 = migraphx.quantizelinear %5, %1, %2 : <1x4x2x2xf32, 16x4x2x1>, <1x4x2x2xf32, 4x1x0x0>, !migraphx.shaped<1x4x2x2xsi8, 0x0x0x0> -> <1x4x2x2xsi8, 16x4x2x1>
  return %6 : !migraphx.shaped<1x4x2x2xsi8, 16x4x2x1>
}
"""  # noqa: E501 (verbatim MIGraphX / MLIR text)


def test_rocmlir_spellings_parse():
    """rocMLIR's tests: a full ``!migraphx.shaped`` type among short ones, a literal zero point, no zero point."""
    fast, slow = _parse_both(ROCMLIR_STYLE)
    assert fast[0].ok and slow[0].ok, (fast[0].reason, slow[0].reason)
    assert module_difference_strict(fast[0].module, slow[0].module) is None
    m = fast[0].module
    assert m.ops() == ["multibroadcast", "multibroadcast", "dequantizelinear", "relu", "clip", "quantizelinear"]
    dq = next(i for i in m.instructions if i.op == "dequantizelinear")
    assert (len(dq.inputs), dq.shape.dtype.name) == (2, "f32")
    q = next(i for i in m.instructions if i.op == "quantizelinear")
    assert (len(q.inputs), q.shape.dtype.name, q.attrs) == (3, "i8", {})


def test_quantizelinear_without_zero_point_keeps_its_printed_type():
    text = """func.func @f(%x: tensor<4xf16>, %s: tensor<4xf16>) -> (tensor<4xi8>, tensor<4xui8>) {
  %0 = migraphx.quantizelinear(%x, %s) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi8>
  %1 = migraphx.quantizelinear(%x, %s) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xui8>
  return %0, %1 : tensor<4xi8>, tensor<4xui8>
}
"""
    fast, slow = _parse_both(text)
    assert module_difference_strict(fast[0].module, slow[0].module) is None
    q8, qu8 = [i for i in fast[0].module.instructions if i.op == "quantizelinear"]
    assert (q8.attrs, q8.shape.dtype.name) == ({"out_type": 5}, "i8")
    assert (qu8.attrs, qu8.shape.dtype.name) == ({}, "u8")          # MIGraphX's default needs no attribute


@pytest.mark.parametrize("body,reason", [
    ("%0 = migraphx.quantizelinear %x : <4xf32, 1> -> <4xsi8, 1>",
     "migraphx.quantizelinear at 2:3: @1 = quantizelinear: takes 2 inputs (x, scale) or 3 (x, scale, zero point), "
     "got 1"),
    ("%0 = migraphx.quantizelinear %x, %x, %x : <4xf32, 1>, <4xf32, 1>, <4xf32, 1> -> <4xsi8, 1>",
     "migraphx.quantizelinear at 2:3: @1 = quantizelinear: zero point must be an integer type, got float_type"),
    ("%0 = migraphx.quantizelinear %x, %x : <4xf32, 1>, <4xf32, 1> -> <4xf32, 1>",
     "migraphx.quantizelinear at 2:3: @1 = quantizelinear: output type must be an integer type of at most 32 bits, "
     "got float_type"),
    ("%0 = migraphx.dequantizelinear %x, %x : <4xf32, 1>, <4xf32, 1> -> <4xf32, 1>",
     "migraphx.dequantizelinear at 2:3: @1 = dequantizelinear: input must be an integer type, got float_type"),
    ("%0 = migraphx.clip %x, %x : <4xf32, 1>, <4xf32, 1> -> <4xf32, 1>",
     "migraphx.clip at 2:3: migraphx.clip takes 3 operand(s) (x, minVals, maxVals), got 2"),
    ("%0 = migraphx.greater_or_equal %x, %x : <4xf32, 1>, <4xf32, 1> -> <4xf16, 1>",
     "migraphx.greater_or_equal at 2:3: result type f16 but the shape rule gives i1"),
])
def test_broken_programs_get_clear_reasons(body, reason):
    text = (f"func.func @f(%x: !migraphx.shaped<4xf32, 1>) -> !migraphx.shaped<4xf32, 1> {{\n  {body}\n"
            "  return %x : !migraphx.shaped<4xf32, 1>\n}\n")
    f = parse_mlir(text)[0]
    assert f.invalid is not None and reason in f.invalid, f.invalid


def test_comparison_result_may_print_its_input_type():
    """rocMLIR's migraphx comparisons give the input's type (1 / 0); the IR keeps MIGraphX's bool."""
    text = """func.func @f(%a: !migraphx.shaped<3xsi32, 1>, %b: !migraphx.shaped<3xsi32, 1>) -> !migraphx.shaped<3xsi32, 1> {
  %0 = migraphx.greater_or_equal %a, %b : <3xsi32, 1>, <3xsi32, 1> -> <3xsi32, 1>
  return %0 : !migraphx.shaped<3xsi32, 1>
}
"""  # noqa: E501 (verbatim MIGraphX / MLIR text)
    f = parse_mlir(text)[0]
    assert f.ok, f.reason
    assert f.module.get(f.module.returns()[0]).shape.dtype.name == "bool"
