"""Layer 7, ``repro``: failure records, signatures and dedup, reproducer scripts, tickets -- and the one
findings service the front ends call (:class:`Findings`).

    recs = records_from_events(events, seed=0, origin="tests/test_x.py::test_y", **context)
    filed = Findings(ReproWriter("reproducers"), pipeline=session.pipeline).file(recs)
    filed.written                               # -> [WrittenRepro(signature, script_path, ticket_path, new, count)]

What a reproducer script imports is :mod:`pytest_mlirtrace.reproduce` (public); the rest is internal.
"""
from .findings import (
    Filed,
    Findings,
    confirm_planted,
    passes_without_faults,
    records_from_events,
    report_line,
    rerun_without_faults,
)
from .record import KINDS, STAGES, FailureRecord
from .signature import (
    explained_by,
    failure_way,
    normalise_error,
    normalise_mlir_text,
    same_shrunk_case,
    shrunk_case_key,
    signature,
    symbol_of,
)
from .writer import ReproWriter, WrittenRepro, render_script

__all__ = ["Findings", "Filed", "records_from_events", "confirm_planted", "passes_without_faults",
           "rerun_without_faults", "report_line", "FailureRecord", "KINDS", "STAGES", "signature",
           "shrunk_case_key", "same_shrunk_case", "explained_by", "failure_way", "normalise_error",
           "normalise_mlir_text", "symbol_of", "ReproWriter", "WrittenRepro", "render_script"]

