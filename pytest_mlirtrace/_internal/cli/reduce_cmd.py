"""``mlirtrace reduce REPRO.py``: a written reproducer's module made small while it fails the same way."""
from __future__ import annotations

import sys

from .common import CLIError, add_device_options, run_guarded, settings


def add_parser(sub, name):
    p = sub.add_parser(name, help="reduce a reproducer's module while it keeps failing the same way",
                       description="Drop ops, shrink sizes and move the solution toward the default, each step run "
                                   "isolated and kept only when the case still fails in the same class (kind and "
                                   "normalised error); write the reduced reproducer and ticket beside the original.")
    p.add_argument("file", metavar="REPRO.py", help="a reproducer mlirtrace wrote")
    p.add_argument("--budget", type=float, default=300.0, metavar="SECONDS",
                   help="most time to spend (default 300); what held by then is written")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    add_device_options(p)
    return p


def run(args) -> int:
    return run_guarded(_run, args)


def _run(args) -> int:
    from ..repro.reduce import reduce_reproducer, size_of

    st = settings(args)

    def progress(step, red):
        if not args.quiet:
            ops, el = size_of(red.module)
            print(f"reduce {red.elapsed_s:5.0f}s  run {red.runs:3d}  "
                  f"{'held ' if step.held else 'no   '} {step.what}  (now {ops} ops, {el} elements)", file=sys.stderr)

    try:
        out = reduce_reproducer(args.file, st.device, st.timeout_s, args.budget, progress)
    except ValueError as e:
        raise CLIError(str(e)) from None
    print(out.message)
    if out.script_path is not None:
        print(f"  {out.script_path}\n  {out.ticket_path}")
    return out.code
