"""Compile, benchmark and run fused ops: the pipeline whose failures the rest of the product reports.

``compile_solution`` lowers one solution and builds it; ``tune`` builds the quick-tuning list (or the
full space) in parallel worker processes, benchmarks each built solution one at a time, checks each
against the numpy oracle, keeps the fastest correct one and stores it in the tuning database;
``run`` runs a module with its best known solution and checks it. Everything returns results
(:mod:`.results`) that carry a :class:`Span`; nothing a kernel does (crash, hang, build error) escapes as an
exception.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from concurrent.futures import Future

from .. import codegen, ir, mlir, runtime
from ..config import inject_now
from ..vocab.status import Status
from .database import Database, TuningDatabase
from .events import (
    BenchmarkStarted,
    CompileFailed,
    FastestChosen,
    Listener,
    ModuleLowered,
    RunFinished,
    SolutionBenchmarking,
    SolutionFinished,
    SolutionsBuilt,
    Verified,
    emit,
)
from .kernel_job import kernel_job
from .oracle import check_outputs, device_checks
from .problem_key import problem_key
from .results import BenchRow, CompiledResult, Lowered, RunOptions, RunResult, SizeLimitError, TuneResult
from .span import Span

__all__ = ["Pipeline", "parse_solution", "CUT_FACTOR", "CUT_ONCE_FACTOR"]


def parse_solution(problem, text: str, inject=None):
    """A perf-config string for ``problem`` (raises codegen.SolutionError naming the bad field); ``inject``:
    the planted faults, a rule of which may be off (odd_perf_config)."""
    return codegen.Solution.parse(problem.kind, text, faults=codegen.parse_inject(inject))


CUT_FACTOR = 1.5
# lowered kernels of one module a Pipeline remembers (Pipeline._spec)
SPEC_MEMO = 64
# one launch past this many times the best so far stops the timing at once: no noise of a shared machine
# (at worst a compute thread descheduled: 2x) makes a best solution look so slow
CUT_ONCE_FACTOR = 4.0


class Pipeline:
    """The compile/benchmark pipeline on one device, with listeners for its trace events."""

    def __init__(self, device=None, *, listeners: list[Listener] | None = None, pool=None,
                 database: Database | None = None, timeout_s: float = 30.0,
                 build_timeout_s: float = 300.0, warmup: int = 1,
                 repeats: int = 5, inject: str | None = None, seed: int = 0, max_bytes: int | None = None,
                 cut_factor: float | None = CUT_FACTOR, build_options: str | None = None):
        self._pool = pool
        if hasattr(device, "key_name"):
            self.device = device
        elif pool is None:
            # the process-wide pool's first worker names the device: no separate listing process (0.25 s of every
            # command's start-up)
            self._pool = runtime.get_pool(device)
            self.device = self._pool.device if self._pool.device is not None else runtime.resolve_device(device)
        else:
            self.device = pool.device if pool.device is not None else runtime.resolve_device(device)
        self.listeners: list[Listener] = list(listeners or [])
        self.database: Database = database if database is not None else TuningDatabase()
        self.timeout_s = timeout_s
        # a slow build on a loaded machine is not a hung kernel: builds get their own, longer limit
        self.build_timeout_s = max(build_timeout_s, timeout_s)
        self.warmup, self.repeats = warmup, repeats
        # a tune stops timing a solution once two launches took longer than this many times the best so far
        # (its outputs are still checked); None: every solution is timed warmup + repeats times
        self.cut_factor = cut_factor
        # the OpenCL build options of every kernel instead of the code generator's (None: its own)
        self.build_options = build_options
        # the planted faults: the one setting read at use (config.inject_now), so that a test switches them
        self.inject = (inject if inject is not None else inject_now()) or None
        self.seed = seed
        self.max_bytes = max_bytes      # host memory one checked run may take (None: no limit)
        # a tune checks each solution's outputs on the device, where it can (runtime/devcheck.py): only the
        # outputs that fail there come back to be judged here. False: all come back (a benchmark's "before")
        self.device_check = True
        # a tune times the first solutions while the rest build: None: on GPUs (on a CPU device the builds
        # would slow the kernels being timed)
        self.overlap_builds: bool | None = None
        self._specs: dict = {}      # the module last lowered and its kernels by (solution, faults, device): _spec

    # ---- plumbing -----------------------------------------------------------
    def configured(self, options: RunOptions | None) -> Pipeline:
        """This pipeline as one call with ``options`` sees it: a view sharing the device, the worker pool
        and the database, with its own timeout, faults and listeners (``self`` is left as it is)."""
        if options is None:
            return self
        view = copy.copy(self)
        view._pool = self.pool                      # made now, so that the view shares it
        view.listeners = list(self.listeners) + list(options.listeners)
        if options.timeout_s is not None:
            view.timeout_s = float(options.timeout_s)
            view.build_timeout_s = max(self.build_timeout_s, view.timeout_s)
        if options.inject is not None:
            view.inject = options.inject or None
        if options.database is not None:
            view.database = options.database
        return view

    @property
    def pool(self):
        if self._pool is None:
            self._pool = runtime.get_pool(self.device)
        return self._pool

    def _emit(self, ev) -> None:
        emit(self.listeners, ev)

    def lower_module(self, module: ir.Module, mlir_text: str | None = None) -> Lowered:
        """Texts and key of ``module``; emits the P1 dump (module + MLIR) before anything compiles."""
        module.verify()
        module_text = ir.print_module(module)
        if mlir_text is None:
            mlir_text = mlir.emit_mlir(module, arch=self.device.key_name, num_cu=self.device.compute_units)
        problem = codegen.problem_of(module)
        low = Lowered(module, module_text, mlir_text, problem, problem_key(problem, self.device), self.device)
        self._emit(ModuleLowered(module.symbol_name(), module_text, mlir_text, low.mlir_hash, low.key))
        return low

    def _span(self, low: Lowered, solution, source: str = "", kernel_name: str = "") -> Span:
        return Span(low.module_text, low.mlir_text, low.key, str(solution) if solution is not None else "",
                    source, self.device.key_name, kernel_name)

    def check_size(self, module: ir.Module) -> None:
        """Raise :class:`SizeLimitError` when a checked run of ``module`` would take more than ``max_bytes``."""
        if self.max_bytes is not None:
            need = module.host_bytes()
            if need > self.max_bytes:
                raise SizeLimitError(module.symbol_name(), need, self.max_bytes)

    def _inputs(self, low: Lowered, seed: int) -> dict:
        self.check_size(low.module)             # before anything is allocated
        return ir.random_inputs(low.module, seed)

    def _lower(self, low: Lowered, solution, inputs: dict | None, packed: dict | None = None,
               build_options: str | None = None) -> CompiledResult:
        try:
            codegen.check_applicable(low.problem, solution, self.device)
            spec = self._spec(low, solution)
        except (codegen.LoweringError, codegen.NotApplicable) as e:
            return CompiledResult(self._span(low, solution), solution, None, Status.LOWERING_ERROR, str(e))
        if build_options is None:
            build_options = self.build_options
        if build_options is not None:
            spec = dataclasses.replace(spec, build_options=build_options)
        span = self._span(low, solution, spec.source, spec.kernel_name)
        return CompiledResult(span, solution, spec, job=kernel_job(spec, inputs, str(solution), packed))

    def _spec(self, low: Lowered, solution):
        """``codegen.lower`` of ``low.module`` with ``solution``, remembered while the same module object is the
        one lowered (:meth:`prebuild` lowers the kernels that :meth:`run` then finds built); a new module starts
        the memo afresh, so it keeps no other module alive."""
        if self._specs.get("module") is not low.module:
            self._specs = {"module": low.module, "specs": {}}
        specs = self._specs["specs"]
        key = (str(solution), self.inject, self.device.spec)
        spec = specs.get(key)
        if spec is None:
            spec = specs[key] = codegen.lower(low.module, solution, self.device, inject=self.inject)
            while len(specs) > SPEC_MEMO:
                specs.pop(next(iter(specs)))
        return spec

    def _fail(self, c: CompiledResult, stage: str, mismatch: str = "") -> None:
        self._emit(CompileFailed(c.status, stage, c.error, c.span, c.build_log, mismatch))

    def _build(self, compiled: list[CompiledResult]) -> tuple[float, float]:
        todo = [c for c in compiled if c.ok]
        t0 = time.perf_counter()
        results = self.pool.build([c.job for c in todo], timeout_s=self.build_timeout_s) if todo else []
        wall = time.perf_counter() - t0
        for c, r in zip(todo, results, strict=True):
            self._built(c, r)
        for c in compiled:
            if not c.ok:
                self._fail(c, "lower" if c.status == Status.LOWERING_ERROR else "build")
        return wall, sum(c.build_s for c in compiled)

    @staticmethod
    def _built(c: CompiledResult, r) -> None:
        c.build_s = r.build_s
        c.build_log = r.build_log
        if r.status != Status.OK:
            c.status, c.error = r.status, r.error

    # ---- public API ---------------------------------------------------------
    def compile_solution(self, module: ir.Module, solution=None, *, mlir_text: str | None = None,
                         low: Lowered | None = None) -> CompiledResult:
        """Lower and build one solution (the default one when none is given)."""
        low = low or self.lower_module(module, mlir_text)
        if solution is None:
            solution = codegen.default_solution(low.problem, self.device)
        elif isinstance(solution, str):
            solution = parse_solution(low.problem, solution, self.inject)
        c = self._lower(low, solution, None)      # building needs no inputs: none are made
        self._build([c])
        return c

    def prebuild(self, module: ir.Module, solutions: list, *, mlir_text: str | None = None) -> None:
        """Lower and build ``solutions`` of ``module`` in one request, so that a worker of a CPU device builds
        them as one program (``WorkerPool.build_batch``); the :meth:`run` of each after it finds its kernel
        built. Solutions that do not parse, lower or apply are left to :meth:`run`, which reports them."""
        low = self.lower_module(module, mlir_text)
        jobs = []
        for s in solutions:
            try:
                sol = parse_solution(low.problem, s, self.inject) if isinstance(s, str) else s
            except codegen.SolutionError:
                continue
            c = self._lower(low, sol, None)
            if c.ok:
                jobs.append(c.job)
        if len(jobs) > 1:   # a group that crashed or hung is left to each run, which builds its kernel alone
            self.pool.build(jobs, timeout_s=self.build_timeout_s, alone_after_failure=False)

    def _solutions(self, low: Lowered, mode: str, use_database: bool, solutions: list | None) -> tuple[list, bool]:
        """(the solutions a tune benchmarks, whether they are the database's best known one): ``solutions``
        as given, else the database's for this problem, else the quick list or (``exhaustive``) the space."""
        if solutions is not None:
            return [parse_solution(low.problem, s, self.inject) if isinstance(s, str) else s for s in solutions], False
        if use_database:
            hit = self.database.lookup(low.key, self.device.spec)
            if hit is not None and hit.get("mlir_hash") in (None, low.mlir_hash):
                try:
                    return [parse_solution(low.problem, hit["solution"])], True
                except codegen.SolutionError:
                    pass
        pick = codegen.space if mode == "exhaustive" else codegen.quick_list
        return pick(low.problem, self.device), False

    def _benchmark(self, low: Lowered, c: CompiledResult, oracle: tuple[list, list, dict], best_ms: float | None
                   ) -> tuple[float | None, bool]:
        """Time the built solution ``c`` and check its outputs (``oracle``: the expected values, their bounds
        and the device checks' arrays); (its time, None when it failed; whether its timing was cut short)."""
        assert c.spec is not None and c.job is not None     # lowered: c.ok
        expected, bounds, cache = oracle
        cutoff = best_ms * self.cut_factor if best_ms is not None and self.cut_factor else None
        once = max(best_ms * CUT_ONCE_FACTOR, cutoff) if best_ms is not None and cutoff is not None else None
        checks = device_checks(low.module, c.spec, expected, bounds, cache) if self.device_check else None
        r = self.pool.run(c.job, warmup=self.warmup, repeats=self.repeats, timeout_s=self.timeout_s,
                          compile_timeout_s=self.build_timeout_s, cutoff_ms=cutoff, cutoff_once_ms=once,
                          check=checks)
        if r.status != Status.OK:
            c.status, c.error = r.status, r.error
            self._fail(c, "benchmark")
            return None, False
        # passed on the device: every element within the bounds, so it passes here too (devcheck.py);
        # else the outputs came back and are judged here
        diff = "" if r.checked_ok else check_outputs(low.module, c.spec, r.outputs, expected, bounds)
        if diff:
            c.status, c.error = Status.WRONG, diff.split("\n")[0]
            self.pool.forget(c.job.key)
            self._fail(c, "benchmark", diff)
            return None, False
        return r.median_ms, bool(r.cut)

    def tune(self, module: ir.Module, *, mode: str = "quick", mlir_text: str | None = None,
             use_database: bool = True, solutions: list | None = None, progress=None) -> TuneResult:
        """Benchmark the quick list (``mode="quick"``) or the full space (``"exhaustive"``)."""
        low = self.lower_module(module, mlir_text)
        solutions, from_db = self._solutions(low, mode, use_database, solutions)
        self._emit(BenchmarkStarted("gpu::mlir_op", low.key, len(solutions), low.mlir_hash, from_db))

        inputs = self._inputs(low, self.seed)
        packed: dict = {}
        compiled = [self._lower(low, s, inputs, packed) for s in solutions]
        overlap = self.overlap_builds if self.overlap_builds is not None else self.device.kind == "gpu"
        builds = _Builds(self, compiled, overlap)
        # the oracle: overlapped, while the first builds run; else before anything is built
        expected, env = ir.evaluate(low.module, inputs, keep_all=True)
        # the expected values, their bounds, the device checks' arrays (made once per output)
        oracle: tuple[list, list, dict] = (expected, ir.error_bounds(low.module, env), {})
        if not overlap:
            builds.all_now()

        rows: list[BenchRow] = []
        best, best_ms = None, None
        for n, c in enumerate(compiled):
            builds.wait_for(c)
            self._emit(SolutionBenchmarking(low.key, c.span.solution, c.span.hash, low.mlir_hash))
            t, cut = self._benchmark(low, c, oracle, best_ms) if c.ok else (None, False)
            if t is not None and (best_ms is None or t < best_ms):
                best, best_ms = c, t
            rows.append(BenchRow(c.span.solution, c.status, t, c.build_s, c.span.hash, c.error, cut=cut))
            self._emit(SolutionFinished(c.span.solution, c.status, t, c.span.hash, c.build_s, c.error))
            if progress is not None:
                progress(n + 1, len(compiled), rows[-1])
        builds.announce()
        failures = [c for c in compiled if not c.ok]
        if best is not None and best_ms is not None:
            self._emit(FastestChosen(low.key, best.span.solution, best_ms, best.span.hash))
            self._emit(Verified(best.span.solution, True, "matches the numpy oracle", best.span.hash))
            if not from_db and self.inject is None:
                self.database.store(low.key, self.device.spec, best.span.solution, best_ms,
                                    mlir_hash=low.mlir_hash, symbol=module.symbol_name())
        return TuneResult(low, rows, best, best_ms, failures, from_db, builds.wall, builds.total)

    def best_known(self, low: Lowered):
        hit = self.database.lookup(low.key, self.device.spec)
        if hit is not None:
            try:
                return parse_solution(low.problem, hit["solution"]), "tuning database"
            except codegen.SolutionError:
                pass
        return codegen.default_solution(low.problem, self.device), "default (not tuned)"

    def run(self, module: ir.Module, *, solution=None, inputs: dict | None = None, seed: int | None = None,
            mlir_text: str | None = None, repeats: int = 1, build_options: str | None = None) -> RunResult:
        """Compile with ``solution`` (else the best known one), run on random inputs, check against the oracle.

        ``build_options``: the OpenCL build options instead of the code generator's (the same source
        built another way: see repro.evidence)."""
        seed = self.seed if seed is None else seed
        low = self.lower_module(module, mlir_text)
        if solution is None:
            solution, _ = self.best_known(low)
        elif isinstance(solution, str):
            solution = parse_solution(low.problem, solution, self.inject)
        inputs = inputs if inputs is not None else self._inputs(low, seed)
        expected, env = ir.evaluate(low.module, inputs, keep_all=True)
        bounds = ir.error_bounds(low.module, env)
        c = self._lower(low, solution, inputs, build_options=build_options)
        self._build([c])
        res = RunResult(c, c.status, expected=expected, detail=c.error, seed=seed)
        if c.ok:
            assert c.spec is not None and c.job is not None     # lowered
            r = self.pool.run(c.job, warmup=0 if repeats == 1 else 1, repeats=repeats, timeout_s=self.timeout_s,
                              compile_timeout_s=self.build_timeout_s)
            if r.status != Status.OK:
                c.status, c.error = r.status, r.error
                res.status, res.detail = r.status, r.error
                self._fail(c, "run")
            else:
                res.outputs = codegen.unpack_outputs(c.spec, r.outputs)
                res.time_ms = r.median_ms
                diff = check_outputs(low.module, c.spec, r.outputs, expected, bounds)
                if diff:
                    c.status, c.error = Status.WRONG, diff
                    res.status, res.detail = Status.WRONG, diff
                    self.pool.forget(c.job.key)
                    self._fail(c, "run", diff)
        self._emit(RunFinished(c.span.solution, res.ok, res.time_ms, res.detail, c.span.hash))
        return res


class _Builds:
    """A tune's builds: all at once before the first solution is timed, or (``overlap``) started in the
    background, each solution waiting for its own; :class:`SolutionsBuilt` once they are all over."""

    def __init__(self, pipe: Pipeline, compiled: list[CompiledResult], overlap: bool):
        self.pipe, self.compiled = pipe, compiled
        self.wall = self.total = 0.0
        self.announced = not overlap
        self.futures: dict[int, Future] = {}
        if overlap:     # time the first solutions while the rest build (a GPU's timing doesn't feel the CPU's load)
            self.t0 = time.perf_counter()
            todo = [c for c in compiled if c.ok]
            self.futures = dict(zip(map(id, todo), pipe.pool.build_async([c.job for c in todo],
                                                                         timeout_s=pipe.build_timeout_s),
                                    strict=True))
            for c in compiled:
                if not c.ok:
                    pipe._fail(c, "lower")

    def all_now(self) -> None:
        """Build every solution now (not overlapped)."""
        pipe, compiled = self.pipe, self.compiled
        self.wall, self.total = pipe._build(compiled)
        pipe._emit(SolutionsBuilt(sum(c.ok for c in compiled), sum(not c.ok for c in compiled), self.wall,
                                  self.total))

    def wait_for(self, c: CompiledResult) -> None:
        """Overlapped: wait for ``c``'s build (and announce the builds once the last is over)."""
        f = self.futures.get(id(c))
        if f is not None:
            self.pipe._built(c, f.result())
            if not c.ok:
                self.pipe._fail(c, "build")
            self.announce()

    def announce(self) -> None:
        """Overlapped: SolutionsBuilt once the last build is over (before the next solution is timed)."""
        if self.announced or not all(f.done() for f in self.futures.values()):
            return
        done = {k: f.result() for k, f in self.futures.items()}
        n_ok = sum(done[id(c)].status == Status.OK if id(c) in done else c.ok for c in self.compiled)
        self.wall, self.total = time.perf_counter() - self.t0, sum(r.build_s for r in done.values())
        self.announced = True
        self.pipe._emit(SolutionsBuilt(n_ok, len(self.compiled) - n_ok, self.wall, self.total))
