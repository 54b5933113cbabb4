"""File helpers of the repro layer.  Atomic writes and the exclusive lock live in :mod:`..fs` (re-exported
here), so parallel writers (pytest-xdist workers, several ``mlirtrace`` processes) never see or leave a
half-written file and never lose an index update."""
from __future__ import annotations

import os

from ..fs import atomic_write, locked

__all__ = ["atomic_write", "locked", "display_path"]


def display_path(p: str | os.PathLike) -> str:
    """``p`` relative to the working directory when it lies below it (what to type), else absolute."""
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return str(p)
    return str(p) if rel.startswith("..") else rel
