"""``mlirtrace import-trace LOG [--out DIR]``: turn a real MIGraphX trace log into reproducers.

The log is split into module dumps, MLIR modules, benchmarking blocks and errors (``logs.parse_log``),
each MLIR module is linked to its module dump and benchmark block, and every runnable MLIR module is
run on our backend — with the logged solution where it maps onto our perf-config fields, else with
the best one a quick tune finds — and written out as a reproducer + ticket (``repro.ReproWriter``).
What cannot run (not runnable, not supported by the code generator, over ``--max-bytes``) is listed
with the reason, never dropped. ``import-lines.json`` says what the rest of the log became: each module dump
(and why it cannot run as printed: a compiled program, literals printed as ``{ ... }``), the count of lines of
each kind, and every line no reader knows, with its line number (also printed under "unrecognised lines").
Bytes that are not UTF-8 are reported (``LOG:LINE:COL``) and replaced: a log is read whatever else it holds.

Exit status: 0 every module that ran matched the oracle (what could not run is listed), 1 one failed
here, 2 bad usage or nothing MIGraphX printed was found.
"""
from __future__ import annotations

import sys

from ..config import environment
from .common import CLIError, add_device_options, run_guarded, session, settings


def add_parser(sub, name):
    p = sub.add_parser(name, help="split a MIGraphX trace log and write a reproducer per MLIR module",
                       description=__doc__.splitlines()[0])
    p.add_argument("log")
    p.add_argument("--out", default="reproducers", help="directory for reproducers, tickets and parts.json")
    p.add_argument("--no-tune", action="store_true",
                   help="when the logged solution does not map, use the default solution instead of a quick tune")
    p.add_argument("--max-bytes", default=None, metavar="SIZE",
                   help=f"most host memory one module's checked run may take (env {environment.MAX_BYTES}; default 2G)")
    add_device_options(p)
    return p


def _run(args) -> int:
    from ..engine.session import InputError, decode_source
    from ..repro.from_log import import_log

    try:
        with open(args.log, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CLIError(f"cannot read {args.log}: {e.strerror or e}") from None
    try:
        text = decode_source(data, args.log)
    except InputError as e:
        print(f"{e}; such bytes are replaced", file=sys.stderr)
        text = data.decode("utf-8", errors="replace")
    settings(args)          # a bad option is a usage error before anything is written
    return import_log(text, args.log, args.out, lambda: session(args), no_tune=args.no_tune)


def run(args) -> int:
    return run_guarded(_run, args)
