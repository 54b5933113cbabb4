"""What a campaign found, written up: each way's shrunk case through the findings service
(``repro.Findings``: planted?, signature, reproducer + ticket), once it is known to be a new bug and to
fail alone.

* *a new bug?* A way already written may hide another bug (every wrong gemm result is ``wrong/gemm``): a
  shrunk case of it is written when it is another bug (its signature, ``repro.same_shrunk_case``), else it is
  a repeat (``stats.repeats``) and the way is shrunk again less often. A shrink that stopped at a local
  minimum with an op more is first reduced towards the written bug (:meth:`Filing.reduces_to_known`); a
  re-shrink the run's end cut short, of a case a written bug explains, is a repeat too (no evidence of
  another bug).
* *does it fail alone?* Its reproducer is run once in a fresh process (``repro.launch``), else the smallest
  earlier failing case of the way whose reproducer does (``verify``), within the budget's write grace.

A failure of the Python side (no record: a printer, parser or generator bug of ours) is written as a text
report instead.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from .. import codegen, ir
from ..repro import Findings, shrunk_case_key, signature
from ..repro.launch import launch_record
from ..repro.reduce import without
from ..vocab import ExitCode
from .cases import Cases
from .results import BudgetExhausted, FailingCase, way_of
from .state import FuzzRun, KnownWay

__all__ = ["Filing", "UNCHECKED"]

UNCHECKED = "unchecked"  # a reproducer not run: no time left


class Filing:
    def __init__(self, run: FuzzRun, cases: Cases, writer):
        self.run = run
        self.cases = cases
        self.service = Findings(writer)     # the records carry their runner (a lane): the planted check uses it

    # ---- does it fail alone? ----------------------------------------------------------------
    def reproduces(self, rec) -> bool | str:
        """Does ``rec``'s reproducer fail in a fresh process, with the run's faults on? A failure that depends on
        the worker's state (stale local memory of earlier kernels, a race) may not. :data:`UNCHECKED` when the
        budget and its write grace leave no time to run it."""
        left = self.run.time_to_run(rec)
        if left is None:
            return UNCHECKED
        t = float(rec.timeout_s or self.run.o.timeout_s)
        code = launch_record(rec, limit_s=min(t * 3 + 120, left), inject=self.run.inject, device=self.run.o.device,
                             timeout_s=t)
        return code != ExitCode.OK

    def pick_reproducible(self, f: FailingCase, history: list) -> FailingCase:
        """``f`` if its reproducer fails on its own, else the smallest earlier failing case (of the same
        way: ``history``, up to ``verify_tries``) whose reproducer does; ``f`` when none does."""
        o = self.run.o
        if not o.verify or f.record is None:
            return f
        self.run.stats.phase = f"checking the {f.kind} reproducer"
        cands = [x for _, x in reversed(history)]
        if not cands or cands[0] is not f:
            cands.insert(0, f)
        tries = cands[:1]
        rest = cands[1:]
        n = min(len(rest), max(0, o.verify_tries - 1))
        if n == 1:
            tries.append(rest[-1])
        elif n > 1:              # spread back to the first failing case found (the largest)
            tries += [rest[round(i * (len(rest) - 1) / (n - 1))] for i in range(n)]
        seen: set[int] = set()
        for c in tries:
            if id(c) in seen:
                continue
            seen.add(id(c))
            alone = self.reproduces(c.record)
            if alone is UNCHECKED:
                f.note = ("its reproducer was not run alone in a fresh process: the budget and its write "
                          f"grace ({o.write_grace_s:g} s) were spent")
                return f
            if alone:
                c.first_found_s = f.first_found_s
                if c is not f:
                    c.note = "the smallest case did not fail in a fresh process; this larger one does"
                return c
        f.note = "its reproducer did not fail in a fresh process (state-dependent failure?)"
        return f

    # ---- a new bug? -------------------------------------------------------------------------
    def reduces_to_known(self, f: FailingCase, kw: KnownWay) -> bool:
        """Does the shrunk case ``f`` of a known way still fail the same way, with its solution and seed, once
        the pointwise ops a written bug's case did not need are taken out one by one (each use rewired to
        the op's first input), and end at that bug (:meth:`KnownWay.same_bug`)? Then it is that bug, left
        by the shrink at a local minimum with an op more. A few runs at most (one per op taken out)."""
        known_ops = set().union(*(set(k) for k, _ in kw.keys)) if kw.keys else set()
        cur = f.module
        for _ in range(4):
            if kw.same_bug(cur):
                return cur is not f.module
            cands = [i for i in cur.instructions if i.op in ir.POINTWISE_OPS and i.op not in ir.VIEW_OPS
                     and i.op not in known_ops and i.inputs
                     and cur.get(i.inputs[0]).shape.lens == i.shape.lens
                     and cur.get(i.inputs[0]).shape.dtype == i.shape.dtype]
            nxt = None
            for ins in cands:
                m = without(cur, ins.name)
                if m is None:
                    continue
                try:
                    results = self.cases.run_case(m, [f.solution], f.seed)
                except BudgetExhausted:
                    return False
                except Exception:   # noqa: BLE001 - a case that cannot run decides nothing
                    continue
                if any(not r.ok and way_of(r, codegen.problem_of(m).key_kind) == f.way for _, r in results):
                    nxt = m
                    break
            if nxt is None:
                return False
            cur = nxt
        return kw.same_bug(cur)

    def _repeat(self, f: FailingCase, kw: KnownWay, shrunk: bool) -> bool:
        """Is ``f``, a failing case of a way already written, a bug already written?"""
        return (signature(f.record, faults=False) in kw.signatures or kw.same_bug(f.module)
                # a re-shrink the run's end cut short, of a case a written bug explains:
                # no evidence of another bug (a finished shrink would have been)
                or (not shrunk and self.run.out_of_time() and kw.explains(f.module))
                or self.reduces_to_known(f, kw))

    # ---- write ------------------------------------------------------------------------------
    def write(self, f: FailingCase, shrunk: bool, history: list) -> None:
        """Write the failing case ``f`` of a campaign that ended (``shrunk``: its shrink finished; ``history``:
        the way's failing cases, largest first), unless it is a repeat."""
        run = self.run
        new_way = f.way not in run.known
        kw = run.know(f.way)
        if not new_way and f.record is not None and self._repeat(f, kw, shrunk):
            # a known way shrunk again, to a bug already written: a repeat; try less often from now on
            kw.next_try *= 2
            run.stats.repeats += 1
            return
        if f.record is not None:
            kw.signatures.add(signature(f.record, faults=False))
            kw.keys.add(shrunk_case_key(f.module))
            g = self.pick_reproducible(f, history)
            if g is not f:
                shrunk = False
                kw.signatures.add(signature(g.record, faults=False))
            f = g
        f.shrunk = shrunk
        if f.record is not None:
            if run.inject:
                run.stats.phase = "checking the finding with the fault off"
            # no time left to run it with the faults off: written as it is, planted or not unchecked
            filed = self.service.file([f.record], check_planted=run.time_to_run(f.record) is not None)
            f.written = filed.written[0]
            f.path = str(f.written.script_path)
        else:
            f.path = str(self._write_internal(f))
        f.written_s = run.elapsed()
        run.findings.append(f)

    def _write_internal(self, f: FailingCase) -> Path:
        """A failure of the Python side: a text report (the error, the solution, the seed, the module)."""
        d = Path(self.run.o.repro_dir)
        d.mkdir(parents=True, exist_ok=True)
        h = hashlib.sha256((f.way + ir.print_module(f.module) + f.solution).encode()).hexdigest()[:8]
        p = d / f"internal-{f.module.symbol_name()}-{h}.txt"
        p.write_text(f"{f.error}\nsolution: {f.solution}\nseed: {f.seed}\nmodule:\n{ir.print_module(f.module)}")
        return p
