"""OpenCL device descriptions and device-spec resolution.

Devices are enumerated in a subprocess (the worker script in ``--list``
mode), so that a crashing driver cannot take the calling process down; the
result is cached per process.  This module imports only the standard library
(the worker processes load it by file path).

Device specs (``--device``; a front end resolves the setting and passes it down, None meaning the default):
  ``pocl`` / ``pocl-cpu`` (default)  PoCL's CPU device
  ``nvidia``                         first device of an NVIDIA platform
  ``gpu`` / ``cpu``                  first GPU / CPU device
  ``N``                              N-th device in :func:`list_devices` order
  ``P:D``                            platform P, device D (the canonical spec)
  a key name (``nvidia-h200``) or any substring of the device name
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field, fields

__all__ = [
    "DeviceInfo", "DeviceError", "EnvironmentFailure", "list_devices", "resolve_device", "match_spec",
    "make_key_name", "default_device_spec", "DEFAULT_SPEC", "DEVICE_LIST_LINE", "describe_cl_device",
    "enumerate_cl_devices",
]

DEFAULT_SPEC = "pocl-cpu"
POCL_PLATFORM = "Portable Computing Language"


class DeviceError(Exception):
    """No device matches a spec, or devices cannot be enumerated: the environment, not a finding.

    Front ends stop the whole run on it, once, with ``exit_status``."""
    exit_status = 4


class EnvironmentFailure(DeviceError):
    """An OpenCL worker could not start or import what it needs: nothing that ran can be judged, so
    the whole run stops (never counted as a finding)."""


@dataclass(frozen=True)
class DeviceInfo:
    spec: str                     # canonical "P:D"
    name: str
    platform: str
    kind: str                     # "cpu" | "gpu" | "accelerator" | "other"
    vendor: str
    max_work_group_size: int
    local_mem_size: int
    compute_units: int
    has_fp16: bool
    has_fp64: bool
    key_name: str                 # arch token for problem keys, e.g. "pocl-cpu"
    opencl_version: str           # "3.0"
    platform_index: int = 0
    device_index: int = 0
    device_version: str = ""      # full CL_DEVICE_VERSION
    driver_version: str = ""
    # PoCL's CPU device derives these from the memory free when it starts: not part of its identity
    global_mem_size: int = field(default=0, compare=False)
    max_work_item_sizes: tuple = ()
    max_mem_alloc_size: int = field(default=0, compare=False)
    extensions: tuple = field(default=(), repr=False)
    target_cpu: str = ""          # the LLVM CPU a PoCL CPU device builds for
    vector_bits: int = 0          # widest vector an OpenCL builtin call may take (0: any)
    mma: str = ""                 # matrix-core instructions the code generator may use ("sm_90"; "" for none)

    @property
    def is_pocl(self) -> bool:
        return self.platform == POCL_PLATFORM or "pocl" in self.device_version.lower()

    @classmethod
    def from_dict(cls, d: dict) -> DeviceInfo:
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        for k in ("max_work_item_sizes", "extensions"):
            if k in kw:
                kw[k] = tuple(kw[k])
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        target = f", builds for {self.target_cpu}" if self.target_cpu else ""
        vec = f", builtin vectors <= {self.vector_bits} bits" if self.vector_bits else ""
        mma = f", mma {self.mma}" if self.mma else ""
        return f"{self.spec}  {self.key_name:<16} {self.name} ({self.platform}, {self.kind}{target}{vec}{mma})"


# LLVM x86 CPU names by the width of their vector registers (LLVM 14's list, plus later names so that a
# newer PoCL is read right). A PoCL CPU device builds for one of them (its version string names it).
_AVX512_CPUS = frozenset((
    "x86-64-v4", "knl", "knm", "skylake-avx512", "skx", "cascadelake", "cooperlake", "cannonlake",
    "icelake-client", "icelake-server", "rocketlake", "tigerlake", "sapphirerapids", "graniterapids",
    "graniterapids-d", "emeraldrapids", "znver4", "znver5", "diamondrapids"))
_AVX_CPUS = frozenset((
    "x86-64-v3", "sandybridge", "corei7-avx", "ivybridge", "core-avx-i", "haswell", "core-avx2",
    "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "arrowlake", "arrowlake-s",
    "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge", "clearwaterforest",
    "bdver1", "bdver2", "bdver3", "bdver4", "btver2", "znver1", "znver2", "znver3"))


def pocl_target_cpu(device_version: str) -> str:
    """The LLVM CPU a PoCL CPU device builds for, from its version string
    (``OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3``); "" when not named."""
    m = re.search(r"HSTR:\s*\S*?-(?:linux|windows|darwin|freebsd)(?:-gnu\w*|-musl\w*|-msvc)?-(\S+)",
                  device_version)
    return m.group(1) if m else ""


def builtin_vector_bits(kind: str, platform: str, device_version: str) -> int:
    """The widest vector (bits) an OpenCL builtin call may take or return on a device; 0 for any.

    PoCL's CPU device links builtins compiled for its target CPU; passing a vector wider than that
    CPU's vector registers breaks the call (codegen splits such calls).  Other devices: no limit."""
    if kind != "cpu" or not (platform == POCL_PLATFORM or "pocl" in device_version.lower()):
        return 0
    cpu = pocl_target_cpu(device_version)
    if cpu in _AVX512_CPUS:
        return 512
    if cpu in _AVX_CPUS:
        return 256
    return 128   # SSE-only targets, and any name not known here: safe everywhere


def nvidia_mma(vendor: str, cc_major: int, cc_minor: int) -> str:
    """``"sm_XY"`` for an NVIDIA device of compute capability X.Y that has ``mma.sync`` m16n8k16 for f16 and
    bf16 (sm_80 and later, as PTX ISA 7.0 gives it); "" otherwise."""
    if "nvidia" not in vendor.lower() or cc_major < 8:
        return ""
    return f"sm_{cc_major}{cc_minor}"


def make_key_name(name: str, platform: str, kind: str, device_version: str = "") -> str:
    """Short lowercase-dashed arch token used in problem keys."""
    if kind == "cpu" and (platform == POCL_PLATFORM or "pocl" in device_version.lower()):
        return "pocl-cpu"
    s = re.sub(r"\((r|tm)\)", "", name.strip().lower())
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s or "device"


def default_device_spec(spec: str | None = None) -> str:
    """``spec`` as given (the device setting a front end resolved), else :data:`DEFAULT_SPEC`."""
    if spec is None or not str(spec).strip():
        return DEFAULT_SPEC
    return str(spec).strip()


def match_spec(devices: list[DeviceInfo], spec: str) -> DeviceInfo:
    """Pick the device *spec* names from *devices* (pure function)."""
    s = spec.strip().lower()
    if not devices:
        raise DeviceError(f"no OpenCL devices found (looking for {spec!r})")

    def first(pred, what):
        for d in devices:
            if pred(d):
                return d
        raise DeviceError(f"no {what} device (spec {spec!r}); available:\n"
                          + _listing(devices))

    if s in ("pocl", "pocl-cpu", "pocl_cpu"):
        return first(lambda d: d.is_pocl and d.kind == "cpu", "PoCL CPU")
    if s == "nvidia":
        return first(lambda d: "nvidia" in (d.platform + " " + d.vendor).lower(), "NVIDIA")
    if s in ("gpu", "cpu"):
        return first(lambda d: d.kind == s, s.upper())
    m = re.fullmatch(r"(\d+):(\d+)", s)
    if m:
        p, i = int(m.group(1)), int(m.group(2))
        return first(lambda d: (d.platform_index, d.device_index) == (p, i), f"platform {p} device {i}")
    if re.fullmatch(r"\d+", s):
        n = int(s)
        if n < len(devices):
            return devices[n]
        raise DeviceError(f"device index {n} out of range; available:\n" + _listing(devices))
    for d in devices:
        if d.key_name == s or d.spec == s:
            return d
    for d in devices:
        if s in d.name.lower():
            return d
    for d in devices:
        if s in d.platform.lower():
            return d
    raise DeviceError(f"unknown device spec {spec!r}; available devices:\n" + _listing(devices))


def _listing(devices: list[DeviceInfo]) -> str:
    return "\n".join("  " + d.describe() for d in devices) or "  (none)"


# ---------------------------------------------------------- enumeration ---

_lock = threading.Lock()
_cache: list[DeviceInfo] | None = None

WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
#: the line of ``worker.py --list``'s output that holds the devices (JSON after it)
DEVICE_LIST_LINE = "mlirtrace-devices: "


def remember_devices(devs: list[DeviceInfo]) -> None:
    """What a worker reported: the devices of this process from now on (no second enumeration)."""
    global _cache
    with _lock:
        _cache = list(devs)


def known_devices() -> list[DeviceInfo] | None:
    """The devices this process has seen enumerated, or None before the first enumeration."""
    with _lock:
        return None if _cache is None else list(_cache)


def list_devices(refresh: bool = False, timeout_s: float = 120.0) -> list[DeviceInfo]:
    """All OpenCL devices, enumerated in a subprocess (cached per process)."""
    with _lock:
        if _cache is not None and not refresh:
            return list(_cache)
    env = dict(os.environ)
    try:
        cp = subprocess.run([sys.executable, WORKER_SCRIPT, "--list"],
                            capture_output=True, text=True, timeout=timeout_s,
                            stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired as e:
        raise DeviceError(f"device enumeration timed out after {timeout_s} s") from e
    if cp.returncode != 0:
        sig = f" (signal {-cp.returncode})" if cp.returncode < 0 else ""
        raise DeviceError(f"device enumeration failed with status {cp.returncode}{sig}:\n"
                          + cp.stderr[-4000:])
    payload = None
    for line in cp.stdout.splitlines():
        if line.startswith(DEVICE_LIST_LINE):
            payload = json.loads(line[len(DEVICE_LIST_LINE):])
    if payload is None:
        raise DeviceError("device enumeration printed nothing:\n" + cp.stderr[-4000:])
    if payload.get("error"):
        raise DeviceError(f"device enumeration failed: {payload['error']}")
    devs = [DeviceInfo.from_dict(d) for d in payload["devices"]]
    remember_devices(devs)
    return list(devs)


def resolve_device(spec: str | None = None) -> DeviceInfo:
    """Device for *spec* (None: ``pocl-cpu``)."""
    if isinstance(spec, DeviceInfo):
        return spec
    return match_spec(list_devices(), default_device_spec(spec))

# ------------------------------------------------- in a worker process ---

def _cl_kind(cl, d) -> str:
    dtype = d.type
    if dtype & cl.device_type.GPU:
        return "gpu"
    if dtype & cl.device_type.CPU:
        return "cpu"
    if dtype & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


def describe_cl_device(cl, pi: int, di: int, p, d) -> dict:
    """The :class:`DeviceInfo` fields of pyopencl's device ``d`` (device ``di`` of platform ``pi``, ``p``), as a
    dict (a worker process sends it to the parent)."""
    kind = _cl_kind(cl, d)
    ext = tuple(d.extensions.split())
    version = d.version.strip()
    m = re.match(r"OpenCL\s+(\d+\.\d+)", version)
    try:
        fp64 = "cl_khr_fp64" in ext or bool(d.double_fp_config)
    except Exception:
        fp64 = "cl_khr_fp64" in ext
    name = d.name.strip()
    pname = p.name.strip()

    def get(attr, default):
        try:
            return getattr(d, attr)
        except Exception:
            return default

    return {
        "spec": f"{pi}:{di}", "name": name, "platform": pname, "kind": kind,
        "vendor": d.vendor.strip(),
        "max_work_group_size": int(d.max_work_group_size),
        "local_mem_size": int(d.local_mem_size),
        "compute_units": int(d.max_compute_units),
        "has_fp16": "cl_khr_fp16" in ext, "has_fp64": fp64,
        "key_name": make_key_name(name, pname, kind, version),
        "opencl_version": m.group(1) if m else version,
        "platform_index": pi, "device_index": di,
        "device_version": version, "driver_version": get("driver_version", "").strip(),
        "global_mem_size": int(get("global_mem_size", 0)),
        "max_work_item_sizes": tuple(int(x) for x in get("max_work_item_sizes", ())),
        "max_mem_alloc_size": int(get("max_mem_alloc_size", 0)),
        "extensions": ext,
        "target_cpu": pocl_target_cpu(version) if "pocl" in version.lower() else "",
        "vector_bits": builtin_vector_bits(kind, pname, version),
        # NVIDIA's cl_nv_device_attribute_query gives the compute capability
        "mma": nvidia_mma(d.vendor, int(get("compute_capability_major_nv", 0) or 0),
                          int(get("compute_capability_minor_nv", 0) or 0)),
    }


def enumerate_cl_devices(cl) -> list[tuple[dict, object]]:
    """(description, pyopencl device) of every device of every platform pyopencl ``cl`` finds."""
    out: list[tuple[dict, object]] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return out
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devs):
            out.append((describe_cl_device(cl, pi, di, p, d), d))
    return out
