"""The one findings service: what every front end (``mlirtrace tune``, the pytest plugin, the fuzz) does
with a failure::

    failure -> FailureRecord -> planted? -> signature -> reproducer + ticket + hand-off (.mlir) -> report line

    recs = records_from_events(log.events[start:], seed=..., origin=..., **context)   # or FailureRecord.from_run
    filed = Findings(writer, pipeline=session.pipeline).file(recs, passed=ok_solutions)
    for line in filed.lines(): print("reproducer:", line)

:meth:`Findings.file` decides and writes in one call; the plugin, which shows a failure's signature
when the test fails and writes at the report, calls :meth:`Findings.settle` first (the same decision:
``file`` does not check a record twice).

**The planted check.** A record made with a planted fault on is *planted* once its case passes with the
fault off, a *real bug* when it fails then too (its signature then leaves the fault out), unchecked when it
cannot run. There is one way to check it: the case run again **in this process's pipeline** (the front
end's, or a fuzz lane's: the kernel runs in that pipeline's worker processes) with the faults off
(:mod:`.rerun`) -- not the written script in a fresh Python process, because

* the answer is needed *before* anything is written: it changes the signature, which names the files;
  checking a script means writing the reproducer twice (payload, oracle outputs, evidence runs);
* the run is isolated already: a crash or a hang costs a worker process, not the caller;
* it costs one build and run of the kernel, not a Python start, an import of the compiler and a new
  worker pool per finding (seconds each in a pytest run that fails many tests).

Whether a failure shows in a fresh process at all is another question, the fuzz's ``verify`` step, which
launches the written script (:mod:`.launch`, the one launcher of reproducer scripts).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..engine import CompileFailed
from ..vocab import Status
from .record import FailureRecord
from .rerun import Refused, on_pipeline, rerun_of
from .signature import signature
from .writer import WrittenRepro

__all__ = ["Findings", "Filed", "records_from_events", "confirm_planted", "passes_without_faults",
           "rerun_without_faults", "report_line"]


def records_from_events(events: Iterable, *, seed: int, origin: str, specs: dict | None = None,
                        bench_table: str = "", passed: Iterable[str] = (), **kw) -> list[FailureRecord]:
    """A :class:`FailureRecord` per ``engine.CompileFailed`` event in ``events`` that has a span; ``specs``:
    span hash -> KernelSpec (the tune's failures carry theirs), ``passed``: the solutions that worked on the
    same module in the same call; the rest of ``kw`` goes to every record (inject, timeout_s, device_info)."""
    specs = specs or {}
    out = []
    for ev in events:
        if isinstance(ev, CompileFailed) and ev.span is not None:
            rec = FailureRecord.from_event(ev, seed=seed, origin=origin, spec=specs.get(ev.span.hash), **kw)
            rec.bench_table = bench_table
            rec.passed = tuple(passed)
            out.append(rec)
    return out


def confirm_planted(recs: Iterable[FailureRecord], rerun: Callable[[FailureRecord], bool | None]) -> None:
    """Set ``planted`` on the records failed with a fault switched on: each bug (signature) is run once more
    with the fault off (``rerun(record)``: True when it passes then, False when it fails, None when it could
    not run). Passing: planted; failing too: a real bug. A test's own assertion can't be judged that way and
    stays unchecked (None)."""
    groups: dict[str, list[FailureRecord]] = {}
    for r in recs:
        if r.inject and r.planted is None and r.kind != Status.ASSERTION:
            groups.setdefault(signature(r), []).append(r)
    for rs in groups.values():
        ok = rerun(rs[0])
        if ok is None:
            continue
        for r in rs:
            r.planted = bool(ok)


def passes_without_faults(rec: FailureRecord, rerun=None) -> bool | None:
    """Does ``rec``'s case (module, solution, seed) pass with no fault switched on, in time when it was too
    slow? ``rerun``: who runs it (:mod:`.rerun`; default: the record's runner, else a pipeline on its
    device). None when it cannot run at all (or its runner has no time left)."""
    try:
        res = rerun_of(rec, rerun)(rec, inject="")
    except Refused:     # the solution is refused with the fault off (odd_perf_config): it cannot fail then
        return True
    except Exception:   # noqa: BLE001 - it can't even run with the fault off: left unchecked
        return None
    if res is None:
        return None
    return res.ok and not (rec.max_ms is not None and res.time_ms is not None and res.time_ms > rec.max_ms)


def rerun_without_faults(session, rec: FailureRecord) -> bool | None:
    """:func:`passes_without_faults` on ``session``'s pipeline (a TraceSession)."""
    return passes_without_faults(rec, on_pipeline(session.pipeline))


def report_line(w: WrittenRepro) -> str:
    """One written reproducer as a command reports it: ``PATH (new)`` or ``PATH (seen N times)``."""
    return f"{w.script_path} ({'new' if w.new else f'seen {w.count} times'})"


@dataclass
class Filed:
    """What :meth:`Findings.file` did with the records of one call."""
    records: list                                   # the FailureRecords, planted decided where it could be
    written: list = field(default_factory=list)     # a WrittenRepro per signature ([]: reproducers off)
    errors: list = field(default_factory=list)      # "<signature>: <error>" of what could not be written

    @property
    def signatures(self) -> list[str]:
        return list(dict.fromkeys(signature(r) for r in self.records))

    def lines(self) -> list[str]:
        """A report line per written reproducer (:func:`report_line`), then what could not be written."""
        return [report_line(w) for w in self.written] + [f"could not write {e}" for e in self.errors]


class Findings:
    """The findings of one front end. ``writer``: where reproducers go (a ``ReproWriter`` or a store's fleet
    writer; None: reproducers off, decide only); ``pipeline``: the front end's pipeline, which runs a case
    again for the planted check (records with a ``runner`` of their own use that; neither: a pipeline on the
    recorded device)."""

    def __init__(self, writer=None, *, pipeline=None):
        self.writer = writer
        self._rerun = on_pipeline(pipeline) if pipeline is not None else None

    def settle(self, recs: Iterable[FailureRecord]) -> list[str]:
        """Decide what can be decided before writing: whether each record with a fault on is planted (one
        run per signature, with the faults off). The records' signatures, in order, once each."""
        recs = list(recs)
        confirm_planted(recs, lambda rec: passes_without_faults(rec, self._rerun))
        return list(dict.fromkeys(signature(r) for r in recs))

    def file(self, recs: Iterable[FailureRecord], passed: Iterable[str] = (), *, check_planted: bool = True,
             keep_going: bool = False) -> Filed:
        """:meth:`settle` ``recs`` (the failures of one call: a tune, a test, a fuzz finding) and write one
        reproducer + ticket (+ the hand-off ``.mlir``) per signature, listing the solutions that failed and
        ``passed`` (those that worked on the same module). ``check_planted=False``: written as decided so far
        (no time left to run them again: planted stays unchecked). ``keep_going``: an error writing them is
        kept in :attr:`Filed.errors` (a test report must not be lost to it) instead of raised."""
        recs = list(recs)
        if check_planted:
            self.settle(recs)
        filed = Filed(recs)
        if self.writer is None or not recs:
            return filed
        try:
            filed.written = list(self.writer.write_all(recs, passed=list(passed)))
        except Exception as e:   # noqa: BLE001 - handed back with keep_going
            if not keep_going:
                raise
            filed.errors.append(f"{signature(recs[0])}: {type(e).__name__}: {e}")
        return filed
