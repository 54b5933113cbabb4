"""Events the tuning pipeline emits, in order, to whoever listens (the trace layer records and prints them).

Order for one fused op: ``ModuleLowered`` (P1: before the first compile), ``BenchmarkStarted``,
``SolutionsBuilt``, then per solution ``SolutionBenchmarking`` (P2: before it is benchmarked) and
``SolutionFinished``, then ``FastestChosen`` and ``Verified``. ``CompileFailed`` comes with any
solution that crashes, hangs, fails to build or computes wrong numbers.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .span import Span


@dataclass
class Event:
    t: float = field(default_factory=time.time, init=False)

    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind
        return d


@dataclass
class ModuleLowered(Event):
    symbol: str
    module_text: str
    mlir_text: str
    mlir_hash: str
    problem_key: str


@dataclass
class BenchmarkStarted(Event):
    op: str
    problem_key: str
    n_configs: int
    mlir_hash: str
    from_database: bool = False


@dataclass
class SolutionsBuilt(Event):
    n_ok: int
    n_failed: int
    wall_s: float
    sum_build_s: float


@dataclass
class SolutionBenchmarking(Event):
    problem_key: str
    solution: str
    span_hash: str
    mlir_hash: str


@dataclass
class SolutionFinished(Event):
    solution: str
    status: str            # ok | build_error | crash | hang | launch_error | wrong | lowering_error
    time_ms: float | None
    span_hash: str
    build_s: float = 0.0
    detail: str = ""


@dataclass
class CompileFailed(Event):
    failure: str           # same words as SolutionFinished.status
    stage: str             # "build" | "benchmark" | "run" | "lower"
    error: str
    span: Span | None
    build_log: str = ""
    mismatch: str = ""


@dataclass
class FastestChosen(Event):
    problem_key: str
    solution: str
    time_ms: float
    span_hash: str


@dataclass
class Verified(Event):
    solution: str
    ok: bool
    detail: str
    span_hash: str


@dataclass
class RunFinished(Event):
    solution: str
    ok: bool
    time_ms: float | None
    detail: str
    span_hash: str


Listener = Callable[[Event], None]


def emit(listeners: list[Listener], event: Event) -> None:
    for fn in listeners:
        fn(event)
