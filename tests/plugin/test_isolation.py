"""A backend crash in a kernel run started from a test fails that test only: the rest of the suite runs
(kernels run in worker processes, never in the pytest process). An environment failure stops the run
once with exit status 4 instead of failing every test."""
from __future__ import annotations

import os

pytest_plugins = ["pytester"]

INNER = '''
from mods import DOT_T


def test_before(mlirtrace):
    assert mlirtrace.run(DOT_T).ok


def test_backend_crash(mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "crash")        # the kernel writes through a null pointer: SIGSEGV
    mlirtrace.run(DOT_T)


def test_after(mlirtrace):
    assert mlirtrace.run(DOT_T, seed=4).ok     # on the worker that replaced the crashed one


def test_plain():
    assert 1 + 1 == 2
'''


def test_a_backend_crash_fails_one_test_and_the_suite_goes_on(inner):
    inner.makepyfile(test_inner=INNER)
    res = inner.runpytest("-p", "no:cacheprovider", "--mlir-no-repro")
    res.assert_outcomes(passed=3, failed=1)
    crash = [r for r in res.reprec.getreports("pytest_runtest_logreport")
             if r.when == "call" and r.failed]
    assert [r.nodeid.split("::")[-1] for r in crash] == ["test_backend_crash"]
    assert "mlirtrace: crash: mlir_transpose_dot" in crash[0].longreprtext
    assert "SIGSEGV" in crash[0].longreprtext or "signal" in crash[0].longreprtext


def test_no_worker_can_start_stops_the_run_once_with_exit_4(inner, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    (broken / "pyopencl").mkdir(parents=True)
    (broken / "pyopencl" / "__init__.py").write_text("raise ImportError('planted: no pyopencl here')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    inner.makepyfile(test_inner=INNER)
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "--mlir-no-repro", "--mlir-device", "pocl")
    assert res.ret == 4, res.stdout.str()
    out = res.stdout.str() + res.stderr.str()
    assert out.count("mlirtrace: environment:") == 1 and "no pyopencl here" in out
    assert "no tests ran" in out                 # stopped at the first use, not one failure per test
