"""Timed runs never overlap: one lock per device, in this process and across processes (a file lock in
mlirtrace's cache directory, so that pytest-xdist workers don't benchmark on the same cores at the same
time; with ``environment.NO_BENCH_LOCK`` set: the in-process lock only)."""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from .. import fs
from ..config import environment

__all__ = ["bench_guard"]

_bench_locks: dict[str, threading.Lock] = {}
_bench_locks_guard = threading.Lock()


@contextlib.contextmanager
def bench_guard(key_name: str) -> Iterator[None]:
    """Held while a timed run on the device ``key_name`` runs."""
    with _bench_locks_guard:
        lk = _bench_locks.setdefault(key_name, threading.Lock())
    with lk, contextlib.ExitStack() as held:
        if not environment.flag(environment.NO_BENCH_LOCK):
            try:
                held.enter_context(fs.locked(os.path.join(fs.cache_dir(), "locks", f"bench-{key_name}.lock")))
            except OSError:   # no lock to be had (read-only cache): benchmark unguarded
                pass
        yield
