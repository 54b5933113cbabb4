"""The tuning key of a problem on a device: ``<arch>\\t<num_cu>\\t<Problem.key()>`` (the text:
``vocab.problem_key``)."""
from __future__ import annotations

from ..vocab.problem_key import format_problem_key, parse_problem_key

__all__ = ["problem_key", "parse_problem_key"]


def problem_key(problem, device) -> str:
    """The tuning key of ``problem`` (codegen's Problem) on ``device`` (anything with key_name, compute_units)."""
    return format_problem_key(getattr(problem, "key_kind", problem.kind), problem.key_fields(),
                              arch=getattr(device, "key_name", str(device)),
                              num_cu=getattr(device, "compute_units", 1))
