"""Front end ``strategies``: Hypothesis strategies for fused modules, their solutions and whole cases.

- :func:`fused_graphs` draws valid fused :class:`~pytest_mlirtrace._internal.ir.Module` s (gemm, conv, pointwise,
  reduce, softmax, attention) that shrink toward fewer ops and small dims (a conv: toward a 1x1 conv on a
  1x1 image);
- :func:`solutions` draws applicable solutions of a problem (the space plus edge cases);
- :func:`fused_cases` draws ``(module, solution, seed)`` triples;
- :mod:`pytest_mlirtrace._internal.fuzz` runs them against the pipeline under a time budget (``mlirtrace fuzz``).
"""
from .conv_graphs import CONV_FIELDS, conv_shape
from .graph_builder import ALL_KINDS, FLOAT_OPS, INT_OPS, VIEW_RECIPES
from .graphs import build_module, fused_graphs, graph_kind
from .solutions import KERNEL_KIND, SUPPORTED_KINDS, edge_solutions, fused_cases, solution_list, solutions

__all__ = ["fused_graphs", "graph_kind", "build_module", "conv_shape", "solutions", "solution_list", "edge_solutions",
           "fused_cases", "ALL_KINDS", "SUPPORTED_KINDS", "KERNEL_KIND", "FLOAT_OPS", "INT_OPS", "VIEW_RECIPES",
           "CONV_FIELDS"]
