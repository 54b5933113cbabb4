#!/usr/bin/env python
"""What the test suite costs on this machine, and what pytest-xdist gains (issue 31).

    python benchmarks/bench_suite.py [--what pinning,project,suite] [--rounds 1]

Every measurement starts from a cold kernel cache (a fresh ``MLIRTRACE_CACHE_DIR``), as a fresh clone does;
the variants of one measurement run one after the other in the same invocation, alternating over rounds:

* ``pinning``: two pytest processes side by side, each running ``tests/codegen/test_codegen_kernels.py``
  with its own cold cache, with PoCL's compute threads pinned (``POCL_AFFINITY=1``, the runtime's default)
  and unpinned (``0``, what the plugin sets in an xdist worker beside others); and one process alone.
  Each process's wall time.
* ``project``: a user's project of six tests through the ``mlirtrace`` fixture (each a distinct dot), serial
  (``-n 0``) and ``-n 2``; and 25 Hypothesis examples through ``mlirtrace_session.for_example()``.
* ``suite``: the whole default suite, ``-n 0`` and ``-n auto`` (about 25 minutes for both).

Prints one table per measurement: variant, wall seconds per round, median.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODEGEN = "tests/codegen/test_codegen_kernels.py"

PROJECT = textwrap.dedent('''
    from hypothesis import given, settings, strategies as st

    DOT = """\\
    a = @param:a -> float_type, {{1, {k}, {m}}}, {{{km}, {m}, 1}}
    b = @param:b -> float_type, {{1, {k}, 2}}, {{{k2}, 2, 1}}
    @2 = transpose[permutation={{0, 2, 1}}](a) -> float_type, {{1, {m}, {k}}}, {{{km}, 1, {m}}}
    @3 = dot(@2,b) -> float_type, {{1, {m}, 2}}, {{{m2}, 2, 1}}
    @4 = @return(@3)
    """


    def dot(m, k=5):
        return DOT.format(m=m, k=k, km=k * m, k2=k * 2, m2=m * 2)
    ''')
SIX = "".join(f"\n\ndef test_dot_{i}(mlirtrace):\n    assert mlirtrace.run(dot({8 + 7 * i}, k={16 + i})).ok\n"
              for i in range(6))
GIVEN = textwrap.dedent('''


    @settings(max_examples=25, deadline=None, database=None)
    @given(m=st.integers(2, 40))
    def test_dot(mlirtrace_session, m):
        with mlirtrace_session.for_example() as mlirtrace:
            assert mlirtrace.run(dot(m)).ok
    ''')


def _env(cache: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLIRTRACE_", "POCL_"))}
    env.update(MLIRTRACE_CACHE_DIR=cache, PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def _pytest(args: list[str], cwd: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(p: subprocess.Popen, t0: float, what: str) -> float:
    out, _ = p.communicate()
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{what}: exit {p.returncode}\n{out[-3000:]}")
    return wall


def pinning(tmp: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, aff, n in (("alone (pinned)", "1", 1), ("2 side by side, pinned", "1", 2),
                         ("2 side by side, unpinned", "0", 2)):
        t0 = time.monotonic()
        procs = [_pytest(["-n", "0", CODEGEN], ROOT, _env(tempfile.mkdtemp(dir=tmp), POCL_AFFINITY=aff))
                 for _ in range(n)]
        walls = [_wait(p, t0, name) for p in procs]
        out.setdefault(name, []).append(max(walls))
    return out


def project(tmp: Path) -> dict[str, list[float]]:
    proj = Path(tempfile.mkdtemp(dir=tmp))
    (proj / "test_six.py").write_text(PROJECT + SIX)
    (proj / "test_given.py").write_text(PROJECT + GIVEN)
    out: dict[str, list[float]] = {}
    for name, args in (("6 tests, -n 0", ["-n", "0", "test_six.py"]), ("6 tests, -n 2", ["-n", "2", "test_six.py"]),
                       ("25 @given examples, -n 0", ["-n", "0", "test_given.py"])):
        t0 = time.monotonic()
        out.setdefault(name, []).append(_wait(_pytest(args, proj, _env(tempfile.mkdtemp(dir=tmp))), t0, name))
    return out


def suite(tmp: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name, args in (("default suite, -n 0", ["-n", "0"]), ("default suite, -n auto", [])):
        t0 = time.monotonic()
        out.setdefault(name, []).append(_wait(_pytest(args, ROOT, _env(tempfile.mkdtemp(dir=tmp))), t0, name))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", default="pinning,project", help="pinning, project, suite (comma-separated)")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    steps = {"pinning": pinning, "project": project, "suite": suite}
    wanted = [w.strip() for w in args.what.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in steps]
    if unknown:
        ap.error(f"--what: unknown {', '.join(unknown)}; known: {', '.join(steps)}")
    print(f"{os.cpu_count()} CPUs; {_cpu_name()}; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        for what in wanted:
            rows: dict[str, list[float]] = {}
            for _ in range(args.rounds):
                for k, v in steps[what](Path(tmp)).items():
                    rows.setdefault(k, []).extend(v)
            print(f"\n{what} (cold kernel cache each; wall seconds)")
            for k, v in rows.items():
                print(f"  {k:<28} {' '.join(f'{x:7.1f}' for x in v)}   median {statistics.median(v):7.1f}")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
