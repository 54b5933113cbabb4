"""``mlirtrace report DIR -o report.html [--tuning-db FILE] [--fuzz-report FILE]``: one static HTML page.

Exit status: 0 the page was written; 2 a missing or malformed input (``mlirtrace: FILE: what was expected``)
or an output that cannot be written.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..config import environment
from ..vocab.exit_codes import ExitCode
from .common import CLIError, run_guarded, settings


def add_parser(sub, name):
    p = sub.add_parser(name, help="one static HTML page: findings, tuning charts, fuzz coverage",
                       description="Write one self-contained HTML page (inline CSS and SVG, no script, nothing "
                                   "loaded from a network) over a reproducer directory: its findings by kind and "
                                   "signature with counts, solutions, device, last replay and relative links to "
                                   "each reproducer and ticket; the tuning results as charts (time per solution "
                                   "of each problem, the spread of its solution space); and, with --fuzz-report, "
                                   "what a fuzz run drew (kinds, ops x dtypes, parameter layouts).")
    p.add_argument("dir", metavar="DIR", help="the reproducer directory (holding INDEX.json)")
    p.add_argument("-o", "--output", default="report.html", metavar="FILE",
                   help="the page to write (default report.html); links are relative to its folder")
    p.add_argument("--tuning-db", default=None, metavar="FILE",
                   help="the tuning database (default: the one mlirtrace tune uses: env "
                        f"{environment.TUNING_DB}, "
                        "else tuning.json in mlirtrace's cache)")
    p.add_argument("--no-tuning-db", action="store_true", help="show no tuning database")
    p.add_argument("--fuzz-report", default=None, metavar="FILE",
                   help="a JSON report written by `mlirtrace fuzz --report FILE`: its coverage is shown")
    return p


def _run(args) -> int:
    from ..engine.database import TuningDatabase
    from ..report import ReportInputError, write_report

    out = Path(args.output)
    if out.is_dir():
        raise CLIError(f"{out}: is a directory; expected the HTML file to write (-o report.html)")
    if args.no_tuning_db:
        db, explicit = None, True
    elif args.tuning_db is not None:
        db, explicit = Path(args.tuning_db), True
    else:       # the database `mlirtrace tune` reads and writes
        db, explicit = TuningDatabase(settings(args).tuning_db).path, False
    try:
        data = write_report(args.dir, out, db, args.fuzz_report, tuning_db_explicit=explicit)
    except ReportInputError as e:
        raise CLIError(str(e)) from None
    n_runs = sum(len(p.runs) for p in data.problems)
    print(f"{out}: {len(data.findings)} finding(s), {len(data.problems)} tuned problem(s) "
          f"({n_runs} chart(s) of time per solution)" + (", fuzz coverage" if data.fuzz else ""), file=sys.stdout)
    return ExitCode.OK


def run(args) -> int:
    return run_guarded(_run, args)
