"""quantizelinear, dequantizelinear, clip and greater_or_equal lowered to OpenCL: pointwise kernels, gemm
epilogues and a quantizelinear feeding a quant_dot run in the isolated runtime (worker processes) and match the
numpy oracle on fresh random inputs -- integer and bool results bit for bit, floats within their dtype's
tolerance."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from pytest_mlirtrace._internal.codegen import default_solution, lower, problem_of
from pytest_mlirtrace._internal.ir import Module, compare, evaluate, result_precisions, tolerance
from pytest_mlirtrace._internal.ir.dtypes import from_compute
from pytest_mlirtrace._internal.mlir import parse_mlir_module

from ..corpus import ROCMLIR
from . import cg_ocl as ocl

pytestmark = pytest.mark.usefixtures("cl_pool")


def inputs_for(m: Module, seed: int, special: dict | None = None) -> dict:
    """Random inputs: scales (params named ``s*``) in [0.01, 0.2), other floats in [-6, 6), integers in a
    range that reaches past int8 (so quantize / clip saturate somewhere); ``special`` overrides by name."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in m.params():
        dt, lens = p.shape.dtype, p.shape.lens
        if dt.name == "bool":
            v = rng.integers(0, 2, size=lens).astype(np.bool_)
        elif dt.is_float:
            v = from_compute(rng.uniform(0.01, 0.2, lens) if p.param.startswith("s") else rng.uniform(-6, 6, lens), dt)
        else:
            info = np.iinfo(dt.np)
            v = rng.integers(max(info.min, -300), min(info.max, 300) + 1, size=lens).astype(dt.np)
        out[p.param] = v
    out.update(special or {})
    assert all(np.any(np.asarray(v) != 0) for v in out.values())
    return out


def check(m: Module, solutions=None, seed: int = 0, special: dict | None = None):
    inputs = inputs_for(m, seed, special)
    want = evaluate(m, inputs)
    limits = ocl.limits()
    p = problem_of(m)
    red = max(p.k, p.reduce_len if p.kind != "pointwise" else 1, 1)
    for sol in solutions or [default_solution(p, limits)]:
        spec = lower(m, sol, limits)
        got, _ = ocl.run(spec, inputs)
        for g, w, name, prec in zip(got, want, m.returns(), result_precisions(m), strict=False):
            dt = m.get(name).shape.dtype
            bad = compare(g, w, dt, reduction=red, tolerances=tolerance(prec, red))
            assert bad is None, f"{p.key()} solution {sol}, output {name}: {bad}"
    return want


def quantize(ft="f32", zt="i8", zp=True, lens=(6, 37)):
    m = Module()
    x = m.add_param("x", ft, list(lens))
    s = m.add_param("s", ft, list(lens))
    if zp:
        q = m.add("quantizelinear", x, s, m.add_param("z", zt, list(lens)))
    else:
        q = m.add("quantizelinear", x, s, out_type=zt)
    m.add_return(q)
    return m


@pytest.mark.parametrize("ft", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("zt,zp", [("i8", True), ("u8", True), ("i32", True), ("i8", False), ("u8", False)])
def test_quantizelinear(ft, zt, zp):
    check(quantize(ft, zt, zp), seed=zlib.crc32(f"{ft}-{zt}-{zp}".encode()) % 1000)


def test_quantizelinear_ties_nan_inf_and_saturation():
    x = np.array([[1.25, 1.75, -1.25, -1.75, np.nan, np.inf, -np.inf, 1.0, 1e9, -1e9, 0.75, 0.2]], np.float32)
    s = np.array([[0.5] * 7 + [0.0] + [1.0] * 4], np.float32)
    z = np.array([[0, 0, 0, 0, 5, 0, 0, 0, -3, 3, 127, -128]], np.int8)
    want = check(quantize("f32", "i8", True, lens=x.shape), special={"x": x, "s": s, "z": z})
    np.testing.assert_array_equal(want[0], [[2, 4, -2, -4, 5, 127, -128, 127, 127, -128, 127, -128]])


def test_quantizelinear_per_axis_in_a_pointwise_chain():
    """Per-channel scale and zero point through broadcast views, after a mul, before a convert."""
    m = Module()
    x = m.add_param("x", "f16", [4, 8, 5])
    s = m.add_param("s", "f16", [8])
    z = m.add_param("z", "u8", [8])
    k = m.add_param("k", "f16", [4, 8, 5])
    sb = m.add("broadcast", s, axis=1, out_lens=[4, 8, 5])
    zb = m.add("broadcast", z, axis=1, out_lens=[4, 8, 5])
    q = m.add("quantizelinear", m.add("mul", x, k), sb, zb)
    m.add_return(m.add("convert", q, target_type="int32_type"))
    check(m, ["64,1,4", "16,2,4", "1,1,1"])


@pytest.mark.parametrize("xt", ["i8", "u8", "i32"])
@pytest.mark.parametrize("ft", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("zp", [True, False])
def test_dequantizelinear(xt, ft, zp):
    m = Module()
    x = m.add_param("x", xt, [5, 19])
    args = [x, m.add_param("s", ft, [5, 19])] + ([m.add_param("z", xt, [5, 19])] if zp else [])
    m.add_return(m.add("dequantizelinear", *args))
    check(m, seed=7)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "i32", "i8", "u8"])
def test_clip_and_greater_or_equal(dt):
    m = Module()
    x = m.add_param("x", dt, [6, 16])
    lo = m.add_param("lo", dt, [6, 16])
    hi = m.add_param("hi", dt, [6, 16])
    c = m.add("clip", x, lo, hi)
    m.add_return(c)
    sols = ["64,1,4", "16,2,4"] if dt in ("f32", "f16", "bf16") else None   # float clip also vectorised
    check(m, sols, seed=3)
    m2 = Module()
    a, b = m2.add_param("a", dt, [6, 16]), m2.add_param("b", dt, [6, 16])
    m2.add_return(m2.add("where", m2.add("greater_or_equal", a, b), a, m2.add("neg", b)))
    check(m2, seed=4)
    m3 = Module()
    a, b = m3.add_param("a", dt, [6, 16]), m3.add_param("b", dt, [6, 16])
    m3.add_return(m3.add("greater_or_equal", a, b))                  # a bool output, bit for bit
    check(m3, seed=5)


def test_clip_propagates_nan():
    x = np.array([[np.nan, 1.0, 3.0, -3.0]], np.float32)
    lo = np.array([[0.0, np.nan, -1.0, -1.0]], np.float32)
    hi = np.array([[1.0, 2.0, np.nan, 1.0]], np.float32)
    m = Module()
    a, b, c = (m.add_param(n, "f32", [1, 4]) for n in ("x", "lo", "hi"))
    m.add_return(m.add("clip", a, b, c))
    want = check(m, ["64,1,4", "1,1,1"], special={"x": x, "lo": lo, "hi": hi})
    np.testing.assert_array_equal(want[0], [[np.nan, np.nan, np.nan, -1.0]])


def _qdq_gemm(m_: int = 16, n: int = 20, k: int = 24) -> Module:
    """quant_dot -> dequantizelinear (per-column scale, i32 zero point) -> add bias -> clip -> quantizelinear:
    the int8 epilogue MIGraphX fuses into one rocMLIR kernel."""
    m = Module()
    a = m.add_param("a", "i8", [m_, k])
    b = m.add_param("b", "i8", [k, n])
    d = m.add("quant_dot", a, b)
    s = m.add("multibroadcast", m.add_param("s", "f32", [n]), out_lens=[m_, n])
    z = m.add_param("z", "i32", [m_, n])
    dq = m.add("dequantizelinear", d, s, z)
    v = m.add("add", dq, m.add_param("bias", "f32", [m_, n]))
    lo = m.add("multibroadcast", m.add_literal(-40.0, "f32", [1]), out_lens=[m_, n])
    hi = m.add("multibroadcast", m.add_literal(40.0, "f32", [1]), out_lens=[m_, n])
    v = m.add("clip", v, lo, hi)
    zq = m.add("multibroadcast", m.add_literal(3, "i8", [1]), out_lens=[m_, n])
    m.add_return(m.add("quantizelinear", v, s, zq))
    return m


def test_quant_dot_dequantize_clip_quantize_epilogue():
    m = _qdq_gemm()
    rng = np.random.default_rng(12)
    small = {"a": rng.integers(-4, 5, (16, 24)).astype(np.int8), "b": rng.integers(-4, 5, (24, 20)).astype(np.int8)}
    want = check(m, ["4,16,8,4,16,16,0,4", "8,8,4,2,2,2,1,4"], seed=2, special=small)
    assert len(np.unique(want[0])) > 10                             # not all saturated


def test_dot_f16_clip_epilogue():
    m = Module()
    a, b = m.add_param("a", "f16", [9, 12]), m.add_param("b", "f16", [12, 10])
    d = m.add("dot", a, b)
    lo, hi = m.add_param("lo", "f16", [9, 10]), m.add_param("hi", "f16", [9, 10])
    m.add_return(m.add("clip", d, lo, hi))
    check(m, ["4,8,4,4,8,8,0,4"], seed=6)


@pytest.mark.skipif(not ROCMLIR.is_dir(), reason="no corpus")
def test_corpus_quantizelinear_into_quant_dot_runs():
    """rocMLIR's mixr-quant-quant-dot-bias-i8 test program: quantizelinear (with a zero point) feeding both
    operands of a quant_dot."""
    text = (ROCMLIR / "fusion__e2e__mixr-quantizelinear__mixr-quant-quant-dot-bias-i8.mlir").read_text()
    m = parse_mlir_module(text)
    assert m.ops() == ["quantizelinear", "quant_dot"]
    want = check(m, seed=8, special={"x1": np.array([[0.05, 0.1], [0.2, 0.08]], np.float32)})
    assert np.any(want[0] != 0)
