"""Layer 7, ``repro``: failure records, signatures and dedup, reproducer scripts, tickets.

    rec = FailureRecord.from_run(run_result, origin="tests/test_x.py::test_y")
    w = ReproWriter("reproducers").write(rec)   # -> WrittenRepro(signature, script_path, ticket_path, new, count)
    run(PAYLOAD, argv)                          # what a reproducer script calls: its exit status
"""
from .record import KINDS, STAGES, FailureRecord
from .signature import normalise_error, normalise_mlir_text, signature, symbol_of
from .runner import run
from .writer import ReproWriter, WrittenRepro, render_script

__all__ = ["FailureRecord", "KINDS", "STAGES", "signature", "normalise_error", "normalise_mlir_text", "symbol_of",
           "ReproWriter", "WrittenRepro", "render_script", "run"]
