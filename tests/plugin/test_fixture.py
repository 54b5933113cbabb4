"""The fixture's API and options: trace levels, compile/tune/check=False, repeats across sessions, no-repro."""
from __future__ import annotations

import json

pytest_plugins = ["pytester"]

TRACED = '''
from mods import DOT_K4, DOT_T


def test_traced(mlirtrace):
    tr = mlirtrace.tune(DOT_K4, solutions=["1,1,4,1,1,1,0,4"])
    assert tr.best is not None and mlirtrace.last_span.solution == "1,1,4,1,1,1,0,4"
    assert [type(e).__name__ for e in mlirtrace.log.events][:2] == ["ModuleLowered", "BenchmarkStarted"]
    assert mlirtrace.log.bench_table().splitlines()[1].startswith("1,1,4,1,1,1,0,4  ok")
    assert False, "look at the captured trace"
'''

API = '''
import pytest
from mods import DOT_T


def test_compile_build_error(mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "build_error")
    mlirtrace.compile(DOT_T)


def test_unchecked_failure_then_assert(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    res = mlirtrace.run(DOT_T, check=False)
    assert res.status == "wrong" and [r.kind for r in mlirtrace.failures] == ["wrong"]
    c = mlirtrace.compile(DOT_T)
    assert c.ok and mlirtrace.last_span is c.span and len(mlirtrace.spans) == 2
    assert res.ok, "the unchecked wrong result is what gets the reproducer"
'''


def _inner_run(inner, *args):
    return inner.runpytest("-p", "no:cacheprovider", *args)


def test_trace_option_sets_both_dumps_and_env_vars_work_alone(inner, monkeypatch):
    inner.makepyfile(test_traced=TRACED)
    quiet = _inner_run(inner, "--mlir-no-repro")
    quiet.assert_outcomes(failed=1)
    assert "Benchmarking gpu::mlir_op" not in quiet.stdout.str() and "mlir hash:" not in quiet.stdout.str()
    assert "reproducers are off" in quiet.stdout.str()
    assert not (inner.path / "reproducers").exists()
    traced = _inner_run(inner, "--mlir-trace", "--mlir-no-repro")
    traced.stdout.fnmatch_lines(["a = @param:a -> float_type, {1, 4, 3}, {12, 3, 1}",
                                 "*func.func @mlir_transpose_dot*", "mlir hash: *",
                                 "Benchmarking gpu::mlir_op: 1 configs", "Problem: pocl-cpu*-m 3 -n 2 -k 4",
                                 "Benchmarking solution: 1,1,4,1,1,1,0,4", "*ms", "Fastest solution: 1,1,4,1,1,1,0,4"])
    monkeypatch.setenv("MIGRAPHX_TRACE_BENCHMARKING", "1")
    env_only = _inner_run(inner, "--mlir-no-repro")
    out = env_only.stdout.str()
    assert "Benchmarking solution: 1,1,4,1,1,1,0,4" in out and "mlir hash:" not in out


def test_compile_unchecked_failures_and_repeats_across_sessions(inner):
    inner.makepyfile(test_api=API)
    first = _inner_run(inner)
    first.assert_outcomes(failed=2)
    reports = {r.nodeid.split("::")[-1]: r for r in first.reprec.getreports("pytest_runtest_logreport")
               if r.when == "call"}
    sig_build = dict(reports["test_compile_build_error"].user_properties)["mlirtrace_signature"]
    sig_wrong = dict(reports["test_unchecked_failure_then_assert"].user_properties)["mlirtrace_signature"]
    assert sig_build.startswith("build_error-") and sig_wrong.startswith("wrong-")
    assert "mlirtrace: build_error: mlir_transpose_dot" in reports["test_compile_build_error"].longreprtext
    first.stdout.fnmatch_lines([f"new    {sig_build}  *(count 1: test_api.py::test_compile_build_error)",
                                "2 reproducer(s), 2 new, *"])
    # the same failures in a later session: no new files, the counts go up, the summary says so
    files = sorted(p.name for p in (inner.path / "reproducers").iterdir())
    second = _inner_run(inner)
    second.assert_outcomes(failed=2)
    assert sorted(p.name for p in (inner.path / "reproducers").iterdir()) == files
    second.stdout.fnmatch_lines([f"repeat {sig_build}  *(count 2: test_api.py::test_compile_build_error)",
                                 "2 reproducer(s), 0 new, *"])
    index = json.loads((inner.path / "reproducers" / "INDEX.json").read_text())["reproducers"]
    assert index[sig_wrong]["count"] == 2 and index[sig_build]["count"] == 2
    assert "seen before: 2 occurrences" in dict(
        [r for r in second.reprec.getreports("pytest_runtest_logreport") if r.when == "call"][0].sections
    )["mlirtrace: reproducer"]
