"""The pip PoCL's CPU target: is the fix needed, and the patched copy of its library.

Why: the PoCL shipped by ``pocl-binary-distribution`` 3.0 is linked against LLVM 14.  On CPUs newer
than LLVM 14 (e.g. AMD Zen 5, family 26) ``llvm::sys::getHostCPUName()`` returns ``"generic"``, PoCL
passes that to clang as ``-target-cpu`` and every build fails with
``error: unknown target CPU 'generic'``.

What: a patched copy of the bundled ``libpocl-*.so`` is written into mlirtrace's cache directory, in
which ``getHostCPUName`` returns ``"x86-64-vN"`` (the best micro-architecture level the host supports;
the patch itself: :mod:`.libpocl_patch`), beside a link to the PoCL package's data.  The patch is only
applied when the original library really reports ``"generic"`` (asked once, in a subprocess, cached
on disk), or when ``environment.POCL_CPU`` names the CPU to build for; ``environment.NO_POCL_FIX`` set: no
fix (the variables' names: :mod:`pytest_mlirtrace._internal.config.environment`).
"""
from __future__ import annotations

import glob
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading

from ... import fs
from ...config import environment
from .host_cpu import choose_cpu_name, cpu_model_string, host_cpu_flags
from .libpocl_patch import PatchError, patch_libpocl_bytes

__all__ = ["find_bundled_libpocl", "query_llvm_cpu_name", "library_key", "pocl_version", "fix_target_cpu"]


def package_dir(name: str) -> str | None:
    """The directory of the installed package ``name`` (None: not installed)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def find_bundled_libpocl() -> str | None:
    """Path of the libpocl shipped inside the pyopencl wheel, if any."""
    d = package_dir("pyopencl")
    if not d:
        return None
    libs = sorted(p for p in glob.glob(os.path.join(d, ".libs", "libpocl-*.so*"))
                  if "patched" not in os.path.basename(p))
    return libs[0] if libs else None


def library_key(lib: str) -> str:
    """A key of the library file ``lib`` (its path, size and modification time)."""
    st = os.stat(lib)
    h = hashlib.sha256(f"{os.path.realpath(lib)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def pocl_version() -> str:
    """The version of the installed ``pocl_binary_distribution`` ("" when unknown)."""
    d = package_dir("pocl_binary_distribution")
    if not d:
        return ""
    try:
        with open(os.path.join(d, "__init__.py"), encoding="utf-8") as f:
            m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
    except OSError:
        return ""
    return m.group(1) if m else ""


# ----------------------------------------------------- atomic file ops ----

def _atomic_symlink(target: str, path: str) -> None:
    if os.path.islink(path) and os.readlink(path) == target:
        return
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        os.unlink(tmp)
    except OSError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, path)


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---------------------------------------------------- decision helpers ----

_QUERY_CODE = (
    "import ctypes,sys\n"
    "f=ctypes.CDLL(sys.argv[1]).pocl_get_llvm_cpu_name\n"
    "f.restype=ctypes.c_char_p\n"
    "sys.stdout.write('CPU=' + f().decode())\n"
)


def query_llvm_cpu_name(lib: str, timeout: float = 120.0) -> str | None:
    """Ask *lib* (in a subprocess: it may crash) what CPU LLVM detects."""
    try:
        cp = subprocess.run([sys.executable, "-c", _QUERY_CODE, lib],
                            capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if cp.returncode != 0:
        return None
    for line in cp.stdout.splitlines():
        if line.startswith("CPU="):
            return line[4:].strip()
    return None


def _prepare_patched(lib: str, key: str, cpu_name: str) -> str:
    """Create (once) <cache>/pocl-<hash>/pyopencl/.libs/libpocl-patched.so."""
    root = os.path.join(fs.cache_dir(), f"pocl-{key}-{cpu_name}")
    libdir = os.path.join(root, "pyopencl", ".libs")
    patched = os.path.join(libdir, "libpocl-patched.so")
    marker = os.path.join(root, "ok.json")
    pocl_dist = package_dir("pocl_binary_distribution")
    if pocl_dist is None:
        raise PatchError("pocl_binary_distribution package not found")
    info = _read_json(marker)
    if not (info and os.path.isfile(patched)
            and os.path.getsize(patched) == info.get("size")):
        with open(lib, "rb") as f:
            data = f.read()
        new = patch_libpocl_bytes(data, cpu_name)
        fs.atomic_write(patched, new, 0o755)
        _atomic_symlink(pocl_dist, os.path.join(root, "pocl_binary_distribution"))
        got = query_llvm_cpu_name(patched)
        if got != cpu_name:
            raise PatchError(f"patched library reports {got!r}, expected {cpu_name!r}")
        fs.atomic_write(marker, json.dumps({"size": len(new), "cpu": cpu_name,
                                            "source": lib}).encode())
    else:
        _atomic_symlink(pocl_dist, os.path.join(root, "pocl_binary_distribution"))
    return patched


def _decide(lib: str) -> tuple[bool, str, str]:
    """(needed, reported cpu, key) — cached on disk by lib + cpu model."""
    key = hashlib.sha256(f"{library_key(lib)}|{cpu_model_string()}".encode()).hexdigest()[:16]
    path = os.path.join(fs.cache_dir(), f"pocl-decision-{key}.json")
    got = _read_json(path)
    if got and "reported" in got:
        return bool(got["needed"]), got["reported"], key
    reported = query_llvm_cpu_name(lib)
    if reported is None:
        return False, "?", key        # don't cache failures
    needed = reported == "generic"
    fs.atomic_write(path, json.dumps({"needed": needed, "reported": reported,
                                      "lib": lib}).encode())
    return needed, reported, key


def _target_cpu(reported: str, needed: bool) -> tuple[str | None, str]:
    """(the CPU to patch the library to build for, None: no patch; why)."""
    forced = environment.value(environment.POCL_CPU)
    if forced:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", forced):
            raise PatchError(f"{environment.POCL_CPU}={forced!r} is not an LLVM CPU name")
        return forced, f"{environment.POCL_CPU}={forced} (LLVM reports {reported!r})"
    if needed:
        cpu = choose_cpu_name(host_cpu_flags())
        return cpu, f"LLVM reports 'generic'; patched to {cpu!r}"
    return None, f"not needed (LLVM reports {reported!r})"


def fix_target_cpu(st: dict, lib: str | None) -> str | None:
    """Decide on the CPU target of PoCL's library ``lib`` (:func:`find_bundled_libpocl`) and make the
    patched copy where one is needed, noting what was decided in the state ``st`` (see
    :func:`.prepare.fix_state`); the patched library's path, or None."""
    if environment.flag(environment.NO_POCL_FIX):
        st["reason"] = f"disabled by {environment.NO_POCL_FIX}"
        return None
    if lib is None:
        st["reason"] = "no bundled libpocl"
        return None
    try:
        needed, reported, key = _decide(lib)
        st["reported_cpu"] = reported
        cpu, why = _target_cpu(reported, needed)
        st["target_cpu"] = cpu or reported
        st["reason"] = why
        if cpu is None:
            return None
        patched = _prepare_patched(lib, key, cpu)
    except (PatchError, OSError) as e:
        st["reason"] = f"pocl fix failed: {e}"
        return None
    st.update(pocl_fix=True, cpu_name=cpu, patched_lib=patched,
              pyopencl_home=os.path.dirname(os.path.dirname(patched)))
    return patched
