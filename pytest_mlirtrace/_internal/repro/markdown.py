"""Markdown pieces the tickets and their hand-off sections share: code fences and one-line cells."""
from __future__ import annotations

import re

__all__ = ["fence", "one_line"]


def fence(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    runs = [len(m) for m in re.findall(r"`+", text or "")]
    ticks = "`" * max(3, max(runs, default=0) + 1)
    return f"{ticks}{lang}\n{(text or '').rstrip()}\n{ticks}"


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()
