"""What ``mlirtrace fuzz`` shows: progress while it runs, the summary and the JSON report after."""
from __future__ import annotations

import json
import sys
import threading
import time

from .. import ir
from ..trace.table import is_terminal, terminal_console
from .engine import Fuzzer
from .options import FuzzOptions


class Progress:
    """Progress on stderr. On a terminal, a ``rich`` progress bar over the time budget with the line's
    counts, redrawn in place at most every 0.2s; otherwise :meth:`line` every ``every_s``."""

    def __init__(self, stream=None, every_s: float = 10.0, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.tty = is_terminal(self.stream)
        self.every_s = every_s
        self.quiet = quiet
        self.last = 0.0
        self._bar = self._task = None
        self._lock = threading.Lock()

    @staticmethod
    def clock(fz) -> str:
        return f"{fz.stats.elapsed_s:5.1f}s/{fz.o.budget_s:g}s"

    @staticmethod
    def counts(fz) -> str:
        st = fz.stats
        fails = ", ".join(f"{k} {v}" for k, v in sorted(st.failures.items())) or "none"
        return (f"{st.cases} cases ({st.rate:.2f}/s)  failures: {fails}  reproducers: {len(fz.findings)}  "
                f"[{st.phase}]")

    @classmethod
    def line(cls, fz) -> str:
        return f"fuzz {cls.clock(fz)}  {cls.counts(fz)}"

    def __call__(self, fz) -> None:
        if self.quiet:
            return
        with self._lock:
            now = time.monotonic()
            if self.tty:
                if now - self.last < 0.2:
                    return
                self._draw(fz)
            else:
                if now - self.last < self.every_s:
                    return
                self.stream.write(self.line(fz) + "\n")
                self.stream.flush()
            self.last = now

    def _draw(self, fz) -> None:
        budget = max(float(fz.o.budget_s), 1e-9)
        fields = dict(completed=min(fz.stats.elapsed_s, budget), clock=self.clock(fz), counts=self.counts(fz))
        if self._bar is None:
            from rich.progress import BarColumn, TextColumn
            from rich.progress import Progress as Bar
            from rich.table import Column

            fixed = dict(table_column=Column(no_wrap=True))     # these keep their width: a narrow terminal
            self._bar = Bar(TextColumn("fuzz", **fixed), BarColumn(bar_width=20, **fixed),
                            TextColumn("{task.fields[clock]}", markup=False, **fixed),
                            TextColumn("{task.fields[counts]}", markup=False, table_column=Column()),  # wraps
                            console=terminal_console(self.stream),
                            auto_refresh=False, redirect_stdout=False, redirect_stderr=False)
            self._task = self._bar.add_task("fuzz", total=budget, **fields)
            self._bar.start()                       # draws it
        else:
            self._bar.update(self._task, refresh=True, **fields)

    def done(self) -> None:
        """Take the bar down (a last redraw, then a new line); nothing when it never showed."""
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


def summary(report, lanes) -> str:
    st = report.stats
    lines = [f"fuzz: {st.cases} cases in {st.elapsed_s:.1f}s ({st.rate:.2f} cases/s), {st.examples} examples, "
             f"{st.campaigns} campaign(s), {lanes} lane(s)"]
    fails = ", ".join(f"{k} {v}" for k, v in sorted(st.failures.items()))
    lines.append(f"failing cases by kind: {fails or 'none'}")
    if st.reshrinks:
        lines.append(f"known ways shrunk again (another bug behind one?): {st.reshrinks}, "
                     f"{st.repeats} of them the bug already written")
    if st.coverage is not None and st.examples:
        lines.extend(st.coverage.lines())
    if st.odd_drawn:
        n_ref = sum(st.odd_refused.values())
        top = "; ".join(f"{r} {n}" for r, n in st.odd_refused.most_common(4))
        lines.append(f"perf configs beyond the space: {st.odd_drawn} drawn, {st.odd_drawn - n_ref} run and checked, "
                     f"{n_ref} refused" + (f" ({top})" if top else ""))
    if not report.findings:
        lines.append("reproducers written: none")
    else:
        n_new = len(report.new)
        lines.append(f"reproducers written: {len(report.findings)} ({n_new} new)")
        for f in report.findings:
            w = f.written
            state = "new" if w is None or w.new else f"seen before ({w.count}x)"
            where = f.path
            if w is not None and getattr(w, "elsewhere", ""):
                state = f"written by another runner ({w.count}x fleet-wide)"
                where = f"{w.signature} in {w.elsewhere} (mlirtrace repro pull)"
            shrunk = "" if f.shrunk else ", not fully shrunk (budget)"
            lines.append(f"  {f.kind:<14} {where}  [{state}{shrunk}; found after {f.first_found_s:.1f}s, "
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
        "max_case_s": round(st.max_case_s, 3), "reshrinks": st.reshrinks, "repeats": st.repeats,
        "odd_perf_configs": {"drawn": st.odd_drawn, "refused": dict(st.odd_refused)},
        "coverage": st.coverage.to_dict() if st.coverage is not None else {},
        "failures": dict(st.failures), "statuses": dict(st.statuses), "kinds": dict(st.kinds),
        "inject": fz.inject or "",
        "exit_code": report.exit_code, "store": fz.store.summary(),
        "findings": [{
            "kind": f.kind, "way": f.way, "signature": getattr(f.written, "signature", ""), "path": f.path,
            "ticket": str(getattr(f.written, "ticket_path", "") or ""), "new": bool(getattr(f.written, "new", True)),
            "count": int(getattr(f.written, "count", 1) or 1), "elsewhere": getattr(f.written, "elsewhere", ""),
            "shrunk": f.shrunk, "note": f.note, "first_found_s": round(f.first_found_s, 3),
            "written_s": round(f.written_s, 3),
            "solution": f.solution, "seed": f.seed, "symbol": f.module.symbol_name(),
            "ops": f.module.ops(),
            "error": (f.record.first_line if f.record is not None else f.error.splitlines()[0]),
        } for f in report.findings],
    }


def run_and_report(options: FuzzOptions, *, quiet: bool = False, report_path: str | None = None,
                   as_json: bool = False) -> int:
    """Run a fuzz with progress on stderr, print the summary (``as_json``: the JSON report instead, on
    stdout), write the JSON report; the exit status (1: a new finding, 0: none). Bad options raise
    ValueError / codegen.FaultError; an environment failure raises runtime.DeviceError."""
    prog = Progress(quiet=quiet)
    fz = Fuzzer(options, progress=prog)
    if not quiet:
        o = options
        print(f"fuzz: device {fz.device.key_name} ({fz.device.spec}), kinds {', '.join(o.kinds)}, max dim "
              f"{o.max_dim}, {fz.jobs} lane(s), seed {o.seed if o.seed is not None else 'random'}"
              + (", build fast (optimisations off)" if o.build == "fast" else "")
              + (f", injected fault(s): {fz.inject}" if fz.inject else ""), file=sys.stderr)
    try:
        report = fz.run()
    finally:
        prog.done()
    if not as_json:
        print(summary(report, fz.jobs))
    if report_path or as_json:
        d = report_dict(report, fz)
        for row, f in zip(d["findings"], report.findings, strict=True):
            row["module"] = ir.print_module(f.module)
        if report_path:
            with open(report_path, "w", encoding="utf-8") as fh:
                json.dump(d, fh, indent=1)
        if as_json:
            print(json.dumps(d, indent=1))
    return report.exit_code
