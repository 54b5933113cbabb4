"""The lanes a fuzz run checks its cases on: each a pipeline with its own one-worker pool, so a crash or a
hang only costs that lane's worker (programs stay built in the workers and PoCL keeps its on-disk kernel
cache, so replays and shrink steps that rebuild a kernel are cheap).

Who makes a lane's pipeline is the fuzz's *pipeline factory* (``engine.Pipeline``; a test passes a
subclass that simulates the kernels): ``factory(device, pool=..., database=..., timeout_s=...,
build_timeout_s=..., inject=..., build_options=...)``.
"""
from __future__ import annotations

import contextlib
import queue
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import engine, runtime
from ..repro.rerun import run_again
from .options import BUILDS
from .state import FuzzRun

__all__ = ["Lane", "Lanes"]


class Lane:
    def __init__(self, run: FuzzRun, factory, db_path: Path):
        o = run.o
        self.pool = runtime.WorkerPool(run.device, workers=1, timeout_s=o.timeout_s)
        # builds and the driver's first-launch compile get their own limit: a slow cold compile is no hang
        self.pipeline = factory(run.device, pool=self.pool, database=engine.TuningDatabase(db_path),
                                timeout_s=o.timeout_s, build_timeout_s=o.compile_timeout_s, inject=run.inject or "",
                                build_options=BUILDS[o.build])

    def close(self):
        self.pool.close()


class Lanes:
    """``run.jobs`` lanes, handed out one at a time (:meth:`lane`) or dealt a case's solutions (:meth:`deal`)."""

    def __init__(self, run: FuzzRun, factory=None):
        self.run = run
        self.factory = factory or engine.Pipeline
        self._free: queue.Queue = queue.Queue()
        self._all: list[Lane] = []
        self._exec: ThreadPoolExecutor | None = None
        self._tmp: str | None = None

    def open(self) -> None:
        # the lanes' pipelines only run given solutions; their tuning database is a throwaway
        self._tmp = tempfile.mkdtemp(prefix="mlirtrace-fuzz-")
        for _ in range(self.run.jobs):
            lane = Lane(self.run, self.factory, Path(self._tmp) / "tuning.json")
            self._all.append(lane)
            self._free.put(lane)
        self._exec = ThreadPoolExecutor(max_workers=self.run.jobs, thread_name_prefix="fuzz-lane")

    def close(self) -> None:
        if self._exec is not None:
            self._exec.shutdown(wait=True)
            self._exec = None
        for lane in self._all:
            lane.close()
        self._all.clear()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @contextlib.contextmanager
    def lane(self):
        """A free lane, for this thread alone until the block ends."""
        lane = self._free.get()
        try:
            yield lane
        finally:
            self._free.put(lane)

    def rerun(self, rec, *, inject: str, build_options: str | None = None):
        """A recorded case run again on a free lane (``repro.rerun``'s form: the records' runner, which the
        planted check and the evidence use)."""
        with self.lane() as lane:
            return run_again(lane.pipeline, rec, inject=inject, build_options=build_options)

    def run_group(self, module, mlir_text, sols, seeds) -> list:
        """Solutions ``sols`` on one lane, each for each seed: [[(solution, RunResult)] per solution]. Their
        kernels are built first, in one request (one program on PoCL: ``Pipeline.prebuild``); each is then
        launched once per seed."""
        run = self.run
        with self.lane() as lane:
            if len(sols) > 1 and time.monotonic() < run.deadline:
                lane.pipeline.prebuild(module, sols, mlir_text=mlir_text)
            out = []
            for sol in sols:
                mine = []
                for sd in seeds:
                    if time.monotonic() >= run.deadline:
                        break
                    # always the full limits, however little of the budget is left: a hang must mean the same
                    # at the end of a run as at its start, and in the reproducer written from it (a case in
                    # flight may so run past the budget by up to one hang limit)
                    t0 = time.monotonic()
                    r = lane.pipeline.run(module, solution=sol, seed=sd, mlir_text=mlir_text)
                    r.timeout_s = run.o.timeout_s
                    with run.lock:
                        run.stats.max_case_s = max(run.stats.max_case_s, time.monotonic() - t0)
                    mine.append((sol, r))
                    if not r.ok:
                        break   # the other seeds would only repeat it (a hang would cost a timeout each; a wrong
                                # result another run, which a shrink pays at every step)
                out.append(mine)
            return out

    def deal(self, module, mlir_text, sols, seeds, n: int) -> list:
        """``sols`` dealt out to ``n`` lanes (each builds its share as one program), run in parallel:
        [(solution, RunResult)] in the solutions' order, each once per seed (fewer where one failed)."""
        parts = [list(range(i, len(sols), n)) for i in range(min(n, len(sols)))]
        if len(parts) == 1:
            done = [self.run_group(module, mlir_text, sols, seeds)]
        else:
            futs = [self._exec.submit(self.run_group, module, mlir_text, [sols[i] for i in p], seeds) for p in parts]
            done = [f.result() for f in futs]
        per_sol = {i: r for p, d in zip(parts, done, strict=True) for i, r in zip(p, d, strict=True)}
        return [x for i in range(len(sols)) for x in per_sol.get(i, [])]
