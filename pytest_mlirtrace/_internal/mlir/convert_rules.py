"""What turning a parsed func into a module checks, shared by the xDSL path (:mod:`.parse`) and the fast
path (:mod:`.fast_parse`), so that both build the same module."""
from __future__ import annotations

from pytest_mlirtrace._internal.config import inject_now
from pytest_mlirtrace._internal.ir import Instruction, Shape
from pytest_mlirtrace._internal.vocab.faults import parse_inject

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


def implied_attrs(short: str, attrs: dict, n_inputs: int, out_dtype) -> None:
    """Attributes the IR needs that MLIR says through the result type: a ``quantizelinear`` without a zero
    point quantizes to its printed result type (the IR's ``out_type``; MIGraphX's default is uint8)."""
    if short == "quantizelinear" and n_inputs == 2 and "out_type" not in attrs and out_dtype.name != "u8":
        attrs["out_type"] = out_dtype.type_id
    if short == "transpose" and isinstance(attrs.get("permutation"), list) and _planted("parse_transpose_inverse"):
        perm = attrs["permutation"]      # [fault hook] parse_transpose_inverse: the inverse permutation is kept
        if sorted(perm) == list(range(len(perm))):
            attrs["permutation"] = sorted(range(len(perm)), key=perm.__getitem__)


def _planted(fault: str) -> bool:
    """Is the planted parser fault ``fault`` on ($MLIRTRACE_INJECT, read through the settings)?"""
    return fault in parse_inject(inject_now())


# unpack too: rocMLIR's realize-int4 turns it into a reinterpretation of its input's bytes as i4 elements (a
# view of the same memory), so it keeps its input's broadcast
VIEW_STRIDE_OPS = frozenset({"transpose", "broadcast", "multibroadcast", "slice", "squeeze", "unsqueeze", "unpack"})
MLIR_ONLY_ATTRS = frozenset({"perf_config"})


def stride_problem(ins: Instruction, printed: Shape, rule: Shape) -> str | None:
    """Why ``ins`` may not print the strides ``printed`` (its shape rule gives ``rule``), or None.

    rocMLIR gives the strides of a value inside a func no meaning (its ops read logical tensors; only
    the func's arguments and results are laid out in memory, by ``asMemoryLayoutTensor``), so any strides
    are taken that rocMLIR could lay out (:func:`~pytest_mlirtrace._internal.ir.shape.layout_problem`): permuted
    (a convolution writing NHWC), padded, or a broadcast made by a view.  Refused: a layout no memory
    has (innermost stride 2, overlapping dims, a padded stride that is not a multiple of the inner one)
    and a computed value printed as a broadcast (a 0 stride on a dim longer than 1).  reshape's strides
    are not checked (rocMLIR's own tests keep broadcast strides through a reshape)."""
    if printed.strides == rule.strides or ins.op in ("reshape", "reshape_lazy"):
        return None
    why = printed.layout_problem
    if why is not None:
        return why
    if ins.op not in VIEW_STRIDE_OPS and printed.broadcasted:
        return (f"strides {list(printed.strides)} make a broadcast (a 0 stride on a dim longer than 1), "
                "which a computed value cannot be")
    return None


def strides_ok(ins: Instruction, printed: Shape, rule: Shape) -> bool:
    """May ``ins`` print the strides ``printed``? (:func:`stride_problem` finds none.)"""
    return stride_problem(ins, printed, rule) is None


def boundary_problem(shape: Shape, what: str) -> str | None:
    """Why a func argument (``what`` = "argument") or result ("result") of this shape cannot cross the
    kernel boundary, as rocMLIR lays them out: its strides must have a memory layout, and a result,
    which the kernel writes, cannot be a broadcast."""
    why = shape.layout_problem
    if why is not None:
        return why
    if what == "result" and shape.broadcasted:
        return (f"strides {list(shape.strides)} make a broadcast (a 0 stride on a dim longer than 1); "
                "a kernel output cannot be one")
    return None
