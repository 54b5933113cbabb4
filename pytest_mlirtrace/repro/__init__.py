"""Layer 7, ``repro``: failure records, signatures and dedup, reproducer scripts, tickets.

    rec = FailureRecord.from_run(run_result, origin="tests/test_x.py::test_y")
    w = ReproWriter("reproducers").write(rec)   # -> WrittenRepro(signature, script_path, ticket_path, new, count)
    run(PAYLOAD, argv)                          # what a reproducer script calls: its exit status
"""
from .findings import confirm_planted, records_from_events, rerun_without_faults
from .record import KINDS, STAGES, FailureRecord
from .signature import normalise_error, normalise_mlir_text, signature, symbol_of
from .runner import run
from .writer import ReproWriter, WrittenRepro, render_script

__all__ = ["records_from_events", "confirm_planted", "rerun_without_faults", "FailureRecord", "KINDS", "STAGES", "signature", "normalise_error", "normalise_mlir_text", "symbol_of",
           "ReproWriter", "WrittenRepro", "render_script", "run"]
