"""The OpenCL ICD files: which drivers the ICD loader sees (``OCL_ICD_VENDORS``).

What the user's vendors directory (or ``/etc/OpenCL/vendors``) names is read; the patched PoCL
(:mod:`.pocl_cpu_fix`) and NVIDIA's driver are added to it when no ICD file names them (an NVIDIA
machine's driver ships ``libnvidia-opencl.so.1``, often without one); the merged set is written into a
directory of mlirtrace's cache, keyed by its content, that ``OCL_ICD_VENDORS`` then points at.
"""
from __future__ import annotations

import ctypes.util
import glob
import hashlib
import json
import os

from ... import fs

__all__ = ["NVIDIA_LIB", "NVIDIA_DIRS", "UNSET", "nvidia_icd_entry", "read_icd_dir", "user_icds",
           "write_vendors_dir"]

NVIDIA_LIB = "libnvidia-opencl.so.1"
NVIDIA_DIRS = (
    "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu",
    "/lib64", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib", "/usr/local/cuda/lib64",
)
#: the user's OCL_ICD_VENDORS as remembered when it was not set
UNSET = "<unset>"
SYSTEM_VENDORS = "/etc/OpenCL/vendors"


def nvidia_icd_entry() -> str | None:
    """What to write into nvidia.icd, or None when there is no driver."""
    for d in NVIDIA_DIRS:
        p = os.path.join(d, NVIDIA_LIB)
        if os.path.exists(p):
            return p
    try:
        found = ctypes.util.find_library("nvidia-opencl")
    except Exception:  # pragma: no cover - find_library shells out
        found = None
    return found or None


def read_icd_dir(path: str) -> dict[str, str]:
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


def user_icds(user_vendors: str) -> dict[str, str]:
    """The ICDs the user's ``OCL_ICD_VENDORS`` names (:data:`UNSET`: the system's vendors directory)."""
    if user_vendors == UNSET:
        return read_icd_dir(os.environ.get("OPENCL_VENDOR_PATH") or SYSTEM_VENDORS)
    return read_icd_dir(user_vendors)


def write_vendors_dir(icds: dict[str, str], ours: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Write ``icds`` with ``ours`` added (each library once) into a vendors directory of mlirtrace's
    cache; (that directory, the ICDs it holds)."""
    merged = dict(icds)
    merged.update(ours)
    seen: set[str] = set()
    final: dict[str, str] = {}
    for k in sorted(merged):        # dedupe by content
        if merged[k] in seen:
            continue
        seen.add(merged[k])
        final[k] = merged[k]
    h = hashlib.sha256(json.dumps(final, sort_keys=True).encode()).hexdigest()[:16]
    vdir = os.path.join(fs.cache_dir(), "icd", h)
    for name, content in final.items():
        p = os.path.join(vdir, name)
        try:
            with open(p, encoding="utf-8") as f:
                if f.read().strip() == content:
                    continue
        except OSError:
            pass
        fs.atomic_write(p, (content + "\n").encode())
    return vdir, final
