"""Prepare the OpenCL environment of this process: the pip PoCL's CPU fix and the ICD files.

:func:`ensure_opencl_env` decides once per process (the decision and the files it needs are cached on
disk): whether the bundled PoCL needs its CPU fix (:mod:`.pocl_cpu_fix`), which ICD files the loader
should see (:mod:`.icd_files`: the user's, the patched PoCL, an ICD-less NVIDIA driver), and sets
``OCL_ICD_VENDORS`` / ``PYOPENCL_HOME`` accordingly.  The user's own ``OCL_ICD_VENDORS`` is remembered
(``environment.ORIG_OCL_ICD_VENDORS``), so that child processes merge the *user's* ICDs and not ours a
second time.
"""
from __future__ import annotations

import os
import sys
import threading

from ...config import environment
from . import icd_files, pocl_cpu_fix

__all__ = ["ensure_opencl_env", "fix_state", "pocl_identity"]

_lock = threading.Lock()
_state: dict | None = None


def fix_state() -> dict:
    """What ensure_opencl_env() decided (for diagnostics and tests)."""
    ensure_opencl_env(import_pyopencl=False)
    return dict(_state or {})


def pocl_identity() -> tuple[str, str, str]:
    """(PoCL's version, a key of its library file, the CPU it builds for): what a kernel cache of it
    depends on (see :mod:`.pocl_cache`)."""
    ensure_opencl_env(import_pyopencl=False)
    st = _state or {}
    lib = pocl_cpu_fix.find_bundled_libpocl()
    return (pocl_cpu_fix.pocl_version(), (pocl_cpu_fix.library_key(lib) if lib else "system"),
            (st.get("target_cpu") or st.get("reported_cpu") or ""))


def ensure_opencl_env(import_pyopencl: bool = True) -> None:
    """Set OCL_ICD_VENDORS / PYOPENCL_HOME so that OpenCL platforms work.

    Idempotent and cheap after the first call (the decision and the patched
    library are cached on disk).  Must run before pyopencl enumerates
    platforms.  Importing pyopencl resets ``PYOPENCL_HOME``, so when the PoCL
    fix is active this function imports pyopencl first and then overrides
    it; pass ``import_pyopencl=False`` in a process that only spawns OpenCL
    workers (the workers call this function again after their own import).
    """
    global _state
    with _lock:
        if _state is None:
            _state = _compute_state()
        _reapply(import_pyopencl)


def _reapply(import_pyopencl: bool = True) -> None:
    st = _state or {}
    if st.get("vendors"):
        os.environ["OCL_ICD_VENDORS"] = st["vendors"]
    if st.get("pyopencl_home"):
        if import_pyopencl and "pyopencl" not in sys.modules:
            try:
                import pyopencl  # noqa: F401  (it sets PYOPENCL_HOME on import)
            except Exception:
                pass
        os.environ["PYOPENCL_HOME"] = st["pyopencl_home"]
        os.environ[environment.PYOPENCL_HOME] = st["pyopencl_home"]


def _compute_state() -> dict:
    st: dict = {"pocl_fix": False, "reason": "", "vendors": None, "pyopencl_home": None,
                "nvidia": None, "cpu_name": None}
    user_vendors = os.environ.get(environment.ORIG_OCL_ICD_VENDORS)
    if user_vendors is None:
        user_vendors = os.environ.get("OCL_ICD_VENDORS", icd_files.UNSET)
    icds = icd_files.user_icds(user_vendors)

    ours: dict[str, str] = {}
    lib = pocl_cpu_fix.find_bundled_libpocl()
    patched = pocl_cpu_fix.fix_target_cpu(st, lib)
    if lib is not None and patched is not None:
        ours["mlirtrace-pocl.icd"] = patched
        base = os.path.basename(lib)
        # the original (broken) PoCL must not be loaded next to ours
        icds = {k: v for k, v in icds.items() if os.path.basename(v) != base}

    nv = icd_files.nvidia_icd_entry()
    if nv and not any("nvidia-opencl" in v for v in list(icds.values()) + list(ours.values())):
        ours["nvidia.icd"] = nv
        st["nvidia"] = nv

    if not ours:
        return st
    st["vendors"], st["icds"] = icd_files.write_vendors_dir(icds, ours)
    os.environ.setdefault(environment.ORIG_OCL_ICD_VENDORS, user_vendors)
    return st
