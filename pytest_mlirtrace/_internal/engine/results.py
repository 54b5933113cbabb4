"""What the pipeline returns (one lowered module, a built solution, a run, a tune and its rows), what one call
changes for itself (:class:`RunOptions`), and the one error it raises before anything runs
(:class:`SizeLimitError`). Statuses are :class:`~pytest_mlirtrace._internal.vocab.Status` words."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import codegen, ir, runtime
from ..vocab.status import Status
from .database import Database
from .span import Span, mlir_hash

__all__ = ["Lowered", "CompiledResult", "BenchRow", "RunResult", "TuneResult", "RunOptions", "SizeLimitError"]


@dataclass
class Lowered:
    """One module, lowered once: its texts, problem and key (what every solution shares)."""
    module: ir.Module
    module_text: str
    mlir_text: str
    problem: codegen.Problem
    key: str
    device: object                 # a runtime.DeviceInfo, or limits that stand for one (codegen.DeviceLimits)

    @property
    def mlir_hash(self) -> str:
        return mlir_hash(self.mlir_text)


@dataclass
class CompiledResult:
    """A built (or failed) kernel for one solution, with the span back to what produced it."""
    span: Span
    solution: codegen.Solution | None
    spec: codegen.KernelSpec | None
    status: str = Status.OK
    error: str = ""
    build_log: str = ""
    build_s: float = 0.0
    job: runtime.KernelJob | None = None

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


@dataclass
class BenchRow:
    solution: str
    status: str
    time_ms: float | None
    build_s: float
    span_hash: str
    detail: str = ""
    cut: bool = False        # timed fewer times: two launches took longer than cut_factor x the best so far (or
    #                          one longer than CUT_ONCE_FACTOR x)


@dataclass
class RunResult:
    compiled: CompiledResult
    status: str                  # ok | wrong | crash | hang | build_error | launch_error | lowering_error
    outputs: list = field(default_factory=list)
    expected: list = field(default_factory=list)
    time_ms: float | None = None
    detail: str = ""
    seed: int = 0

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


@dataclass
class TuneResult:
    lowered: Lowered
    rows: list[BenchRow]
    best: CompiledResult | None
    best_ms: float | None
    failures: list[CompiledResult]
    from_database: bool = False
    build_wall_s: float = 0.0
    build_sum_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.best is not None


@dataclass(frozen=True)
class RunOptions:
    """What one call changes for itself, passed as a value (the pipeline it runs on is shared and never
    changed): the hang timeout, the planted faults, extra listeners for its events, the tuning database."""
    timeout_s: float | None = None     # None: the pipeline's
    inject: str | None = None          # None: the pipeline's; "": none
    listeners: tuple = ()
    database: Database | None = None   # None: the pipeline's (a TuningDatabase, MemoryDatabase, a fleet's)


class SizeLimitError(ValueError):
    """A module whose checked run would take more host memory than the pipeline's ``max_bytes``
    (raised before anything is allocated)."""

    def __init__(self, symbol: str, needed: int, allowed: int):
        self.symbol, self.needed, self.allowed = symbol, needed, allowed
        super().__init__(f"{symbol}: a checked run needs about {needed} bytes ({_gib(needed)}) of host memory "
                         f"for inputs, outputs and the numpy oracle; {allowed} bytes ({_gib(allowed)}) allowed")


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"
