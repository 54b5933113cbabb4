"""The environment variables mlirtrace reads, each named here once.

Two kinds:

* **settings** (:data:`SETTINGS`): knobs a user sets; a front end (the CLI, the pytest plugin) resolves them
  once into :class:`~pytest_mlirtrace._internal.config.Settings` and passes the values down;
* **process variables**: what a process mlirtrace starts reads for itself -- a worker process (its device
  list, warm-up, kernel-cache shard), PoCL's set-up before ``import pyopencl`` (cache directory, CPU
  target, the fix switch), a reproducer script (its payload, where to write its result). The modules that
  read them import the names from here.

``MIGRAPHX_TRACE_*`` keep MIGraphX's names and meaning (:class:`~pytest_mlirtrace._internal.trace.TraceConfig`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["SETTINGS", "INJECT", "DEVICE", "DEVICES", "TUNING_DB", "STORE", "MACHINE", "DEBUG", "CACHE_DIR",
           "POCL_CPU", "NO_POCL_FIX", "ORIG_OCL_ICD_VENDORS", "PYOPENCL_HOME", "KCACHE_ROOT", "KCACHE_SHARD",
           "NO_BENCH_LOCK", "WORKER_WARMUP", "PAYLOAD", "RESULT", "LAUNCH", "flag", "value"]

# ---- settings (Settings' fields; resolved once by a front end) ---------------------------------------
DEVICE = "MLIRTRACE_DEVICE"            # the OpenCL device spec (pocl, nvidia, 0:1, ...)
DEVICES = "MLIRTRACE_DEVICES"          # pytest-xdist: one worker per device
TIMEOUT = "MLIRTRACE_TIMEOUT"          # seconds before a kernel counts as hung
INJECT = "MLIRTRACE_INJECT"            # planted faults (the fault names of vocab.faults)
TUNING_DB = "MLIRTRACE_TUNING_DB"      # the tuning database file
REPRO_DIR = "MLIRTRACE_REPRO_DIR"      # where reproducers go
REPRO = "MLIRTRACE_REPRO"              # write reproducers (true/false)
MAX_BYTES = "MLIRTRACE_MAX_BYTES"      # the most host memory one module's tensors may take
REDUCE = "MLIRTRACE_REDUCE"            # reduce new reproducers after a pytest run (seconds each, on/off)
STORE = "MLIRTRACE_STORE"              # a directory or a redis:// URL
MACHINE = "MLIRTRACE_MACHINE"          # this machine's name in a fleet's records (default: the host name)
DEBUG = "MLIRTRACE_DEBUG"              # the CLI prints tracebacks of unexpected errors

#: Settings field -> its variable (``trace`` has none: MIGRAPHX_TRACE_* decide)
SETTINGS: dict[str, str | None] = {
    "device": DEVICE, "timeout_s": TIMEOUT, "inject": INJECT, "tuning_db": TUNING_DB, "repro_dir": REPRO_DIR,
    "repro": REPRO, "max_bytes": MAX_BYTES, "reduce_s": REDUCE, "store": STORE, "devices": DEVICES,
    "machine": MACHINE, "trace": None}

# ---- process variables (read by the process they are set for) -----------------------------------------
CACHE_DIR = "MLIRTRACE_CACHE_DIR"                  # PoCL's kernel cache and pyopencl's home live under it
POCL_CPU = "MLIRTRACE_POCL_CPU"                    # the LLVM CPU PoCL builds for (x86-64-v3, ...)
NO_POCL_FIX = "MLIRTRACE_NO_POCL_FIX"              # 1: leave PoCL's environment as it is
ORIG_OCL_ICD_VENDORS = "MLIRTRACE_ORIG_OCL_ICD_VENDORS"   # the user's OCL_ICD_VENDORS, before the fix
PYOPENCL_HOME = "MLIRTRACE_PYOPENCL_HOME"          # the home directory pyopencl's cache uses
KCACHE_ROOT = "MLIRTRACE_KCACHE_ROOT"              # the kernel-binary cache's directory
KCACHE_SHARD = "MLIRTRACE_KCACHE_SHARD"            # this worker's shard of it
NO_BENCH_LOCK = "MLIRTRACE_NO_BENCH_LOCK"          # 1: benchmarks don't take the machine-wide lock
WORKER_WARMUP = "MLIRTRACE_WORKER_WARMUP"          # 0: a worker skips its warm-up build
PAYLOAD = "MLIRTRACE_PAYLOAD"                      # a reproducer script: its payload file
RESULT = "MLIRTRACE_RESULT"                        # a reproducer script: where it writes its result (JSON)
LAUNCH = "MLIRTRACE_LAUNCH"                        # a reproducer script: how it was launched


def value(name: str, env: Mapping[str, str] | None = None) -> str:
    """The variable ``name`` as set ("" when unset or blank)."""
    return str((os.environ if env is None else env).get(name, "") or "").strip()


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when ``name`` is set to something other than "", 0, false, no or off."""
    return value(name, env).lower() not in ("", "0", "false", "no", "off")
