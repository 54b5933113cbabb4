"""The one filesystem helper: atomic writes, an exclusive inter-process lock, mlirtrace's cache directory.

Parallel writers (pytest-xdist workers, several ``mlirtrace`` processes, the OpenCL workers) never see
or leave a half-written file (:func:`atomic_write`) and never lose a read-modify-write update
(:func:`locked`).

It imports only ``config.environment`` (a leaf) from the package: the OpenCL worker processes import it
without the package's ``__init__`` (see ``runtime/worker.py``).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import platformdirs

from .config.environment import CACHE_DIR as ENV_CACHE_DIR

__all__ = ["atomic_write", "locked", "cache_dir", "ENV_CACHE_DIR"]


def atomic_write(path: str | os.PathLike, data: str | bytes, mode: int = 0o644) -> Path:
    """Write ``data`` (text is UTF-8) to a temporary file beside ``path``, then ``os.replace`` it into
    place: a reader sees the old file or the new one, never a part of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


@contextlib.contextmanager
def locked(path: str | os.PathLike):
    """Hold an exclusive lock on the file ``path`` (created, with its directory, if missing) for the
    block; it excludes other processes and other threads of this one.  Blocks until it is free."""
    import filelock  # here, not above: the OpenCL workers load this file and never lock (40 ms saved)

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(path)):
        yield path


def cache_dir() -> str:
    """mlirtrace's cache directory, created: ``$MLIRTRACE_CACHE_DIR``, else the user's cache directory
    (``~/.cache/mlirtrace`` on Linux); a per-user directory under the temp dir when that one cannot be
    created or written."""
    d = os.environ.get(ENV_CACHE_DIR) or platformdirs.user_cache_dir("mlirtrace", appauthor=False)
    try:
        os.makedirs(d, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    d = os.path.join(tempfile.gettempdir(), f"mlirtrace-{uid}")
    os.makedirs(d, exist_ok=True)
    return d
