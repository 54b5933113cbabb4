"""Compile, benchmark and run fused ops: the pipeline whose failures the rest of the product reports.

``compile_solution`` lowers one solution and builds it; ``tune`` builds the quick-tuning list (or the
full space) in parallel worker processes, benchmarks each built solution one at a time, checks each
against the numpy oracle, keeps the fastest correct one and stores it in the tuning database;
``run`` runs a module with its best known solution and checks it. Everything returns results that
carry a :class:`Span`; nothing a kernel does (crash, hang, build error) escapes as an exception.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from .. import codegen, ir, mlir, runtime
from ..config import inject_now
from .database import TuningDatabase
from .events import (BenchmarkStarted, CompileFailed, FastestChosen, Listener, ModuleLowered, RunFinished,
                     SolutionBenchmarking, SolutionFinished, SolutionsBuilt, Verified, emit)
from .problem_key import problem_key
from .span import Span, mlir_hash

_CL_SCALARS = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "float": np.float32,
               "double": np.float64, "short": np.int16, "char": np.int8}


@dataclass
class Lowered:
    """One module, lowered once: its texts, problem and key (what every solution shares)."""
    module: ir.Module
    module_text: str
    mlir_text: str
    problem: object
    key: str
    device: object

    @property
    def mlir_hash(self) -> str:
        return mlir_hash(self.mlir_text)


@dataclass
class CompiledResult:
    """A built (or failed) kernel for one solution, with the span back to what produced it."""
    span: Span
    solution: object | None
    spec: object | None
    status: str = "ok"
    error: str = ""
    build_log: str = ""
    build_s: float = 0.0
    job: object | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
        return self.status == "ok"


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
    database: object | None = None     # None: the pipeline's (a TuningDatabase or MemoryDatabase)


class SizeLimitError(ValueError):
    """A module whose checked run would take more host memory than the pipeline's ``max_bytes``
    (raised before anything is allocated)."""

    def __init__(self, symbol: str, needed: int, allowed: int):
        self.symbol, self.needed, self.allowed = symbol, needed, allowed
        super().__init__(f"{symbol}: a checked run needs about {needed} bytes ({_gib(needed)}) of host memory "
                         f"for inputs, outputs and the numpy oracle; {allowed} bytes ({_gib(allowed)}) allowed")


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


def oracle_tolerances(module: ir.Module, problem) -> list[tuple[float, float]]:
    """Per output of ``module``: the (rtol, atol) its oracle check uses (see ir.result_precisions)."""
    red = getattr(problem, "k", None) or getattr(problem, "reduce_len", None) or 1
    return [ir.tolerance(p, red) for p in ir.result_precisions(module)]


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
                 database: TuningDatabase | None = None, timeout_s: float = 30.0, build_timeout_s: float = 300.0,
                 warmup: int = 1,
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
        self.database = database if database is not None else TuningDatabase()
        self.timeout_s = timeout_s
        # a slow build on a loaded machine is not a hung kernel: builds get their own, longer limit
        self.build_timeout_s = max(build_timeout_s, timeout_s)
        self.warmup, self.repeats = warmup, repeats
        # a tune stops timing a solution once two launches took longer than this many times the best so far
        # (its outputs are still checked); None: every solution is timed warmup + repeats times
        self.cut_factor = cut_factor
        # the OpenCL build options of every kernel instead of the code generator's (None: its own)
        self.build_options = build_options
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
    def configured(self, options: RunOptions | None) -> "Pipeline":
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

    def _job(self, spec, inputs: dict | None, label: str, packed: dict | None = None):
        if inputs is None:      # build only (compile_solution): the job has no arguments and is never launched
            return runtime.KernelJob(spec.source, spec.kernel_name, [], tuple(spec.global_size),
                                     tuple(spec.local_size) if spec.local_size else None, spec.build_options,
                                     label=label)
        # solutions of one problem lay their inputs out alike: share one storage buffer per layout (one
        # InBuf: its key, which lets a worker keep the input on the device, is computed once)
        packed = {} if packed is None else packed
        bufs = []
        for b in spec.inputs:
            key = (b.param, b.dtype, b.elements, tuple(b.lens), tuple(b.strides))
            if key not in packed:
                if b.param not in inputs:
                    raise KeyError(f"no value for parameter {b.param!r}")
                packed[key] = runtime.InBuf(codegen.pack_input(b, inputs[b.param]))
            bufs.append(packed[key])
        args = []
        it = iter(bufs)
        for b in spec.args:
            if b.kind == "input":
                args.append(next(it))
            elif b.kind == "output":
                args.append(runtime.OutBuf((max(b.elements, 1),), b.np_dtype))
            elif b.kind == "scratch":
                args.append(runtime.OutBuf((max(b.nbytes, 1),), np.uint8, fill=0))
            elif b.kind == "scalar":
                args.append(runtime.Scalar(b.value, dtype=_CL_SCALARS.get(b.ctype, b.ctype) or None))
            else:
                raise ValueError(f"unknown kernel argument kind {b.kind!r}")
        return runtime.KernelJob(spec.source, spec.kernel_name, args, tuple(spec.global_size),
                                 tuple(spec.local_size) if spec.local_size else None, spec.build_options,
                                 label=label)

    def _lower(self, low: Lowered, solution, inputs: dict | None, packed: dict | None = None,
               build_options: str | None = None) -> CompiledResult:
        try:
            codegen.check_applicable(low.problem, solution, self.device)
            spec = self._spec(low, solution)
        except (codegen.LoweringError, codegen.NotApplicable) as e:
            return CompiledResult(self._span(low, solution), solution, None, "lowering_error", str(e))
        if build_options is None:
            build_options = self.build_options
        if build_options is not None:
            spec = dataclasses.replace(spec, build_options=build_options)
        span = self._span(low, solution, spec.source, spec.kernel_name)
        return CompiledResult(span, solution, spec, job=self._job(spec, inputs, str(solution), packed))

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

    def _device_checks(self, low: Lowered, spec, expected: list, bounds: list, cache: dict) -> list | None:
        """The OutChecks of ``spec``'s outputs against the oracle (``cache``: their arrays, made once per tune
        and output); None where an output's kind has no device check (then the outputs come back)."""
        shapes = low.module.output_shapes()
        checks = []
        for pos, a in enumerate(spec.outputs):
            dt = ir.dtype(shapes[a.index].dtype)
            want = np.asarray(expected[a.index])
            if dt.name not in runtime.CHECK_KINDS or a.elements != want.size or not want.size:
                return None
            if a.index not in cache:      # the oracle's values as stored, the bounds as float32 rounded down
                vals = want.reshape(-1).view(np.uint8) if want.dtype == np.bool_ else want.reshape(-1)
                b = np.asarray(bounds[a.index].abs, dtype=np.float64)
                b = b.reshape(1) if b.size == 1 else np.broadcast_to(b, want.shape).reshape(-1)
                cache[a.index] = (runtime.InBuf(vals), runtime.InBuf(runtime.bound_f32(b)))
            want_buf, bound_buf = cache[a.index]
            checks.append(runtime.OutCheck(pos, dt.name, want_buf, bound_buf))
        return checks

    def _fail(self, c: CompiledResult, stage: str, mismatch: str = "") -> None:
        self._emit(CompileFailed(c.status, stage, c.error, c.span, c.build_log, mismatch))

    def _build(self, compiled: list[CompiledResult]) -> tuple[float, float]:
        todo = [c for c in compiled if c.ok]
        t0 = time.perf_counter()
        results = self.pool.build([c.job for c in todo], timeout_s=self.build_timeout_s) if todo else []
        wall = time.perf_counter() - t0
        for c, r in zip(todo, results):
            self._built(c, r)
        for c in compiled:
            if not c.ok:
                self._fail(c, "lower" if c.status == "lowering_error" else "build")
        return wall, sum(c.build_s for c in compiled)

    @staticmethod
    def _built(c: CompiledResult, r) -> None:
        c.build_s = r.build_s
        c.build_log = r.build_log
        if r.status != "ok":
            c.status, c.error = r.status, r.error

    def _check(self, low: Lowered, c: CompiledResult, outputs: list, expected: list, bounds: list) -> str:
        """'' when outputs match the oracle within the error bounds of the computation (ir.error_bounds:
        bit-exact for exact ops), else what differs."""
        got = codegen.unpack_outputs(c.spec, outputs)
        for i, (g, e, s, b) in enumerate(zip(got, expected, low.module.output_shapes(), bounds)):
            mm = ir.compare_bounded(g, e, s.dtype, b)
            if mm is not None:
                return f"output {i}: {mm}"
        return ""

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

    def tune(self, module: ir.Module, *, mode: str = "quick", mlir_text: str | None = None,
             use_database: bool = True, solutions: list | None = None, progress=None) -> TuneResult:
        """Benchmark the quick list (``mode="quick"``) or the full space (``"exhaustive"``)."""
        low = self.lower_module(module, mlir_text)
        if solutions is None:
            if use_database:
                hit = self.database.lookup(low.key, self.device.spec)
                if hit is not None and hit.get("mlir_hash") in (None, low.mlir_hash):
                    try:
                        solutions = [parse_solution(low.problem, hit["solution"])]
                    except codegen.SolutionError:
                        solutions = None
            from_db = solutions is not None
            if solutions is None:
                pick = codegen.space if mode == "exhaustive" else codegen.quick_list
                solutions = pick(low.problem, self.device)
        else:
            from_db = False
            solutions = [parse_solution(low.problem, s, self.inject) if isinstance(s, str) else s for s in solutions]
        self._emit(BenchmarkStarted("gpu::mlir_op", low.key, len(solutions), low.mlir_hash, from_db))

        inputs = self._inputs(low, self.seed)
        packed: dict = {}
        oracle: dict = {}       # the expected values and bounds as the device check takes them, once per output
        compiled = [self._lower(low, s, inputs, packed) for s in solutions]
        overlap = self.overlap_builds if self.overlap_builds is not None else self.device.kind == "gpu"
        builds: dict[int, object] = {}
        if overlap:     # time the first solutions while the rest build (a GPU's timing doesn't feel the CPU's load)
            t_build = time.perf_counter()
            todo = [c for c in compiled if c.ok]
            builds = dict(zip(map(id, todo), self.pool.build_async([c.job for c in todo],
                                                                   timeout_s=self.build_timeout_s)))
            for c in compiled:
                if not c.ok:
                    self._fail(c, "lower")
            wall = total = 0.0
        # the oracle: overlapped, while the first builds run; else before anything is built
        expected, env = ir.evaluate(low.module, inputs, keep_all=True)
        bounds = ir.error_bounds(low.module, env)
        if not overlap:
            wall, total = self._build(compiled)
            self._emit(SolutionsBuilt(sum(c.ok for c in compiled), sum(not c.ok for c in compiled), wall, total))

        announced = not overlap

        def all_built() -> None:
            """Overlapped: SolutionsBuilt once the last build is over (before the next solution is timed)."""
            nonlocal wall, total, announced
            if announced or not all(f.done() for f in builds.values()):
                return
            done = {k: f.result() for k, f in builds.items()}
            n_ok = sum(done[id(c)].status == "ok" if id(c) in done else c.ok for c in compiled)
            wall, total = time.perf_counter() - t_build, sum(r.build_s for r in done.values())
            announced = True
            self._emit(SolutionsBuilt(n_ok, len(compiled) - n_ok, wall, total))

        rows: list[BenchRow] = []
        best, best_ms = None, None
        for n, c in enumerate(compiled):
            f = builds.get(id(c))
            if f is not None:
                self._built(c, f.result())
                if not c.ok:
                    self._fail(c, "build")
                all_built()
            self._emit(SolutionBenchmarking(low.key, c.span.solution, c.span.hash, low.mlir_hash))
            t = None
            if c.ok:
                cutoff = best_ms * self.cut_factor if best_ms is not None and self.cut_factor else None
                once = max(best_ms * CUT_ONCE_FACTOR, cutoff) if cutoff is not None else None
                checks = self._device_checks(low, c.spec, expected, bounds, oracle) if self.device_check else None
                r = self.pool.run(c.job, warmup=self.warmup, repeats=self.repeats, timeout_s=self.timeout_s,
                                  compile_timeout_s=self.build_timeout_s, cutoff_ms=cutoff, cutoff_once_ms=once,
                                  check=checks)
                if r.status != "ok":
                    c.status, c.error = r.status, r.error
                    self._fail(c, "benchmark")
                else:
                    # passed on the device: every element within the bounds, so it passes here too (devcheck.py);
                    # else the outputs came back and are judged here
                    diff = "" if r.checked_ok else self._check(low, c, r.outputs, expected, bounds)
                    if diff:
                        c.status, c.error = "wrong", diff.split("\n")[0]
                        self.pool.forget(c.job.key)
                        self._fail(c, "benchmark", diff)
                    else:
                        t = r.median_ms
                        if best_ms is None or t < best_ms:
                            best, best_ms = c, t
            cut = bool(t is not None and r.cut)
            rows.append(BenchRow(c.span.solution, c.status, t, c.build_s, c.span.hash, c.error, cut=cut))
            self._emit(SolutionFinished(c.span.solution, c.status, t, c.span.hash, c.build_s, c.error))
            if progress is not None:
                progress(n + 1, len(compiled), rows[-1])
        all_built()
        failures = [c for c in compiled if not c.ok]
        if best is not None:
            self._emit(FastestChosen(low.key, best.span.solution, best_ms, best.span.hash))
            self._emit(Verified(best.span.solution, True, "matches the numpy oracle", best.span.hash))
            if not from_db and self.inject is None:
                self.database.store(low.key, self.device.spec, best.span.solution, best_ms,
                                    mlir_hash=low.mlir_hash, symbol=module.symbol_name())
        return TuneResult(low, rows, best, best_ms, failures, from_db, wall, total)

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
            r = self.pool.run(c.job, warmup=0 if repeats == 1 else 1, repeats=repeats, timeout_s=self.timeout_s,
                              compile_timeout_s=self.build_timeout_s)
            if r.status != "ok":
                c.status, c.error = r.status, r.error
                res.status, res.detail = r.status, r.error
                self._fail(c, "run")
            else:
                res.outputs = codegen.unpack_outputs(c.spec, r.outputs)
                res.time_ms = r.median_ms
                diff = self._check(low, c, r.outputs, expected, bounds)
                if diff:
                    c.status, c.error = "wrong", diff
                    res.status, res.detail = "wrong", diff
                    self.pool.forget(c.job.key)
                    self._fail(c, "run", diff)
        self._emit(RunFinished(c.span.solution, res.ok, res.time_ms, res.detail, c.span.hash))
        return res
