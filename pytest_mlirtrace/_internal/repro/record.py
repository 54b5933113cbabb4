"""One failure, with everything a reproducer and a ticket need."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..engine import Span
from ..vocab import FINDING_KINDS, Status
from .signature import first_line, symbol_of

KINDS = tuple(s.value for s in FINDING_KINDS)   # the words: vocab.status
STAGES = ("build", "benchmark", "run", "test")
# pipeline stage words -> record stage words
_STAGE = {"lower": "build", "build": "build", "benchmark": "benchmark", "run": "run", "test": "test"}


_FAULTS_LINE = re.compile(r"^//\s*injected faults:\s*(.+?)\s*$", re.MULTILINE)


def recorded_faults(span: Span, spec=None) -> str | None:
    """The planted faults a kernel was lowered with: the KernelSpec's, else its source's header line;
    None when neither says (no kernel)."""
    faults = getattr(spec, "faults", None)
    if faults:
        return ",".join(sorted(faults))
    if span.kernel_source:
        m = _FAULTS_LINE.search(span.kernel_source)
        return ",".join(sorted(x.strip() for x in m.group(1).split(",") if x.strip())) if m else ""
    return None


@dataclass
class FailureRecord:
    kind: str            # one of KINDS
    span: Span           # from tuning
    stage: str           # one of STAGES
    error: str           # full message; the signature uses its first line, normalised
    seed: int = 0        # inputs are ir.random_inputs(module, seed)
    origin: str = ""     # test nodeid, "fuzz", "import-trace <log>:<line>"
    build_log: str = ""
    mismatch: str = ""
    bench_table: str = ""
    time_ms: float | None = None
    max_ms: float | None = None
    # recorded as data only (the reproducer never forces it on): the faults injected when it failed;
    # None: what the kernel says (spec.faults, its header), else none (a record never reads the environment)
    inject: str | None = None
    timeout_s: float | None = None     # the hang timeout in force when it failed
    # with a fault on: True once the case passed with the fault switched off (a planted bug), False when
    # it fails with the fault off too (a real bug), None when that was not checked
    planted: bool | None = None
    passed: tuple = ()                 # solutions that passed on the same module in the same call
    # not written anywhere; they let the writer skip re-lowering (standalone data) when present
    spec: object | None = field(default=None, repr=False, compare=False)
    device_info: object | None = field(default=None, repr=False, compare=False)
    call_site: str = field(default="", compare=False)   # pytest: "test_x.py:12: mlirtrace.run(M)", the test's line
    # not written: runs this case again, ``runner(rec, inject=..., build_options=...) -> RunResult`` (repro.rerun):
    # the fuzz's lanes; None: a front end's pipeline or one made on device_info
    runner: object | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.inject is None:
            found = recorded_faults(self.span, self.spec)
            self.inject = found or ""
        if self.kind not in KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}; known: {', '.join(KINDS)}")
        self.stage = _STAGE.get(self.stage, self.stage)
        if self.stage not in STAGES:
            raise ValueError(f"unknown failure stage {self.stage!r}; known: {', '.join(STAGES)}")

    @property
    def first_line(self) -> str:
        return first_line(self.error)

    @property
    def symbol(self) -> str:
        return symbol_of(self.span.mlir_text, self.span.module_text)

    @classmethod
    def from_event(cls, ev, seed: int = 0, origin: str = "", **kw) -> FailureRecord:
        """From a ``engine.CompileFailed`` event (any stage: lower, build, benchmark, run)."""
        if ev.span is None:
            raise ValueError("CompileFailed event without a span: nothing to reproduce")
        return cls(ev.failure, ev.span, ev.stage, ev.error or ev.failure, seed=seed, origin=origin,
                   build_log=ev.build_log or "", mismatch=ev.mismatch or "", **kw)

    @classmethod
    def from_run(cls, run_result, origin: str = "", max_ms: float | None = None, **kw) -> FailureRecord:
        """From a ``engine.RunResult`` that failed, or passed but took longer than ``max_ms`` ("slow")."""
        c = run_result.compiled
        if not run_result.ok:
            kind = run_result.status
            stage = "build" if kind in (Status.BUILD_ERROR, Status.LOWERING_ERROR) else "run"
            error = run_result.detail or c.error or kind
            mismatch = run_result.detail if kind == Status.WRONG else ""
        elif max_ms is not None and run_result.time_ms is not None and run_result.time_ms > max_ms:
            kind, stage = Status.SLOW, "run"
            error = f"too slow: {run_result.time_ms:.4g} ms > max {max_ms:.4g} ms (solution {c.span.solution})"
            mismatch = ""
        else:
            raise ValueError("the run passed: no failure to record")
        kw.setdefault("spec", c.spec)
        return cls(kind, c.span, stage, error, seed=run_result.seed, origin=origin, build_log=c.build_log or "",
                   mismatch=mismatch, time_ms=run_result.time_ms, max_ms=max_ms, **kw)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "span": self.span.to_dict(), "stage": self.stage, "error": self.error,
                "seed": self.seed, "origin": self.origin, "build_log": self.build_log, "mismatch": self.mismatch,
                "bench_table": self.bench_table, "time_ms": self.time_ms, "max_ms": self.max_ms,
                "inject": self.inject, "timeout_s": self.timeout_s, "planted": self.planted,
                "passed": list(self.passed)}

    @classmethod
    def from_dict(cls, d: dict) -> FailureRecord:
        d = dict(d)
        d["span"] = Span.from_dict(d["span"])
        d["passed"] = tuple(d.get("passed") or ())
        return cls(**d)
