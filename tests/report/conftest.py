"""A real reproducer directory, tuning database and fuzz report, made once for the report's tests by running
mlirtrace as a user does: clean tunes fill a tuning database, tunes with planted faults write reproducers
(a wrong result from a missing barrier, a crash from an out-of-bounds write: some solutions fail, some
pass), ``repro run`` records their replay, a short fuzz writes its JSON report. About a minute."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# a dot + add whose K (13) and N (7) are not multiples of the tile sizes: the planted faults show on it
DOT_ODD = """\
func.func @mlir_dot_add(%arg0: tensor<1x5x13xf32>, %arg1: tensor<1x13x7xf32>, %arg2: tensor<1x5x7xf32>) -> tensor<1x5x7xf32> attributes {arch = "pocl-cpu", kernel = "mixr", num_cu = 2 : i64} {
  %0 = migraphx.dot(%arg0, %arg1) : (tensor<1x5x13xf32>, tensor<1x13x7xf32>) -> tensor<1x5x7xf32>
  %1 = migraphx.add(%0, %arg2) : (tensor<1x5x7xf32>, tensor<1x5x7xf32>) -> tensor<1x5x7xf32>
  return %1 : tensor<1x5x7xf32>
}
"""  # noqa: E501 - MLIR text as written


@dataclass
class Inputs:
    root: Path
    repros: Path
    db: Path
    fuzz: Path
    env: dict


def cli(*args, env, timeout=600, check=None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, env=env)
    if check is not None:
        assert p.returncode == check, \
            f"mlirtrace {' '.join(map(str, args))}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="session")
def inputs(tmp_path_factory) -> Inputs:
    """Made once per run: under pytest-xdist the first worker to ask makes it in the run's shared temporary
    directory (under a file lock) and the others read it there."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent          # the directory above every worker's own
    root = shared / "report-inputs"
    with FileLock(str(shared / "report-inputs.lock")):
        if not (root / "DONE").is_file():
            if root.exists():           # a worker that died while making it
                import shutil
                shutil.rmtree(root)
            root.mkdir()
            made = _make(root)
            (root / "DONE").write_text("")
            return made
    return _inputs(root)


def _inputs(root: Path) -> Inputs:
    env = {k: v for k, v in os.environ.items() if k not in ("MLIRTRACE_INJECT", "MLIRTRACE_REPRO_DIR")}
    env["MLIRTRACE_TUNING_DB"] = str(root / "tuning.json")
    return Inputs(root, root / "reproducers", root / "tuning.json", root / "fuzz.json", env)


def _make(root: Path) -> Inputs:
    made = _inputs(root)
    repros, fuzz, env = made.repros, made.fuzz, made.env
    mod = root / "dot_odd.mlir"
    mod.write_text(DOT_ODD)
    cli("tune", ROOT / "examples" / "small_dot_add.mlir", env=env, check=0)
    cli("tune", mod, env=env, check=0)
    for fault in ("missing_barrier", "oob_write_n_edge"):       # some solutions fail: exit 1, a reproducer
        cli("tune", mod, "--no-database", "--repro-dir", repros, env=dict(env, MLIRTRACE_INJECT=fault), check=1)
    cli("repro", "run", repros, "--timeout", "200", env=env, check=1)       # both still reproduce
    p = cli("fuzz", "--budget", "6", "--seed", "1", "--jobs", "1", "--quiet", "--repro-dir", root / "fuzz-repros",
            "--database", root / "fuzz-db", "--report", fuzz, env=env)
    assert p.returncode in (0, 1) and fuzz.is_file(), p.stdout + p.stderr     # 1: it found something: shown too
    return made
