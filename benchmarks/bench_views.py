"""What the view costs inside the fused kernel: the seed op vs the same dot + add on a contiguous A.

    python benchmarks/bench_views.py [--solutions S1;S2] [--rounds 5]

Both modules are lowered with the same solution and built once; the two kernels take turns in one
worker pool, 20 timed launches a turn (after one warm-up launch), medians reported. The fused seed op
reads A through transpose + reshape (``64*m + 24576*(k/64) + k%64``); the other reads it row-major.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import DEVICE, seed_module  # noqa: E402

from pytest_mlirtrace._internal.engine import Pipeline  # noqa: E402
from pytest_mlirtrace._internal.ir import Module  # noqa: E402


def contiguous_dot_add(dt="f32", m=384, k=768, n=768) -> Module:
    mod = Module()
    a = mod.add_param("a", dt, [1, m, k])
    b = mod.add_param("b", dt, [1, k, n])
    c = mod.add_param("c", dt, [1, m, n])
    mod.add_return(mod.add("add", mod.add("dot", a, b), c))
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solutions", default="16,64,8,4,64,16,0,4;64,64,16,4,64,16,0,8;64,32,8,8,32,16,0,4")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    pipe = Pipeline(DEVICE, database=None)
    print(f"device: {pipe.device.name}; m=384 n=768 k=768 f32; {args.rounds} rounds x 20 launches")
    print(f"{'solution':<24} {'fused seed':>11} {'contiguous A':>13} {'ratio':>6}")
    for sol in args.solutions.split(";"):
        jobs = {}
        for name, mod in (("fused", seed_module("f32")), ("plain", contiguous_dot_add())):
            c = pipe.compile_solution(mod, sol)
            if not c.ok:
                print(f"{sol:<24} {name}: {c.status}: {c.error}")
                return 1
            jobs[name] = c.job
        t = {name: [] for name in jobs}
        for _ in range(args.rounds):
            for name, job in jobs.items():
                t[name].append(statistics.median(pipe.pool.run(job, warmup=1, repeats=20).times_ms))
        f, p = statistics.median(t["fused"]), statistics.median(t["plain"])
        print(f"{sol:<24} {f:9.3f}ms {p:11.3f}ms {f / p:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
