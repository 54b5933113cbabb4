"""mlirtrace's own PoCL kernel cache: one directory per (mlirtrace, PoCL, target CPU), in shards.

Why: PoCL keeps built programs (and the work-group functions it compiles at a kernel's first launch)
in an on-disk cache.  A compiler crash or a killed worker can leave a half-written entry there, and a
program that failed once can then fail *differently* on the next run (a miscompiled program's cached
binary came back with no kernel in it: ``wrong`` cold, ``launch_error`` warm).  A failure must
reproduce as the same kind on a cold and on a warm cache, so nothing a failing job wrote is kept.

How: every worker process claims one shard (a directory with a lock file held for the worker's life,
so exactly one process writes into it) and points ``POCL_CACHE_DIR`` at it before PoCL starts.
Because the shard is exclusive and the worker runs one job at a time, the entries whose files were
written during a job belong to that job:

* before each job the worker records the job's start time in the shard's journal (``INFLIGHT``);
* a job that fails inside the worker (build error, launch error) has its entries removed at once;
* a job the parent later judges wrong is removed on request (:meth:`Shard.forget` by program key,
  using the time windows in which that key's jobs ran);
* a worker that dies or is killed mid-job leaves its journal behind: whoever claims the shard next
  removes every entry written since that start time before PoCL sees the shard.

The directory is keyed by mlirtrace's version, PoCL's version and library, and the CPU that PoCL
builds for, so a new release or another target never reads old binaries.  A worker claims its shard with
:func:`claim_worker_shard`: in the directory ``environment.KCACHE_ROOT`` names when set (a test's cache that no
other process uses), trying the shard ``environment.KCACHE_SHARD`` names first (its pool slot: ``WorkerPool``
sets it).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from importlib.metadata import version

from ... import fs
from ...config import environment
from .prepare import pocl_identity

__all__ = ["Shard", "claim_shard", "claim_worker_shard", "cache_root", "JOURNAL"]

MAX_SHARDS = 64
JOURNAL = "INFLIGHT"
_WINDOWS_PER_KEY = 8


def _package_version() -> str:
    try:
        return version("pytest-mlirtrace")
    except Exception:  # noqa: BLE001 - not installed (a checkout on sys.path)
        return "dev"


def cache_root(base: str, pocl_version: str, lib_key: str, target_cpu: str) -> str:
    """``<base>/pocl-kcache/<mlirtrace>-pocl<version>-<lib>-<cpu>``."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in (target_cpu or "native"))
    name = f"mlirtrace{_package_version()}-pocl{pocl_version or 'unknown'}-{lib_key or 'lib'}-{safe}"
    return os.path.join(base, "pocl-kcache", name)


def _newest_mtime(path: str) -> float:
    """The latest modification of ``path`` or of anything below it (a loose file: its own)."""
    newest = _mtime(path)
    for dirpath, _dirs, files in os.walk(path):
        try:
            newest = max(newest, os.stat(dirpath).st_mtime)
        except OSError:
            pass
        for f in files:
            try:
                newest = max(newest, os.lstat(os.path.join(dirpath, f)).st_mtime)
            except OSError:
                pass
    return newest


class Shard:
    """One claimed shard: PoCL's cache directory of this process, and its journal."""

    def __init__(self, path: str, lock_fd: int):
        self.path = path
        self._lock_fd = lock_fd
        self.windows: dict[str, list[tuple[float, float]]] = {}   # program key -> when its jobs ran
        self._started: tuple[list[str], float] | None = None
        self.removed = 0

    # --- the journal ---------------------------------------------------------
    def begin(self, key) -> None:
        """A job (a program key, or the keys of kernels built as one program) starts now."""
        t = time.time()
        self._started = ([key] if isinstance(key, str) else list(key), t)
        try:
            with open(os.path.join(self.path, JOURNAL), "w", encoding="ascii") as f:
                f.write(repr(t))
        except OSError:
            pass

    def end(self, ok: bool) -> None:
        """The job started by :meth:`begin` is over; a failed one loses what it wrote."""
        if self._started is None:
            return
        keys, t0 = self._started
        self._started = None
        t1 = time.time()
        for key in keys:
            wins = self.windows.setdefault(key, [])
            wins.append((t0, t1))
            del wins[:-_WINDOWS_PER_KEY]
        if not ok:
            for key in keys:
                self.forget(key)
        try:
            os.unlink(os.path.join(self.path, JOURNAL))
        except OSError:
            pass

    def forget(self, key: str) -> int:
        """Remove the entries written while ``key``'s jobs ran; the number removed."""
        wins = self.windows.pop(key, [])
        if not wins:
            return 0
        return self._remove(lambda m: any(a <= m <= b for a, b in wins))

    def recover(self) -> int:
        """After a claim: remove what a job that never finished (crash, kill) wrote."""
        p = os.path.join(self.path, JOURNAL)
        try:
            with open(p, encoding="ascii") as f:
                t0 = float(f.read().strip() or "0")
        except (OSError, ValueError):
            return 0
        n = self._remove(lambda m: m >= t0)
        try:
            os.unlink(p)
        except OSError:
            pass
        return n

    def _entries(self):
        """PoCL's program directories (<shard>/<2 letters>/<rest of the hash>) and its loose
        temporary files at the top."""
        try:
            tops = os.listdir(self.path)
        except OSError:
            return
        for top in tops:
            d = os.path.join(self.path, top)
            if top == JOURNAL:
                continue
            if not os.path.isdir(d):
                yield d
                continue
            try:
                subs = os.listdir(d)
            except OSError:
                continue
            for s in subs:
                yield os.path.join(d, s)

    def _remove(self, written) -> int:
        n = 0
        for e in list(self._entries()):
            if written(_newest_mtime(e)):
                if os.path.isdir(e):
                    shutil.rmtree(e, ignore_errors=True)
                else:
                    try:
                        os.unlink(e)
                    except OSError:
                        pass
                n += 1
        self.removed += n
        return n


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def claim_shard(root: str, prefer: int = 0) -> Shard | None:
    """Claim shard ``prefer`` under ``root`` if it is free, else the first free one (None when all are taken or
    the disk says no). A pool's worker of slot i prefers shard i, so that a kernel built by that slot in one
    process is found in its cache by the same slot in the next."""
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:
        return None
    prefer = prefer if 0 <= prefer < MAX_SHARDS else 0
    for i in [prefer] + [j for j in range(MAX_SHARDS) if j != prefer]:
        lock = os.path.join(root, f"shard-{i}.lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        os.set_inheritable(fd, False)
        path = os.path.join(root, f"shard-{i}")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            os.close(fd)
            return None
        shard = Shard(path, fd)
        shard.recover()
        return shard
    return None


def claim_worker_shard() -> Shard | None:
    """The shard of this worker process, PoCL's cache pointed at it (``POCL_CACHE_DIR``) before PoCL starts.
    No shard to be had: PoCL's cache is switched off, rather than shared with other processes; none is
    claimed where the user switched it off (``POCL_KERNEL_CACHE=0``)."""
    if os.environ.get("POCL_KERNEL_CACHE", "1").strip() == "0":
        return None
    root = environment.value(environment.KCACHE_ROOT) or cache_root(fs.cache_dir(), *pocl_identity())
    try:
        prefer = int(environment.value(environment.KCACHE_SHARD) or 0)
    except ValueError:
        prefer = 0
    shard = claim_shard(root, prefer)
    if shard is not None:
        os.environ["POCL_CACHE_DIR"] = shard.path
    else:
        os.environ["POCL_KERNEL_CACHE"] = "0"
    return shard
