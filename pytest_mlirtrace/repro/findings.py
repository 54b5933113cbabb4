"""From what one call logged to the records a front end writes: the failing solutions of a compile or a
tune, and whether a failure recorded with a planted fault on is the fault's doing."""
from __future__ import annotations

from typing import Callable, Iterable

from .record import FailureRecord
from .signature import signature

__all__ = ["records_from_events", "confirm_planted", "rerun_without_faults"]


def records_from_events(events: Iterable, *, seed: int, origin: str, specs: dict | None = None,
                        bench_table: str = "", passed: Iterable[str] = (), **kw) -> list[FailureRecord]:
    """A :class:`FailureRecord` per ``engine.CompileFailed`` event in ``events`` that has a span; ``specs``:
    span hash -> KernelSpec (the tune's failures carry theirs), ``passed``: the solutions that worked on the
    same module in the same call; the rest of ``kw`` goes to every record (inject, timeout_s, device_info)."""
    from ..engine.events import CompileFailed

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
        if r.inject and r.planted is None and r.kind != "assertion":
            groups.setdefault(signature(r), []).append(r)
    for rs in groups.values():
        ok = rerun(rs[0])
        if ok is None:
            continue
        for r in rs:
            r.planted = bool(ok)


def rerun_without_faults(session, rec: FailureRecord) -> bool | None:
    """Does ``rec``'s case (module, solution, seed) pass on ``session`` (a TraceSession) with no fault
    switched on, in time when it was too slow? None when it cannot run at all."""
    from ..engine import MemoryDatabase, RunOptions

    try:
        res = session.run(rec.span.mlir_text or rec.span.module_text, solution=rec.span.solution or None,
                          seed=rec.seed, options=RunOptions(inject="", timeout_s=rec.timeout_s,
                                                            database=MemoryDatabase()))
    except Exception:   # noqa: BLE001 - it can't even run with the fault off: left unchecked
        return None
    return res.ok and not (rec.max_ms is not None and res.time_ms is not None and res.time_ms > rec.max_ms)
