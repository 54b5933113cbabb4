"""Atomic file writes and an exclusive lock, so parallel writers (pytest-xdist workers, several
``mlirtrace`` processes) never see or leave a half-written file and never lose an index update."""
from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes, mode: int = 0o644) -> Path:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then ``os.replace`` it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def locked(lock_path: str | Path):
    """Hold an exclusive ``fcntl`` lock on ``lock_path`` (created if missing) for the block."""
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def display_path(p: str | os.PathLike) -> str:
    """``p`` relative to the working directory when it lies below it (what to type), else absolute."""
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return str(p)
    return str(p) if rel.startswith("..") else rel
