"""``mlirtrace import-trace LOG [--out DIR]``: turn a real MIGraphX trace log into reproducers.

The log is split into module dumps, MLIR modules, benchmarking blocks and errors (``logs.parse_log``),
each MLIR module is linked to its module dump and benchmark block, and every runnable MLIR module is
run on our backend — with the logged solution where it maps onto our perf-config fields, else with
the best one a quick tune finds — and written out as a reproducer + ticket (``repro.ReproWriter``).
What cannot run is listed with the reason, never dropped.
"""
from __future__ import annotations

from .common import CLIError, add_device_options, run_guarded, session


def add_parser(sub, name):
    p = sub.add_parser(name, help="split a MIGraphX trace log and write a reproducer per MLIR module",
                       description=__doc__.splitlines()[0])
    p.add_argument("log")
    p.add_argument("--out", default="reproducers", help="directory for reproducers, tickets and parts.json")
    p.add_argument("--no-tune", action="store_true",
                   help="when the logged solution does not map, use the default solution instead of a quick tune")
    add_device_options(p)
    return p


def _run(args) -> int:
    from ..repro.from_log import import_log

    try:
        with open(args.log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise CLIError(f"cannot read {args.log}: {e.strerror}") from None
    return import_log(text, args.log, args.out, lambda: session(args), no_tune=args.no_tune)


def run(args) -> int:
    return run_guarded(_run, args)
