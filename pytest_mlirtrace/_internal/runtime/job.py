"""Kernel jobs (what to build and launch) and their results."""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..vocab.status import JOB_STATUSES, Status

__all__ = [
    "InBuf", "OutBuf", "OutCheck", "bound_f32", "Scalar", "LocalMem", "KernelArg",
    "KernelJob", "JobResult", "program_key", "STATUSES", "REPLY_NEED_INPUTS", "REPLY_ENVIRONMENT",
]

STATUSES = tuple(s.value for s in JOB_STATUSES)   # the words: vocab.status
# a worker's replies that are no job's status: the run needs inputs the worker no longer holds (the pool sends
# it again, with them); the worker cannot do OpenCL work at all (the pool raises EnvironmentFailure)
REPLY_NEED_INPUTS = "need_inputs"
REPLY_ENVIRONMENT = "environment"


@dataclass
class InBuf:
    """A global buffer initialised from *array* (copied to the device, read-only).

    A worker keeps a pristine device copy of each input it was sent, by :attr:`key`, and every later run
    with the same contents gets a fresh device-side copy of it instead of the array again (a tune sends
    its inputs once per worker, not once per solution). Share one InBuf between jobs with the same
    input: its key (a hash of the contents) is computed once."""
    array: np.ndarray

    def __post_init__(self):
        self.array = np.ascontiguousarray(self.array)
        self._key: str | None = None

    @property
    def key(self) -> str:
        """The contents' identity: dtype, shape and a hash of the bytes."""
        if self._key is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(f"{self.array.dtype.str}{self.array.shape}".encode())
            h.update(memoryview(self.array).cast("B"))
            self._key = h.hexdigest()
        return self._key


@dataclass
class OutCheck:
    """Check output ``output`` (its position among the job's OutBufs) on the device against the oracle:
    ``expected`` holds the oracle's values in the output's storage type, ``bound`` how far each may be off
    (float32, rounded toward zero: :func:`bound_f32`; one element: the same for all). ``kind``: the output's
    storage, an ir dtype name (``devcheck.KINDS``). Where every element passes, the output is not read back
    (see :mod:`.devcheck`)."""
    output: int
    kind: str
    expected: InBuf
    bound: InBuf

    def to_wire(self) -> tuple:
        return (self.output, self.kind, self.expected.array, self.expected.key, self.bound.array,
                self.bound.key, self.bound.array.size == 1)


def bound_f32(bound) -> np.ndarray:
    """Bounds as float32, each at most the float64 given (a device check with them is never looser)."""
    b = np.asarray(bound, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):      # past float32's range: inf, then its largest
        b32 = b.astype(np.float32)
        over = b32.astype(np.float64) > b
    b32[over] = np.nextafter(b32[over], np.float32(0))
    return b32


@dataclass
class OutBuf:
    """A global output buffer, read back after the launch.

    ``fill`` (a number) initialises it before every launch; with ``None`` the
    device memory is left uninitialised (fastest, but contents are garbage
    where the kernel does not write).
    """
    shape: tuple[int, ...]
    dtype: Any
    fill: Any = None

    def __post_init__(self):
        if isinstance(self.shape, (int, np.integer)):
            self.shape = (int(self.shape),)
        self.shape = tuple(int(s) for s in self.shape)
        self.dtype = np.dtype(self.dtype)

    @property
    def nbytes(self) -> int:
        return int(math.prod(self.shape)) * self.dtype.itemsize


@dataclass
class Scalar:
    """A by-value kernel argument; ``value`` must be a numpy scalar
    (``np.int32(3)``) unless ``dtype`` is given."""
    value: Any
    dtype: Any = None

    def __post_init__(self):
        if self.dtype is not None:
            self.value = np.dtype(self.dtype).type(self.value)
        elif not isinstance(self.value, np.generic):
            raise TypeError(
                f"Scalar({self.value!r}): pass a numpy scalar such as np.int32(...) "
                "or give dtype=, OpenCL needs the exact width")
        self.dtype = self.value.dtype


@dataclass
class LocalMem:
    """A ``__local`` pointer argument of *nbytes* bytes."""
    nbytes: int


KernelArg = InBuf | OutBuf | Scalar | LocalMem


def program_key(source: str, build_options: str = "") -> str:
    """Cache key of a built program (source + options)."""
    h = hashlib.sha256()
    h.update(build_options.encode())
    h.update(b"\x00")
    h.update(source.encode())
    return h.hexdigest()[:32]


@dataclass
class KernelJob:
    source: str
    kernel_name: str
    args: list = field(default_factory=list)
    global_size: tuple[int, ...] = (1,)
    local_size: tuple[int, ...] | None = None
    build_options: str = ""
    label: str = ""

    def __post_init__(self):
        if isinstance(self.global_size, (int, np.integer)):
            self.global_size = (int(self.global_size),)
        self.global_size = tuple(int(g) for g in self.global_size)
        if self.local_size is not None:
            if isinstance(self.local_size, (int, np.integer)):
                self.local_size = (int(self.local_size),)
            self.local_size = tuple(int(x) for x in self.local_size)
        for a in self.args:
            if not isinstance(a, (InBuf, OutBuf, Scalar, LocalMem)):
                raise TypeError(f"kernel argument {a!r}: use InBuf/OutBuf/Scalar/LocalMem")

    @property
    def key(self) -> str:
        """Program cache key (source + build options; not the launch)."""
        return program_key(self.source, self.build_options)

    def describe(self) -> str:
        s = f"kernel '{self.kernel_name}'"
        if self.label:
            s += f" [{self.label}]"
        return s

    # plain-data form sent to the worker process (no package imports there)
    def to_wire(self) -> dict:
        args = []
        for a in self.args:
            if isinstance(a, InBuf):
                # (kind, array, key): the pool leaves the array out when the worker has that key
                args.append(("in", a.array, a.key if a.array.nbytes else None))
            elif isinstance(a, OutBuf):
                args.append(("out", a.shape, a.dtype.str, a.fill))
            elif isinstance(a, Scalar):
                args.append(("scalar", a.value))
            else:
                args.append(("local", int(a.nbytes)))
        return {"key": self.key, "source": self.source, "options": self.build_options,
                "kernel": self.kernel_name, "args": args,
                "global": self.global_size, "local": self.local_size}


@dataclass
class JobResult:
    status: str
    outputs: list = field(default_factory=list)
    times_ms: list = field(default_factory=list)
    build_log: str = ""
    error: str = ""
    signal: int | None = None
    build_s: float = 0.0
    wall_s: float = 0.0
    stderr: str = ""            # tail of the worker's stderr (crash/hang)
    label: str = ""
    key: str = ""               # program key
    cached: bool = False        # program was already built in that worker
    worker_pid: int | None = None
    cut: bool = False           # timing stopped early: a launch took longer than the run's cutoff_ms
    batched: int = 1            # kernels in the program this one was built in (WorkerPool.build_batch; 1: alone)
    # per OutCheck of the run: True where every element passed on the device (that output is None in
    # ``outputs``: not read back), False where not; None: not checked on the device
    checked: list | None = None

    @property
    def checked_ok(self) -> bool:
        """The run's OutChecks all passed on the device."""
        return bool(self.checked) and all(self.checked)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.times_ms)) if self.times_ms else math.nan

    @property
    def min_ms(self) -> float:
        return float(min(self.times_ms)) if self.times_ms else math.nan

    @property
    def first_line(self) -> str:
        return self.error.splitlines()[0] if self.error else ""

    def __repr__(self) -> str:  # keep arrays out of reprs in test reports
        extra = f", error={self.first_line!r}" if self.error else ""
        t = f", median_ms={self.median_ms:.4g}" if self.times_ms else ""
        return (f"JobResult(status={self.status!r}, outputs={len(self.outputs)}"
                f"{t}, build_s={self.build_s:.3f}{extra})")
