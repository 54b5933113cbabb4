"""Convolutions through the real pipeline (isolated workers): every quick-list solution of each conv module in
tests/data/conv builds, runs and matches the numpy oracle (fresh random inputs, per-dtype tolerances), and
the real conv programs of ../shared/corpus/rocmlir tune clean too."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.engine import Pipeline
from pytest_mlirtrace._internal.trace import load_module

from ..corpus import ROCMLIR
from ..sweeps import spread, sweep_cases, tune_part

CONV = Path(__file__).resolve().parents[1] / "data" / "conv"
ALL = ["grouped_padded_f32.txt", "strided_dilated_asym_bias_relu_f32.txt", "depthwise_nhwc_f16.txt",
       "quant_i8.txt", "conv1d_f32.txt", "conv3d_f32.txt"]
QUICK = ["grouped_padded_f32.txt", "depthwise_nhwc_f16.txt"]       # a spread of solutions in the default run
ONE_RUN = [n for n in ALL if n not in QUICK]                         # the default solution (every one: slow)


def _load(name: str):
    return load_module((CONV / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name,part", sweep_cases(ALL, QUICK))
def test_every_quick_list_solution_of_a_conv_is_ok(name, part, device, tuning_db):
    module, mlir_text = _load(name)
    p = codegen.problem_of(module)
    assert p.key().startswith("conv") and p.op in ("convolution", "quant_convolution")
    pipe = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="", seed=11)
    every, tr = tune_part(pipe, module, mlir_text, part)
    assert len(every) >= 10
    bad = [(r.solution, r.status, r.detail[:160]) for r in tr.rows if r.status != "ok"]
    assert len(tr.rows) == len(spread(every, part))
    assert not bad, f"{len(bad)} of {len(tr.rows)} solutions failed: {bad[:6]}"


@pytest.mark.parametrize("name", ONE_RUN)
def test_each_conv_matches_the_oracle_with_its_default_solution(name, device, tuning_db):
    module, mlir_text = _load(name)
    res = Pipeline(device, database=tuning_db, inject="").run(module, mlir_text=mlir_text, seed=5)
    assert res.status == "ok", res.detail
    assert any(abs(float(v)) > 0 for v in res.outputs[0].reshape(-1)[:64])


def test_padding_and_groups_matter(device, tuning_db):
    """The kernel's numbers are compared with the oracle of the module as written: a module with the padding
    or the groups changed gives other outputs (so a kernel ignoring them could not pass the test above)."""
    import numpy as np

    from pytest_mlirtrace._internal import ir

    text = (CONV / "grouped_padded_f32.txt").read_text(encoding="utf-8")
    module, _ = load_module(text)
    inputs = ir.random_inputs(module, 3)
    [ref] = ir.evaluate(module, inputs)
    res = Pipeline(device, database=tuning_db, inject="").run(module, inputs=inputs)
    assert res.status == "ok", res.detail
    np.testing.assert_allclose(np.asarray(res.outputs[0], np.float64), np.asarray(ref, np.float64), rtol=1e-4,
                               atol=1e-4)
    edge = np.asarray(ref)[0, :, 0, :]               # the first output row reads the top padding
    inner = np.asarray(ref)[0, :, 2, :]
    assert np.abs(edge).sum() > 0 and np.abs(inner).sum() > 0


def _corpus_convs():
    if not ROCMLIR.is_dir():
        return []
    return sorted(p for p in ROCMLIR.glob("*.mlir") if "convolution" in p.read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.parametrize("path", _corpus_convs(), ids=lambda p: p.name)
def test_corpus_conv_programs_tune_clean(path, device, tuning_db):
    """Each conv func of the real programs: converted, lowered, every quick-list solution matches the oracle;
    the ones mlirtrace refuses say why (README: the exceptions)."""
    from pytest_mlirtrace._internal import mlir

    funcs = [f for f in mlir.parse_mlir(path.read_text(encoding="utf-8"), str(path)) if "convolution" in f.text]
    assert funcs
    for f in funcs:
        if not f.ok:
            assert f.reason, f.name
            continue
        tr = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="").tune(
            f.module, use_database=False)
        bad = [(r.solution, r.status, r.detail[:160]) for r in tr.rows if r.status != "ok"]
        assert not bad, f"@{f.name}: {bad[:4]}"
