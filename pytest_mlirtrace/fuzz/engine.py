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
so Hypothesis shrinks it; failures of other new ways while one is being shrunk (a later campaign takes
those) are counted and let pass, so the search goes on and each shrink only pays for its own failure.
After a campaign the shrunk case of every new way is written through ``repro.ReproWriter`` (one
reproducer and ticket per signature) and the next campaign starts (next seed). When the budget runs
out mid-shrink, the smallest failing case seen so far is written. Hypothesis' example database (a
directory) keeps the failing examples, so a later run replays them first.

One way may hide several bugs (every wrong gemm result is ``wrong/gemm``), so a way already reported
is not closed: a failure of it that no written bug explains (the module lacks an op that every written
bug's shrunk case needed) is shrunk at once, with the shrink kept away from cases a written bug
explains; of the others, every few (3, then 6, 12, ... -- doubling each time) one is shrunk
again (freely: it may end at the written bug, a repeat), and written when its shrunk case is another
bug (:func:`bug_key`: another set of ops than every written bug's shrunk case, or a size that had to
stay above 1 where it could be 1 there); a shrink that ends at a written bug is a repeat
(``stats.repeats``). So every distinct bug gets its signature reported, at a cost bounded by the
doubling. Erring on the side of reporting: a shrink of a known bug that stops at a local minimum with
an op more (the shrink budget ran out) is written as a second reproducer -- but not a re-shrink that the
end of the run cut short on a case a written bug explains (every op that bug needed is in it): that is
counted as a repeat, as nothing shows it is another bug.

Limits: every case runs with the full hang limit (``timeout_s``) however little budget is left (a
case in flight may overrun the budget by up to that), and builds and the driver's first-launch
compile have their own limit (``compile_timeout_s``: PoCL compiles a kernel when it first runs, 16 s
cold for a big f16 kernel on a loaded machine), so a slow cold compile is never written up as a
hang. The record carries the full limits, and each reproducer is run once in a fresh process with
them before it is written (``verify``).
"""
from __future__ import annotations

import hashlib
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hseed

from .. import codegen, ir, mlir, repro, runtime, engine
from ..config import inject_now
from ..procs import run_group
from ..repro.reduce import without as _without
from ..repro.signature import signature_of
from ..vocab import ExitCode
from ..strategies import SUPPORTED_KINDS, fused_cases
from .coverage import Coverage
from ..store import Store
from .options import BUILDS, FuzzOptions
from .results import (BudgetExhausted, CaseFailed, EnvironmentStop, Finding, FuzzReport, FuzzStats,
                      ShrinkBudgetExhausted, _flatten, _way, _way_class)


class _Lane:
    def __init__(self, device, timeout_s: float, inject, db_path: Path, compile_timeout_s: float,
                 build_options: str | None = None):
        self.pool = runtime.WorkerPool(device, workers=1, timeout_s=timeout_s)
        # builds and the driver's first-launch compile get their own limit: a slow cold compile is no hang
        self.pipeline = engine.Pipeline(device, pool=self.pool, database=engine.TuningDatabase(db_path),
                                        timeout_s=timeout_s, build_timeout_s=compile_timeout_s, inject=inject,
                                        build_options=build_options)

    def close(self):
        self.pool.close()


class RoundTripError(Exception):
    """A fuzz case's module does not survive printing and parsing (a printer or parser bug: an internal
    finding, shrunk like any other)."""


class _KnownWay:
    """A way of failing already reported in this run. Another bug may fail the same way (two wrong gemm
    results of different causes), so a later failure of it is shrunk again -- after ``next_try`` failures,
    doubling each time the shrink ends at a bug already written -- and written when its shrunk case is
    another bug (:func:`bug_key`)."""

    def __init__(self):
        self.signatures: set[str] = set()
        self.keys: set[tuple] = set()
        self.seen = 0
        self.next_try = RESHRINK_FIRST
        self.reshrinks = 0

    def explains(self, module) -> bool:
        """Could a bug already written for this way be behind a failure of ``module``? Yes when the module
        has every op some written bug's shrunk case needed (it may fail for that reason)."""
        have = Counter(_norm_ops(module))
        return any(not (Counter(kops) - have) for kops, _ in tuple(self.keys))   # a copy: another campaign may add

    def same_bug(self, module) -> bool:
        """Is the shrunk case ``module`` a bug already written? Yes when it has the same ops as one's shrunk
        case and every size that had to stay above 1 there is above 1 here (a shrink that stopped short on
        a size). A case with an op more is another bug: better a second reproducer of one bug than a
        second bug hidden behind the first."""
        ops, sz = bug_key(module)
        for kops, ksz in tuple(self.keys):
            if Counter(kops) != Counter(ops):
                continue
            if ksz and sz and (ksz[0] != sz[0] or any(k and not h for k, h in zip(ksz[1:], sz[1:]))):
                continue
            return True
        return False


class _Campaign:
    """What one Hypothesis campaign knows alone: the ways it is shrinking and their failing cases."""

    def __init__(self, number: int):
        self.number = number
        self.pending: dict[str, Finding] = {}   # way -> latest (smallest) failing case
        self.history: dict[str, list] = {}      # way -> failing cases in the order found (largest first)
        self.shrink_t0: float | None = None
        self.avoid_explained: set[str] = set()  # known ways re-shrunk from a failure no written bug explains:
                                                # the shrink is kept away from cases a written bug explains


UNCHECKED = "unchecked"  # a reproducer not run: no time left
RESHRINK_FIRST = 3      # failures of a known way before it is shrunk again


def case_signature(rec) -> str:
    """The signature that decides whether two shrunk cases are one bug: ``repro.signature`` without the
    planted faults (one run has one fault setting)."""
    s = rec.span
    return signature_of(rec.kind, s.mlir_text, rec.error, s.module_text, "", solution=s.solution)


def _norm_ops(module) -> tuple:
    return tuple(o[len("quant_"):] if o.startswith("quant_") else o for o in module.ops())


def bug_key(module) -> tuple:
    """What tells two *shrunk* cases of one way apart as two bugs: the ops left (``quant_`` forms as their
    float op) and which of the problem's sizes had to stay above 1 (m, n, k for a gemm or conv, the reduction
    length, the output size). Shrinking keeps only what a failure needs, so one bug shrinks to one key from
    wherever it started -- though its signatures (exact MLIR: dtypes, sizes) may differ -- and two bugs that
    need different ops or sizes get two. (Two bugs that need the same ops and sizes are taken for one.)"""
    ops = _norm_ops(module)
    try:
        p = codegen.problem_of(module)
        sizes = (p.kind, p.m > 1, p.n > 1, p.k > 1, p.reduce_len > 1, p.elements > 1)
    except Exception:   # noqa: BLE001 - no problem: the ops alone
        sizes = ()
    return ops, sizes


class Fuzzer:
    def __init__(self, options: FuzzOptions, progress=None):
        self.o = options
        self.progress = progress
        self.stats = FuzzStats(coverage=Coverage())
        self.findings: list[Finding] = []
        self.known: dict[str, _KnownWay] = {}     # way -> the signatures written for it, its re-shrink backoff
        self._odd_seen: set = set()                # (problem, odd perf config) pairs already counted
        self._memo: dict = {}                      # (module text, solutions, seed) -> results
        self._t0 = 0.0
        self._deadline = 0.0
        self._lock = threading.Lock()              # stats, memo, the ways being shrunk
        self._write_lock = threading.RLock()       # one campaign writes its findings at a time
        self._local = threading.local()            # .campaign: the _Campaign this thread runs
        self._shrinking: dict[str, int] = {}       # way -> the campaign shrinking it
        self._shrunk = threading.Condition(self._lock)   # notified when a campaign's shrinks end
        self._stop = threading.Event()             # every campaign ends (max_findings reached, a fatal error)
        self._next_campaign = 0
        self.inject = (options.inject if options.inject is not None else inject_now()) or None
        if self.inject:
            codegen.parse_inject(self.inject)     # unknown names: FaultError now, not per case
        unsupported = [k for k in options.kinds if k not in SUPPORTED_KINDS]
        if unsupported or not options.kinds:
            raise ValueError(f"cannot fuzz kind(s) {', '.join(unsupported) or '(none)'}: the code generator lowers "
                             f"{', '.join(SUPPORTED_KINDS)}")
        if options.build not in BUILDS:
            raise ValueError(f"build {options.build!r}: expected one of {', '.join(BUILDS)}")
        self.device = runtime.resolve_device(options.device)
        self.jobs = options.jobs or max(1, min(2, os.cpu_count() or 1))
        self.max_solutions = options.max_solutions or 2 * self.jobs
        # campaigns at once, each in its own thread with its share of the lanes; by default one per lane with
        # fast builds (the parent's drawing then bounds a campaign), one with full builds (the workers' compiles
        # bound it: a second campaign ran no more cases a second, BENCHMARKS.md)
        self.campaigns = max(1, min(self.jobs, options.campaigns or (self.jobs if options.build == "fast" else 1)))
        self.lanes_per_campaign = self.jobs // self.campaigns
        self.store = Store(options.store)
        self.writer = self.store.repro_writer(options.repro_dir)
        self._lanes: queue.Queue = queue.Queue()
        self._all_lanes: list[_Lane] = []
        self._exec: ThreadPoolExecutor | None = None

    # ---- lanes ----------------------------------------------------------------
    def _open(self) -> None:
        # the lanes' pipelines only run given solutions; their tuning database is a throwaway
        self._tmp = tempfile.mkdtemp(prefix="mlirtrace-fuzz-")
        for i in range(self.jobs):
            lane = _Lane(self.device, self.o.timeout_s, self.inject, Path(self._tmp) / "tuning.json",
                         self.o.compile_timeout_s, BUILDS[self.o.build])
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
        self.store.close()

    def _run_group(self, module, mlir_text, sols, seeds) -> list:
        """Solutions ``sols`` on one lane, each for each seed: [[(solution, RunResult)] per solution]. Their
        kernels are built first, in one request (one program on PoCL: ``Pipeline.prebuild``); each is then
        launched once per seed."""
        lane = self._lanes.get()
        try:
            if len(sols) > 1 and time.monotonic() < self._deadline:
                lane.pipeline.prebuild(module, sols, mlir_text=mlir_text)
            out = []
            for sol in sols:
                mine = []
                for sd in seeds:
                    if time.monotonic() >= self._deadline:
                        break
                    # always the full limits, however little of the budget is left: a hang must mean the same
                    # at the end of a run as at its start, and in the reproducer written from it (a case in
                    # flight may so run past the budget by up to one hang limit)
                    t0 = time.monotonic()
                    r = lane.pipeline.run(module, solution=sol, seed=sd, mlir_text=mlir_text)
                    r.timeout_s = self.o.timeout_s
                    with self._lock:
                        self.stats.max_case_s = max(self.stats.max_case_s, time.monotonic() - t0)
                    mine.append((sol, r))
                    if not r.ok:
                        break   # the other seeds would only repeat it (a hang would cost a timeout each; a wrong
                                # result another run, which a shrink pays at every step)
                out.append(mine)
            return out
        finally:
            self._lanes.put(lane)

    def round_trip(self, module):
        """``module`` through the texts, as a compiler meets it: MIGraphX text printed and parsed back, MLIR
        in both type syntaxes (``tensor<>``, ``!migraphx.shaped<>``) emitted and parsed back, each parsed
        module compared with the original (ops, inputs, attributes, literals, types; strides where the text
        carries them). Returns the MLIR text (tensor syntax) and the module parsed from the shaped one, which
        is what gets compiled; raises :class:`RoundTripError` naming the first difference."""
        names = mlir.param_names(module)
        try:
            back = ir.parse_module(ir.print_module(module))
        except Exception as e:   # noqa: BLE001 - any failure to read our own text is the finding
            raise RoundTripError(f"MIGraphX text does not parse back: {type(e).__name__}: {e}") from e
        diff = mlir.module_difference(module, back, strides=True)
        if diff:
            raise RoundTripError(f"MIGraphX text parses back to another module: {diff}")
        mlir_text, compiled = "", None
        for syntax in ("tensor", "shaped"):
            text = mlir.emit_mlir(module, arch=self.device.key_name, num_cu=self.device.compute_units,
                                  type_syntax=syntax)
            try:
                back = mlir.parse_mlir_module(text, param_names=names)
            except Exception as e:   # noqa: BLE001
                raise RoundTripError(f"MLIR ({syntax} types) does not parse back: {type(e).__name__}: {e}") from e
            diff = mlir.module_difference(module, back, strides=(syntax == "shaped"))
            if diff:
                raise RoundTripError(f"MLIR ({syntax} types) parses back to another module: {diff}")
            if syntax == "tensor":
                mlir_text = text
            else:
                compiled = back
        return mlir_text, compiled

    def run_case(self, module, sols, seed) -> list:
        """Check ``module`` with each of ``sols`` (in parallel on the lanes), each on ``seeds_per_case``
        seeds from ``seed`` on: [(solution, RunResult)]. With ``round_trip`` on, what runs is the module
        parsed back from its MLIR (:meth:`round_trip`)."""
        if self.o.round_trip:
            mlir_text, module = self.round_trip(module)
        else:
            mlir_text = mlir.emit_mlir(module, arch=self.device.key_name, num_cu=self.device.compute_units)
        seeds = [seed + i for i in range(max(1, self.o.seeds_per_case))]
        # the solutions dealt out to the lanes (each lane builds its share as one program), results in their order
        # a campaign shrinking has every lane (the others wait: _wait_for_shrinks); else its share
        c = getattr(self._local, "campaign", None)
        n = self.jobs if c is None or c.pending else self.lanes_per_campaign
        parts = [list(range(i, len(sols), n)) for i in range(min(n, len(sols)))]
        if len(parts) == 1:
            done = [self._run_group(module, mlir_text, sols, seeds)]
        else:
            futs = [self._exec.submit(self._run_group, module, mlir_text, [sols[i] for i in p], seeds) for p in parts]
            done = [f.result() for f in futs]
        per_sol = {i: r for p, d in zip(parts, done) for i, r in zip(p, d)}
        out = [x for i in range(len(sols)) for x in per_sol.get(i, [])]
        if self.out_of_time() and len(out) < len(sols) * len(seeds) and not any(not r.ok for _, r in out):
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
                           max_solutions=self.max_solutions, kind_weights=o.kind_weights, values=o.values,
                           long_reductions=o.long_reductions, odd_solutions=o.odd_solutions)

    @property
    def _camp(self) -> _Campaign:
        return self._local.campaign

    def _test(self, campaign: int):
        o = self.o
        db = self.store.example_database(o.database, (sorted(o.kinds), tuple(o.dtypes), o.max_rank, o.max_dim, o.max_elements,
                                         o.max_epilogue, self.max_solutions, sorted(o.kind_weights.items()),
                                         self.device.key_name) + ((o.values, o.long_reductions)
                                                                  if (o.values, o.long_reductions) != ("unit", False) else ()))
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
            if self.out_of_time() or self._stop.is_set():
                raise BudgetExhausted()
            c = self._camp
            if not c.pending:
                self._wait_for_shrinks(c)
            if c.shrink_t0 is not None and time.monotonic() - c.shrink_t0 > o.shrink_s:
                raise ShrinkBudgetExhausted()
            self._check(*case)

        return fuzz_case

    def _refusal(self, problem, text: str) -> str | None:
        """Why the code generator refuses the perf config ``text`` for ``problem`` on this device (a parse or
        applicability rule's message), None when it takes it."""
        try:
            sol = codegen.Solution.parse(problem.kind, text, faults=codegen.parse_inject(self.inject))
            codegen.check_applicable(problem, sol, self.device)
        except (codegen.SolutionError, codegen.NotApplicable) as e:
            return str(e).strip() or f"{type(e).__name__} without a reason"
        return None

    def _keep_applicable(self, problem, sols: list) -> list:
        """``sols`` less the odd perf configs (strings) the rules refuse, each refusal counted by its rule (once per
        problem and config: a replay or a shrink step checking the same pair again is not a new draw)."""
        kept = []
        for s in sols:
            if isinstance(s, str):
                why = self._refusal(problem, s)
                with self._lock:
                    pair = (repr(problem), s)
                    new = pair not in self._odd_seen
                    self._odd_seen.add(pair)
                    self.stats.odd_drawn += new
                    if why is not None and new:
                        m = re.search(r"\((\w+)\) is", why)
                        rule = (m.group(1) if m else "field count" if " field(s), expected " in why
                                else re.sub(r"\d+", "N", why)[:40])
                        self.stats.odd_refused[rule] += 1
                if why is not None:
                    continue
            kept.append(s)
        return kept

    def _check(self, module, sols, seed) -> None:
        sols = sols if isinstance(sols, list) else [sols]
        problem = codegen.problem_of(module)
        if any(isinstance(s, str) for s in sols):
            sols = self._keep_applicable(problem, sols)
            if not sols:
                self._tick()
                return
        key = (ir.print_module(module), tuple(map(str, sols)), seed)
        memo = self._memo.get(key)
        if memo is not None:
            with self._lock:
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
            # a text that does not come back is the printer's or parser's bug, whatever kernel the module makes
            where = "text" if isinstance(e, RoundTripError) else problem.key_kind
            # the func's name (its ops) and the length of a list of numbers say where, not which bug
            what = re.sub(r"\[N(, N)*\]", "[N..]", re.sub(r"@[\w.$-]+", "@F", repro.normalise_error(err)))
            way = f"internal/{where}/{what}"
            with self._lock:
                self.stats.examples += 1
                self.stats.failures["internal"] += 1
            if way in self.known or self._elsewhere(way):
                return
            f = Finding(way, "internal", module, ",".join(map(str, sols)), seed, None,
                        err + "\n" + traceback.format_exc(), first_found_s=self.elapsed())
            self._remember(way, f)
            raise _way_class(way)(way, f) from e
        with self._lock:
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
                self.stats.coverage.add(module, problem)
                self.stats.cases += len(results)
                for _, res in results:
                    self.stats.statuses[res.status] += 1
                    if not res.ok:
                        self.stats.failures[res.status] += 1
        for sol, res in results:
            if res.ok:
                continue
            way = _way(res, problem.key_kind)
            if self._elsewhere(way):
                if count and way in self.known:
                    self.known[way].seen += 1
                continue    # one way per campaign: this one waits for a later campaign (cheaper shrinks), or
                            # another campaign is shrinking it now
            # the full hang limit, whatever was in force: the reproducer judges with the limits a user has
            rec = repro.FailureRecord.from_run(res, origin="fuzz", timeout_s=self.o.timeout_s,
                                               inject=self.inject or "", device_info=self.device)
            kw = self.known.get(way)
            camp = self._camp
            if kw is not None:
                explained = kw.explains(module)
                if way in camp.pending:
                    if way in camp.avoid_explained and explained:
                        continue    # shrinking a failure no written bug explains: don't slip onto one
                else:
                    if case_signature(rec) in kw.signatures:
                        continue    # the bug already written, exactly: nothing to shrink
                    if explained:
                        if count:
                            kw.seen += 1
                        if kw.seen < kw.next_try:
                            continue    # maybe the known bug again: shrunk again only now and then
                        kw.seen = 0
                    if explained:
                        camp.avoid_explained.discard(way)
                    else:
                        camp.avoid_explained.add(way)
                    kw.reshrinks += 1
                    with self._lock:
                        self.stats.reshrinks += 1
            f = Finding(way, res.status, module, str(sol), res.seed, rec, rec.error, first_found_s=self.elapsed())
            self._remember(way, f)
            if first is None:
                first = _way_class(way)(way, f)
        self._tick()
        if first is not None:
            raise first

    def _wait_for_shrinks(self, c: _Campaign) -> None:
        """A campaign that is not shrinking waits while another is: a shrink is a chain of cases, one after
        the other, and gets every lane (as with one campaign); the search goes on once it ends."""
        with self._shrunk:
            while any(n != c.number for n in self._shrinking.values()):
                if self.out_of_time() or self._stop.is_set():
                    raise BudgetExhausted()
                self._shrunk.wait(0.2)

    def _elsewhere(self, way: str) -> bool:
        """Is a failure of ``way`` not for this campaign to shrink: it shrinks another way already (one way per
        campaign), or another campaign shrinks this one?"""
        c = self._camp
        if c.pending:
            return way not in c.pending
        with self._lock:
            return self._shrinking.get(way, c.number) != c.number

    def _remember(self, way: str, f: Finding) -> None:
        c = self._camp
        prev = c.pending.get(way)
        if prev is not None:
            f.first_found_s = prev.first_found_s
        c.pending[way] = f
        with self._lock:
            self._shrinking[way] = c.number
        hist = c.history.setdefault(way, [])
        key = (ir.print_module(f.module), f.solution, f.seed)
        if not hist or hist[-1][0] != key:
            hist.append((key, f))
        if c.shrink_t0 is None:
            c.shrink_t0 = time.monotonic()
        self.stats.phase = f"shrinking {f.kind}"

    # ---- writing ------------------------------------------------------------------
    def _reproducer_status(self, rec, inject: str | None) -> int | None | str:
        """The exit status of ``rec``'s reproducer run in a fresh process (as the user will run it), with
        the faults ``inject`` switched on; None when it had to be killed (it and what it started: its
        process group); :data:`UNCHECKED` when the budget and its write grace leave no time to run it."""
        t = float(getattr(rec, "timeout_s", None) or self.o.timeout_s)
        left = self._deadline + self.o.write_grace_s - time.monotonic()
        if left < min(5.0, t):
            return UNCHECKED
        with tempfile.TemporaryDirectory(prefix="mlirtrace-verify-") as d:
            w = repro.ReproWriter(d).write(rec)
            env = dict(os.environ)
            env.pop("MLIRTRACE_INJECT", None)
            if inject:
                env["MLIRTRACE_INJECT"] = inject
            cmd = [sys.executable, str(w.script_path), "--quiet", "--timeout", f"{t:g}"]
            if self.o.device:
                cmd += ["--device", self.o.device]
            return run_group(cmd, env=env, timeout=min(t * 3 + 120, left))

    def _reproduces(self, rec) -> bool | str:
        """Does ``rec``'s reproducer fail in a fresh process? A failure that depends on the worker's state
        (stale local memory of earlier kernels, a race) may not. :data:`UNCHECKED` when out of time."""
        code = self._reproducer_status(rec, self.inject)
        return code if code is UNCHECKED else code != ExitCode.OK

    def _check_planted(self, rec) -> None:
        """With faults on: the case is planted once its reproducer passes with them off; a real bug when
        it fails the same way or otherwise (``rec.planted`` False); unknown when it could not run."""
        if not self.inject or rec is None or rec.planted is not None:
            return
        self.stats.phase = "checking the finding with the fault off"
        code = self._reproducer_status(rec, None)
        if code is UNCHECKED:
            return
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
        cands = [x for _, x in reversed(self._camp.history.get(f.way, []))]
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
            alone = self._reproduces(c.record)
            if alone is UNCHECKED:
                f.note = ("its reproducer was not run alone in a fresh process: the budget and its write "
                          f"grace ({self.o.write_grace_s:g} s) were spent")
                return f
            if alone:
                c.first_found_s = f.first_found_s
                if c is not f:
                    c.note = "the smallest case did not fail in a fresh process; this larger one does"
                return c
        f.note = "its reproducer did not fail in a fresh process (state-dependent failure?)"
        return f

    def _reduces_to_known(self, f: Finding, kw: _KnownWay) -> bool:
        """Does the shrunk case ``f`` of a known way still fail the same way, with its solution and seed, once
        the pointwise ops a written bug's case did not need are taken out one by one (each use rewired to
        the op's first input), and end at that bug (:meth:`_KnownWay.same_bug`)? Then it is that bug, left
        by the shrink at a local minimum with an op more. A few runs at most (one per op taken out)."""
        from ..ir.module import VIEW_OPS

        known_ops = set().union(*(set(k) for k, _ in kw.keys)) if kw.keys else set()
        cur = f.module
        for _ in range(4):
            if kw.same_bug(cur):
                return cur is not f.module
            cands = [i for i in cur.instructions if i.op in ir.POINTWISE_OPS and i.op not in VIEW_OPS
                     and i.op not in known_ops and i.inputs
                     and cur.get(i.inputs[0]).shape.lens == i.shape.lens
                     and cur.get(i.inputs[0]).shape.dtype == i.shape.dtype]
            nxt = None
            for ins in cands:
                m = _without(cur, ins.name)
                if m is None:
                    continue
                try:
                    results = self.run_case(m, [f.solution], f.seed)
                except BudgetExhausted:
                    return False
                except Exception:   # noqa: BLE001 - a case that cannot run decides nothing
                    continue
                if any(not r.ok and _way(r, codegen.problem_of(m).key_kind) == f.way for _, r in results):
                    nxt = m
                    break
            if nxt is None:
                return False
            cur = nxt
        return kw.same_bug(cur)

    def _write(self, f: Finding, shrunk: bool) -> None:
        kw = self.known.get(f.way)
        if kw is None:
            kw = self.known[f.way] = _KnownWay()
        elif f.record is not None and (case_signature(f.record) in kw.signatures or kw.same_bug(f.module)
                                       # a re-shrink the run's end cut short, of a case a written bug explains:
                                       # no evidence of another bug (a finished shrink would have been)
                                       or (not shrunk and self.out_of_time() and kw.explains(f.module))
                                       or self._reduces_to_known(f, kw)):
            # a known way shrunk again, to a bug already written: a repeat; try less often from now on
            kw.next_try *= 2
            self.stats.repeats += 1
            return
        if f.record is not None:
            kw.signatures.add(case_signature(f.record))
            kw.keys.add(bug_key(f.module))
            g = self._pick_reproducible(f)
            if g is not f:
                shrunk = False
                kw.signatures.add(case_signature(g.record))
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
        """Write the findings of the campaign that just ended (from its exception or the pending ones); one
        campaign at a time (the written bugs decide what is a repeat)."""
        c = self._camp
        with self._write_lock:
            done = set()
            for e in _flatten(exc):
                if isinstance(e, CaseFailed) and e.way not in done:
                    # the final replay re-raised the shrunk case; prefer what it carries
                    done.add(e.way)
                    self._write(e.found, shrunk)
            for way, f in list(c.pending.items()):
                if way not in done:
                    self._write(f, False)
        with self._shrunk:
            for way in c.pending:
                if self._shrinking.get(way) == c.number:
                    del self._shrinking[way]
            self._shrunk.notify_all()
        self._local.campaign = _Campaign(c.number)

    # ---- the loop --------------------------------------------------------------------
    def _campaign_loop(self) -> None:
        """Campaign after campaign, until the budget is spent or every campaign is to stop."""
        while not self.out_of_time() and not self._stop.is_set():
            with self._lock:
                number = self._next_campaign
                self._next_campaign += 1
                self.stats.campaigns += 1
            self._local.campaign = _Campaign(number)
            self._tick("generating")
            test = self._test(number)
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
            if self.o.max_findings is not None and len(self.findings) >= self.o.max_findings:
                self._stop.set()

    def _run_threads(self) -> None:
        """``campaigns`` campaign loops at once, one thread each (Hypothesis draws one example at a time, so
        one campaign leaves the lanes idle while it draws, lowers and checks). The first error of any of them
        (no device, a bug of ours) stops all of them and is raised here; so is Ctrl-C, once the cases in
        flight have ended and the campaigns have written what they found."""
        errors: list[BaseException] = []

        def loop():
            try:
                self._campaign_loop()
            except BaseException as e:   # noqa: BLE001 - handed to the main thread
                errors.append(e)
                self._stop.set()

        threads = [threading.Thread(target=loop, name=f"fuzz-campaign-{i}", daemon=True)
                   for i in range(self.campaigns)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            self._stop.set()
            for t in threads:
                t.join()
            raise
        if errors:
            raise errors[0]

    def run(self) -> FuzzReport:
        with warnings.catch_warnings():
            # the oracle's casts of overflowing values (wide/extreme values) warn; the results are what count
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            return self._run()

    def _run(self) -> FuzzReport:
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
            if self.campaigns == 1:
                self._campaign_loop()
            else:
                self._run_threads()
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
