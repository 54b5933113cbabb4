"""Tracing cost and build overlap, measured side by side in one run.

    python benchmarks/bench_tracing.py [--device D] [--rounds 3]

1. compile+tune wall time of the seed's fused op (quick list) with tracing off vs MIGRAPHX_TRACE_MLIR=3 +
   MIGRAPHX_TRACE_BENCHMARKING=3 (text written to a file), alternating rounds, medians compared.
2. building the quick list: wall time with 2 worker processes vs 1 (PoCL's kernel cache off, so every
   build is real), i.e. how much the parallel builds overlap.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ["POCL_KERNEL_CACHE"] = "0"   # every build real, in every round (set before workers start)
sys.path.insert(0, os.path.dirname(__file__))

from _common import env_report, seed_module  # noqa: E402

from pytest_mlirtrace._internal import codegen, runtime  # noqa: E402
from pytest_mlirtrace._internal.engine import TuningDatabase  # noqa: E402
from pytest_mlirtrace._internal.trace import TraceConfig, TraceSession  # noqa: E402


def tune_wall(device, pool, config, out) -> float:
    db = TuningDatabase(os.path.join(tempfile.mkdtemp(), "db.json"))
    s = TraceSession(device, config=config, stream=out, database=db, pool=pool)
    t0 = time.perf_counter()
    r = s.tune(seed_module("f32"))
    assert r.best is not None
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    device = runtime.resolve_device(args.device)
    print(env_report(device))
    pool = runtime.WorkerPool(device, workers=2)
    off, on = [], []
    with open(os.path.join(tempfile.mkdtemp(), "trace.txt"), "w") as out:
        for i in range(args.rounds):
            off.append(tune_wall(device, pool, TraceConfig(0, 0), out))
            on.append(tune_wall(device, pool, TraceConfig(3, 3), out))
            print(f"round {i + 1}: off {off[-1]:.2f}s  level 3 {on[-1]:.2f}s", flush=True)
        size = out.tell()
    mo, mn = statistics.median(off), statistics.median(on)
    print(f"tracing: off {mo:.2f}s, level 3 {mn:.2f}s (median of {args.rounds}); overhead {100 * (mn / mo - 1):+.1f}% "
          f"({size} bytes of trace text)")

    # build overlap: the same 36 fresh kernels on 1 worker vs 2 workers
    from pytest_mlirtrace._internal.engine import Pipeline

    pipe = Pipeline(device, database=TuningDatabase(os.path.join(tempfile.mkdtemp(), "db.json")), pool=pool)
    low = pipe.lower_module(seed_module("f32"))
    sols = codegen.quick_list(low.problem, device)
    walls = {}
    for workers in (1, 2):
        with runtime.WorkerPool(device, workers=workers) as p:
            p.ping()
            jobs = []
            for s in sols:
                spec = codegen.lower(low.module, s, device)
                # a unique define per round defeats any cache keyed on the source
                jobs.append(runtime.KernelJob(spec.source, spec.kernel_name, [], (1,), None,
                                              f"-DMLIRTRACE_ROUND={workers}"))
            t0 = time.perf_counter()
            res = p.build(jobs, timeout_s=600)
            walls[workers] = time.perf_counter() - t0
            assert all(r.status == "ok" for r in res), [r.error for r in res if r.status != "ok"][:2]
            print(f"{len(jobs)} builds on {workers} worker(s): {walls[workers]:.2f}s wall "
                  f"(sum of per-build times {sum(r.build_s for r in res):.2f}s)", flush=True)
    print(f"build overlap: 2 workers take {walls[2] / walls[1]:.2f}x the wall time of 1 worker")
    pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
