"""The on-disk tuning database: problem key + device -> fastest solution.

One JSON file (``MLIRTRACE_TUNING_DB`` or ``~/.cache/mlirtrace/tuning.json``), read-modify-written
under an exclusive ``fcntl`` lock and replaced atomically, so parallel runs (pytest-xdist) don't lose entries.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from pathlib import Path


def default_path() -> Path:
    env = os.environ.get("MLIRTRACE_TUNING_DB")
    if env:
        return Path(env)
    base = Path(os.environ.get("MLIRTRACE_CACHE_DIR") or Path.home() / ".cache" / "mlirtrace")
    return base / "tuning.json"


class TuningDatabase:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_path()

    @staticmethod
    def key(problem_key: str, device: str) -> str:
        return f"{device}|{problem_key}"

    @contextlib.contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(str(self.path) + ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def lookup(self, problem_key: str, device: str) -> dict | None:
        return self._read().get(self.key(problem_key, device))

    def store(self, problem_key: str, device: str, solution: str, time_ms: float, **extra) -> None:
        with self._locked():
            data = self._read()
            data[self.key(problem_key, device)] = {"solution": solution, "time_ms": time_ms,
                                                   "stored": time.time(), **extra}
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tuning-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)

    def entries(self) -> dict:
        return self._read()
