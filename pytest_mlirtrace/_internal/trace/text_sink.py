"""MIGraphX-style trace text, printed as events happen.

``MIGRAPHX_TRACE_MLIR=1``: the migraphx module and its MLIR before the first compile (with the MLIR's hash).
``MIGRAPHX_TRACE_BENCHMARKING=1``: ``Benchmarking gpu::mlir_op: N configs``, ``Problem: <key>``, then per
solution ``Benchmarking solution: <cfg>`` before it runs and ``<t>ms`` / ``No binary`` / the failure
after, and ``Fastest solution: <cfg>``. Level 2 adds build statistics; level 3 adds the MLIR (printed
once, with its hash) and the MLIR hash on every solution line. Any failed solution prints its span.
"""
from __future__ import annotations

import sys
from typing import TextIO

from ..engine import (
    BenchmarkStarted,
    CompileFailed,
    Event,
    FastestChosen,
    ModuleLowered,
    RunFinished,
    SolutionBenchmarking,
    SolutionFinished,
    SolutionsBuilt,
)
from ..vocab import Status
from .config import TraceConfig


class TextSink:
    def __init__(self, config: TraceConfig, stream: TextIO | None = None):
        self.config = config
        self._stream = stream
        self._printed_mlir: set[str] = set()

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stdout

    def _p(self, text: str = "") -> None:
        s = self.stream
        s.write(text + "\n")
        s.flush()

    def __call__(self, e: Event) -> None:
        c = self.config
        if isinstance(e, ModuleLowered):
            if c.mlir:
                self._p(e.module_text.rstrip("\n"))
                self._p()
                self._p(e.mlir_text.rstrip("\n"))
                self._p(f"mlir hash: {e.mlir_hash}")
                self._printed_mlir.add(e.mlir_hash)
        elif isinstance(e, BenchmarkStarted):
            if c.benchmarking:
                self._p(f"Benchmarking {e.op}: {e.n_configs} configs" +
                        (" (from tuning database)" if e.from_database and c.benchmarking >= 2 else ""))
                self._p(f"Problem: {e.problem_key}")
                if c.benchmarking >= 3:
                    if e.mlir_hash not in self._printed_mlir:
                        self._p(f"mlir {e.mlir_hash} (see the MLIR module above)" if c.mlir else
                                f"mlir hash: {e.mlir_hash}")
        elif isinstance(e, SolutionsBuilt):
            if c.benchmarking >= 2:
                self._p(f"Built {e.n_ok} solutions ({e.n_failed} failed) in {e.wall_s:.2f}s "
                        f"(sum of builds {e.sum_build_s:.2f}s)")
        elif isinstance(e, SolutionBenchmarking):
            if c.benchmarking:
                tail = f" mlir {e.mlir_hash} span {e.span_hash}" if c.benchmarking >= 3 else ""
                self._p(f"Benchmarking solution: {e.solution}{tail}")
        elif isinstance(e, SolutionFinished):
            if c.benchmarking:
                if e.status == Status.OK:
                    self._p(f"{e.time_ms:.5g}ms")
                elif e.status in (Status.BUILD_ERROR, Status.LOWERING_ERROR):
                    self._p("No binary")
                else:
                    self._p(f"Failed: {e.status}")
        elif isinstance(e, FastestChosen):
            if c.benchmarking:
                self._p(f"Fastest solution: {e.solution}")
        elif isinstance(e, CompileFailed):
            if c.on:
                first = (e.error or "").splitlines()[0] if e.error else ""
                self._p(f"mlirtrace: solution {e.span.solution if e.span else '?'} failed at {e.stage}: "
                        f"{e.failure}: {first}")
                if e.span is not None:
                    self._p(e.span.describe().rstrip("\n"))
        elif isinstance(e, RunFinished):
            if c.benchmarking >= 2:
                t = f" {e.time_ms:.5g}ms" if e.time_ms is not None else ""
                self._p(f"Run with solution {e.solution}: {Status.OK if e.ok else 'FAILED'}{t}")
