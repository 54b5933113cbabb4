"""Shared pieces of the plugin's end-to-end tests: tiny modules, a conftest that plants hand-made
kernel bugs (crash, build error) in the inner runs, and a way to run reproducers. (A module of its own:
``from conftest import ...`` would find whichever conftest was imported last.)"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# A^T (m=3, k=5) x B (k=5, n=2): builds in about a second; every gemm fault fires on it with any solution
# (wrong_transpose_stride: A transposed, m != k; infinite_loop and k_tail_off_by_one: k odd).
DOT_T = """\
a = @param:a -> float_type, {1, 5, 3}, {15, 3, 1}
b = @param:b -> float_type, {1, 5, 2}, {10, 2, 1}
@2 = transpose[permutation={0, 2, 1}](a) -> float_type, {1, 3, 5}, {15, 1, 3}
@3 = dot(@2,b) -> float_type, {1, 3, 2}, {6, 2, 1}
@4 = @return(@3)
"""
# k=4: k_tail_off_by_one fires for KPerBlock=8, not for KPerBlock=4
DOT_K4 = DOT_T.replace("{1, 5, 3}, {15, 3, 1}", "{1, 4, 3}, {12, 3, 1}").replace(
    "{1, 5, 2}, {10, 2, 1}", "{1, 4, 2}, {8, 2, 1}").replace("{1, 3, 5}, {15, 1, 3}", "{1, 3, 4}, {12, 1, 3}")

NASTY_COMMENT = '// tricky: """ \'\'\' \\ \\\\ \\n \\x00 ${HOME} {0} %s ``` </details> """) ; import os; os._exit(3) #'
NASTY_MLIR = NASTY_COMMENT + "\n" + """\
module {
""" + NASTY_COMMENT + """
  func.func @mlir_transpose_dot(%arg0: tensor<1x5x3xf32>, %arg1: tensor<1x5x2xf32>) -> tensor<1x3x2xf32> attributes {arch = "pocl-cpu", kernel = "mixr", num_cu = 7 : i64} {
    %0 = migraphx.transpose(%arg0) {permutation = [0, 2, 1]} : (tensor<1x5x3xf32>) -> tensor<1x3x5xf32>
    %1 = migraphx.dot(%0, %arg1) : (tensor<1x3x5xf32>, tensor<1x5x2xf32>) -> tensor<1x3x2xf32>
    return %1 : tensor<1x3x2xf32>
  }
}
"""  # noqa: E501 - MLIR text as written

# conftest of the inner runs: PLANT=crash / PLANT=build_error turns the lowered kernel into a hand-made
# broken one (the compiler itself stays correct, so the package path of the reproducer passes).
PLANTING_CONFTEST = r'''
import dataclasses
import os

import pytest

from pytest_mlirtrace._internal import codegen

_lower = codegen.lower
CRASH = "for (long j = 0; j < (1L << 40); j += 4096) ((__global volatile int *)0)[j] = 1;"


def _planted(module, solution, limits, inject=None):
    spec = _lower(module, solution, limits, inject=inject)
    plant = os.environ.get("PLANT")
    if plant == "build_error":
        return dataclasses.replace(spec, source=spec.source + "\n#error planted build error\n")
    if plant == "crash":
        at = spec.source.index("{", spec.source.index("void " + spec.kernel_name + "(")) + 1
        return dataclasses.replace(spec, source=spec.source[:at] + "\n  " + CRASH + spec.source[at:])
    return spec


@pytest.fixture(autouse=True)
def _plant(monkeypatch):
    monkeypatch.setattr(codegen, "lower", _planted)
'''


# appended to an inner run's conftest: each test's call report as pytest's API gives it (its sections by
# title, its captured stdout, its failure text) and its exception as the test process saw it (the notes
# Hypothesis attached, the names of its classes), one JSON file per test under ``reports/`` -- so the outer
# test reads a report's parts and what a library attached, never pytest's terminal layout or anyone's wording
REPORTS_HOOK = r'''

import json as _json
import pathlib as _pathlib


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        exc = call.excinfo.value if call.excinfo is not None else None
        out = _pathlib.Path(str(item.config.rootpath)) / "reports"
        out.mkdir(exist_ok=True)
        (out / f"{item.name}.json").write_text(_json.dumps({
            "outcome": rep.outcome, "sections": dict(rep.sections), "stdout": rep.capstdout,
            "longrepr": rep.longreprtext, "notes": [str(n) for n in getattr(exc, "__notes__", None) or []],
            "exception": [c.__name__ for c in type(exc).__mro__] if exc is not None else []}),
            encoding="utf-8")
'''


def inner_report(pytester, test: str) -> dict:
    """What ``REPORTS_HOOK`` kept of ``test``'s call report."""
    import json
    return json.loads((pytester.path / "reports" / f"{test}.json").read_text(encoding="utf-8"))


def repro_env(inject: str | None = None, no_package: bool = False, tmp: Path | None = None) -> dict:
    from pytest_mlirtrace._internal.runtime import ensure_opencl_env

    ensure_opencl_env(import_pyopencl=False)   # the OpenCL setup the standalone path finds in the environment
    env = {k: v for k, v in os.environ.items() if k not in ("MLIRTRACE_INJECT", "PLANT")}
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    if no_package:
        fake = tmp / "fakepkg" / "pytest_mlirtrace"
        fake.mkdir(parents=True, exist_ok=True)
        (fake / "__init__.py").write_text("raise ImportError('pytest_mlirtrace is not installed here')\n")
        env["PYTHONPATH"] = str(fake.parent)
    return env


def run_reproducers(jobs: list[tuple[Path, list[str], dict]],
                    timeout: float = 240) -> list[subprocess.CompletedProcess]:
    """Run reproducer scripts concurrently (each is its own process); results in order."""
    procs = [subprocess.Popen([sys.executable, str(script), *args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for script, args, env in jobs]
    out = []
    for p, (script, args, _env) in zip(procs, jobs, strict=True):
        text, _ = p.communicate(timeout=timeout)
        out.append(subprocess.CompletedProcess([str(script), *args], p.returncode, text, ""))
    return out


# the source of a helper for inner test files: dot_t(m), the MIGraphX text of A^T (m x 5) . B (5 x 2)
DOT_T_SOURCE = '''
def dot_t(m):
    """A^T (m x 5) . B (5 x 2): wrong_transpose_stride fires for every m but 5."""
    return (f"a = @param:a -> float_type, {{1, 5, {m}}}, {{{5 * m}, {m}, 1}}\\n"
            "b = @param:b -> float_type, {1, 5, 2}, {10, 2, 1}\\n"
            f"@2 = transpose[permutation={{0, 2, 1}}](a) -> float_type, {{1, {m}, 5}}, {{{5 * m}, 1, {m}}}\\n"
            f"@3 = dot(@2,b) -> float_type, {{1, {m}, 2}}, {{{2 * m}, 2, 1}}\\n"
            "@4 = @return(@3)\\n")
'''
