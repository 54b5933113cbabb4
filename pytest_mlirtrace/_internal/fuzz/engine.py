"""The fuzz loop behind ``mlirtrace fuzz``: Hypothesis-driven cases through the tuning pipeline.

A *case* is one ``(module, solution, seed)``: the module compiled with that solution, run on
``ir.random_inputs(module, seed)`` and checked against the numpy oracle (``Pipeline.run``). One
Hypothesis example is one module with 1..``max_solutions`` solutions, checked in parallel on
``jobs`` lanes (:mod:`.lanes`: each a pipeline with its own one-worker pool).

The loop runs Hypothesis *campaigns* until the budget is spent (:mod:`.campaign`). In a campaign the first
case that fails in a way not seen yet in this run (``repro.failure_way``: failure kind, problem kind --
``conv`` apart from ``gemm`` though a convolution runs on the gemm kernels --, the error's first line
without numbers) is raised, so Hypothesis shrinks it; failures of other new ways while one is being shrunk (a
later campaign takes those) are counted and let pass, so the search goes on and each shrink only pays for its
own failure. After a campaign the shrunk case of every new way is written through the findings service
(:mod:`.filing`, ``repro.Findings``: one reproducer and ticket per signature) and the next campaign starts
(next seed). When the budget runs out mid-shrink, the smallest failing case seen so far is written.
Hypothesis' example database (a directory) keeps the failing examples, so a later run replays them first.

One way may hide several bugs (every wrong gemm result is ``wrong/gemm``), so a way already reported
is not closed: a failure of it that no written bug explains (the module lacks an op that every written
bug's shrunk case needed) is shrunk at once, with the shrink kept away from cases a written bug
explains; of the others, every few (3, then 6, 12, ... -- doubling each time) one is shrunk
again (freely: it may end at the written bug, a repeat), and written when its shrunk case is another
bug (``repro.shrunk_case_key``: another set of ops than every written bug's shrunk case, or a size that had
to stay above 1 where it could be 1 there); a shrink that ends at a written bug is a repeat
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

import threading
import warnings

from .. import codegen, runtime
from ..config import inject_now
from ..store import Store
from ..strategies import SUPPORTED_KINDS
from .campaign import Campaigns
from .cases import Cases, RoundTripError
from .filing import UNCHECKED, Filing
from .lanes import Lanes
from .options import BUILDS, FuzzOptions
from .results import FuzzReport
from .state import FuzzRun

__all__ = ["Fuzzer", "fuzz", "RoundTripError", "UNCHECKED"]


class Fuzzer:
    """One fuzz run. ``progress(run)`` is told of its progress (``run``: the :class:`.state.FuzzRun`, with
    ``stats``, ``o``, ``findings``); ``pipeline`` makes each lane's pipeline (default ``engine.Pipeline``; see
    :mod:`.lanes`). The planted faults are ``options.inject``, else the environment's now."""

    def __init__(self, options: FuzzOptions, progress=None, *, pipeline=None):
        inject = (options.inject if options.inject is not None else inject_now()) or None
        if inject:
            codegen.parse_inject(inject)     # unknown names: FaultError now, not per case
        unsupported = [k for k in options.kinds if k not in SUPPORTED_KINDS]
        if unsupported or not options.kinds:
            raise ValueError(f"cannot fuzz kind(s) {', '.join(unsupported) or '(none)'}: the code generator lowers "
                             f"{', '.join(SUPPORTED_KINDS)}")
        if options.build not in BUILDS:
            raise ValueError(f"build {options.build!r}: expected one of {', '.join(BUILDS)}")
        self.state = FuzzRun(options, runtime.resolve_device(options.device), inject, progress)
        self.store = Store(options.store, machine=options.machine)
        self.lanes = Lanes(self.state, pipeline)
        self.cases = Cases(self.state, self.lanes)
        filing = Filing(self.state, self.cases, self.store.repro_writer(options.repro_dir))
        self.campaigner = Campaigns(self.state, self.cases, filing, self.store)

    # what the report and the tests read of a run
    o = property(lambda self: self.state.o)
    device = property(lambda self: self.state.device)
    inject = property(lambda self: self.state.inject)
    jobs = property(lambda self: self.state.jobs)
    campaigns = property(lambda self: self.state.campaigns)
    lanes_per_campaign = property(lambda self: self.state.lanes_per_campaign)
    stats = property(lambda self: self.state.stats)
    findings = property(lambda self: self.state.findings)
    known = property(lambda self: self.state.known)

    def open(self) -> None:
        """Start the lanes (``run`` does)."""
        self.lanes.open()

    def close(self) -> None:
        self.lanes.close()
        self.store.close()

    def run_case(self, module, sols, seed) -> list:
        """One case checked on the lanes (:meth:`.cases.Cases.run_case`): [(solution, RunResult)]."""
        return self.cases.run_case(module, sols, seed)

    def run(self) -> FuzzReport:
        with warnings.catch_warnings():
            # the oracle's casts of overflowing values (wide/extreme values) warn; the results are what count
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            return self._run()

    def _run(self) -> FuzzReport:
        run = self.state
        run.start_clock()
        self.open()
        stop = threading.Event()
        ticker = None
        if run.progress is not None:
            def tick():
                while not stop.wait(0.5):
                    run.tick()
            ticker = threading.Thread(target=tick, daemon=True, name="fuzz-progress")
            ticker.start()
        try:
            self.campaigner.run_all()
        finally:
            stop.set()
            if ticker is not None:
                ticker.join(timeout=2)
            run.stats.elapsed_s = run.elapsed()
            run.stats.phase = "done"
            self.close()
        return FuzzReport(run.stats, run.findings)


def fuzz(options: FuzzOptions | None = None, progress=None, **kw) -> FuzzReport:
    """Run the fuzz loop once (``FuzzOptions`` fields as keywords)."""
    o = options or FuzzOptions(**kw)
    return Fuzzer(o, progress).run()
