"""Hypothesis strategies for fused ops, for your own ``@given`` tests (public).

- :func:`fused_graphs` draws valid fused modules (gemm, conv, pointwise, reduce, softmax, attention) that
  shrink toward fewer ops and small dims;
- :func:`solutions`, :func:`solution_list`, :func:`edge_solutions` draw applicable solutions (perf configs)
  of a problem;
- :func:`fused_cases` draws ``(module, solution, seed)`` triples, as ``mlirtrace fuzz`` runs them.

A bad argument raises Hypothesis's ``InvalidArgument`` when the strategy is made. The implementation is
internal (``pytest_mlirtrace._internal.strategies``); these names are the stable surface.
"""
from ._internal.strategies import (
    ALL_KINDS,
    SUPPORTED_KINDS,
    edge_solutions,
    fused_cases,
    fused_graphs,
    solution_list,
    solutions,
)

__all__ = ["fused_graphs", "fused_cases", "solutions", "solution_list", "edge_solutions", "ALL_KINDS",
           "SUPPORTED_KINDS"]
