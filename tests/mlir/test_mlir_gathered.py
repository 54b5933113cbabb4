"""The real MLIR texts gathered under tests/data/mlir (rocMLIR's and MIGraphX's own tests, 2022 to now), each
recorded in tests/data/SOURCES.tsv: every func parses, verifies, re-emits to text that parses back to the same
module and runs on the numpy oracle; a func that is refused says why, at its line:col, for a reason rocMLIR
would refuse it too or because the op is not lowered here -- never a traceback."""
from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.ir import evaluate, random_inputs
from pytest_mlirtrace._internal.mlir import emit_func, module_difference, normalise_mlir, parse_mlir
from pytest_mlirtrace._internal.vocab import Status

from ..settings import DEVICE
from .mlir_helpers import macs

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = sorted((DATA / "mlir").glob("*.mlir"))
EVAL_BUDGET = 2e8

# file -> [(func, status)], in file order
EXPECTED = {
    "migraphx__test-gpu-mlir-cpp__2022-func-main.mlir": [("main", "ok"), ("main", "ok")],
    "rocmlir__Conversion__MIGraphXToTosa__migraphx-to-tosa-non-contiguous-strides.mlir": [
        ("mlir_dot_sigmoid", "ok"), ("mlir_dot_sigmoid", "ok"), ("no_unit_stride", "invalid"),
        ("stride_not_divisible", "invalid"), ("write_to_broadcast", "invalid"), ("stride_too_small", "invalid")],
    "rocmlir__Conversion__MIGraphXToTosa__migraphx-to-tosa__2022-func.mlir": [
        ("ConvBias", "ok"), ("ConvNoBias", "ok")],     # migraphx.constant: the 2022 literal; a channel bias
    "rocmlir__Conversion__MIGraphXToTosa__mixr-to-tosa-ops__2022-func.mlir": [
        ("matmul", "ok"), ("matmul_larger_batch", "ok"), ("func_power", "ok"), ("func_recip", "ok"),
        ("func_sqrt", "ok")],
    "rocmlir__Conversion__MIGraphXToTosa__mixr-to-tosa-ops__2023-mixed-forms.mlir": [
        (n, "ok") for n in ("matmul", "matmul_larger_batch", "matmul_rank2", "matmul_broadcast", "func_power",
                            "func_recip", "func_sqrt", "func_softmax_1d", "func_softmax_4d", "func_mbcast")],
    "rocmlir__fusion__attention-real__2023-softmax-attr-after-operands.mlir": [
        ("mlir_attention_real", "ok"), ("mlir_attention", "unsupported")],
    "rocmlir__fusion__dot-broadcast-add__2023-typed-int-list.mlir": [("dot_broadcast_add", "ok")],
    "rocmlir__fusion__mixr-attention__2023-mhal-softmax-attr-after-operands.mlir": [
        ("mlir_attention", "ok"), ("mlir_attention_wrapper", "unsupported"), ("mlir_attention", "ok")],
}

# why a func may be refused: what rocMLIR refuses too, or what is not lowered here
ALLOWED_REFUSALS = [
    r"^op func\.call \(calls @\w+\) at \d+:\d+ not supported$",          # a test harness wrapper, not a kernel
    r"^op mhal\.launch at \d+:\d+ not supported \(written in the custom syntax",
    r"^migraphx\.sigmoid at \d+:\d+: result strides \[[\d, ]+\](: the smallest stride is| make a broadcast|"
    r": stride \d+ is (smaller than|not a multiple))",                  # rocMLIR's layout rules
]


def _sources() -> dict[str, list[str]]:
    with open(DATA / "SOURCES.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["file", "kind", "source", "note"]
    return {r[0]: r for r in rows[1:] if r}


def test_every_gathered_file_has_its_source_recorded():
    src = _sources()
    for p in FILES:
        row = src.get(f"mlir/{p.name}")
        assert row is not None, f"{p.name} is not in tests/data/SOURCES.tsv"
        assert re.search(r"ROCm/(rocMLIR|AMDMIGraphX)|github\.com/", row[2]), row
    assert set(EXPECTED) == {p.name for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_gathered_file(path):
    funcs = parse_mlir(path.read_text(encoding="utf-8"), path.name)
    assert [(f.name, f.status) for f in funcs] == EXPECTED[path.name]
    for f in funcs:
        if not f.ok:
            assert re.search(r"\bat \d+:\d+", f.reason), f.reason
            assert any(re.search(p, f.reason) for p in ALLOWED_REFUSALS), f.reason
            continue
        f.module.verify()
        syntax = "shaped" if f.type_syntax in ("shaped", "mixed") else "tensor"
        again_text = "module {\n" + emit_func(f.module, attrs=f.attrs, type_syntax=syntax, name=f.name) + "}\n"
        assert normalise_mlir(again_text) == again_text
        [again] = parse_mlir(again_text, "again.mlir")
        assert again.ok, again.reason
        assert module_difference(f.module, again.module, strides=(syntax == "shaped")) is None
        if macs(f.module) <= EVAL_BUDGET:
            outs = evaluate(f.module, random_inputs(f.module, seed=7))
            assert [o.shape for o in outs] == [s.lens for s in f.module.output_shapes()]


@pytest.fixture(scope="module")
def device():
    from pytest_mlirtrace._internal.runtime import resolve_device

    return resolve_device(DEVICE)


SMALL_RUNS = [("rocmlir__Conversion__MIGraphXToTosa__mixr-to-tosa-ops__2022-func.mlir", "func_sqrt", 1e-5),
              ("rocmlir__Conversion__MIGraphXToTosa__mixr-to-tosa-ops__2022-func.mlir", "func_power", 1e-5),
              ("rocmlir__fusion__dot-broadcast-add__2023-typed-int-list.mlir", "dot_broadcast_add", 1e-5),
              ("migraphx__test-gpu-mlir-cpp__2022-func-main.mlir", "main", 1e-5),
              ("rocmlir__Conversion__MIGraphXToTosa__mixr-to-tosa-ops__2023-mixed-forms.mlir", "func_softmax_4d",
               1e-5),
              ("rocmlir__Conversion__MIGraphXToTosa__migraphx-to-tosa__2022-func.mlir", "ConvBias", 1e-4)]


@pytest.mark.parametrize("name,func,tol", SMALL_RUNS, ids=[f"{f}-{n[:40]}" for n, f, _ in SMALL_RUNS])
def test_small_gathered_funcs_run_and_match_the_oracle(name, func, tol, device, tmp_path):
    import numpy as np

    from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase

    f = next(f for f in parse_mlir((DATA / "mlir" / name).read_text(encoding="utf-8"), name) if f.name == func)
    m = f.module
    inputs = random_inputs(m, 29)
    if func == "func_power":       # pow of a negative base is NaN on both sides; keep the bases positive
        inputs = {k: (np.abs(v) + 0.5 if k == m.params()[0].param else v) for k, v in inputs.items()}
    refs = evaluate(m, inputs)
    res = Pipeline(device, database=TuningDatabase(tmp_path / "t.json"), inject="").run(m, inputs=inputs)
    assert res.status == Status.OK, res.detail
    for got, ref in zip(res.outputs, refs, strict=False):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(ref, np.float64), rtol=tol, atol=tol)


def _runnable():
    out = []
    for p in FILES:
        for i, (name, status) in enumerate(EXPECTED[p.name]):
            if status == "ok":
                out.append(pytest.param(p.name, i, id=f"{p.name[:48]}-{i}-{name}"))
    return out


@pytest.mark.parametrize("name,index", _runnable())
def test_every_gathered_func_runs_and_matches_the_oracle(name, index, device):
    """Each func the parser takes is compiled (default solution) and run through the isolated runtime, and its
    outputs match the oracle within the computation's error bounds (the pipeline's own check, on inputs drawn
    from a fixed seed)."""
    from pytest_mlirtrace._internal.engine import MemoryDatabase, Pipeline

    f = parse_mlir((DATA / "mlir" / name).read_text(encoding="utf-8"), name)[index]
    res = Pipeline(device, database=MemoryDatabase(), inject="", timeout_s=120).run(f.module, seed=5)
    assert res.status == Status.OK, f"{f.name}: {res.status}: {res.detail}"
