"""One fuzz case checked: a module, its solutions and a seed through the texts (:func:`round_trip`) and the
lanes (each solution compiled, run on ``ir.random_inputs(module, seed + i)`` and checked against the numpy
oracle), with the perf configs beyond the space sorted into refused (counted by the rule that refused them)
and run, and the results of a case already checked answered from memory (Hypothesis asks again)."""
from __future__ import annotations

import re

from .. import codegen, ir, mlir
from .lanes import Lanes
from .results import BudgetExhausted
from .state import FuzzRun

__all__ = ["RoundTripError", "round_trip", "Cases"]

MEMO_SIZE = 4096        # cases whose results are kept (Hypothesis replays and shrink steps ask again)


class RoundTripError(Exception):
    """A fuzz case's module does not survive printing and parsing (a printer or parser bug: an internal
    finding, shrunk like any other)."""


def round_trip(module, device):
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
        text = mlir.emit_mlir(module, arch=device.key_name, num_cu=device.compute_units, type_syntax=syntax)
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


class Cases:
    """Checks cases of one fuzz run on its lanes."""

    def __init__(self, run: FuzzRun, lanes: Lanes):
        self.run = run
        self.lanes = lanes
        self._odd_seen: set = set()     # (problem, odd perf config) pairs already counted
        self._memo: dict = {}           # (module text, solutions, seed) -> results

    def run_case(self, module, sols, seed) -> list:
        """Check ``module`` with each of ``sols`` (in parallel on the lanes), each on ``seeds_per_case``
        seeds from ``seed`` on: [(solution, RunResult)]. With ``round_trip`` on, what runs is the module
        parsed back from its MLIR (:func:`round_trip`)."""
        run, o = self.run, self.run.o
        if o.round_trip:
            mlir_text, module = round_trip(module, run.device)
        else:
            mlir_text = mlir.emit_mlir(module, arch=run.device.key_name, num_cu=run.device.compute_units)
        seeds = [seed + i for i in range(max(1, o.seeds_per_case))]
        # a campaign shrinking has every lane (the others wait: Campaigns.wait_for_shrinks); else its share
        c = getattr(run.local, "campaign", None)
        n = run.jobs if c is None or c.pending else run.lanes_per_campaign
        out = self.lanes.deal(module, mlir_text, sols, seeds, n)
        if run.out_of_time() and len(out) < len(sols) * len(seeds) and not any(not r.ok for _, r in out):
            raise BudgetExhausted()   # cut short: an unfinished case decides nothing
        return out

    def remembered(self, module, sols, seed):
        """The results of this case when it was checked already (None: not yet), counted as a replay."""
        memo = self._memo.get(self._key(module, sols, seed))
        if memo is not None:
            with self.run.lock:
                self.run.stats.replayed += 1
        return memo

    def remember(self, module, sols, seed, results) -> None:
        with self.run.lock:
            self._memo[self._key(module, sols, seed)] = results
            while len(self._memo) > MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))

    @staticmethod
    def _key(module, sols, seed) -> tuple:
        return ir.print_module(module), tuple(map(str, sols)), seed

    # ---- perf configs beyond the space ---------------------------------------------------
    def refusal(self, problem, text: str) -> str | None:
        """Why the code generator refuses the perf config ``text`` for ``problem`` on this device (a parse or
        applicability rule's message), None when it takes it."""
        try:
            sol = codegen.Solution.parse(problem.kind, text, faults=codegen.parse_inject(self.run.inject))
            codegen.check_applicable(problem, sol, self.run.device)
        except (codegen.SolutionError, codegen.NotApplicable) as e:
            return str(e).strip() or f"{type(e).__name__} without a reason"
        return None

    def keep_applicable(self, problem, sols: list) -> list:
        """``sols`` less the odd perf configs (strings) the rules refuse, each refusal counted by its rule (once per
        problem and config: a replay or a shrink step checking the same pair again is not a new draw)."""
        run = self.run
        kept = []
        for s in sols:
            if isinstance(s, str):
                why = self.refusal(problem, s)
                with run.lock:
                    pair = (repr(problem), s)
                    new = pair not in self._odd_seen
                    self._odd_seen.add(pair)
                    run.stats.odd_drawn += new
                    if why is not None and new:
                        run.stats.odd_refused[_rule_of(why)] += 1
                if why is not None:
                    continue
            kept.append(s)
        return kept


def _rule_of(why: str) -> str:
    """The rule a refusal's message names (``(MPerBlock) is``), else what kind of refusal it is."""
    m = re.search(r"\((\w+)\) is", why)
    return m.group(1) if m else "field count" if " field(s), expected " in why else re.sub(r"\d+", "N", why)[:40]
