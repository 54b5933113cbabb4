"""``mlirtrace fuzz`` finds every planted fault and writes a reproducer that fails while the fault is on
and passes once it is off; a clean tree's short fuzz finds nothing. Run as subprocesses, as a user would.

One fast representative (wrong_transpose_stride) runs by default; every fault runs with ``-m slow``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mlirtrace.codegen import FAULTS

# (budget, extra args) per fault: the hang needs a shorter timeout to shrink within its budget
BUDGETS = {
    "wrong_transpose_stride": (60, []),
    "k_tail_off_by_one": (60, []),
    "missing_barrier": (90, []),
    "oob_write_n_edge": (90, []),
    "infinite_loop": (90, ["--timeout", "6"]),
}


def _env(inject: str | None) -> dict:
    env = dict(os.environ)
    env.pop("MLIRTRACE_INJECT", None)
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    env["PYTHONUNBUFFERED"] = "1"
    return env


def fuzz(tmp: Path, inject: str | None, budget: float, *extra: str, seed: int = 1):
    report = tmp / "report.json"
    cmd = [sys.executable, "-m", "pytest_mlirtrace.cli.main", "fuzz", "--budget", str(budget), "--seed", str(seed),
           "--repro-dir", str(tmp / "repro"), "--database", str(tmp / "db"), "--report", str(report), *extra]
    p = subprocess.run(cmd, cwd=tmp, env=_env(inject), capture_output=True, text=True, timeout=budget + 120)
    data = json.loads(report.read_text()) if report.exists() else None
    return p, data


def run_repro(script: str, inject: str | None, timeout: float = 180):
    return subprocess.run([sys.executable, script, "--quiet"], env=_env(inject), capture_output=True, text=True,
                          timeout=timeout)


def check_found(tmp: Path, fault: str, *more: str) -> dict:
    budget, extra = BUDGETS[fault]
    p, data = fuzz(tmp, fault, budget, *extra, *more)
    out = p.stdout + p.stderr
    assert data is not None, out
    assert p.returncode == 1, f"exit {p.returncode}, expected 1 (new failure found)\n{out}"
    assert data["findings"], out
    # beyond the budget: writing what was found (two runs of its reproducer: fault on, fault off)
    assert data["elapsed_s"] <= budget + 30, f"ran {data['elapsed_s']}s on a {budget}s budget"
    # the first finding is the fault (gemm); its reproducer fails with the fault and passes without it
    gemm = [f for f in data["findings"] if {"dot", "quant_dot"} & set(f["ops"])]
    assert gemm, f"no gemm finding for {fault}: {data['findings']}"
    f = gemm[0]
    assert f["path"].endswith(".py") and Path(f["path"]).exists()
    assert Path(f["ticket"]).exists()
    on = run_repro(f["path"], fault, timeout=120)
    assert on.returncode != 0, f"reproducer passes with {fault} on:\n{on.stdout}{on.stderr}"
    off = run_repro(f["path"], None, timeout=120)
    assert off.returncode == 0, f"reproducer fails with {fault} off:\n{off.stdout}{off.stderr}"
    # and so the fuzz, which checked that too, calls it planted
    assert "> Planted bug: it fails with the seeded fault" in Path(f["ticket"]).read_text()
    # the summary names the reproducer and the run's numbers
    assert "cases/s" in p.stdout and f["path"] in p.stdout
    assert "fuzz" in p.stderr      # progress went to stderr
    return data


def test_fuzz_finds_wrong_transpose_stride_and_the_reproducer_fails_only_with_it(tmp_path):
    data = check_found(tmp_path, "wrong_transpose_stride", "--max-findings", "1")
    f = next(f for f in data["findings"] if "dot" in f["ops"])
    assert f["kind"] == "wrong"
    # shrunk: a transposed operand and the dot, small dims
    assert f["ops"].count("dot") == 1 and len(f["ops"]) <= 4, f


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(set(FAULTS) - {"wrong_transpose_stride"}))
def test_fuzz_finds_each_planted_fault(tmp_path, fault):
    check_found(tmp_path, fault)


def test_every_planted_fault_has_a_test():
    assert set(FAULTS) <= set(BUDGETS)


def test_clean_tree_short_fuzz_finds_nothing(tmp_path):
    p, data = fuzz(tmp_path, None, 20)
    assert p.returncode == 0, p.stdout + p.stderr
    assert data["findings"] == [] and data["failures"] == {}, data
    assert data["cases"] > 0
    assert not (tmp_path / "repro" / "INDEX.json").exists()


@pytest.mark.slow
def test_clean_tree_longer_fuzz_finds_nothing(tmp_path):
    p, data = fuzz(tmp_path, None, 120, "--max-dim", "32", seed=7)
    assert p.returncode == 0, p.stdout + p.stderr
    assert data["findings"] == [], data


@pytest.mark.slow
def test_a_second_run_starts_from_the_database_and_reports_nothing_new(tmp_path):
    p1, d1 = fuzz(tmp_path, "k_tail_off_by_one", 60)
    assert p1.returncode == 1 and d1["findings"], p1.stdout + p1.stderr
    p2, d2 = fuzz(tmp_path, "k_tail_off_by_one", 30)
    # the replayed example fails at once; its signature is already in the repro dir: not new
    assert d2["findings"] and d2["findings"][0]["first_found_s"] < 10, d2
    assert all(not f["new"] for f in d2["findings"] if f["signature"] == d1["findings"][0]["signature"])
