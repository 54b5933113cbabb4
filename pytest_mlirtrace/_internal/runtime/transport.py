"""How a run's arrays reach a worker process.

* A worker keeps the inputs it was sent (see :class:`.job.InBuf`): a later run there sends only their keys
  (:func:`lean_message`); a worker that has dropped one since answers ``need_inputs`` and the run is sent
  again with them all.
* Arrays of :data:`SHM_MIN_BYTES` or more go as files in shared memory (``/dev/shm``), not down the worker's
  pipe (:class:`SharedMemory`): a pipe moves them in 64 KiB writes, each a system call (slow under gVisor:
  seconds for the 384 MB a 4096^3 tune's check sends). The files are removed once the worker answered; an
  array that cannot be written there goes down the pipe.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator

import numpy as np

__all__ = ["SHM_MIN_BYTES", "SharedMemory", "lean_message", "every_array", "inputs_sent"]

SHM_MIN_BYTES = 4 << 20


def _shm_dir() -> str | None:
    """A directory in memory this process may write to (None: none: arrays go down the pipe)."""
    for base in ("/dev/shm", None):
        try:
            return tempfile.mkdtemp(prefix=f"mlirtrace-{os.getpid()}-", dir=base)
        except OSError:
            continue
    return None


def _inputs(msg: dict, arrays) -> dict:
    """``msg`` with each input ``("in", array, key)`` and each check's two arrays as ``arrays(array, key)`` says."""
    out = dict(msg, args=[("in", arrays(a[1], a[2]), a[2]) if a[0] == "in" else a for a in msg["args"]])
    if msg.get("check"):
        out["check"] = [(c[0], c[1], arrays(c[2], c[3]), c[3], arrays(c[4], c[5]), c[5], c[6]) for c in msg["check"]]
    return out


def lean_message(msg: dict, held: set[str]) -> dict:
    """The run request ``msg`` without the arrays of the inputs in ``held`` (their keys stay)."""
    return _inputs(msg, lambda arr, key: None if key is not None and key in held else arr)


def every_array(msg: dict) -> dict:
    """The run request ``msg`` with every input's array and no input keys (the worker keeps none)."""
    return dict(msg, args=[("in", a[1], None) if a[0] == "in" else a for a in msg["args"]])


def inputs_sent(msg: dict, reply: dict) -> set[str]:
    """The input keys a worker holds after answering ``reply`` to the run request ``msg``."""
    keys = {a[2] for a in msg["args"] if a[0] == "in" and a[2] is not None}
    if reply.get("checked") is not None:        # the worker made the check buffers resident too
        keys.update(k for c in msg.get("check") or [] for k in (c[3], c[5]))
    return keys


class SharedMemory:
    """Files in shared memory for the big arrays of requests: one directory, made on first use and removed by
    :meth:`close` (or at exit)."""

    def __init__(self) -> None:
        self.dir: str | None = None
        self.unavailable = False        # no directory could be made: every array goes down the pipe
        self._seq = itertools.count()

    def _file(self, arr, min_bytes: int, files: list[str]):
        """``arr`` as ``("shm", path, dtype, shape)`` when written to a file, else itself."""
        if not isinstance(arr, np.ndarray) or arr.nbytes < min_bytes or self.unavailable:
            return arr
        if self.dir is None:
            self.dir = _shm_dir()
            if self.dir is None:
                self.unavailable = True
                return arr
            weakref.finalize(self, shutil.rmtree, self.dir, True)     # never closed: at exit
        path = os.path.join(self.dir, f"{next(self._seq)}.bin")
        try:
            np.ascontiguousarray(arr).tofile(path)
        except OSError:     # full (a container's /dev/shm is often 64 MB): this one goes down the pipe
            with contextlib.suppress(OSError):
                os.unlink(path)
            return arr
        files.append(path)
        return ("shm", path, arr.dtype.str, arr.shape)

    @contextlib.contextmanager
    def message(self, msg: dict, min_bytes: int | None) -> Iterator[dict]:
        """``msg`` with its arrays of ``min_bytes`` or more in files (None: none), removed afterwards."""
        files: list[str] = []
        try:
            yield msg if min_bytes is None else _inputs(msg, lambda arr, _key: self._file(arr, min_bytes, files))
        finally:
            for f in files:
                with contextlib.suppress(OSError):
                    os.unlink(f)

    def close(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
