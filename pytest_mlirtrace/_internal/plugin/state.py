"""The plugin's state per pytest process: the run's settings (resolved once), the paths they name, and the
lazily made store, tuning database, TraceSession and reproducer writer the fixture uses.

Standard library and pytest at import; the store, the engine and the trace layer are imported on first use
(a run whose tests never use the fixture never loads them).
"""
from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pytest

from ..config import SettingError
from .keys import DEVICES_KEY, SETTINGS_KEY
from .options import resolve_settings
from .trace_env import check_trace_env

__all__ = ["MlirtraceState", "StoreWarning", "xdist_workers", "unpin_pocl_threads_beside_other_workers"]


class StoreWarning(UserWarning):
    """The store (``--mlir-store redis://...``) could not be reached, or came back."""


def _store_warning(msg: str) -> None:
    warnings.warn(StoreWarning(f"mlirtrace: {msg}"), stacklevel=2)


def xdist_workers(config) -> int:
    """How many pytest-xdist workers this run has (1 in a run without xdist, and on its controller)."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    return workers if isinstance(workers, int) else 1


def unpin_pocl_threads_beside_other_workers(config) -> None:
    """An xdist worker beside others: PoCL's compute threads not pinned one per core, unless the user set
    ``POCL_AFFINITY``. Pinned (the runtime's default for a process that times kernels alone), the threads of
    several processes' PoCL all sit on the same cores and wait on each other: two pytest processes running
    the codegen suite side by side on 2 cores took 38 s each pinned and 27 s unpinned, against 25 s alone
    (BENCHMARKS.md, "The test suite on 2 cores")."""
    if xdist_workers(config) > 1:
        os.environ.setdefault("POCL_AFFINITY", "0")


def _pinned_device(config) -> tuple[str, tuple] | None:
    """``--mlir-devices``: (this worker's device, every device); None without it. The controller resolved
    the list once (``pytest_cmdline_main``); a worker has it in its workerinput and takes its index's."""
    devices = getattr(config, "workerinput", {}).get("mlirtrace_devices") or config.stash.get(DEVICES_KEY, None)
    if not devices:
        return None
    wid = getattr(config, "workerinput", {}).get("workerid", "gw0")
    i = int(wid[2:]) if wid[2:].isdigit() else 0
    return devices[i % len(devices)], tuple(devices)


class MlirtraceState:
    """Per pytest process: the settings, the lazily made TraceSession and writer, what reports carried.

    ``settings`` is the run's :class:`~pytest_mlirtrace._internal.config.Settings`, resolved once (on the controller
    in ``pytest_cmdline_main``; an xdist worker, which has no such call, resolves its own once here); every
    value the fixture needs (device, tuning database, machine, ...) comes from it. The OpenCL worker pool
    behind the session is the runtime's process-wide one (closed at exit)."""

    def __init__(self, config):
        self.config = config
        st = config.stash.get(SETTINGS_KEY, None) or resolve_settings(config)
        try:
            check_trace_env(os.environ)
        except SettingError as e:
            raise pytest.UsageError(str(e)) from None
        self.settings = st
        self.level, self.timeout_s, self.repro = st.trace, st.timeout_s, st.repro
        self.store_spec = st.store
        under = Path(st.store.where) if st.store is not None and not st.store.is_redis else None
        self.repro_dir = self._path("repro_dir") or (under or Path(config.rootpath)) / "reproducers"
        self.tuning_db = self._path("tuning_db") or (under / "tuning.json" if under else None)
        self.pinned = _pinned_device(config)     # --mlir-devices: (this worker's device, every device)
        self.device = self.pinned[0] if self.pinned else st.device
        self.started = time.time()
        self._store = self._database = self._session = self._writer = None     # database None: per test
        self._session_error: Exception | None = None
        self.reported: dict[tuple[str, str], dict] = {}    # (nodeid, signature) -> WrittenRepro dict + origin
        self.current_item = None     # the test running now (mlirtrace_session.for_example() binds to it)

    def _path(self, name: str) -> Path | None:
        """A path setting: relative to where pytest was started (option), to the ini file (ini key), as it
        is (environment); None when unset."""
        value, src = getattr(self.settings, name), self.settings.source(name)
        if not value:
            return None
        if src.endswith("(command line)"):
            return Path(self.config.invocation_params.dir, value)
        if "(ini file" in src:
            return Path(self.config.inipath.parent if self.config.inipath else self.config.rootpath, value)
        return Path(value)

    @property
    def is_fleet(self) -> bool:
        return self.store_spec is not None and self.store_spec.is_redis

    def tuning_database(self):
        """The tuning database of one test: the named one (shared by every test), else a new one in memory."""
        from ..engine import MemoryDatabase, TuningDatabase

        if self.tuning_db is None and not self.is_fleet:
            return MemoryDatabase()
        if self._database is None:
            self._database = (self.store().tuning_database(self.tuning_db) if self.is_fleet
                              else TuningDatabase(self.tuning_db))
        return self._database

    def store(self):
        """The run's :class:`~pytest_mlirtrace._internal.store.Store` (made on first use; closed at the end)."""
        if self._store is None:
            from ..store import Store
            self._store = Store(self.store_spec, machine=self.settings.machine, say=_store_warning)
        return self._store

    def trace_session(self):
        if self._session is None:
            if self._session_error is not None:
                raise self._session_error
            from ..trace import TraceConfig, TraceSession
            try:
                from ..engine import MemoryDatabase
                # every call passes its test's database; the session's own is never on disk
                self._session = TraceSession(self.device, config=TraceConfig.from_level(self.level),
                                             timeout_s=self.timeout_s, database=MemoryDatabase(),
                                             **self._pool_kw())
            except Exception as e:   # noqa: BLE001 - no OpenCL device: every test using the fixture says so
                self._session_error = e
                raise
        return self._session

    def _pool_kw(self) -> dict:
        """Beside other xdist workers, this process's pool has its share of the CPUs (one worker each on
        2 cores: the workers' processes are the parallelism, and each OpenCL worker costs a PoCL start-up);
        alone, the runtime's default."""
        workers = xdist_workers(self.config)
        if workers <= 1:
            return {}
        from .. import runtime
        return {"pool": runtime.get_pool(self.device, workers=max(1, (os.cpu_count() or 1) // workers))}

    def writer(self):
        if self._writer is None:
            self._writer = self.store().repro_writer(self.repro_dir)
        return self._writer

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
