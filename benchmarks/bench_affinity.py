"""PoCL thread pinning: launch times of one tuned kernel with POCL_AFFINITY=0 vs 1, side by side.

    python benchmarks/bench_affinity.py [--solution S] [--rounds 4] [--launches 30] [--workers 2]

Each setting gets its own worker pool of ``--workers`` processes, as a Pipeline has (PoCL reads the
variable when its device starts); the pools take turns, ``--launches`` timed launches a turn. A launch counts
as "slow" above 1.5x the fastest launch seen in the whole run: on a 2-core machine that is a launch whose two
compute threads shared one core.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import DEVICE, seed_module  # noqa: E402

from pytest_mlirtrace._internal.engine import Pipeline  # noqa: E402
from pytest_mlirtrace._internal.runtime import WorkerPool, resolve_device  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solution", default="16,64,8,4,64,16,0,4")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--launches", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2, help="worker processes per pool (Pipeline uses 2)")
    args = ap.parse_args()
    device = resolve_device(DEVICE)
    pools, times = {}, {}
    try:
        for value in ("0", "1"):
            os.environ["POCL_AFFINITY"] = value
            pools[value] = WorkerPool(device, workers=args.workers)
            times[value] = []
        job = Pipeline(device, database=None).compile_solution(seed_module("f32"), args.solution).job
        for _ in range(args.rounds):
            for value, pool in pools.items():
                r = pool.run(job, warmup=1, repeats=args.launches)
                if not r.ok:
                    print(f"POCL_AFFINITY={value}: {r.status}: {r.error}")
                    return 1
                times[value] += r.times_ms
    finally:
        for pool in pools.values():
            pool.close()
    fastest = min(min(t) for t in times.values())
    print(f"device: {device.name}; seed op f32, solution {args.solution}; "
          f"{args.rounds} rounds x {args.launches} launches per setting")
    for value, t in times.items():
        slow = sum(x > 1.5 * fastest for x in t)
        print(f"POCL_AFFINITY={value}: median {statistics.median(t):.3f} ms, mean {statistics.mean(t):.3f} ms, "
              f"slow launches {slow}/{len(t)} ({100 * slow / len(t):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
