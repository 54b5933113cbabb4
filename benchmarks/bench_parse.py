"""MLIR parsing time against file size: is it linear in the number of funcs?

    python benchmarks/bench_parse.py [--funcs 250,1000,4000] [--rounds 3]

Builds files of N copies of the seed's fused func (renamed, one after another, as a log or a test file
holds them), parses each with ``mlir.parse_mlir`` (every func parsed, converted and verified), and prints
the wall time, the time per func and the ratio of each size's per-func time to the smallest size's
(1.0 = linear). Sizes are measured side by side in one run, best of ``--rounds``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import platform  # noqa: E402
from pytest_mlirtrace.ir.examples import seed_module  # noqa: E402
from pytest_mlirtrace.mlir import emit_mlir, parse_mlir  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--funcs", default="250,1000,4000")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    func = emit_mlir(seed_module("f32", heads=2, seq=24, hd=8, n=40))
    name = func.split("@", 1)[1].split("(", 1)[0]
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus; {platform.processor() or platform.platform()}")
    rows = []
    for n in [int(x) for x in a.funcs.split(",")]:
        text = "\n".join(func.replace(f"@{name}", f"@{name}_{i}") for i in range(n))
        best = min(_timed(text) for _ in range(max(1, a.rounds)))
        rows.append((n, len(text), best))
    base = rows[0][2] / rows[0][0]
    print(f"{'funcs':>6} {'MiB':>7} {'seconds':>8} {'ms/func':>8} {'x linear':>8}")
    for n, size, t in rows:
        print(f"{n:>6} {size / 2**20:>7.2f} {t:>8.2f} {1000 * t / n:>8.2f} {(t / n) / base:>8.2f}")
    return 0


def _timed(text: str) -> float:
    t0 = time.perf_counter()
    funcs = parse_mlir(text, "bench.mlir")
    dt = time.perf_counter() - t0
    assert all(f.module is not None for f in funcs), "a func did not convert"
    return dt


if __name__ == "__main__":
    sys.exit(main())
