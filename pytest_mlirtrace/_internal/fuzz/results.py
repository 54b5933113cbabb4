"""What a fuzz run finds and counts: failing cases grouped by the way they fail (``repro.failure_way``), the
failing cases it reports (:class:`FailingCase`), statistics, and the control-flow exceptions a Hypothesis
campaign raises."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .. import ir
from ..repro import failure_way

try:
    from builtins import BaseExceptionGroup as _Group  # Python 3.11+
except ImportError:                                     # 3.10: Hypothesis' backport
    from exceptiongroup import BaseExceptionGroup as _Group


class BudgetExhausted(BaseException):
    """Raised inside a Hypothesis campaign to stop it when the time budget is spent (a
    BaseException, so Hypothesis does not take it for a failure to shrink)."""


class ShrinkBudgetExhausted(BaseException):
    """Raised inside a campaign when shrinking its failure has taken its share of the budget."""


class EnvironmentStop(BaseException):
    """Raised inside a campaign when the environment failed (runtime.DeviceError): Hypothesis must not
    shrink it, and it is no finding; :meth:`Fuzzer.run` raises the DeviceError itself."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class CaseFailed(Exception):
    """A case failed in a new way; one subclass per way so Hypothesis shrinks each separately."""

    def __init__(self, way: str, found: FailingCase):
        super().__init__(f"{way}: {found.record.first_line if found.record else found.error}")
        self.way, self.found = way, found


_WAY_CLASSES: dict[str, type] = {}


def way_class(way: str) -> type:
    cls = _WAY_CLASSES.get(way)
    if cls is None:
        name = "CaseFailed_" + re.sub(r"\W+", "_", way)[:60]
        cls = _WAY_CLASSES[way] = type(name, (CaseFailed,), {})
    return cls


@dataclass
class FailingCase:
    """One failing case of the fuzz: a module, solution and seed that fail in one way (the shrunk case, once the
    campaign is over), with its record and what became of it (its reproducer, or its internal-error report).
    Not ``report.Finding`` (a test's failure as the HTML report shows it)."""
    way: str
    kind: str
    module: ir.Module
    solution: str
    seed: int
    record: object | None            # repro.FailureRecord (None for an internal error)
    error: str = ""
    first_found_s: float = 0.0       # since the start of the run: first case that failed this way
    written_s: float = 0.0           # when its reproducer was written
    written: object | None = None    # repro.WrittenRepro
    shrunk: bool = True              # False when the budget ran out before the shrink finished
    path: str = ""                   # reproducer script (or internal-error report)
    note: str = ""                   # e.g. why a larger case was written


@dataclass
class FuzzStats:
    cases: int = 0
    examples: int = 0
    replayed: int = 0                # cases answered from this run's memo (Hypothesis re-asking)
    campaigns: int = 0
    elapsed_s: float = 0.0
    failures: Counter = field(default_factory=Counter)   # failing cases by failure kind (all, incl. repeats)
    statuses: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)       # examples by problem kind (its key's: conv apart)
    phase: str = "starting"
    max_case_s: float = 0.0          # slowest single compile+run (what the hang timeout must stay above)
    built_s: float = 0.0
    coverage: object = None          # fuzz.coverage.Coverage: what the run drew
    reshrinks: int = 0               # failures of an already reported way shrunk again (another bug behind it?)
    repeats: int = 0                 # ... that shrank to a signature already written (the same bug)
    odd_drawn: int = 0               # perf configs beyond the space drawn (FuzzOptions.odd_solutions)
    odd_refused: Counter = field(default_factory=Counter)   # ... refused, by the rule that refused them

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class FuzzReport:
    stats: FuzzStats
    findings: list

    @property
    def new(self) -> list:
        return [f for f in self.findings if f.written is None or getattr(f.written, "new", True)]

    @property
    def exit_code(self) -> int:
        return 1 if self.new else 0


def way_of(res, problem_kind: str) -> str:
    """The way a failing run (an engine RunResult) failed: :func:`repro.failure_way` of its status, problem
    kind, error and solution."""
    return failure_way(res.status, problem_kind, res.detail or res.compiled.error or res.status,
                       res.compiled.span.solution)


def flatten(e: BaseException | None) -> list:
    if e is None:
        return []
    if isinstance(e, _Group):
        out = []
        for x in e.exceptions:
            out.extend(flatten(x))
        return out
    return [e]
