"""The campaign loop: Hypothesis campaigns, one after the other in each of ``run.campaigns`` threads, until the
budget is spent.

In a campaign the first case that fails in a way not seen yet in this run (``repro.failure_way``) is
raised, so Hypothesis shrinks it; failures of other new ways while one is being shrunk (a later campaign takes
those) are counted and let pass. A way already written is shrunk again now and then (:class:`.state.KnownWay`).
When a campaign ends its failing cases go to :class:`.filing.Filing` (one campaign at a time) and the next
campaign starts (next seed).
"""
from __future__ import annotations

import os
import re
import threading
import time
import traceback

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hseed

from .. import codegen, ir, repro, runtime
from ..repro import FailureRecord, signature
from ..store import Store
from ..strategies import fused_cases
from .cases import Cases, RoundTripError
from .filing import Filing
from .results import (
    BudgetExhausted,
    CaseFailed,
    EnvironmentStop,
    FailingCase,
    ShrinkBudgetExhausted,
    flatten,
    way_class,
    way_of,
)
from .state import Campaign, FuzzRun

__all__ = ["Campaigns"]


class Campaigns:
    """Runs the Hypothesis campaigns of one fuzz run: draws cases, checks them (:class:`.cases.Cases`), decides
    which failures to shrink, hands what a campaign found to ``filing``."""

    def __init__(self, run: FuzzRun, cases: Cases, filing: Filing, store: Store):
        self.run = run
        self.cases = cases
        self.filing = filing
        self.store = store
        self._write_lock = threading.RLock()            # one campaign writes its findings at a time
        self._shrinking: dict[str, int] = {}            # way -> the campaign shrinking it
        self._shrunk = threading.Condition(run.lock)    # notified when a campaign's shrinks end
        self._next = 0

    # ---- one Hypothesis campaign -------------------------------------------------
    def _strategy(self):
        o, run = self.run.o, self.run
        return fused_cases(kinds=o.kinds, dtypes=o.dtypes, max_rank=o.max_rank, max_dim=o.max_dim,
                           max_elements=o.max_elements, max_epilogue=o.max_epilogue, limits=run.device,
                           max_solutions=run.max_solutions, kind_weights=o.kind_weights, values=o.values,
                           long_reductions=o.long_reductions, odd_solutions=o.odd_solutions)

    def _test(self, campaign: int):
        o, run = self.run.o, self.run
        what = (sorted(o.kinds), tuple(o.dtypes), o.max_rank, o.max_dim, o.max_elements, o.max_epilogue,
                run.max_solutions, sorted(o.kind_weights.items()), run.device.key_name)
        if (o.values, o.long_reductions) != ("unit", False):
            what += (o.values, o.long_reductions)
        db = self.store.example_database(o.database, what)
        # only the first campaign replays the database: later ones would replay (and so delete) the
        # examples of failures already reported in this run
        phases = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink) if campaign == 0 else \
            (Phase.explicit, Phase.generate, Phase.shrink)
        base_seed = o.seed if o.seed is not None else int.from_bytes(os.urandom(4), "little")

        # report_multiple_bugs=False: a campaign raises one way only (its pending one), so Hypothesis' search for
        # more bugs after the first (up to 10 s of generating, failing cases the dearest) would only delay the shrink
        @settings(database=db, deadline=None, max_examples=10 ** 9, derandomize=False, print_blob=False,
                  phases=phases,
                  suppress_health_check=list(HealthCheck), report_multiple_bugs=False, verbosity=Verbosity.quiet)
        @hseed(base_seed * 7919 + campaign)
        @given(case=self._strategy())
        def fuzz_case(case):
            if run.out_of_time() or run.stop.is_set():
                raise BudgetExhausted()
            c = run.camp
            if not c.pending:
                self._wait_for_shrinks(c)
            if c.shrink_t0 is not None and time.monotonic() - c.shrink_t0 > o.shrink_s:
                raise ShrinkBudgetExhausted()
            self._check(*case)

        return fuzz_case

    def _check(self, module, sols, seed) -> None:
        sols = sols if isinstance(sols, list) else [sols]
        problem = codegen.problem_of(module)
        if any(isinstance(s, str) for s in sols):
            sols = self.cases.keep_applicable(problem, sols)
            if not sols:
                self.run.tick()
                return
        memo = self.cases.remembered(module, sols, seed)
        if memo is not None:
            self._verdict(module, problem, memo, count=False)
            return
        try:
            results = self.cases.run_case(module, sols, seed)
        except (BudgetExhausted, KeyboardInterrupt):
            raise
        except runtime.DeviceError as e:   # no device / a worker that can't start: stop, judge nothing
            raise EnvironmentStop(e) from e
        except Exception as e:   # the Python side crashed: a bug of ours, shrink and report it too
            self._internal(e, module, problem, sols, seed)
            return
        self.cases.remember(module, sols, seed, results)
        self._verdict(module, problem, results, count=True)

    def _internal(self, e: Exception, module, problem, sols, seed) -> None:
        """A case the Python side failed on (a bug of ours): its way, raised to be shrunk when it is new."""
        run = self.run
        err = f"{type(e).__name__}: {e}"
        # a text that does not come back is the printer's or parser's bug, whatever kernel the module makes
        where = "text" if isinstance(e, RoundTripError) else problem.key_kind
        # the func's name (its ops) and the length of a list of numbers say where, not which bug
        what = re.sub(r"\[N(, N)*\]", "[N..]", re.sub(r"@[\w.$-]+", "@F", repro.normalise_error(err)))
        way = f"internal/{where}/{what}"
        with run.lock:
            run.stats.examples += 1
            run.stats.failures["internal"] += 1
        if way in run.known or self._elsewhere(way):
            return
        f = FailingCase(way, "internal", module, ",".join(map(str, sols)), seed, None,
                        err + "\n" + traceback.format_exc(), first_found_s=run.elapsed())
        self._remember(way, f)
        raise way_class(way)(way, f) from e

    def _count(self, module, problem, results) -> None:
        st = self.run.stats
        with self.run.lock:
            st.examples += 1
            st.kinds[problem.key_kind] += 1
            st.coverage.add(module, problem)
            st.cases += len(results)
            for _, res in results:
                st.statuses[res.status] += 1
                if not res.ok:
                    st.failures[res.status] += 1

    def _verdict(self, module, problem, results, count: bool) -> None:
        run = self.run
        first: CaseFailed | None = None
        if count:
            self._count(module, problem, results)
        for sol, res in results:
            if res.ok:
                continue
            way = way_of(res, problem.key_kind)
            if self._elsewhere(way):
                if count and way in run.known:
                    run.known[way].seen += 1
                continue    # one way per campaign: this one waits for a later campaign (cheaper shrinks), or
                            # another campaign is shrinking it now
            # the full hang limit, whatever was in force: the reproducer judges with the limits a user has; the
            # lanes run it again (the planted check, the evidence)
            rec = FailureRecord.from_run(res, origin="fuzz", timeout_s=run.o.timeout_s, inject=run.inject or "",
                                         device_info=run.device, runner=self.cases.lanes.rerun)
            if not self._worth_shrinking(way, module, rec, count):
                continue
            f = FailingCase(way, res.status, module, str(sol), res.seed, rec, rec.error, first_found_s=run.elapsed())
            self._remember(way, f)
            if first is None:
                first = way_class(way)(way, f)
        run.tick()
        if first is not None:
            raise first

    def _worth_shrinking(self, way: str, module, rec, count: bool) -> bool:
        """Is this failure of ``way`` to be shrunk? Every failure of a new way; of a way written already, one
        no written bug explains, and now and then (a doubling backoff) one a written bug may explain."""
        kw = self.run.known.get(way)
        if kw is None:
            return True
        camp = self.run.camp
        explained = kw.explains(module)
        if way in camp.pending:
            # shrinking a failure no written bug explains: don't slip onto one
            return not (way in camp.avoid_explained and explained)
        if signature(rec, faults=False) in kw.signatures:
            return False    # the bug already written, exactly: nothing to shrink
        if explained:
            if count:
                kw.seen += 1
            if kw.seen < kw.next_try:
                return False    # maybe the known bug again: shrunk again only now and then
            kw.seen = 0
            camp.avoid_explained.discard(way)
        else:
            camp.avoid_explained.add(way)
        kw.reshrinks += 1
        with self.run.lock:
            self.run.stats.reshrinks += 1
        return True

    def _wait_for_shrinks(self, c: Campaign) -> None:
        """A campaign that is not shrinking waits while another is: a shrink is a chain of cases, one after
        the other, and gets every lane (as with one campaign); the search goes on once it ends."""
        with self._shrunk:
            while any(n != c.number for n in self._shrinking.values()):
                if self.run.out_of_time() or self.run.stop.is_set():
                    raise BudgetExhausted()
                self._shrunk.wait(0.2)

    def _elsewhere(self, way: str) -> bool:
        """Is a failure of ``way`` not for this campaign to shrink: it shrinks another way already (one way per
        campaign), or another campaign shrinks this one?"""
        c = self.run.camp
        if c.pending:
            return way not in c.pending
        with self.run.lock:
            return self._shrinking.get(way, c.number) != c.number

    def _remember(self, way: str, f: FailingCase) -> None:
        c = self.run.camp
        prev = c.pending.get(way)
        if prev is not None:
            f.first_found_s = prev.first_found_s
        c.pending[way] = f
        with self.run.lock:
            self._shrinking[way] = c.number
        hist = c.history.setdefault(way, [])
        key = (ir.print_module(f.module), f.solution, f.seed)
        if not hist or hist[-1][0] != key:
            hist.append((key, f))
        if c.shrink_t0 is None:
            c.shrink_t0 = time.monotonic()
        self.run.stats.phase = f"shrinking {f.kind}"

    def _flush(self, exc: BaseException | None, shrunk: bool) -> None:
        """Write the failing cases of the campaign that just ended (from its exception or the pending ones); one
        campaign at a time (the written bugs decide what is a repeat)."""
        c = self.run.camp
        with self._write_lock:
            done = set()
            for e in flatten(exc):
                if isinstance(e, CaseFailed) and e.way not in done:
                    # the final replay re-raised the shrunk case; prefer what it carries
                    done.add(e.way)
                    self.filing.write(e.found, shrunk, c.history.get(e.way, []))
            for way, f in list(c.pending.items()):
                if way not in done:
                    self.filing.write(f, False, c.history.get(way, []))
        with self._shrunk:
            for way in c.pending:
                if self._shrinking.get(way) == c.number:
                    del self._shrinking[way]
            self._shrunk.notify_all()
        self.run.local.campaign = Campaign(c.number)

    # ---- the loop --------------------------------------------------------------------
    def loop(self) -> None:
        """Campaign after campaign, until the budget is spent or every campaign is to stop."""
        run = self.run
        while not run.out_of_time() and not run.stop.is_set():
            with run.lock:
                number = self._next
                self._next += 1
                run.stats.campaigns += 1
            run.local.campaign = Campaign(number)
            run.tick("generating")
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
                env = next((x for x in flatten(e) if isinstance(x, EnvironmentStop)), None)
                if env is not None:
                    raise env.error from None
                if not any(isinstance(x, CaseFailed) for x in flatten(e)):
                    raise
                self._flush(e, True)
            if run.o.max_findings is not None and len(run.findings) >= run.o.max_findings:
                run.stop.set()

    def run_all(self) -> None:
        """``run.campaigns`` campaign loops at once, one thread each (Hypothesis draws one example at a time, so
        one campaign leaves the lanes idle while it draws, lowers and checks); one loop in this thread when
        there is one. The first error of any of them (no device, a bug of ours) stops all of them and is raised
        here; so is Ctrl-C, once the cases in flight have ended and the campaigns have written what they found."""
        if self.run.campaigns == 1:
            self.loop()
            return
        errors: list[BaseException] = []

        def loop():
            try:
                self.loop()
            except BaseException as e:   # noqa: BLE001 - handed to the main thread
                errors.append(e)
                self.run.stop.set()

        threads = [threading.Thread(target=loop, name=f"fuzz-campaign-{i}", daemon=True)
                   for i in range(self.run.campaigns)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            self.run.stop.set()
            for t in threads:
                t.join()
            raise
        if errors:
            raise errors[0]
