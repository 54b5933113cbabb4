"""Make the pip PoCL CPU device (and an ICD-less NVIDIA driver) usable (the byte patch itself: pocl_patch.py).

Why: the PoCL shipped by ``pocl-binary-distribution`` 3.0 is linked against
LLVM 14.  On CPUs newer than LLVM 14 (e.g. AMD Zen 5, family 26)
``llvm::sys::getHostCPUName()`` returns ``"generic"``, PoCL passes that to
clang as ``-target-cpu`` and every build fails with
``error: unknown target CPU 'generic'``.

What: we write a patched copy of the bundled ``libpocl-*.so`` into a cache
directory in which ``getHostCPUName`` is replaced by ``return "x86-64-vN"``
(the best micro-architecture level the host supports, using a string that
already lives in the library's rodata), and point the OpenCL ICD loader at
it (``OCL_ICD_VENDORS`` plus ``PYOPENCL_HOME``, see :func:`ensure_opencl_env`).

The patch is only applied when the original library really reports
``"generic"`` (asked once, in a subprocess, cached on disk).  Opt out with
``MLIRTRACE_NO_POCL_FIX=1``.

This module must stay importable on its own (the worker processes load it
by file path): it imports the standard library, third-party libraries
(pyelftools, on first use) and ``pytest_mlirtrace/fs.py``, loaded by path
when this module is (see :func:`_load_fs`).
"""

from __future__ import annotations

import ctypes.util
import glob
import hashlib
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading

__all__ = [
    "ensure_opencl_env",
    "cache_dir",
    "find_bundled_libpocl",
    "find_patch_site",
    "patch_libpocl_bytes",
    "choose_cpu_name",
    "host_cpu_flags",
    "PatchSite",
    "PatchError",
    "ElfImage",
    "fix_state",
]

ENV_OPT_OUT = "MLIRTRACE_NO_POCL_FIX"
# the CPU PoCL's LLVM builds kernels for, whatever the host is (e.g. ``znver3`` or ``x86-64-v3``:
# a target without AVX-512 on any x86-64 machine that has AVX2); any name LLVM 14 knows
ENV_TARGET_CPU = "MLIRTRACE_POCL_CPU"
# original values, remembered so that child processes merge the *user's*
# ICDs and not ours a second time
ENV_ORIG_VENDORS = "MLIRTRACE_ORIG_OCL_ICD_VENDORS"
ENV_PYOPENCL_HOME = "MLIRTRACE_PYOPENCL_HOME"
_UNSET = "<unset>"

NVIDIA_LIB = "libnvidia-opencl.so.1"
NVIDIA_DIRS = (
    "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu",
    "/lib64", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib", "/usr/local/cuda/lib64",
)


# --------------------------------------------------------------- paths ----

def _load_fs():
    """``pytest_mlirtrace/fs.py``: imported from the package when this module is, else (a worker
    process, which loads this file by path) loaded by file path, without the rest of the package."""
    if __package__:
        return importlib.import_module(__package__.rpartition(".")[0] + ".fs")
    name = "_mlirtrace_fs"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fs.py")
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def _load_patch():
    """``pocl_patch.py`` beside this file (by path in a worker, as this module is)."""
    if __package__:
        return importlib.import_module(__package__ + ".pocl_patch")
    name = "_mlirtrace_runtime_pocl_patch"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                         "pocl_patch.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


_patch = _load_patch()
(find_patch_site, patch_libpocl_bytes, choose_cpu_name, host_cpu_flags, cpu_model_string, PatchSite, PatchError,
 ElfImage) = (_patch.find_patch_site, _patch.patch_libpocl_bytes, _patch.choose_cpu_name, _patch.host_cpu_flags,
              _patch.cpu_model_string, _patch.PatchSite, _patch.PatchError, _patch.ElfImage)
_fs = _load_fs()
cache_dir = _fs.cache_dir      # mlirtrace's cache directory ($MLIRTRACE_CACHE_DIR overrides)
ENV_CACHE = _fs.ENV_CACHE_DIR


def _package_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def find_bundled_libpocl() -> str | None:
    """Path of the libpocl shipped inside the pyopencl wheel, if any."""
    d = _package_dir("pyopencl")
    if not d:
        return None
    libs = sorted(p for p in glob.glob(os.path.join(d, ".libs", "libpocl-*.so*"))
                  if "patched" not in os.path.basename(p))
    return libs[0] if libs else None


def _lib_key(lib: str) -> str:
    st = os.stat(lib)
    h = hashlib.sha256(f"{os.path.realpath(lib)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


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


def _nvidia_icd_entry() -> str | None:
    """What to write into nvidia.icd, or None when there is no driver."""
    for d in NVIDIA_DIRS:
        p = os.path.join(d, NVIDIA_LIB)
        if os.path.exists(p):
            return p
    try:
        found = ctypes.util.find_library("nvidia-opencl")
    except Exception:  # pragma: no cover - find_library shells out
        found = None
    if found:
        return found
    return None


def _read_icd_dir(path: str) -> dict[str, str]:
    """name -> content for the ICDs that *path* (dir, .icd file or lib) names."""
    out: dict[str, str] = {}
    if not path:
        return out
    for part in path.split(os.pathsep):
        if not part:
            continue
        if os.path.isdir(part) or (part.endswith(".icd") and os.path.isfile(part)):
            files = sorted(glob.glob(os.path.join(part, "*.icd"))) if os.path.isdir(part) else [part]
            for f in files:
                try:
                    with open(f, encoding="utf-8", errors="replace") as fh:
                        content = fh.read().strip()
                except OSError:
                    continue
                if content:
                    out.setdefault(os.path.basename(f), content)
        elif ".so" in os.path.basename(part) or ".dylib" in part:  # a library
            base = os.path.basename(part)
            out.setdefault(f"user-{hashlib.sha256(part.encode()).hexdigest()[:8]}-{base}.icd",
                           part)
    return out


# -------------------------------------------------------------- public ----

_lock = threading.Lock()
_state: dict | None = None


def fix_state() -> dict:
    """What ensure_opencl_env() decided (for diagnostics and tests)."""
    ensure_opencl_env(import_pyopencl=False)
    return dict(_state or {})


def _prepare_patched(lib: str, key: str, cpu_name: str) -> str:
    """Create (once) <cache>/pocl-<hash>/pyopencl/.libs/libpocl-patched.so."""
    root = os.path.join(cache_dir(), f"pocl-{key}-{cpu_name}")
    libdir = os.path.join(root, "pyopencl", ".libs")
    patched = os.path.join(libdir, "libpocl-patched.so")
    marker = os.path.join(root, "ok.json")
    pocl_dist = _package_dir("pocl_binary_distribution")
    if pocl_dist is None:
        raise PatchError("pocl_binary_distribution package not found")
    info = _read_json(marker)
    if not (info and os.path.isfile(patched)
            and os.path.getsize(patched) == info.get("size")):
        with open(lib, "rb") as f:
            data = f.read()
        new = patch_libpocl_bytes(data, cpu_name)
        _fs.atomic_write(patched, new, 0o755)
        _atomic_symlink(pocl_dist, os.path.join(root, "pocl_binary_distribution"))
        got = query_llvm_cpu_name(patched)
        if got != cpu_name:
            raise PatchError(f"patched library reports {got!r}, expected {cpu_name!r}")
        _fs.atomic_write(marker, json.dumps({"size": len(new), "cpu": cpu_name,
                                          "source": lib}).encode())
    else:
        _atomic_symlink(pocl_dist, os.path.join(root, "pocl_binary_distribution"))
    return patched


def _decide(lib: str) -> tuple[bool, str, str]:
    """(needed, reported cpu, key) — cached on disk by lib + cpu model."""
    key = hashlib.sha256(f"{_lib_key(lib)}|{cpu_model_string()}".encode()).hexdigest()[:16]
    path = os.path.join(cache_dir(), f"pocl-decision-{key}.json")
    got = _read_json(path)
    if got and "reported" in got:
        return bool(got["needed"]), got["reported"], key
    reported = query_llvm_cpu_name(lib)
    if reported is None:
        return False, "?", key        # don't cache failures
    needed = reported == "generic"
    _fs.atomic_write(path, json.dumps({"needed": needed, "reported": reported,
                                    "lib": lib}).encode())
    return needed, reported, key


def pocl_identity() -> tuple[str, str, str]:
    """(PoCL's version, a key of its library file, the CPU it builds for): what a kernel cache of it
    depends on (see :mod:`.kcache`)."""
    ensure_opencl_env(import_pyopencl=False)
    st = _state or {}
    lib = find_bundled_libpocl()
    version = ""
    d = _package_dir("pocl_binary_distribution")
    if d:
        try:
            with open(os.path.join(d, "__init__.py"), encoding="utf-8") as f:
                m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
            version = m.group(1) if m else ""
        except OSError:
            pass
    return version, (_lib_key(lib) if lib else "system"), (st.get("target_cpu") or st.get("reported_cpu") or "")


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
        os.environ[ENV_PYOPENCL_HOME] = st["pyopencl_home"]


def _compute_state() -> dict:
    st: dict = {"pocl_fix": False, "reason": "", "vendors": None, "pyopencl_home": None,
                "nvidia": None, "cpu_name": None}
    user_vendors = os.environ.get(ENV_ORIG_VENDORS)
    if user_vendors is None:
        user_vendors = os.environ.get("OCL_ICD_VENDORS", _UNSET)
    if user_vendors == _UNSET:
        system = os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
        icds = _read_icd_dir(system)
    else:
        icds = _read_icd_dir(user_vendors)

    ours: dict[str, str] = {}
    lib = find_bundled_libpocl()
    if os.environ.get(ENV_OPT_OUT, "").strip() not in ("", "0"):
        st["reason"] = f"disabled by {ENV_OPT_OUT}"
    elif lib is None:
        st["reason"] = "no bundled libpocl"
    else:
        try:
            needed, reported, key = _decide(lib)
            st["reported_cpu"] = reported
            forced = os.environ.get(ENV_TARGET_CPU, "").strip()
            if forced:
                if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", forced):
                    raise PatchError(f"{ENV_TARGET_CPU}={forced!r} is not an LLVM CPU name")
                cpu, why = forced, f"{ENV_TARGET_CPU}={forced} (LLVM reports {reported!r})"
            elif needed:
                cpu = choose_cpu_name(host_cpu_flags())
                why = f"LLVM reports 'generic'; patched to {cpu!r}"
            else:
                cpu, why = None, f"not needed (LLVM reports {reported!r})"
            st["target_cpu"] = cpu or reported
            if cpu is None:
                st["reason"] = why
            else:
                patched = _prepare_patched(lib, key, cpu)
                st.update(pocl_fix=True, cpu_name=cpu, patched_lib=patched, reason=why,
                          pyopencl_home=os.path.dirname(os.path.dirname(patched)))
                ours["mlirtrace-pocl.icd"] = patched
                base = os.path.basename(lib)
                # the original (broken) PoCL must not be loaded next to ours
                icds = {k: v for k, v in icds.items() if os.path.basename(v) != base}
        except (PatchError, OSError) as e:
            st["reason"] = f"pocl fix failed: {e}"

    nv = _nvidia_icd_entry()
    if nv and not any("nvidia-opencl" in v for v in list(icds.values()) + list(ours.values())):
        ours["nvidia.icd"] = nv
        st["nvidia"] = nv

    if not ours:
        return st
    merged = dict(icds)
    for k, v in ours.items():
        merged[k] = v
    # dedupe by content
    seen, final = set(), {}
    for k in sorted(merged):
        if merged[k] in seen:
            continue
        seen.add(merged[k])
        final[k] = merged[k]
    h = hashlib.sha256(json.dumps(final, sort_keys=True).encode()).hexdigest()[:16]
    vdir = os.path.join(cache_dir(), "icd", h)
    for name, content in final.items():
        p = os.path.join(vdir, name)
        try:
            with open(p, encoding="utf-8") as f:
                if f.read().strip() == content:
                    continue
        except OSError:
            pass
        _fs.atomic_write(p, (content + "\n").encode())
    st["vendors"] = vdir
    st["icds"] = final
    os.environ.setdefault(ENV_ORIG_VENDORS, user_vendors)
    return st
