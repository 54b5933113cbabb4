"""``mlirtrace tune FILE [--quick|--exhaustive]``: benchmark solutions, keep the fastest correct one."""
from __future__ import annotations

from ..trace import table
from .common import Progress, add_device_options, open_module, run_guarded


def add_parser(sub, name):
    p = sub.add_parser(name, help="benchmark the quick-tuning list or the full space",
                       description="Build every solution in parallel workers, benchmark each, check each "
                                   "against the numpy oracle, keep the fastest in the tuning database.")
    p.add_argument("file")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick", help="quick-tuning list (default)")
    g.add_argument("--exhaustive", dest="mode", action="store_const", const="exhaustive", help="the full space")
    p.add_argument("--no-database", action="store_true", help="ignore the tuning database entry, re-tune")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per solution (median is kept)")
    p.set_defaults(mode="quick")
    add_device_options(p)
    return p


def _run(args) -> int:
    module, mlir_text, s = open_module(args, repeats=args.repeats)
    with Progress(0, "tuning") as bar:
        res = s.pipeline.tune(module, mode=args.mode, mlir_text=mlir_text, use_database=not args.no_database,
                              progress=bar)
    print(f"problem: {res.lowered.key}")
    table.echo(table.SOLUTION_COLUMNS, table.solution_rows(res.rows, fastest_first=True))
    print(f"builds: {res.build_wall_s:.2f}s wall for {res.build_sum_s:.2f}s of builds")
    if res.best is None:
        print("no solution built and matched the oracle")
        return 1
    src = " (from tuning database)" if res.from_database else ""
    print(f"fastest solution: {res.best.span.solution} {res.best_ms:.4f}ms{src}")
    return 0


def run(args) -> int:
    return run_guarded(_run, args)
