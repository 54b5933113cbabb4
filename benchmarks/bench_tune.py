#!/usr/bin/env python
"""Quick-tune wall time, what each of the tuner's savings gives, and where the time goes (issue 19).

    python benchmarks/bench_tune.py [--rounds 3] [--file examples/seed_transpose_reshape_dot_add_f32.txt]
                                    [--dot N [--dtype f32]] [--device pocl|nvidia] [--out results.json]

One process, one worker pool, one problem (the seed op by default; ``--dot N``: a plain N x N x N dot). A first,
cold tune builds every solution (its wall time is reported: what ``mlirtrace tune`` pays on a cold cache); the
rounds after it find every build in the workers, so they measure the rest. Rounds alternate between the
variants, each a quick tune of the whole quick list:

- ``before``: every solution timed ``warmup + repeats`` times, its inputs sent to the worker with every run (the
  tuner of 2026-12-03);
- ``cut``: a solution's timing stops once two launches took over 1.5x the best so far, or one over 4x
  (``Pipeline.cut_factor``, ``engine.CUT_ONCE_FACTOR``); the outputs of a cut solution are still checked;
- ``cut + inputs kept``: and each worker keeps the inputs on the device, so a run sends only their keys
  (``WorkerPool.keep_inputs``, ``runtime.InBuf``);
- ``+ checked on device``: and each solution's outputs are checked on the device against the oracle's values
  (kept there too), read back only where some element fails (``Pipeline.device_check``, ``runtime/devcheck.py``);
- ``+ shared memory``: and arrays of 4 MB and more go to the workers as files in shared memory instead of down
  their pipes (``WorkerPool.shm_min_bytes``): the tuner as it is now. The variants before it send every array
  down the pipe.

For each: the median wall time and where it went (making the inputs, the numpy oracle and its error bounds,
lowering, launching and timing, checking, the rest), how many solutions were cut, and the fastest solution
found with its time, so that a saving that lost the best solution would show.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = ("inputs", "oracle", "lower", "build", "launch+time", "check", "rest")


class _Timed:
    """A Pipeline's parts timed in place (the tune itself is not changed)."""

    def __init__(self, pipe, ir_mod):
        self.acc: dict[str, float] = {}
        self.runs: list = []
        self._undo = []
        for name, label in (("_inputs", "inputs"), ("_lower", "lower"), ("_build", "build"), ("_check", "check")):
            self._wrap(pipe, name, label)
        self._wrap(pipe.pool, "run", "launch+time")
        for name in ("evaluate", "error_bounds"):
            self._wrap(ir_mod, name, "oracle")

    def _wrap(self, obj, name, label):
        orig = getattr(obj, name)

        def timed(*a, **k):
            t = time.perf_counter()
            r = None
            try:
                r = orig(*a, **k)
                return r
            finally:
                dt = time.perf_counter() - t
                self.acc[label] = self.acc.get(label, 0.0) + dt
                if label == "launch+time" and r is not None:     # per solution: wall, kernel times, cut
                    self.runs.append((a[0].label, round(dt * 1e3, 2), [round(x, 3) for x in r.times_ms], r.cut))
        setattr(obj, name, timed)
        self._undo.append((obj, name, orig))

    def restore(self):
        for obj, name, orig in reversed(self._undo):
            if isinstance(obj, type(sys)):
                setattr(obj, name, orig)
            else:
                delattr(obj, name)      # the instance attribute goes, the class's method is back


def _timed_tune(pipe, module, mlir):
    """(wall s, {part: s}, TuneResult with .runs: per solution (label, run wall ms, kernel times, cut))."""
    from pytest_mlirtrace._internal import ir
    timed = _Timed(pipe, ir)
    t0 = time.perf_counter()
    try:
        res = pipe.tune(module, mlir_text=mlir)
    finally:
        timed.restore()
    wall = time.perf_counter() - t0
    parts = dict(timed.acc)
    parts["rest"] = wall - sum(parts.values())
    res.runs = timed.runs
    return wall, parts, res


def _module(args):
    from pytest_mlirtrace._internal.engine.session import load_module, read_source
    if args.dot:
        from pytest_mlirtrace._internal.ir import Module
        m = Module()
        s = args.dot
        m.add_return(m.add("dot", m.add_param("a", args.dtype, [1, s, s]), m.add_param("b", args.dtype, [1, s, s])))
        return m, None, f"dot {s}x{s}x{s} {args.dtype}"
    module, mlir = load_module(read_source(args.file), args.file)
    return module, mlir, args.file


def _cold_rounds(args, device, module, mlir) -> dict:
    """Cold tunes: a fresh pool each, and a build option no earlier build had (``-D``), so that every
    solution is built anew (a driver's own cache of machine code may still help, as it would a user)."""
    from pytest_mlirtrace._internal import engine, runtime
    from pytest_mlirtrace._internal.engine import MemoryDatabase
    variants = {"builds, then timing (2 workers)": (False, 2), "builds overlapped (2 workers)": (True, 2),
                "builds overlapped (4 workers)": (True, 4)}
    got: dict[str, list] = {k: [] for k in variants}
    tag = int(time.time())
    for _round in range(args.cold):
        for label, (overlap, workers) in variants.items():
            tag += 1
            with runtime.WorkerPool(device, workers=workers) as pool:
                pool.ping()         # started, warm-up build done: what a tune finds in a running session
                pipe = engine.Pipeline(device, pool=pool, database=MemoryDatabase(), repeats=args.repeats,
                                       timeout_s=args.timeout)
                pipe.overlap_builds = overlap
                orig = pipe._lower

                def lower(*a, _orig=orig, _tag=tag, **k):
                    c = _orig(*a, **k)
                    if c.job is not None:
                        c.job.build_options = f"{c.job.build_options} -D MLIRTRACE_BENCH_COLD={_tag}".strip()
                    return c
                pipe._lower = lower
                got[label].append(_timed_tune(pipe, module, mlir))
    print(f"cold tunes ({args.cold} rounds, medians): wall, and the sum of the builds")
    out = {}
    for label, rs in got.items():
        wall = statistics.median(r[0] for r in rs)
        builds = statistics.median(sum(row.build_s for row in r[2].rows) for r in rs)
        fastest = ", ".join(f"{r[2].best.span.solution} {r[2].best_ms:.3f} ms" if r[2].best else "none" for r in rs)
        print(f"  {label:<34} {wall:7.2f} s   builds {builds:6.2f} s   {fastest}")
        out[label] = {"wall_s": wall, "builds_s": builds}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "examples" / "seed_transpose_reshape_dot_add_f32.txt"))
    ap.add_argument("--dot", type=int, default=0, help="a plain N x N x N dot instead of --file")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--cold", type=int, default=0, metavar="N",
                    help="also N rounds of cold tunes (fresh worker pools, every program new to them): builds "
                         "first, then timing, against builds overlapped with timing, with 2 and 4 workers")
    ap.add_argument("--variants", default=None,
                    help="comma-separated subset of: before, cut, cut + inputs kept, + checked on device, "
                         "+ shared memory")
    args = ap.parse_args()
    from pytest_mlirtrace._internal import engine, runtime
    from pytest_mlirtrace._internal.engine import MemoryDatabase

    module, mlir, what = _module(args)
    device = runtime.resolve_device(args.device)
    pool = runtime.get_pool(device)

    def tune(_label, cut, keep, on_device, shm=True):   # the label names the variant at the call
        pool.keep_inputs = keep
        pool.shm_min_bytes = runtime.pool.SHM_MIN_BYTES if shm else None
        pipe = engine.Pipeline(device, pool=pool, database=MemoryDatabase(), cut_factor=1.5 if cut else None,
                               repeats=args.repeats, timeout_s=args.timeout)
        pipe.device_check = on_device
        return _timed_tune(pipe, module, mlir)

    cold = tune("cold", True, True, True)
    variants = {"before": (False, False, False, False), "cut": (True, False, False, False),
                "cut + inputs kept": (True, True, False, False), "+ checked on device": (True, True, True, False),
                "+ shared memory": (True, True, True, True)}
    if args.variants:
        want = [v.strip() for v in args.variants.split(",")]
        unknown = [v for v in want if v not in variants]
        if unknown:
            ap.error(f"--variants: unknown {unknown}; known: {list(variants)}")
        variants = {k: v for k, v in variants.items() if k in want}
    results: dict[str, list] = {k: [] for k in variants}
    for _ in range(args.rounds):
        for label, flags in variants.items():
            results[label].append(tune(label, *flags))
    n = len(cold[2].rows)
    print(f"device: {device.name} ({device.key_name}); {what}; {n} solutions in the quick list; "
          f"{args.rounds} alternating rounds, medians")
    print(f"cold tune (every solution built, {sum(r.build_s for r in cold[2].rows):.2f} s of builds over "
          f"{pool.workers} workers): {cold[0]:.2f} s wall, builds {cold[1].get('build', 0):.2f} s of it")
    print(f"{'tune':<20} {'wall s':>7} " + " ".join(f"{p:>11}" for p in PARTS) + f" {'cut':>4}  fastest found")
    out = {"device": device.name, "what": what, "solutions": n, "cold_wall_s": cold[0],
           "cold_parts": cold[1], "variants": {}}
    base = None
    for label, rs in results.items():
        med = statistics.median(w for w, _, _ in rs)
        base = base or med
        p = {k: statistics.median(r[1].get(k, 0.0) for r in rs) for k in PARTS}
        cuts = statistics.median(sum(row.cut for row in r[2].rows) for r in rs)
        fastest = ", ".join(f"{r[2].best.span.solution} {r[2].best_ms:.3f} ms" if r[2].best else "none" for r in rs)
        print(f"{label:<20} {med:>7.2f} " + " ".join(f"{p[k]:>11.2f}" for k in PARTS) + f" {cuts:>4g}  {fastest}")
        out["variants"][label] = {"wall_s": med, "parts": p, "cut": cuts, "speedup": base / med,
                                  "fastest": [(r[2].best.span.solution, r[2].best_ms) if r[2].best else None
                                              for r in rs]}
    if args.cold:
        out["cold"] = _cold_rounds(args, device, module, mlir)
    for label, v in out["variants"].items():
        print(f"  {label}: {v['speedup']:.2f}x the '{next(iter(results))}' tune")
    out["runs"] = {label: rs[-1][2].runs for label, rs in results.items()}    # the last round's, per solution
    out["runs"]["cold"] = cold[2].runs
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    runtime.close_all_pools()
    return 0


if __name__ == "__main__":
    sys.exit(main())
