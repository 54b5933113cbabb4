"""The on-disk tuning database: problem key + device -> fastest solution.

One JSON file (the one a front end names: ``Settings.tuning_db``; else ``tuning.json`` in mlirtrace's cache
directory, :func:`..fs.cache_dir`), read-modify-written under an exclusive lock and replaced atomically, so parallel
runs (pytest-xdist) don't lose entries.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Protocol

from .. import fs

__all__ = ["Database", "TuningDatabase", "MemoryDatabase", "default_path"]


class Database(Protocol):
    """What the pipeline asks of a tuning database: :class:`TuningDatabase`, :class:`MemoryDatabase`, or a
    fleet's (the store's)."""

    def lookup(self, problem_key: str, device: str) -> dict | None: ...

    def store(self, problem_key: str, device: str, solution: str, time_ms: float, **extra) -> None: ...

    def entries(self) -> dict: ...


def default_path(path: str | Path | None = None) -> Path:
    """The tuning database's file: ``path`` (the setting a front end resolved) when given, else ``tuning.json``
    in mlirtrace's cache directory."""
    if path:
        return Path(path)
    return Path(fs.cache_dir()) / "tuning.json"


class TuningDatabase:
    """The tuning database in the file ``path`` (None: :func:`default_path`'s)."""

    def __init__(self, path: str | Path | None = None):
        self.path = default_path(path)

    @staticmethod
    def key(problem_key: str, device: str) -> str:
        return f"{device}|{problem_key}"

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def lookup(self, problem_key: str, device: str) -> dict | None:
        return self._read().get(self.key(problem_key, device))

    def store(self, problem_key: str, device: str, solution: str, time_ms: float, **extra) -> None:
        with fs.locked(str(self.path) + ".lock"):
            data = self._read()
            data[self.key(problem_key, device)] = {"solution": solution, "time_ms": time_ms,
                                                   "stored": time.time(), **extra}
            fs.atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))

    def entries(self) -> dict:
        return self._read()


class MemoryDatabase:
    """A tuning database that lives in memory only: nothing is read from or written to disk. The pytest
    fixture gives each test one (unless a database is named), so that no test's outcome depends on
    what another test or an earlier run tuned."""

    def __init__(self) -> None:
        self.path = None
        self._data: dict = {}

    key = staticmethod(TuningDatabase.key)

    def lookup(self, problem_key: str, device: str) -> dict | None:
        hit = self._data.get(self.key(problem_key, device))
        return dict(hit) if hit is not None else None

    def store(self, problem_key: str, device: str, solution: str, time_ms: float, **extra) -> None:
        self._data[self.key(problem_key, device)] = {"solution": solution, "time_ms": time_ms,
                                                     "stored": time.time(), **extra}

    def entries(self) -> dict:
        return {k: dict(v) for k, v in self._data.items()}

