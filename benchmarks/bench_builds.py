#!/usr/bin/env python
"""What building kernels costs on PoCL, one program each against several in one program (issue 19).

    python benchmarks/bench_builds.py [--rounds 3] [--batches 1,8]
        [--file examples/seed_transpose_reshape_dot_add_f32.txt]

Two measurements, side by side in one run:

1. **PoCL's fixed cost per program** (one worker process, pyopencl directly): ten small distinct kernels
   built as ten programs, against ten others built as one program; each kernel then launched once (PoCL
   compiles its work-group function at the first launch). Shows what a program costs whatever its size.
2. **A cold quick tune's builds** (the seed op's quick list, through the worker pool): rounds alternate between
   ``WorkerPool(build_batch=B)`` for each B of ``--batches``; every round gets a fresh pool and an empty kernel
   cache (``MLIRTRACE_KCACHE_ROOT``), so every program is new. Reported: the wall time of building the whole
   list (2 workers), the first launch of every kernel (one run each, checked against the oracle: a kernel
   built with others must compute what it computes alone), and the two together.
3. **``mlirtrace tune`` in a fresh process** (``--no-database``, warm kernel cache: one untimed tune of each
   variant first), rounds alternating between ``runtime.pool.BUILD_BATCH_CPU`` = each B of ``--batches``
   (set by a two-line wrapper before the CLI runs): the wall time a user waits, start-up included.
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
sys.path.insert(0, str(ROOT))

_RAW = textwrap.dedent(r'''
    import os, sys, time
    os.environ["POCL_CACHE_DIR"] = sys.argv[1]
    from pytest_mlirtrace._internal.runtime import ensure_opencl_env
    ensure_opencl_env()
    import pyopencl as cl
    ctx = cl.Context(dev_type=cl.device_type.CPU)
    q = cl.CommandQueue(ctx)
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096 * 4)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096 * 4)
    def src(i):
        return ("__kernel void k%d(__global float *a, __global const float *b) "
                "{ int x = get_global_id(0); a[x] = b[x] * %d.5f + sqrt(b[x]); }\n" % (i, i))
    cl.Program(ctx, src(999)).build()          # the first build of a process loads the compiler: not counted
    out = []
    for rnd in range(int(sys.argv[2])):
        base = 1000 * (rnd + 1)
        t0 = time.perf_counter()
        progs = [cl.Program(ctx, src(base + i)).build() for i in range(10)]
        t1 = time.perf_counter()
        for i, p in enumerate(progs):
            getattr(p, "k%d" % (base + i))(q, (4096,), (64,), a, b)
        q.finish()
        t2 = time.perf_counter()
        one = cl.Program(ctx, "".join(src(base + 500 + i) for i in range(10))).build()
        t3 = time.perf_counter()
        for i in range(10):
            getattr(one, "k%d" % (base + 500 + i))(q, (4096,), (64,), a, b)
        q.finish()
        t4 = time.perf_counter()
        out.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
    for r in out:
        print(" ".join("%.4f" % x for x in r))
''')


def raw_programs(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-builds-") as d:
        p = subprocess.run([sys.executable, "-c", _RAW, d, str(rounds)], capture_output=True, text=True,
                           cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT)})
    if p.returncode != 0:
        print(p.stderr[-2000:])
        raise SystemExit("the raw PoCL measurement failed")
    rows = [list(map(float, ln.split())) for ln in p.stdout.split("\n") if ln.strip()]
    print("1. PoCL, ten small kernels: ten programs against one program (ms per kernel, each round)")
    print(f"{'round':>5} {'10 programs: build':>19} {'first launch':>13} {'1 program: build':>17} {'first launch':>13}")
    for i, r in enumerate(rows):
        print(f"{i + 1:>5} {r[0] * 100:>19.1f} {r[1] * 100:>13.1f} {r[2] * 100:>17.1f} {r[3] * 100:>13.1f}")


def cold_builds(args) -> None:
    from pytest_mlirtrace._internal import ir, runtime
    from pytest_mlirtrace._internal.config import environment, resolve
    from pytest_mlirtrace._internal.engine import Pipeline
    device = resolve().device
    module = ir.parse_module(Path(args.file).read_text())
    batches = [int(b) for b in args.batches.split(",")]
    res: dict[int, list[tuple[float, float, int, int]]] = {b: [] for b in batches}
    for rnd in range(args.rounds):
        for b in batches:
            with tempfile.TemporaryDirectory(prefix="bench-builds-kc-") as kc:
                os.environ[environment.KCACHE_ROOT] = kc
                with runtime.WorkerPool(device, workers=2, build_batch=b) as pool:
                    pipe = Pipeline(pool.device, pool=pool)
                    low = pipe.lower_module(module)
                    from pytest_mlirtrace._internal import codegen
                    sols = codegen.quick_list(low.problem, pool.device)
                    inputs = pipe._inputs(low, 0)
                    expected, env = ir.evaluate(low.module, inputs, keep_all=True)
                    bounds = ir.error_bounds(low.module, env)
                    compiled = [pipe._lower(low, s, inputs) for s in sols]
                    t0 = time.perf_counter()
                    pipe._build(compiled)
                    t1 = time.perf_counter()
                    wrong = 0
                    for c in compiled:
                        if not c.ok:
                            continue
                        r = pool.run(c.job, warmup=0, repeats=1, timeout_s=120, compile_timeout_s=300)
                        if r.status != "ok" or pipe._check(low, c, r.outputs, expected, bounds):
                            wrong += 1
                    t2 = time.perf_counter()
                    built = sum(c.ok for c in compiled)
                res[b].append((t1 - t0, t2 - t1, built, wrong))
                os.environ.pop("MLIRTRACE_KCACHE_ROOT", None)
                print(f"  round {rnd + 1} build_batch={b}: {built} kernels built in {t1 - t0:.2f} s, "
                      f"first launches {t2 - t1:.2f} s, {wrong} failed or wrong", flush=True)
    print(f"2. cold quick tune of {Path(args.file).name}: building the quick list on 2 workers, then one "
          f"checked launch each (medians of {args.rounds} rounds)")
    print(f"{'build_batch':>11} {'kernels':>8} {'builds':>8} {'first launches':>15} {'together':>9} {'failed':>7}")
    for b in batches:
        rows = res[b]
        bw = statistics.median(r[0] for r in rows)
        lw = statistics.median(r[1] for r in rows)
        tw = statistics.median(r[0] + r[1] for r in rows)
        print(f"{b:>11} {rows[0][2]:>8} {bw:>7.2f}s {lw:>14.2f}s {tw:>8.2f}s {sum(r[3] for r in rows):>7}")


_CLI = "import sys, pytest_mlirtrace._internal.runtime.pool as p; p.BUILD_BATCH_CPU = int(sys.argv[1]); " \
       "from pytest_mlirtrace._internal.cli.main import main; sys.exit(main(sys.argv[2:]))"


def fresh_tunes(args) -> None:
    batches = [int(b) for b in args.batches.split(",")]
    walls: dict[int, list[float]] = {b: [] for b in batches}
    with tempfile.TemporaryDirectory(prefix="bench-builds-cli-") as d:
        env = {**os.environ, "MLIRTRACE_CACHE_DIR": d, "PYTHONPATH": str(ROOT)}
        # rounds 0 and 1 warm the kernel cache, not counted: each worker keeps its own shard of it, and which worker
        # builds a kernel varies, so one round leaves some kernels in the other worker's shard
        for rnd in range(-1, args.rounds + 1):
            for b in batches:
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", _CLI, str(b), "tune", "--no-database", args.file],
                                   capture_output=True, text=True, env=env, cwd=d)
                wall = time.perf_counter() - t0
                if p.returncode != 0:
                    print(p.stdout[-1500:], p.stderr[-1500:])
                    raise SystemExit(f"mlirtrace tune failed (exit {p.returncode})")
                if rnd > 0:
                    walls[b].append(wall)
    print(f"3. mlirtrace tune --no-database {Path(args.file).name}, a fresh process each, warm kernel cache "
          f"(median of {args.rounds} rounds)")
    for b in batches:
        print(f"   BUILD_BATCH_CPU={b}: {statistics.median(walls[b]):.2f} s  "
              f"(rounds: {', '.join(f'{w:.2f}' for w in walls[b])})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", default="1,8", help="build_batch values to alternate (comma-separated)")
    ap.add_argument("--file", default=str(ROOT / "examples" / "seed_transpose_reshape_dot_add_f32.txt"))
    ap.add_argument("--parts", default="raw,cold,cli", help="which measurements (raw, cold, cli)")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    if "raw" in parts:
        raw_programs(args.rounds)
    if "cold" in parts:
        cold_builds(args)
    if "cli" in parts:
        fresh_tunes(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
