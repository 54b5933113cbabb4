"""``mlirtrace fuzz --budget SECONDS``: Hypothesis-driven fuzzing of fused ops against the numpy oracle.

Draws fused modules (gemm, pointwise, reduce, softmax) and applicable solutions, compiles and runs
each case in isolated workers, shrinks every new kind of failure to a small case and writes one
reproducer + ticket per failure signature. Exit status: 1 when a new failure was found, 0
otherwise, 2 for usage errors.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from .common import CLIError, run_guarded


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _kinds(text: str) -> list[str]:
    from ..strategies import ALL_KINDS

    out = [k.strip() for k in text.replace(",", " ").split() if k.strip()]
    bad = [k for k in out if k not in ALL_KINDS]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(bad) or text!r}; "
                                         f"choose from {', '.join(ALL_KINDS)}")
    return out


def add_parser(sub, name):
    from ..strategies.fuzz import DEFAULT_DATABASE

    p = sub.add_parser(name, help="fuzz fused ops x solutions against the numpy oracle",
                       description=__doc__.splitlines()[0].split(": ", 1)[1],
                       epilog="Planted faults for trying it out: MLIRTRACE_INJECT=<fault> (see codegen.FAULTS).")
    p.add_argument("--budget", type=_positive_float, required=True, metavar="SECONDS",
                   help="wall-clock time to spend (shrinking and writing included)")
    p.add_argument("--seed", type=int, default=None, help="seed of the search (default: random)")
    p.add_argument("--device", default=None,
                   help="OpenCL device: pocl (default), nvidia, gpu, cpu, P:D or a name substring")
    p.add_argument("--repro-dir", default="reproducers", metavar="DIR",
                   help="where reproducers and tickets go (default: reproducers)")
    p.add_argument("--kinds", type=_kinds, action="extend", default=None, metavar="KIND",
                   help="graph kinds to draw, comma or space separated: pointwise, reduce, softmax, gemm "
                        "(attention is drawn by the strategies but not lowered; default: all four)")
    p.add_argument("--max-dim", type=_positive_int, default=16, metavar="N", help="largest dim (default 16)")
    p.add_argument("--database", default=DEFAULT_DATABASE, metavar="DIR",
                   help=f"Hypothesis example database (default {DEFAULT_DATABASE}); 'none' for none")
    p.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                   help="parallel lanes (default: min(2, CPUs))")
    p.add_argument("--timeout", type=_positive_float, default=10.0, metavar="SECONDS",
                   help="seconds before a build or run counts as hung (default 10)")
    p.add_argument("--shrink-budget", type=_positive_float, default=None, metavar="SECONDS",
                   help="most time to spend shrinking one failure (default: max(15, 35%% of the budget))")
    p.add_argument("--seeds", type=_positive_int, default=2, metavar="N",
                   help="random inputs each compiled kernel is checked on (default 2)")
    p.add_argument("--max-findings", type=_positive_int, default=None, metavar="N",
                   help="stop once N reproducers are written (default: use the whole budget)")
    p.add_argument("--no-verify", action="store_true",
                   help="don't run each reproducer once in a fresh process before writing it")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="also write the summary as JSON to FILE (cases, rate, findings with their timings)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    return p


class _Progress:
    """Progress on stderr: one updating line on a TTY, a line every ``every_s`` otherwise."""

    def __init__(self, stream=None, every_s: float = 10.0, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self.every_s = every_s
        self.quiet = quiet
        self.last = 0.0
        self.width = 0
        self._lock = threading.Lock()

    @staticmethod
    def line(fz) -> str:
        st = fz.stats
        fails = ", ".join(f"{k} {v}" for k, v in sorted(st.failures.items())) or "none"
        return (f"fuzz {st.elapsed_s:5.1f}s/{fz.o.budget_s:g}s  {st.cases} cases ({st.rate:.2f}/s)  "
                f"failures: {fails}  reproducers: {len(fz.findings)}  [{st.phase}]")

    def __call__(self, fz) -> None:
        if self.quiet:
            return
        with self._lock:
            now = time.monotonic()
            if self.tty:
                if now - self.last < 0.2:
                    return
                text = self.line(fz)
                pad = max(0, self.width - len(text))
                self.stream.write("\r" + text + " " * pad)
                self.width = len(text)
            else:
                if now - self.last < self.every_s:
                    return
                self.stream.write(self.line(fz) + "\n")
            self.last = now
            self.stream.flush()

    def done(self) -> None:
        if self.tty and not self.quiet and self.width:
            self.stream.write("\n")
            self.stream.flush()


def summary(report, lanes) -> str:
    st = report.stats
    lines = [f"fuzz: {st.cases} cases in {st.elapsed_s:.1f}s ({st.rate:.2f} cases/s), {st.examples} examples, "
             f"{st.campaigns} campaign(s), {lanes} lane(s)"]
    fails = ", ".join(f"{k} {v}" for k, v in sorted(st.failures.items()))
    lines.append(f"failing cases by kind: {fails or 'none'}")
    if not report.findings:
        lines.append("reproducers written: none")
    else:
        n_new = len(report.new)
        lines.append(f"reproducers written: {len(report.findings)} ({n_new} new)")
        for f in report.findings:
            w = f.written
            state = "new" if w is None or w.new else f"seen before ({w.count}x)"
            shrunk = "" if f.shrunk else ", not fully shrunk (budget)"
            lines.append(f"  {f.kind:<14} {f.path}  [{state}{shrunk}; found after {f.first_found_s:.1f}s, "
                         f"written after {f.written_s:.1f}s]")
            if f.note:
                lines.append(f"    note: {f.note}")
            lines.append(f"    {f.module.symbol_name()}  solution {f.solution}  seed {f.seed}: "
                         f"{(f.record.first_line if f.record is not None else f.error.splitlines()[0])[:160]}")
    return "\n".join(lines)


def report_dict(report, fz) -> dict:
    st = report.stats
    return {
        "cases": st.cases, "examples": st.examples, "replayed": st.replayed, "campaigns": st.campaigns,
        "elapsed_s": round(st.elapsed_s, 3), "cases_per_s": round(st.rate, 3), "lanes": fz.jobs,
        "max_case_s": round(st.max_case_s, 3),
        "failures": dict(st.failures), "statuses": dict(st.statuses), "kinds": dict(st.kinds), "inject": fz.inject or "",
        "exit_code": report.exit_code,
        "findings": [{
            "kind": f.kind, "way": f.way, "signature": getattr(f.written, "signature", ""), "path": f.path,
            "ticket": str(getattr(f.written, "ticket_path", "") or ""), "new": bool(getattr(f.written, "new", True)),
            "shrunk": f.shrunk, "note": f.note, "first_found_s": round(f.first_found_s, 3), "written_s": round(f.written_s, 3),
            "solution": f.solution, "seed": f.seed, "symbol": f.module.symbol_name(),
            "ops": f.module.ops(),
            "error": (f.record.first_line if f.record is not None else f.error.splitlines()[0]),
        } for f in report.findings],
    }


def _run(args) -> int:
    from .. import codegen, runtime
    from ..strategies import SUPPORTED_KINDS
    from ..strategies.fuzz import FuzzOptions, Fuzzer

    kinds = tuple(dict.fromkeys(args.kinds)) if args.kinds else SUPPORTED_KINDS
    database = None if str(args.database).lower() in ("none", "", "off") else args.database
    o = FuzzOptions(budget_s=args.budget, seed=args.seed, device=args.device, repro_dir=args.repro_dir,
                    kinds=kinds, max_dim=args.max_dim, database=database, jobs=args.jobs or 0,
                    timeout_s=args.timeout, shrink_budget_s=args.shrink_budget,
                    seeds_per_case=args.seeds, max_findings=args.max_findings,
                    verify=not args.no_verify)
    prog = _Progress(quiet=args.quiet)
    try:
        fz = Fuzzer(o, progress=prog)
    except codegen.FaultError as e:
        raise CLIError(f"MLIRTRACE_INJECT: {e}") from None
    except ValueError as e:
        raise CLIError(str(e)) from None
    inject = fz.inject
    if not args.quiet:
        print(f"fuzz: device {fz.device.key_name} ({fz.device.spec}), kinds {', '.join(kinds)}, max dim "
              f"{args.max_dim}, {fz.jobs} lane(s), seed {args.seed if args.seed is not None else 'random'}"
              + (f", injected fault(s): {inject}" if inject else ""), file=sys.stderr)
    try:
        report = fz.run()
    finally:
        prog.done()
    print(summary(report, fz.jobs))
    if args.report:
        import json

        from ..ir import print_module
        d = report_dict(report, fz)
        for row, f in zip(d["findings"], report.findings):
            row["module"] = print_module(f.module)
        with open(args.report, "w", encoding="utf-8") as fh:
            json.dump(d, fh, indent=1)
    return report.exit_code


def run(args) -> int:
    return run_guarded(_run, args)
