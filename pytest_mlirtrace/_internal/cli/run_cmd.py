"""``mlirtrace run FILE``: compile with the best known solution, run, check against the oracle."""
from __future__ import annotations

import json

from ..vocab.exit_codes import ExitCode
from .common import add_device_options, add_module_options, open_module, run_guarded, solution_usage


def add_parser(sub, name):
    p = sub.add_parser(name, help="run a fused op with its best known solution and check it",
                       description="Compile FILE with the best known solution (tuning database, else the "
                                   "default), run it on random inputs and compare with the numpy oracle.")
    p.add_argument("file")
    p.add_argument("--solution", "-s", default=None, help="use this perf config instead")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--repeats", type=int, default=1, help="timed runs (median reported)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead")
    add_module_options(p, database=True)
    add_device_options(p)
    return p


def _run(args) -> int:
    module, mlir_text, s = open_module(args)
    with solution_usage(args):
        r = s.pipeline.run(module, solution=args.solution, seed=args.seed, mlir_text=mlir_text,
                           repeats=args.repeats)
    sp = r.compiled.span
    if args.json:
        print(json.dumps({"ok": r.ok, "status": r.status, "detail": r.detail or "", "problem_key": sp.problem_key,
                          "solution": sp.solution, "span": sp.hash, "time_ms": r.time_ms if r.ok else None,
                          "exit": int(ExitCode.OK if r.ok else ExitCode.FAILURE)}))
        return ExitCode.OK if r.ok else ExitCode.FAILURE
    print(f"problem:  {sp.problem_key}")
    print(f"solution: {sp.solution}")
    print(f"span:     {sp.hash}")
    if r.ok:
        print(f"ok: matches the numpy oracle ({r.time_ms:.4f}ms)")
        return ExitCode.OK
    print(f"FAILED ({r.status}): {r.detail}")
    return ExitCode.FAILURE


def run(args) -> int:
    return run_guarded(_run, args)
