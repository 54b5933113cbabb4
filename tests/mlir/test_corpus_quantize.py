"""Issue 14's quantize programs of the shared corpus, run: MX block-scaled quant_dot (fp4 / fp8 operands with
f8E8M0FNU or f32 scales), fp8 / fp4 dots and int4 unpack.

Each func parses, verifies, round-trips through MLIR in both type syntaxes, and runs through the isolated
runtime (``engine.Pipeline``: kernels run in worker processes, never in this one) matching the numpy oracle.
The narrow float formats are checked against values written here from the formats' definitions (OCP FP8:
E4M3FN, E5M2; OCP MX: E8M0 scales, E2M1 fp4), and unpack's oracle against a hand-worked example.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import Module, evaluate, random_inputs
from pytest_mlirtrace._internal.ir.dtypes import BY_NAME, from_compute, narrow_encode, to_compute
from pytest_mlirtrace._internal.ir.reference import unpack
from pytest_mlirtrace._internal.mlir import emit_func, normalise_mlir, parse_mlir
from pytest_mlirtrace._internal.mlir.equiv import module_difference
from pytest_mlirtrace._internal.vocab import Status
from pytest_mlirtrace._internal.vocab.problem_key import format_problem_key, parse_problem_key
from tests.corpus import MISSING, ROCMLIR

from ..settings import DEVICE

FILES = {
    "Dialect__MIGraphX__quant-dot-decompose.mlir": [
        "quant_dot_with_both_scales_f8e8m0fnu", "quant_dot_with_both_scales_f32", "quant_dot_no_scales",
        "quant_dot_batched", "quant_dot_non_standard_strides", "quant_dot_with_both_scales_f8e8m0fnu_kernel"],
    "Dialect__MIGraphX__realize-int4.mlir": [
        "basic_signed", "basic_unsigned", "transposed", "reshape_expand", "reshape_collapse"],
    "fusion__e2e__mixr-gemm-fp4__mixr_rsp_rsp_quant_dot.mlir": ["mlir_quant_dot_fp4"],
    "Dialect__MIGraphX__ops.mlir": ["migraphx_dot", "migraphx_quant_dot"],
}
RUNS = [(f, n) for f, names in FILES.items() for n in names]
# the one of the 15 that stays refused: its result is a broadcast (strides 0x1x0), which no kernel writes
REFUSED = ("Dialect__MIGraphX__realize-int4.mlir", "multibroadcast")

_PARSED: dict = {}


def func(file: str, name: str):
    if not (ROCMLIR / file).is_file():
        pytest.skip(MISSING)
    if file not in _PARSED:
        _PARSED[file] = parse_mlir((ROCMLIR / file).read_text(encoding="utf-8"), file)
    return next(f for f in _PARSED[file] if f.name == name)


def inputs_for(m: Module, seed: int) -> dict:
    """random_inputs, but int8 bytes for unpack drawn over all 256 values (both nibbles of every sign)."""
    inputs = random_inputs(m, seed)
    if "unpack" in m.ops():
        rng = np.random.default_rng(seed)
        for p in m.params():
            inputs[p.param] = rng.integers(-128, 128, size=p.shape.lens).astype(np.int8)
    return inputs


@pytest.fixture(scope="module")
def device():
    from pytest_mlirtrace._internal.runtime import resolve_device

    return resolve_device(DEVICE)


# the fp4 e2e program's kernel takes ~30 s to build and run on PoCL: -m slow (.ci/run) runs it
SLOW_RUNS = {"mlir_quant_dot_fp4"}


@pytest.mark.parametrize("file,name", [pytest.param(f, n, id=n, marks=pytest.mark.slow if n in SLOW_RUNS else ())
                                       for f, n in RUNS])
def test_quantize_func_parses_round_trips_and_runs(file, name, device, tmp_path):
    from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase

    f = func(file, name)
    assert f.ok, f.reason
    m = f.module
    m.verify()
    for syntax in ("shaped", "tensor"):
        text = "module {\n" + emit_func(m, attrs=f.attrs, type_syntax=syntax, name=f.name) + "}\n"
        assert normalise_mlir(text) == text
        [again] = parse_mlir(text, "again.mlir")
        assert again.ok, again.reason
        assert module_difference(m, again.module, strides=(syntax == "shaped")) is None
    inputs = inputs_for(m, 11)
    refs = evaluate(m, inputs)
    res = Pipeline(device, database=TuningDatabase(tmp_path / "t.json"), inject="").run(m, inputs=inputs)
    assert res.status == Status.OK, res.detail
    for got, ref in zip(res.outputs, refs, strict=False):
        got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
        assert got.shape == ref.shape
        if m.get(m.returns()[0]).shape.dtype.is_float:
            # a float32 gemm of up to 768 products: relative to the output's magnitude
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * float(np.max(np.abs(ref))))
        else:
            np.testing.assert_array_equal(got, ref)


def test_the_broadcast_result_stays_refused_with_its_reason():
    f = func(*REFUSED)
    assert not f.ok
    assert "!migraphx.shaped<4x8x3xi8, 0x1x0>" in f.reason and "broadcast" in f.reason
    assert "62:3" in f.reason


def test_what_the_funcs_hold():
    fp4 = func("fusion__e2e__mixr-gemm-fp4__mixr_rsp_rsp_quant_dot.mlir", "mlir_quant_dot_fp4").module
    qd = next(i for i in fp4.instructions if i.op == "quant_dot")
    assert [fp4.get(i).shape.dtype.name for i in qd.inputs] == ["f4E2M1FN", "f4E2M1FN", "f8E8M0FNU", "f8E8M0FNU"]
    assert qd.shape.dtype.name == "f32" and qd.shape.lens == (1, 256, 50272)
    assert "mlirtrace.scaled_by" not in qd.attrs
    from pytest_mlirtrace._internal.codegen import problem_of

    # rocMLIR's own key for it, as the file's EMITKEY line (rocmlir-gen --emit-tuning-key) gives it
    text = (ROCMLIR / "fusion__e2e__mixr-gemm-fp4__mixr_rsp_rsp_quant_dot.mlir").read_text(encoding="utf-8")
    emitkey = next(ln.split("EMITKEY:", 1)[1].strip() for ln in text.splitlines() if ln.startswith("// EMITKEY:"))
    assert problem_of(fp4).key() == emitkey
    key = parse_problem_key(emitkey)
    assert key.kind == "gemm" and key.fields["scaledGemm"] == "" and key.text == emitkey
    assert format_problem_key("gemm", {"t": "f4E2M1FN", "out_datatype": "f32", "transA": False, "transB": False,
                                       "scale_a_dtype": "f8E8M0FNU", "scale_b_dtype": "f8E8M0FNU",
                                       "transScaleA": False, "transScaleB": False, "g": 1, "m": 256, "n": 50272,
                                       "k": 768}) == emitkey
    unscaled = func("Dialect__MIGraphX__quant-dot-decompose.mlir", "quant_dot_no_scales").module
    assert problem_of(unscaled).key() == ("-t f8E4M3FN -out_datatype f32 -transA false -transB false -g 1 -m 16 "
                                          "-n 16 -k 512")
    signed = func("Dialect__MIGraphX__realize-int4.mlir", "basic_signed").module
    up = next(i for i in signed.instructions if i.op == "unpack")
    assert up.attrs == {"axis": 1, "isUnsigned": False} and up.shape.lens == (8, 4)


# ------------------------------------------------------------ the formats --
# Values from the formats' definitions (sign, exponent with its bias, mantissa; subnormals at exponent 0)
E4M3FN = {0x00: 0.0, 0x01: 2.0 ** -9, 0x07: 7 * 2.0 ** -9, 0x08: 2.0 ** -6, 0x38: 1.0, 0x3C: 1.5, 0x40: 2.0,
          0x7E: 448.0, 0x80: -0.0, 0xB8: -1.0, 0xFE: -448.0}
E5M2 = {0x00: 0.0, 0x01: 2.0 ** -16, 0x04: 2.0 ** -14, 0x3C: 1.0, 0x3E: 1.5, 0x7B: 57344.0, 0x7C: math.inf,
        0xFC: -math.inf, 0xBC: -1.0}
E8M0 = {0x7F: 1.0, 0x80: 2.0, 0x7E: 0.5, 0x00: 2.0 ** -127, 0xFE: 2.0 ** 127, 0x76: 2.0 ** -9}
FP4 = {0: 0.0, 1: 0.5, 2: 1.0, 3: 1.5, 4: 2.0, 5: 3.0, 6: 4.0, 7: 6.0,
       8: -0.0, 9: -0.5, 10: -1.0, 11: -1.5, 12: -2.0, 13: -3.0, 14: -4.0, 15: -6.0}
NANS = {"f8E4M3FN": [0x7F, 0xFF], "f8E5M2": [0x7D, 0x7E, 0x7F, 0xFF], "f8E8M0FNU": [0xFF], "f4E2M1FN": []}


@pytest.mark.parametrize("name,table", [("f8E4M3FN", E4M3FN), ("f8E5M2", E5M2), ("f8E8M0FNU", E8M0),
                                        ("f4E2M1FN", FP4)])
def test_narrow_float_decode_matches_the_format(name, table):
    dt = BY_NAME[name]
    assert dt.np == np.uint8 and dt.itemsize == 1 and dt.is_float
    codes = np.array(list(table), dtype=np.uint8)
    got = to_compute(codes, dt)
    want = np.array(list(table.values()))
    np.testing.assert_array_equal(got, want)
    assert list(np.signbit(got)) == list(np.signbit(want))        # -0 is -0
    assert np.all(np.isnan(to_compute(np.array(NANS[name], dtype=np.uint8), dt)))
    # every non-NaN code decodes to a distinct value (but +-0)
    allv = to_compute(np.arange(1 << (4 if name == "f4E2M1FN" else 8), dtype=np.uint8), dt)
    finite = allv[~np.isnan(allv)]
    assert len(set(finite.tolist())) == len(finite) - (0 if name == "f8E8M0FNU" else 1)


def test_narrow_float_encode():
    # f8E8M0FNU from a float keeps its exponent field (MLIR's truncf expansion): 1.6 -> 1.0, not 2.0
    e8 = narrow_encode(np.array([1.6, 0.3, -4.0, 2.0 ** 127, math.inf, math.nan, 1.0]), "f8E8M0FNU")
    assert e8.tolist() == [0x7F, 0x7D, 0x81, 0xFE, 0xFF, 0xFF, 0x7F]
    # the others round to nearest, ties to the even code
    fp4 = narrow_encode(np.array([0.25, 0.75, 1.25, 2.5, 5.0, 7.0, 100.0, -1.25, -0.2]), "f4E2M1FN")
    assert fp4.tolist() == [0, 2, 2, 4, 6, 7, 7, 10, 8]
    e4 = narrow_encode(np.array([1.0625, 1.1875, 464.0, 465.0, -3.0, 2.0 ** -10]), "f8E4M3FN")
    assert e4.tolist() == [0x38, 0x3A, 0x7E, 0x7F, 0xC4, 0x00]
    e5 = narrow_encode(np.array([1.125, 61440.0, 60000.0, -1.0]), "f8E5M2")
    assert e5.tolist() == [0x3C, 0x7C, 0x7B, 0xBC]
    assert from_compute(np.array([6.0]), BY_NAME["f4E2M1FN"]).tolist() == [7]


def test_narrow_random_inputs_are_valid_codes():
    m = Module()
    for i, name in enumerate(("f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN")):
        m.add_param(f"x{i}", name, [64, 64])
    m.add_return("x0")
    ins = random_inputs(m, 5)
    for p in m.params():
        v = to_compute(ins[p.param], p.shape.dtype)
        assert ins[p.param].dtype == np.uint8 and np.all(np.isfinite(v))
    assert ins["x3"].max() <= 15 and len(np.unique(ins["x3"])) == 16
    e8 = to_compute(ins["x2"], BY_NAME["f8E8M0FNU"])
    assert e8.min() >= 2.0 ** -8 and e8.max() <= 2.0 ** 8


def test_unpack_oracle_by_hand():
    # bytes along axis 1: 0x21 -> (1, 2), 0xF7 -> (7, -1 | 15), 0x80 -> (0, -8 | 8), 0x09 -> (-7 | 9, 0)
    x = np.array([[0x21, 0xF7], [0x80, 0x09]], dtype=np.uint8).view(np.int8)
    assert unpack(x, 1, False).tolist() == [[1, 2, 7, -1], [0, -8, -7, 0]]
    assert unpack(x, 1, True).tolist() == [[1, 2, 7, 15], [0, 8, 9, 0]]
    # along axis 0: column j's bytes give rows 2i (low nibble) and 2i + 1 (high)
    assert unpack(x, 0, False).tolist() == [[1, 7], [2, -1], [0, -7], [-8, 0]]
    m = Module()
    m.add_param("x", "i8", [2, 2])
    m.add_return(m.add("unpack", "x", axis=-1, isUnsigned=False))
    [out] = evaluate(m, {"x": x})
    assert out.dtype == np.int8 and out.tolist() == [[1, 2, 7, -1], [0, -8, -7, 0]]


@pytest.mark.parametrize("name", ["f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN"])
def test_kernel_decodes_every_code(name, device, tmp_path):
    """A convert of every code to f32, on the device: the OpenCL decode helpers against the format tables."""
    from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase

    n = 16 if name == "f4E2M1FN" else 256
    m = Module()
    m.add_param("x", name, [n])
    m.add_return(m.add("convert", "x", target_type=BY_NAME["f32"].type_id))
    codes = np.arange(n, dtype=np.uint8)
    res = Pipeline(device, database=TuningDatabase(tmp_path / "t.json"), inject="").run(m, inputs={"x": codes})
    assert res.status == Status.OK, res.detail
    want = to_compute(codes, BY_NAME[name]).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(res.outputs[0]), want)


def test_kernel_rounds_to_e8m0_by_its_exponent(device, tmp_path):
    from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase

    m = Module()
    m.add_param("x", "f32", [12])
    e8 = m.add("convert", "x", target_type=BY_NAME["f8E8M0FNU"].type_id)
    m.add_return(m.add("convert", e8, target_type=BY_NAME["f32"].type_id))
    x = np.array([1.6, 0.3, -4.0, 1.0, 3.0e38, 1e-30, 7.99, 0.75, -0.001, 2.0 ** -126, 1e5, 0.5], np.float32)
    res = Pipeline(device, database=TuningDatabase(tmp_path / "t.json"), inject="").run(m, inputs={"x": x})
    assert res.status == Status.OK, res.detail
    want = [1.0, 0.25, 4.0, 1.0, 2.0 ** 127, 2.0 ** -100, 4.0, 0.5, 2.0 ** -10, 2.0 ** -126, 65536.0, 0.5]
    np.testing.assert_array_equal(np.asarray(res.outputs[0], np.float64), want)
