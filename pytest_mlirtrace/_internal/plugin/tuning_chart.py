"""The tuning chart of a failing test's report: time per solution of each problem the test tuned, as SVG.

The chart is :func:`pytest_mlirtrace._internal.report.charts.solution_bars`, the one ``mlirtrace report`` draws
(hand-written SVG, inline in the pytest-html page: why no charting library is said there). Reads the
fixture's own events (``BenchmarkStarted`` opens a problem, each ``SolutionFinished`` is one row) by their
attribute names only, so importing this module imports nothing from the compiler.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TunedProblem", "tuned_problems", "svg"]


@dataclass
class TunedProblem:
    key: str
    rows: list = field(default_factory=list)     # (solution, status, time_ms or None), in benchmark order


def tuned_problems(events) -> list[TunedProblem]:
    """Each benchmarked problem of ``events`` (a TraceLog's), with its rows, in the order tuned; a problem
    tuned twice keeps its last tuning."""
    out: dict[str, TunedProblem] = {}
    current = None
    for e in events:
        name = type(e).__name__
        if name == "BenchmarkStarted":
            out.pop(e.problem_key, None)                     # tuned again: the latest tuning, last
            current = out[e.problem_key] = TunedProblem(e.problem_key)
        elif name == "SolutionFinished" and current is not None:
            current.rows.append((e.solution, e.status, e.time_ms))
    return [p for p in out.values() if p.rows]


def svg(problem: TunedProblem, *, failing_solutions=()) -> str:
    """One ``<svg>`` element: a bar per solution that ran (fastest first, the fastest green), then the
    solutions that failed with their status (``failing_solutions``, the report's own, starred)."""
    from ..report.charts import solution_bars

    return solution_bars(problem.rows, title="time per solution: " + " ".join(problem.key.split()),  # keys hold tabs
                         marked=failing_solutions)
