"""The state of one read of a log, shared by the readers of each kind of part."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .line_kinds import Line
from .parts import BenchmarkBlock, ErrorPart, LoggedSolution, TraceLogParts


@dataclass
class Reader:
    """Where one read of a log stands: its lines, the parts found so far, and what is still open."""
    lines: list[Line]
    parts: TraceLogParts
    layer: Any = None                              # the mlir layer (parse_mlir, maybe emit_mlir), or None
    bench: BenchmarkBlock | None = None            # the open benchmark block
    closed_bench: BenchmarkBlock | None = None     # the block a "Fastest solution" line just closed
    pending_solution: LoggedSolution | None = None       # being benchmarked: its result line not seen yet
    last_error: ErrorPart | None = None
    last_error_idx: int = -10                      # the logical line index of the last error line
    last_mlir_idx: int = -10                       # ... of the last line of the last MLIR module
    bytes_idx: int = -10                           # ... of the last code-object bytes line

    @property
    def n(self) -> int:
        return len(self.lines)
