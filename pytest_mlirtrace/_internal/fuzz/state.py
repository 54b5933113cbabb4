"""What the parts of one fuzz run share: its options and device, the clock of its budget, its statistics,
the ways of failing already written, the failing cases it reports, and the locks and events between its
campaign threads. The parts: :mod:`.lanes` (the pipelines the cases run on), :mod:`.cases` (one case
checked), :mod:`.campaign` (the Hypothesis campaigns), :mod:`.filing` (what a campaign found, written up)."""
from __future__ import annotations

import os
import threading
import time

from ..repro import explained_by, same_shrunk_case
from .coverage import Coverage
from .options import FuzzOptions
from .results import FuzzStats

__all__ = ["FuzzRun", "KnownWay", "Campaign", "RESHRINK_FIRST"]

RESHRINK_FIRST = 3      # failures of a known way before it is shrunk again


class KnownWay:
    """A way of failing already reported in this run. Another bug may fail the same way (two wrong gemm
    results of different causes), so a later failure of it is shrunk again -- after ``next_try`` failures,
    doubling each time the shrink ends at a bug already written -- and written when its shrunk case is
    another bug (``repro.shrunk_case_key``)."""

    def __init__(self):
        self.signatures: set[str] = set()
        self.keys: set[tuple] = set()
        self.seen = 0
        self.next_try = RESHRINK_FIRST
        self.reshrinks = 0

    def explains(self, module) -> bool:
        """Could a bug already written for this way be behind a failure of ``module``? Yes when the module
        has every op some written bug's shrunk case needed (it may fail for that reason)."""
        return explained_by(module, tuple(self.keys))     # a copy: another campaign may add

    def same_bug(self, module) -> bool:
        """Is the shrunk case ``module`` a bug already written (``repro.same_shrunk_case``)?"""
        return same_shrunk_case(module, tuple(self.keys))


class Campaign:
    """What one Hypothesis campaign knows alone: the ways it is shrinking and their failing cases."""

    def __init__(self, number: int):
        self.number = number
        self.pending: dict = {}                 # way -> latest (smallest) failing case
        self.history: dict[str, list] = {}      # way -> failing cases in the order found (largest first)
        self.shrink_t0: float | None = None
        self.avoid_explained: set[str] = set()  # known ways re-shrunk from a failure no written bug explains:
                                                # the shrink is kept away from cases a written bug explains


class FuzzRun:
    """One fuzz run's shared state. ``progress(run)`` is told of its progress (it reads ``stats``, ``o``,
    ``findings``)."""

    def __init__(self, options: FuzzOptions, device, inject: str | None, progress=None):
        self.o = options
        self.device = device
        self.inject = inject
        self.progress = progress
        self.jobs = options.jobs or max(1, min(2, os.cpu_count() or 1))
        self.max_solutions = options.max_solutions or 2 * self.jobs
        # campaigns at once, each in its own thread with its share of the lanes; by default one per lane with
        # fast builds (the parent's drawing then bounds a campaign), one with full builds (the workers' compiles
        # bound it: a second campaign ran no more cases a second, BENCHMARKS.md)
        self.campaigns = max(1, min(self.jobs, options.campaigns or (self.jobs if options.build == "fast" else 1)))
        self.lanes_per_campaign = self.jobs // self.campaigns
        self.stats = FuzzStats(coverage=Coverage())
        self.findings: list = []                   # the FailingCases written, in order
        self.known: dict[str, KnownWay] = {}       # way -> the signatures written for it, its re-shrink backoff
        self.lock = threading.Lock()               # stats, memo, the ways being shrunk
        self.stop = threading.Event()              # every campaign ends (max_findings reached, a fatal error)
        self.local = threading.local()             # .campaign: the Campaign this thread runs
        self.t0 = 0.0
        self.deadline = 0.0

    # ---- time ------------------------------------------------------------------
    def start_clock(self) -> None:
        self.t0 = time.monotonic()
        self.deadline = self.t0 + max(0.0, float(self.o.budget_s))

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def time_to_run(self, rec) -> float | None:
        """Seconds a run of ``rec``'s case alone may take (the budget and its write grace left), or None when
        what is left is below ``min(5 s, its hang limit)``: no time to run it."""
        t = float(getattr(rec, "timeout_s", None) or self.o.timeout_s)
        left = self.deadline + self.o.write_grace_s - time.monotonic()
        return None if left < min(5.0, t) else left

    def tick(self, phase: str | None = None) -> None:
        self.stats.elapsed_s = self.elapsed()
        if phase:
            self.stats.phase = phase
        if self.progress is not None:
            self.progress(self)

    @property
    def camp(self) -> Campaign:
        return self.local.campaign

    def know(self, way: str) -> KnownWay:
        """``way``'s entry among the ways written (made on first use)."""
        kw = self.known.get(way)
        if kw is None:
            kw = self.known[way] = KnownWay()
        return kw
