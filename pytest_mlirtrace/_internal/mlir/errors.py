"""Errors of the mlir layer: always with file, line and column."""
from __future__ import annotations

import bisect
import re

from pytest_mlirtrace._internal.ir.module import IRError

_LINE_STARTS: list = [None, None]      # [text, offsets of its line starts]: the last big text asked about


def line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of offset ``pos`` in ``text`` (a big text's line starts are indexed once, so
    asking for every func of a large file stays linear)."""
    pos = max(0, min(pos, len(text)))
    if len(text) < 1 << 16:
        line = text.count("\n", 0, pos) + 1
        start = text.rfind("\n", 0, pos) + 1
        return line, pos - start + 1
    if _LINE_STARTS[0] is not text:
        _LINE_STARTS[:] = [text, [0] + [m.end() for m in re.finditer("\n", text)]]
    starts = _LINE_STARTS[1]
    line = bisect.bisect_right(starts, pos)
    return line, pos - starts[line - 1] + 1


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
