"""The fuzz loop behind ``mlirtrace fuzz``: Hypothesis-driven cases through the tuning pipeline.

A *case* is one ``(module, solution, seed)``: the module compiled with that solution, run on
``ir.random_inputs(module, seed)`` and checked against the numpy oracle (``Pipeline.run``). One
Hypothesis example is one module with 1..``max_solutions`` solutions, checked in parallel on
``jobs`` lanes (each lane a :class:`~pytest_mlirtrace.engine.Pipeline` with its own one-worker
pool, so a crash or hang only costs that lane's worker; programs stay built in the workers and
PoCL keeps its on-disk kernel cache, so replays and shrink steps that rebuild a kernel are cheap).

The loop runs Hypothesis *campaigns* until the budget is spent. In a campaign the first case
that fails in a way not seen yet in this run (failure kind, problem kind -- ``conv`` apart from ``gemm``
though a convolution runs on the gemm kernels --, the error's first line without numbers) is raised,
so Hypothesis shrinks it; failures of a way already reported, and of
other new ways while one is being shrunk (a later campaign takes those), are counted and let pass,
so the search goes on and each shrink only pays for its own failure. After a campaign the
shrunk case of every new way is written through ``repro.ReproWriter`` (one reproducer and ticket
per signature) and the next campaign starts (next seed). When the budget runs out mid-shrink, the
smallest failing case seen so far is written. Hypothesis' example database (a directory) keeps
the failing examples, so a later run replays them first.
"""
from __future__ import annotations

import hashlib
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hseed

from .. import codegen, ir, mlir, repro, runtime, engine
from ..config import inject_now
from ..vocab import ExitCode
from ..strategies import SUPPORTED_KINDS, fused_cases
from .examples import keyed_database
from .options import FuzzOptions
from .results import (BudgetExhausted, CaseFailed, EnvironmentStop, Finding, FuzzReport, FuzzStats,
                      ShrinkBudgetExhausted, _flatten, _way, _way_class)


class _Lane:
    def __init__(self, device, timeout_s: float, inject, db_path: Path):
        self.pool = runtime.WorkerPool(device, workers=1, timeout_s=timeout_s)
        self.pipeline = engine.Pipeline(device, pool=self.pool, database=engine.TuningDatabase(db_path),
                                        timeout_s=timeout_s, inject=inject)

    def close(self):
        self.pool.close()


class Fuzzer:
    def __init__(self, options: FuzzOptions, progress=None):
        self.o = options
        self.progress = progress
        self.stats = FuzzStats()
        self.findings: list[Finding] = []
        self.known: set[str] = set()
        self._pending: dict[str, Finding] = {}     # way -> latest (smallest) failing case this campaign
        self._shrink_t0: float | None = None
        self._memo: dict = {}                      # (module text, solutions, seed) -> results
        self._history: dict[str, list] = {}        # way -> failing cases in the order found (largest first)
        self._t0 = 0.0
        self._deadline = 0.0
        self._cut = False
        self._lock = threading.Lock()
        self.inject = (options.inject if options.inject is not None else inject_now()) or None
        if self.inject:
            codegen.parse_inject(self.inject)     # unknown names: FaultError now, not per case
        unsupported = [k for k in options.kinds if k not in SUPPORTED_KINDS]
        if unsupported or not options.kinds:
            raise ValueError(f"cannot fuzz kind(s) {', '.join(unsupported) or '(none)'}: the code generator lowers "
                             f"{', '.join(SUPPORTED_KINDS)}")
        self.device = runtime.resolve_device(options.device)
        self.jobs = options.jobs or max(1, min(2, os.cpu_count() or 1))
        self.max_solutions = options.max_solutions or 2 * self.jobs
        self.writer = repro.ReproWriter(options.repro_dir)
        self._lanes: queue.Queue = queue.Queue()
        self._all_lanes: list[_Lane] = []
        self._exec: ThreadPoolExecutor | None = None

    # ---- lanes ----------------------------------------------------------------
    def _open(self) -> None:
        # the lanes' pipelines only run given solutions; their tuning database is a throwaway
        self._tmp = tempfile.mkdtemp(prefix="mlirtrace-fuzz-")
        for i in range(self.jobs):
            lane = _Lane(self.device, self.o.timeout_s, self.inject, Path(self._tmp) / "tuning.json")
            self._all_lanes.append(lane)
            self._lanes.put(lane)
        self._exec = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="fuzz-lane")

    def close(self) -> None:
        if self._exec is not None:
            self._exec.shutdown(wait=True)
            self._exec = None
        for lane in self._all_lanes:
            lane.close()
        self._all_lanes.clear()
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _run_one(self, module, mlir_text, sol, seeds):
        """One solution on one lane, for each seed (the kernel is built once: the lane's worker keeps it)."""
        lane = self._lanes.get()
        try:
            out = []
            for sd in seeds:
                left = self._deadline - time.monotonic()
                if left <= 0:
                    break
                # never wait for a hang much past the budget
                opts = engine.RunOptions(timeout_s=min(self.o.timeout_s, max(2.0, left + 1.0)))
                t0 = time.monotonic()
                r = lane.pipeline.configured(opts).run(module, solution=sol, seed=sd, mlir_text=mlir_text)
                r.timeout_s = opts.timeout_s
                if r.status == "hang" and r.timeout_s < self.o.timeout_s:
                    self._cut = True     # the budget, not the kernel, ran out: this decides nothing
                    break
                with self._lock:
                    self.stats.max_case_s = max(self.stats.max_case_s, time.monotonic() - t0)
                out.append((sol, r))
                if not r.ok:
                    break       # the other seeds would only repeat it (a hang would cost a timeout each; a wrong
                                # result another run, which a shrink pays at every step)
            return out
        finally:
            self._lanes.put(lane)

    def run_case(self, module, sols, seed) -> list:
        """Check ``module`` with each of ``sols`` (in parallel on the lanes), each on ``seeds_per_case``
        seeds from ``seed`` on: [(solution, RunResult)]."""
        mlir_text = mlir.emit_mlir(module, arch=self.device.key_name, num_cu=self.device.compute_units)
        seeds = [seed + i for i in range(max(1, self.o.seeds_per_case))]
        if len(sols) == 1 or self.jobs == 1:
            groups = [self._run_one(module, mlir_text, s, seeds) for s in sols]
        else:
            futs = [self._exec.submit(self._run_one, module, mlir_text, s, seeds) for s in sols]
            groups = [f.result() for f in futs]
        out = [x for g in groups for x in g]
        if self._cut or (self.out_of_time() and len(out) < len(sols) * len(seeds)
                         and not any(not r.ok for _, r in out)):
            raise BudgetExhausted()   # cut short: an unfinished case decides nothing
        return out

    # ---- time ------------------------------------------------------------------
    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def out_of_time(self) -> bool:
        return time.monotonic() >= self._deadline

    def _tick(self, phase: str | None = None) -> None:
        self.stats.elapsed_s = self.elapsed()
        if phase:
            self.stats.phase = phase
        if self.progress is not None:
            self.progress(self)

    # ---- one Hypothesis campaign -------------------------------------------------
    def _strategy(self):
        o = self.o
        return fused_cases(kinds=o.kinds, dtypes=o.dtypes, max_rank=o.max_rank, max_dim=o.max_dim,
                           max_elements=o.max_elements, max_epilogue=o.max_epilogue, limits=self.device,
                           max_solutions=self.max_solutions, kind_weights=o.kind_weights)

    def _test(self, campaign: int):
        o = self.o
        db = keyed_database(o.database, (sorted(o.kinds), tuple(o.dtypes), o.max_rank, o.max_dim, o.max_elements,
                                         o.max_epilogue, self.max_solutions, sorted(o.kind_weights.items()),
                                         self.device.key_name))
        # only the first campaign replays the database: later ones would replay (and so delete) the
        # examples of failures already reported in this run
        phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink) if campaign == 0 else \
            (Phase.explicit, Phase.generate, Phase.shrink)
        base_seed = o.seed if o.seed is not None else int.from_bytes(os.urandom(4), "little")

        # report_multiple_bugs=False: a campaign raises one way only (``_pending``), so Hypothesis' search for
        # more bugs after the first (up to 10 s of generating, failing cases the dearest) would only delay the shrink
        @settings(database=db, deadline=None, max_examples=10 ** 9, derandomize=False, print_blob=False,
                  phases=phases,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False, verbosity=Verbosity.quiet)
        @hseed(base_seed * 7919 + campaign)
        @given(case=self._strategy())
        def fuzz_case(case):
            if self.out_of_time():
                raise BudgetExhausted()
            if self._shrink_t0 is not None and time.monotonic() - self._shrink_t0 > o.shrink_s:
                raise ShrinkBudgetExhausted()
            self._check(*case)

        return fuzz_case

    def _check(self, module, sols, seed) -> None:
        sols = sols if isinstance(sols, list) else [sols]
        problem = codegen.problem_of(module)
        key = (ir.print_module(module), tuple(map(str, sols)), seed)
        memo = self._memo.get(key)
        if memo is not None:
            self.stats.replayed += 1
            self._verdict(module, problem, memo, seed, count=False)
            return
        try:
            results = self.run_case(module, sols, seed)
        except (BudgetExhausted, KeyboardInterrupt):
            raise
        except runtime.DeviceError as e:   # no device / a worker that can't start: stop, judge nothing
            raise EnvironmentStop(e) from e
        except Exception as e:   # the Python side crashed: a bug of ours, shrink and report it too
            err = f"{type(e).__name__}: {e}"
            way = f"internal/{problem.key_kind}/{repro.normalise_error(err)}"
            with self._lock:
                self.stats.examples += 1
                self.stats.failures["internal"] += 1
            if way in self.known or (self._pending and way not in self._pending):
                return
            f = Finding(way, "internal", module, ",".join(map(str, sols)), seed, None,
                        err + "\n" + traceback.format_exc(), first_found_s=self.elapsed())
            self._remember(way, f)
            raise _way_class(way)(way, f) from e
        self._memo[key] = results
        while len(self._memo) > 4096:
            self._memo.pop(next(iter(self._memo)))
        self._verdict(module, problem, results, seed, count=True)

    def _verdict(self, module, problem, results, seed, count: bool) -> None:
        first: CaseFailed | None = None
        if count:
            with self._lock:
                self.stats.examples += 1
                self.stats.kinds[problem.key_kind] += 1
                self.stats.cases += len(results)
                for _, res in results:
                    self.stats.statuses[res.status] += 1
                    if not res.ok:
                        self.stats.failures[res.status] += 1
        for sol, res in results:
            if res.ok:
                continue
            way = _way(res, problem.key_kind)
            if way in self.known:
                continue
            if self._pending and way not in self._pending:
                continue    # one way per campaign: this one waits for a later campaign (cheaper shrinks)
            rec = repro.FailureRecord.from_run(res, origin="fuzz", timeout_s=getattr(res, "timeout_s", self.o.timeout_s),
                                               inject=self.inject or "", device_info=self.device)
            f = Finding(way, res.status, module, str(sol), res.seed, rec, rec.error, first_found_s=self.elapsed())
            self._remember(way, f)
            if first is None:
                first = _way_class(way)(way, f)
        self._tick()
        if first is not None:
            raise first

    def _remember(self, way: str, f: Finding) -> None:
        prev = self._pending.get(way)
        if prev is not None:
            f.first_found_s = prev.first_found_s
        self._pending[way] = f
        hist = self._history.setdefault(way, [])
        key = (ir.print_module(f.module), f.solution, f.seed)
        if not hist or hist[-1][0] != key:
            hist.append((key, f))
        if self._shrink_t0 is None:
            self._shrink_t0 = time.monotonic()
        self.stats.phase = f"shrinking {f.kind}"

    # ---- writing ------------------------------------------------------------------
    def _reproducer_status(self, rec, inject: str | None) -> int | None:
        """The exit status of ``rec``'s reproducer run in a fresh process (as the user will run it), with
        the faults ``inject`` switched on; None when it had to be killed."""
        with tempfile.TemporaryDirectory(prefix="mlirtrace-verify-") as d:
            w = repro.ReproWriter(d).write(rec)
            env = dict(os.environ)
            env.pop("MLIRTRACE_INJECT", None)
            if inject:
                env["MLIRTRACE_INJECT"] = inject
            t = float(getattr(rec, "timeout_s", None) or self.o.timeout_s)
            cmd = [sys.executable, str(w.script_path), "--quiet", "--timeout", f"{t:g}"]
            if self.o.device:
                cmd += ["--device", self.o.device]
            try:
                return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=t * 3 + 120).returncode
            except subprocess.TimeoutExpired:
                return None

    def _reproduces(self, rec) -> bool:
        """Does ``rec``'s reproducer fail in a fresh process? A failure that depends on the worker's state
        (stale local memory of earlier kernels, a race) may not."""
        return self._reproducer_status(rec, self.inject) != ExitCode.OK

    def _check_planted(self, rec) -> None:
        """With faults on: the case is planted once its reproducer passes with them off; a real bug when
        it fails the same way or otherwise (``rec.planted`` False); unknown when it could not run."""
        if not self.inject or rec is None or rec.planted is not None:
            return
        self.stats.phase = "checking the finding with the fault off"
        code = self._reproducer_status(rec, None)
        if code == ExitCode.OK:
            rec.planted = True
        elif code in (ExitCode.FAILURE, ExitCode.DIFFERENT, None):
            rec.planted = False

    def _pick_reproducible(self, f: Finding) -> Finding:
        """``f`` if its reproducer fails on its own, else the smallest earlier failing case (of the same
        way, up to ``verify_tries``) whose reproducer does; ``f`` when none does."""
        if not self.o.verify or f.record is None:
            return f
        self.stats.phase = f"checking the {f.kind} reproducer"
        cands = [x for _, x in reversed(self._history.get(f.way, []))]
        if not cands or cands[0] is not f:
            cands.insert(0, f)
        tries = cands[:1]
        rest = cands[1:]
        n = min(len(rest), max(0, self.o.verify_tries - 1))
        if n == 1:
            tries.append(rest[-1])
        elif n > 1:              # spread back to the first failing case found (the largest)
            tries += [rest[round(i * (len(rest) - 1) / (n - 1))] for i in range(n)]
        seen: set[int] = set()
        for c in tries:
            if id(c) in seen:
                continue
            seen.add(id(c))
            if self._reproduces(c.record):
                c.first_found_s = f.first_found_s
                if c is not f:
                    c.note = "the smallest case did not fail in a fresh process; this larger one does"
                return c
        f.note = "its reproducer did not fail in a fresh process (state-dependent failure?)"
        return f

    def _write(self, f: Finding, shrunk: bool) -> None:
        self.known.add(f.way)
        if f.record is not None:
            g = self._pick_reproducible(f)
            if g is not f:
                shrunk = False
            f = g
        f.shrunk = shrunk
        if f.record is not None:
            self._check_planted(f.record)
            f.written = self.writer.write(f.record)
            f.path = str(f.written.script_path)
        else:
            d = Path(self.o.repro_dir)
            d.mkdir(parents=True, exist_ok=True)
            h = hashlib.sha256((f.way + ir.print_module(f.module) + f.solution).encode()).hexdigest()[:8]
            p = d / f"internal-{f.module.symbol_name()}-{h}.txt"
            p.write_text(f"{f.error}\nsolution: {f.solution}\nseed: {f.seed}\nmodule:\n{ir.print_module(f.module)}")
            f.path = str(p)
        f.written_s = self.elapsed()
        self.findings.append(f)

    def _flush(self, exc: BaseException | None, shrunk: bool) -> None:
        """Write the findings of the campaign that just ended (from its exception or the pending ones)."""
        done = set()
        for e in _flatten(exc):
            if isinstance(e, CaseFailed) and e.way not in done and e.way not in self.known:
                # the final replay re-raised the shrunk case; prefer what it carries
                done.add(e.way)
                self._write(e.found, shrunk)
        for way, f in list(self._pending.items()):
            if way not in done and way not in self.known:
                self._write(f, False)
        self._pending.clear()
        self._history.clear()
        self._shrink_t0 = None

    # ---- the loop --------------------------------------------------------------------
    def run(self) -> FuzzReport:
        self._t0 = time.monotonic()
        self._deadline = self._t0 + max(0.0, float(self.o.budget_s))
        self._open()
        stop = threading.Event()
        ticker = None
        if self.progress is not None:
            def tick():
                while not stop.wait(0.5):
                    self._tick()
            ticker = threading.Thread(target=tick, daemon=True, name="fuzz-progress")
            ticker.start()
        try:
            campaign = 0
            while not self.out_of_time():
                self.stats.campaigns += 1
                self._tick("generating")
                test = self._test(campaign)
                try:
                    test()
                except BudgetExhausted:
                    self._flush(None, False)
                    break
                except ShrinkBudgetExhausted:
                    self._flush(None, False)
                except KeyboardInterrupt:
                    self._flush(None, False)
                    raise
                except EnvironmentStop as e:
                    raise e.error from None
                except BaseException as e:   # noqa: BLE001 - CaseFailed or a group of them
                    env = next((x for x in _flatten(e) if isinstance(x, EnvironmentStop)), None)
                    if env is not None:
                        raise env.error from None
                    if not any(isinstance(x, CaseFailed) for x in _flatten(e)):
                        raise
                    self._flush(e, True)
                campaign += 1
                if self.o.max_findings is not None and len(self.findings) >= self.o.max_findings:
                    break
        finally:
            stop.set()
            if ticker is not None:
                ticker.join(timeout=2)
            self.stats.elapsed_s = self.elapsed()
            self.stats.phase = "done"
            self.close()
        return FuzzReport(self.stats, self.findings)


def fuzz(options: FuzzOptions | None = None, progress=None, **kw) -> FuzzReport:
    """Run the fuzz loop once (``FuzzOptions`` fields as keywords)."""
    o = options or FuzzOptions(**kw)
    return Fuzzer(o, progress).run()
