"""MLIR parsing time against file size: is it linear, and is a 10 MB file parsed in under 10 s?

    python benchmarks/bench_parse.py [--mib 10] [--funcs 250,1000,4000] [--rounds 3] [--out FILE] [--input FILE]

Two measurements, each the best of ``--rounds``:

* ``--mib M`` (default 10): one file of at least M MiB of *distinct* funcs, as a long trace log or a
  test file holds them: each func is a fused module built from a seeded random plan of the Hypothesis
  strategy's builder (pointwise chains, reductions, softmax, gemm with transposed / reshaped /
  broadcast / sliced inputs, quantised gemm, attention; f32, f16, i8; ranks 1-4, dims up to 512,
  literals), printed in ``tensor<>`` or ``!migraphx.shaped<>`` syntax with its own name and attributes.
  Timed: ``parse_mlir`` of the whole file (every func parsed, converted and verified) and
  ``parse_mlir_module(text, name=...)`` of one func in the middle (what ``--func NAME`` costs);
* ``--funcs N,..``: files of N renamed copies of the seed's fused func (f32 2x24x8 heads -> 40), the
  per-func time of each size relative to the smallest (1.0 = linear).  ``--funcs ''`` skips it.

``--out FILE`` writes the generated file, ``--input FILE`` times a given file instead (e.g. the same file
with another checkout on ``PYTHONPATH``).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
# the checkout's package and tests/ (after PYTHONPATH: another checkout there is timed instead)
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pytest_mlirtrace._internal.ir.examples import seed_module  # noqa: E402
from pytest_mlirtrace._internal.mlir import emit_mlir, parse_mlir, parse_mlir_module  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, default=10.0, help="size of the file of distinct funcs (0: skip)")
    ap.add_argument("--funcs", default="250,1000,4000", help="sizes of the files of copies ('' : skip)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", help="write the generated file here")
    ap.add_argument("--input", help="time this file instead of a generated one")
    a = ap.parse_args()
    import pytest_mlirtrace

    print(f"machine: {platform.machine()} {os.cpu_count()} cpus; {platform.processor() or platform.platform()}; "
          f"python {platform.python_version()}; package {os.path.dirname(pytest_mlirtrace.__file__)}")
    if a.input or a.mib > 0:
        if a.input:
            with open(a.input, encoding="utf-8") as f:
                text = f.read()
            names = None
        else:
            t0 = time.perf_counter()
            text, names = distinct_funcs(a.mib, a.seed)
            print(f"generated {len(names)} distinct funcs, {len(text) / 2**20:.2f} MiB in "
                  f"{time.perf_counter() - t0:.1f} s")
            if a.out:
                with open(a.out, "w", encoding="utf-8") as f:
                    f.write(text)
        full = min(_timed(text) for _ in range(max(1, a.rounds)))
        n = full[1]
        print(f"parse_mlir, every func: {full[0]:.2f} s for {n} funcs, {len(text) / 2**20:.2f} MiB "
              f"({1000 * full[0] / n:.3f} ms/func, {full[0] / (len(text) / 2**20):.3f} s/MiB)")
        if names is None:
            from pytest_mlirtrace._internal.mlir import split
            names = [s.name for s in split.find_funcs(text)]
        mid = names[len(names) // 2]
        one = min(_timed_one(text, mid) for _ in range(max(1, a.rounds)))
        print(f"parse_mlir_module(name=@{mid}): {one:.2f} s")
    if a.funcs:
        copies([int(x) for x in a.funcs.split(",")], a.rounds)
    return 0


# ---------------------------------------------------------------- the files --
def distinct_funcs(mib: float, seed: int) -> tuple[str, list[str]]:
    """``module { func.func ... }`` with distinct funcs until the text has ``mib`` MiB (the generator the
    tests use: ``tests/mlir/mlir_helpers.py many_funcs``)."""
    from tests.mlir.mlir_helpers import many_funcs

    return many_funcs(mib=mib, seed=seed)


def copies(sizes: list[int], rounds: int) -> None:
    func = emit_mlir(seed_module("f32", heads=2, seq=24, hd=8, n=40))
    name = func.split("@", 1)[1].split("(", 1)[0]
    rows = []
    for n in sizes:
        text = "\n".join(func.replace(f"@{name}", f"@{name}_{i}") for i in range(n))
        best = min(_timed(text)[0] for _ in range(max(1, rounds)))
        rows.append((n, len(text), best))
    base = rows[0][2] / rows[0][0]
    print("copies of the seed's func:")
    print(f"{'funcs':>6} {'MiB':>7} {'seconds':>8} {'ms/func':>8} {'x linear':>8}")
    for n, size, t in rows:
        print(f"{n:>6} {size / 2**20:>7.2f} {t:>8.2f} {1000 * t / n:>8.3f} {(t / n) / base:>8.2f}")


# ------------------------------------------------------------------ timing --
def _timed(text: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    funcs = parse_mlir(text, "bench.mlir")
    dt = time.perf_counter() - t0
    bad = [f for f in funcs if not f.ok]
    assert not bad, f"{len(bad)} funcs did not convert, e.g. {bad[0]}"
    return dt, len(funcs)


def _timed_one(text: str, name: str) -> float:
    t0 = time.perf_counter()
    parse_mlir_module(text, "bench.mlir", name=name)
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main())
