"""Errors of the mlir layer: always with file, line and column."""
from __future__ import annotations

from pytest_mlirtrace.ir.module import IRError


def line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of offset ``pos`` in ``text``."""
    pos = max(0, min(pos, len(text)))
    line = text.count("\n", 0, pos) + 1
    start = text.rfind("\n", 0, pos) + 1
    return line, pos - start + 1


class MLIRParseError(IRError):
    """Malformed MLIR: ``FILE:LINE:COL: message`` plus the offending line."""

    def __init__(self, msg: str, source: str, line: int, column: int, text: str | None = None):
        self.msg, self.source, self.line, self.column = msg, source, line, column
        self.source_line = ""
        if text is not None:
            lines = text.splitlines()
            if 1 <= line <= len(lines):
                self.source_line = lines[line - 1]
        where = f"{source}:{line}:{column}: {msg}"
        if self.source_line:
            where += f"\n    {self.source_line}\n    {' ' * (column - 1)}^"
        super().__init__(where)

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class MLIRVerifyError(MLIRParseError):
    """Well-formed MLIR whose types disagree with the migraphx shape rules (or that uses what the IR lacks)."""


class MLIRUnsupportedError(MLIRVerifyError):
    """No func in the text can be turned into a module; the message lists why for each."""
