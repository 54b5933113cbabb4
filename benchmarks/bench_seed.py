"""The seed's fused op on one device: fastest tuned solution vs numpy, and vs our own unfused kernels.

    python benchmarks/bench_seed.py [--device D] [--cases seed,square,batched] [--dtypes f32,f16]

numpy does the same op (transpose + reshape + matmul + add, f32 BLAS; f16 inputs are cast to f32 and
the result back, numpy having no f16 GEMM of its own) on the same machine in the same run. "unfused" is the
same computation as three of our kernels (transpose+contiguous copy, dot, add), each tuned, times added up.
Ratios > 1 mean the fused kernel is slower.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from _common import env_report, numpy_ms, seed_module, square_module  # noqa: E402

from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase  # noqa: E402
from pytest_mlirtrace._internal.ir import Module, random_inputs  # noqa: E402

CASES = {
    "seed": lambda dt: seed_module(dt),                       # m=384 n=768 k=768
    "square": lambda dt: square_module(dt, 1, 1024, 1024, 1024),
    "batched": lambda dt: seed_module(dt, g=8),               # g=8, m=384 n=768 k=768
}


def unfused_modules(mod: Module) -> list[Module]:
    """The fused op split into what an unfused runtime launches: view copy, dot, add."""
    dt = mod.params()[0].shape.dtype.name
    p = {i.param: i.shape for i in mod.params()}
    a_name = "y0" if "y0" in p else "a"
    a, b, c = p[a_name], p["y1.0" if "y1.0" in p else "b"], p["x1" if "x1" in p else "c"]
    g = a.lens[0]
    copy = Module()
    x = copy.add_param("x", dt, a.lens)
    perm = [0, 2, 1, 3] if a.rank == 4 else [0, 2, 1]
    copy.add_return(copy.add("contiguous", copy.add("transpose", x, permutation=perm)))
    m_, k = c.lens[1], b.lens[1]
    dot = Module()
    dot.add_return(dot.add("dot", dot.add_param("a", dt, [g, m_, k]), dot.add_param("b", dt, b.lens)))
    add = Module()
    add.add_return(add.add("add", add.add_param("a", dt, c.lens), add.add_param("b", dt, c.lens)))
    return [copy, dot, add]


def numpy_fn(mod: Module):
    ins = random_inputs(mod, 0)
    f32 = {k: v.astype(np.float32) for k, v in ins.items()}
    if "y0" in f32:
        y0, y1, x1 = f32["y0"], f32["y1.0"], f32["x1"]
        g, h, s, d = y0.shape
        return lambda: np.matmul(y0.transpose(0, 2, 1, 3).reshape(g, s, h * d), y1) + x1
    a, b, c = f32["a"], f32["b"], f32["c"]
    return lambda: np.matmul(a.transpose(0, 2, 1), b) + c


def fastest(pipe: Pipeline, res, top: int, repeats: int = 15) -> str:
    """The fastest of the tune's ``top`` best solutions, re-timed with ``repeats`` launches each.

    The quick tune ranks on a few launches, which on 2 busy cores can put a slower solution first;
    re-timing the leaders gives each side (fused, and each unfused part) its fastest solution."""
    ok = sorted((r for r in res.rows if r.status == "ok"), key=lambda r: r.time_ms)[:max(1, top)]
    if len(ok) <= 1:
        return res.best.span.solution
    timed = [(pipe.run(res.lowered.module, solution=r.solution, repeats=repeats).time_ms, r.solution) for r in ok]
    return min(timed)[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--cases", default="seed,square,batched")
    ap.add_argument("--dtypes", default="f32,f16")
    ap.add_argument("--mode", default="quick", choices=("quick", "exhaustive"))
    ap.add_argument("--no-unfused", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds (medians reported)")
    ap.add_argument("--top", type=int, default=4, help="re-time the tune's best TOP solutions of each kernel")
    args = ap.parse_args()
    db = TuningDatabase(os.path.join(tempfile.mkdtemp(), "tuning.json"))
    pipe = Pipeline(args.device, database=db, repeats=7, timeout_s=120)
    print(env_report(pipe.device))
    print(f"{'case':<8} {'dtype':<5} {'problem':<28} {'fused_ms':>9} {'numpy_ms':>9} {'fused/np':>8} "
          f"{'unfused_ms':>10} {'fused/unf':>9} {'GFLOP/s':>8}  solution")
    for case in args.cases.split(","):
        for dt in args.dtypes.split(","):
            mod = CASES[case](dt)
            res = pipe.tune(mod, mode=args.mode, use_database=False)
            if res.best is None:
                print(f"{case:<8} {dt:<5} no solution passed: {[r.detail for r in res.rows][:3]}")
                continue
            p = res.lowered.problem
            parts = [] if args.no_unfused else [pipe.tune(u, mode=args.mode, use_database=False)
                                                 for u in unfused_modules(mod)]
            if any(r.best is None for r in parts):
                parts = []
            sol = fastest(pipe, res, args.top)
            part_sols = [fastest(pipe, r, args.top) for r in parts]
            # side by side: alternate blocks of (fused, numpy, unfused) with pauses, so neither OpenBLAS's
            # spinning threads nor PoCL's leave the other a busy machine; medians over the rounds
            fn = numpy_fn(mod)
            fused_t, np_t, unf_t = [], [], []
            for _ in range(args.rounds):
                fused_t.append(pipe.run(mod, solution=sol, repeats=10).time_ms)
                time.sleep(0.5)
                np_t.append(numpy_ms(fn))
                time.sleep(0.5)
                if parts:
                    unf_t.append(sum(pipe.run(r.lowered.module, solution=ps, repeats=10).time_ms
                                     for r, ps in zip(parts, part_sols, strict=True)))
                    time.sleep(0.5)
            best_ms, np_ms = statistics.median(fused_t), statistics.median(np_t)
            unf = statistics.median(unf_t) if unf_t else None
            gflops = 2 * p.g * p.m * p.n * p.k / (best_ms * 1e6)
            unf_s = f"{unf:10.3f} {best_ms / unf:9.2f}" if unf else f"{'-':>10} {'-':>9}"
            print(f"{case:<8} {dt:<5} {f'g{p.g} m{p.m} n{p.n} k{p.k}':<28} {best_ms:9.3f} {np_ms:9.3f} "
                  f"{best_ms / np_ms:8.2f} {unf_s} {gflops:8.1f}  {sol}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
