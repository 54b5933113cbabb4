"""What turning a parsed func into a module checks, shared by the xDSL path (:mod:`.parse`) and the fast
path (:mod:`.fast`), so that both build the same module."""
from __future__ import annotations

from pytest_mlirtrace.ir.module import Instruction
from pytest_mlirtrace.ir.shape import Shape

# MIGraphX's own order of each op's attributes (MLIR prints them sorted by name)
ATTR_ORDER = {
    "multibroadcast": ("out_lens", "out_dyn_dims"),
    "broadcast": ("axis", "out_lens", "out_dyn_dims"),
    "transpose": ("permutation",),
    "reshape": ("dims",),
    "slice": ("axes", "starts", "ends"),
    "squeeze": ("axes",),
    "unsqueeze": ("axes", "steps"),
    "softmax": ("axis",),
    "convert": ("target_type",),
    "reduce_sum": ("axes",), "reduce_max": ("axes",), "reduce_min": ("axes",), "reduce_mean": ("axes",),
}
VIEW_STRIDE_OPS = frozenset({"transpose", "broadcast", "multibroadcast", "slice", "squeeze", "unsqueeze"})
MLIR_ONLY_ATTRS = frozenset({"perf_config"})


def strides_ok(ins: Instruction, printed: Shape, rule: Shape, in_shapes: list[Shape]) -> bool:
    """May ``ins`` print the strides ``printed`` (its shape rule gives ``rule``)? See :mod:`.parse`."""
    if printed.strides == rule.strides:
        return True
    op = ins.op
    if op == "reshape":
        return True
    if op in VIEW_STRIDE_OPS:
        from pytest_mlirtrace.ir.ops import infer_shape

        alt = infer_shape(ins, [s.as_standard() for s in in_shapes])
        return alt.strides == printed.strides or printed.standard
    return printed.packed
