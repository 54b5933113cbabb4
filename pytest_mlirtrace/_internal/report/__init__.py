"""``mlirtrace report``: one static HTML page over a reproducer directory, a tuning database and a fuzz report.

:func:`gather` reads and checks the inputs (:mod:`.data`), :func:`render` lays them out (:mod:`.page`, charts
as hand-written SVG in :mod:`.charts`), :func:`write_report` does both and writes the page atomically.
Imports only from the layers below it (``repro``, ``engine``'s database, ``fs``).
"""
from __future__ import annotations

from .data import ReportData, ReportInputError, gather
from .page import render

__all__ = ["ReportData", "ReportInputError", "gather", "render", "write_report"]


def write_report(repro_dir, out, tuning_db=None, fuzz_report=None, *, tuning_db_explicit: bool = True) -> ReportData:
    """Gather, render and write the page to ``out``; the data shown. Raises :class:`ReportInputError`."""
    from ..fs import atomic_write

    data = gather(repro_dir, tuning_db, fuzz_report, tuning_db_explicit=tuning_db_explicit)
    atomic_write(out, render(data, out))
    return data
