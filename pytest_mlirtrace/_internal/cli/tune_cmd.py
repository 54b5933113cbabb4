"""``mlirtrace tune FILE [--quick|--exhaustive]``: benchmark solutions, keep the fastest correct one.

Exit status: 0 every solution built, ran and matched the oracle; 1 some failed (``N of M solutions
failed``, and a reproducer + ticket is written for them, one per way of failing), 2 bad input or usage,
3 a module the code generator does not handle.
"""
from __future__ import annotations

import json

from ..config import environment
from ..engine import CUT_ONCE_FACTOR
from ..repro import Findings, records_from_events
from ..trace import table
from ..vocab import ExitCode, Status
from .common import Progress, add_device_options, add_module_options, open_module, repro_writer, run_guarded


def add_parser(sub, name):
    p = sub.add_parser(name, help="benchmark the quick-tuning list or the full space",
                       description="Build every solution in parallel workers, benchmark each, check each "
                                   "against the numpy oracle, keep the fastest in the tuning database; "
                                   "write a reproducer for the solutions that fail (exit status 1).")
    p.add_argument("file")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick", help="quick-tuning list (default)")
    g.add_argument("--exhaustive", dest="mode", action="store_const", const="exhaustive", help="the full space")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per solution (median is kept)")
    p.add_argument("--repro-dir", default=None, metavar="DIR",
                   help=f"where reproducers of failing solutions go (env {environment.REPRO_DIR}; default "
                        "reproducers)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table "
                                                       "(progress stays on stderr)")
    p.set_defaults(mode="quick")
    add_module_options(p, database=True)
    add_device_options(p)
    return p


def _file_failures(args, s, start: int, res):
    """The findings service on the solutions of ``res`` that failed (the CompileFailed events logged since
    ``start``): one reproducer per signature, listing the solutions that passed."""
    pipe = s.pipeline
    passed = [r.solution for r in res.rows if r.status == Status.OK]
    recs = records_from_events(s.log.events[start:], seed=pipe.seed, origin=f"mlirtrace tune {args.file}",
                               specs={c.span.hash: c.spec for c in res.failures}, bench_table=s.log.bench_table(),
                               passed=passed, inject=pipe.inject or "", timeout_s=pipe.timeout_s,
                               device_info=pipe.device)
    return Findings(repro_writer(args), pipeline=pipe).file(recs, passed=passed)


def _run(args) -> int:
    module, mlir_text, s = open_module(args, repeats=args.repeats)
    start = len(s.log.events)
    with Progress(0, "tuning") as bar:
        res = s.pipeline.tune(module, mode=args.mode, mlir_text=mlir_text, use_database=not args.no_database,
                              progress=bar)
    if args.json:
        written = _file_failures(args, s, start, res).written if res.failures else []
        code = ExitCode.FAILURE if res.failures or res.best is None else ExitCode.OK
        print(json.dumps({
            "problem_key": res.lowered.key, "exit": int(code),
            "best": None if res.best is None else {"solution": res.best.span.solution, "time_ms": res.best_ms,
                                                   "from_database": bool(res.from_database)},
            "solutions": [{"solution": r.solution, "status": r.status, "time_ms": r.time_ms, "build_s": r.build_s,
                           "span": r.span_hash, "cut": r.cut} for r in res.rows],
            "build_wall_s": res.build_wall_s, "build_sum_s": res.build_sum_s,
            "reproducers": [{"signature": w.signature, "path": str(w.script_path), "new": w.new, "count": w.count}
                            for w in written]}, indent=1))
        return code
    print(f"problem: {res.lowered.key}")
    table.echo(table.SOLUTION_COLUMNS, table.solution_rows(res.rows, fastest_first=True))
    print(f"builds: {res.build_wall_s:.2f}s wall for {res.build_sum_s:.2f}s of builds")
    n_cut = sum(r.cut for r in res.rows)
    if n_cut:
        print(f"timing cut short for {n_cut} solution(s) ('>' before the time): two launches took over "
              f"{s.pipeline.cut_factor:g}x the best so far, or one over {CUT_ONCE_FACTOR:g}x")
    if res.best is None:
        print("no solution built and matched the oracle")
    else:
        src = " (from tuning database)" if res.from_database else ""
        print(f"fastest solution: {res.best.span.solution} {res.best_ms:.4f}ms{src}")
    if res.failures:
        print(f"{len(res.failures)} of {len(res.rows)} solutions failed")
        for line in _file_failures(args, s, start, res).lines():
            print(f"reproducer: {line}")
    return ExitCode.FAILURE if res.failures or res.best is None else ExitCode.OK


def run(args) -> int:
    return run_guarded(_run, args)
