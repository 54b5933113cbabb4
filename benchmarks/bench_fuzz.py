#!/usr/bin/env python
"""Fuzzer throughput and time-to-find per planted fault.

    python benchmarks/bench_fuzz.py [--budget 60] [--fault-budget 90] [--seed 1] [--faults a,b|none] [--no-clean]
                                    [--builds full,fast] [--cold] [--extra '--build fast']

1. a clean-tree ``mlirtrace fuzz`` for ``--budget`` seconds: cases/s (a case = one module x solution x
   seed compiled and checked against the oracle), examples, the slowest compile+run;
2. for each fault in ``codegen.FAULTS`` (``MLIRTRACE_INJECT=<fault>``): ``mlirtrace fuzz --budget
   --fault-budget --seed`` in a fresh directory; the time to the first failing case, the time its shrunk
   reproducer was written, the shrunk module's ops, and whether the reproducer fails with the fault on
   and passes with it off.

Each run is a subprocess with its own example database, so runs don't help each other; PoCL's
on-disk kernel cache is shared (as on any machine that ran the fuzzer before) unless ``--cold``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


COLD_CACHE = None


# the planted faults are in the gemm kernels, which convolutions lower to (implicit gemm): a finding counts when
# its shrunk module has one of these
GEMM_OPS = {"dot", "quant_dot", "convolution", "quant_convolution"}


def _env(inject):
    env = dict(os.environ)
    # mlirtrace keeps PoCL's kernel cache under its own cache directory (runtime/opencl_env/pocl_cache.py)
    if COLD_CACHE:
        env["MLIRTRACE_CACHE_DIR"] = env["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="cache-", dir=COLD_CACHE)
    env.pop("MLIRTRACE_INJECT", None)
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ``--builds fast:1``: the CLI with runtime.pool.BUILD_BATCH_CPU set first (1: every kernel its own program, as
# before kbatch.py)
_BATCHED_CLI = ("import sys, pytest_mlirtrace._internal.runtime.pool as p; p.BUILD_BATCH_CPU = int(sys.argv[1]); "
                "from pytest_mlirtrace._internal.cli.main import main; sys.exit(main(sys.argv[2:]))")


def fuzz(workdir: Path, inject, budget, seed, extra=(), batch=None):
    report = workdir / "report.json"
    launcher = ["-m", "pytest_mlirtrace"] if batch is None else ["-c", _BATCHED_CLI, str(batch)]
    cmd = [sys.executable, *launcher, "fuzz", "--budget", str(budget), "--seed", str(seed),
           "--repro-dir", str(workdir / "repro"), "--database", str(workdir / "db"), "--report", str(report),
           "--quiet", *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=workdir, env=_env(inject), capture_output=True, text=True)
    wall = time.monotonic() - t0
    data = json.loads(report.read_text()) if report.exists() else {}
    shown = (" ".join(["MLIRTRACE_INJECT=" + inject] if inject else []) + " mlirtrace "
             + " ".join(cmd[len(launcher) + 1:]))
    return p, data, wall, shown + (f"  (BUILD_BATCH_CPU={batch})" if batch is not None else "")


def repro_ok(script, inject) -> bool:
    on = subprocess.run([sys.executable, script, "--quiet"], env=_env(inject), capture_output=True, text=True)
    off = subprocess.run([sys.executable, script, "--quiet"], env=_env(None), capture_output=True, text=True)
    return on.returncode != 0 and off.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="clean-tree throughput run (s)")
    ap.add_argument("--fault-budget", type=float, default=90.0, help="budget of each fault run (s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default=None, help="comma-separated subset of codegen.FAULTS")
    ap.add_argument("--no-clean", action="store_true", help="skip the clean-tree throughput run")
    ap.add_argument("--cold", action="store_true",
                    help="give every run an empty kernel cache (MLIRTRACE_CACHE_DIR), as on a fresh machine")
    ap.add_argument("--extra", default="", help="extra fuzz arguments, e.g. '--max-dim 8'")
    ap.add_argument("--builds", default="full",
                    help="comma-separated fuzz --build values: one clean-tree run each, side by side (e.g. full,fast); "
                         "BUILD:N runs it with runtime.pool.BUILD_BATCH_CPU = N (1: each kernel its own program)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from pytest_mlirtrace._internal.codegen import FAULTS

    extra = a.extra.split()
    faults = [] if a.faults == "none" else [f for f in (a.faults.split(",") if a.faults else FAULTS)]
    status = 0
    global COLD_CACHE
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as tmp:
        if a.cold:
            COLD_CACHE = tmp
        for i, spec in enumerate([] if a.no_clean else a.builds.split(",")):
            build, _, batch = spec.partition(":")
            d = Path(tmp) / f"clean-{i}-{build}-{batch}"
            d.mkdir()
            p, data, wall, cmd = fuzz(d, None, a.budget, a.seed, extra + ["--build", build],
                                      batch=int(batch) if batch else None)
            print(f"clean tree: {cmd}")
            print(f"  {data.get('cases', 0)} cases in {data.get('elapsed_s', wall):.1f}s = "
                  f"{data.get('cases_per_s', 0):.2f} cases/s ({data.get('examples', 0)} examples, "
                  f"{data.get('replayed', 0)} replayed, {data.get('lanes', '?')} lanes, slowest compile+run "
                  f"{data.get('max_case_s', 0):.1f}s), kinds {data.get('kinds', {})}, findings "
                  f"{len(data.get('findings', []))}, exit {p.returncode}")
            if p.returncode != 0:
                status = 1
        if not faults:
            return status
        print(f"\n{'fault':<24} {'found':>7} {'written':>8} {'cases/s':>8}  {'repro on/off':<12} shrunk ops")
        for fault in faults:
            d = Path(tmp) / fault
            d.mkdir()
            fx = list(extra) + (["--timeout", "6"] if fault == "infinite_loop" and "--timeout" not in extra else [])
            p, data, wall, cmd = fuzz(d, fault, a.fault_budget, a.seed, fx)
            gemm = [f for f in data.get("findings", []) if GEMM_OPS & set(f.get("ops", []))]
            if not gemm:
                print(f"{fault:<24} {'-':>7} {'-':>8} {data.get('cases_per_s', 0):>8.2f}  {'not found':<12} "
                      f"(within {a.fault_budget:g}s)")
                status = 1
                continue
            f = gemm[0]
            ok = repro_ok(f["path"], fault)
            status |= 0 if ok else 1
            print(f"{fault:<24} {f['first_found_s']:>6.1f}s {f['written_s']:>7.1f}s {data['cases_per_s']:>8.2f}  "
                  f"{'fails/passes' if ok else 'NOT OK':<12} {f['ops']} {f['solution']}"
                  + ("" if f["shrunk"] else "  (shrink cut by budget)"))
            print(f"    {cmd}")
    return status


if __name__ == "__main__":
    sys.exit(main())
