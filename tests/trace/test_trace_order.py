"""The seed's P1 and P2: dumps before the first compile, and per solution before it is benchmarked."""
import re

import pytest

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.engine import TuningDatabase
from pytest_mlirtrace._internal.ir.examples import seed_module
from pytest_mlirtrace._internal.trace import TraceSession

from ..settings import DEVICE


@pytest.fixture
def small_seed():
    return seed_module("f32", heads=2, seq=24, hd=8, n=40)


def _watch(session, out):
    """Record, at each build and each timed run, what had been printed by then."""
    seen = {"build": [], "run": []}
    pool = session.pipeline.pool
    build, run = pool.build, pool.run

    def build_spy(jobs, **kw):
        seen["build"].append(out())
        return build(jobs, **kw)

    def run_spy(job, **kw):
        seen["run"].append((job.label, out()))
        return run(job, **kw)

    pool.build, pool.run = build_spy, run_spy
    return seen, lambda: (setattr(pool, "build", build), setattr(pool, "run", run))


def test_env_vars_dump_module_and_mlir_before_first_compile_and_each_solution_before_benchmarking(
        monkeypatch, capsys, tmp_path, small_seed):
    monkeypatch.setenv("MIGRAPHX_TRACE_MLIR", "1")
    monkeypatch.setenv("MIGRAPHX_TRACE_BENCHMARKING", "1")
    s = TraceSession(DEVICE, database=TuningDatabase(tmp_path / "db.json"))
    printed = lambda: capsys.readouterr().out  # noqa: E731
    acc = []

    def out():
        acc.append(printed())
        return "".join(acc)

    seen, undo = _watch(s, out)
    try:
        low = s.pipeline.lower_module(small_seed)
        sols = codegen.quick_list(low.problem, s.device)[:5]
        res = s.tune(small_seed, solutions=sols)
    finally:
        undo()
    text = out()
    assert res.best is not None

    # P1: by the first build, the migraphx module and its MLIR were on stdout
    first_build = seen["build"][0]
    assert "mlir_main:pointwise4:@4 = transpose[permutation={0, 2, 1, 3}]" in first_build
    assert "func.func @mlir_transpose_reshape_dot_add" in first_build
    assert first_build.index("mlir_main:pointwise4:@9 = add") < first_build.index("func.func")

    # P2: before each timed run, that solution's line (with the problem key above it) was printed
    assert seen["run"], "nothing was benchmarked"
    for label, before in seen["run"]:
        assert before.rstrip().endswith(f"Benchmarking solution: {label}")
        assert f"Problem: {res.lowered.key}" in before

    lines = text.splitlines()
    i = lines.index(f"Benchmarking gpu::mlir_op: {len(sols)} configs")
    assert lines[i + 1] == f"Problem: {res.lowered.key}"
    body = lines[i + 2:]
    sol_lines = [n for n, ln in enumerate(body) if ln.startswith("Benchmarking solution: ")]
    assert len(sol_lines) == len(sols)
    for n in sol_lines:  # each solution's time (or failure) right after it
        assert re.fullmatch(r"[0-9.e+-]+ms|No binary|Failed: \w+", body[n + 1]), body[n + 1]
    assert f"Fastest solution: {res.best.span.solution}" in body


def test_level_3_prints_the_mlir_hash_with_every_solution(capsys, tmp_path, small_seed):
    from pytest_mlirtrace._internal.trace import TraceConfig

    s = TraceSession(DEVICE, config=TraceConfig(0, 3), database=TuningDatabase(tmp_path / "db.json"))
    low = s.pipeline.lower_module(small_seed)
    sols = codegen.quick_list(low.problem, s.device)[:3]
    s.tune(small_seed, solutions=sols)
    out = capsys.readouterr().out
    h = low.mlir_hash
    assert f"mlir hash: {h}" in out
    sol_lines = [ln for ln in out.splitlines() if ln.startswith("Benchmarking solution:")]
    assert len(sol_lines) == 3 and all(f"mlir {h}" in ln for ln in sol_lines)


def test_trace_off_prints_nothing_but_records_everything(capsys, monkeypatch, tmp_path, small_seed):
    monkeypatch.delenv("MIGRAPHX_TRACE_MLIR", raising=False)
    monkeypatch.delenv("MIGRAPHX_TRACE_BENCHMARKING", raising=False)
    s = TraceSession(DEVICE, database=TuningDatabase(tmp_path / "db.json"))
    low = s.pipeline.lower_module(small_seed)
    s.tune(small_seed, solutions=codegen.quick_list(low.problem, s.device)[:2])
    assert capsys.readouterr().out == ""
    kinds = [e.kind for e in s.log.events]
    assert kinds[0] == "ModuleLowered"
    assert kinds.index("BenchmarkStarted") < kinds.index("SolutionBenchmarking") < kinds.index("FastestChosen")
