#!/usr/bin/env python
"""Quick-tune wall time with and without cutting clearly slower solutions short (issue 19).

    python benchmarks/bench_tune.py [--rounds 3] [--file examples/seed_transpose_reshape_dot_add_f32.txt]
                                    [--device pocl] [--factor 1.5]

One process, one worker pool (warm: every kernel built once before the rounds, so builds cost what a cache
hit costs). Rounds alternate: a quick tune timing every solution ``warmup + repeats`` times (``cut_factor``
None, what the tuner did before), then one that stops timing a solution once a launch takes longer than
``--factor`` times the best so far (``Pipeline.cut_factor``). For each: the tune's wall time and where it went
(lowering, building, launching and timing, checking against the oracle, the rest: inputs, the oracle's
evaluation, events), how many solutions were cut, and the fastest solution found with its time -- so a cut
that lost the best solution would show.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Timed:
    """A Pipeline's parts timed in place (the tune itself is not changed)."""

    def __init__(self, pipe):
        self.pipe, self.acc = pipe, {}
        for name in ("_lower", "_build", "_check"):
            self._wrap(pipe, name, name.strip("_"))
        self._wrap(pipe.pool, "run", "launch+time")

    def _wrap(self, obj, name, label):
        orig = getattr(obj, name)

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                self.acc[label] = self.acc.get(label, 0.0) + time.perf_counter() - t
        setattr(obj, name, timed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(ROOT / "examples" / "seed_transpose_reshape_dot_add_f32.txt"))
    ap.add_argument("--device", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--factor", type=float, default=1.5)
    args = ap.parse_args()
    from pytest_mlirtrace import engine, runtime
    from pytest_mlirtrace.engine import MemoryDatabase
    from pytest_mlirtrace.engine.session import load_module, read_source

    module, mlir = load_module(read_source(args.file), args.file)
    device = runtime.resolve_device(args.device)
    pool = runtime.get_pool(device)
    engine.Pipeline(device, pool=pool, database=MemoryDatabase()).tune(module, mlir_text=mlir)   # warm-up
    results: dict[str, list] = {"every solution timed": [], f"cut at {args.factor:g}x the best": []}
    for _ in range(args.rounds):
        for label, factor in (("every solution timed", None), (f"cut at {args.factor:g}x the best", args.factor)):
            pipe = engine.Pipeline(device, pool=pool, database=MemoryDatabase(), cut_factor=factor)
            timed = _Timed(pipe)
            t0 = time.perf_counter()
            res = pipe.tune(module, mlir_text=mlir)
            wall = time.perf_counter() - t0
            parts = dict(timed.acc)
            parts["rest"] = wall - sum(parts.values())
            results[label].append((wall, parts, res))
    print(f"device: {device.name} ({device.key_name}); {args.file}; {len(results['every solution timed'][0][2].rows)} "
          f"solutions in the quick list; {args.rounds} alternating rounds, medians")
    print(f"{'tune':<26} {'wall s':>7} {'lower':>6} {'build':>6} {'launch+time':>11} {'check':>6} {'rest':>6} "
          f"{'cut':>4}  fastest found")
    base = None
    for label, rs in results.items():
        med = statistics.median(w for w, _, _ in rs)
        base = base or med
        p = {k: statistics.median(r[1].get(k, 0.0) for r in rs) for k in ("lower", "build", "launch+time", "check", "rest")}
        cuts = statistics.median(sum(row.cut for row in r[2].rows) for r in rs)
        fastest = ", ".join(f"{r[2].best.span.solution} {r[2].best_ms:.3f} ms" for r in rs)
        print(f"{label:<26} {med:>7.2f} {p['lower']:>6.2f} {p['build']:>6.2f} {p['launch+time']:>11.2f} "
              f"{p['check']:>6.2f} {p['rest']:>6.2f} {cuts:>4g}  {fastest}")
    cut = statistics.median(w for w, _, _ in results[f"cut at {args.factor:g}x the best"])
    print(f"speed-up of the cut: {base / cut:.2f}x")
    runtime.close_all_pools()
    return 0


if __name__ == "__main__":
    sys.exit(main())
