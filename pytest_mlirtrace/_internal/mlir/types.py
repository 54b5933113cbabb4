"""Element and value types between the IR (:class:`~pytest_mlirtrace._internal.ir.Shape`) and MLIR text / xDSL.

MLIR spellings we emit: floats as ``DType.mlir`` (``f16``, ``bf16``...); integers signless
(``i8``, ``i32``) in ``tensor<>`` syntax, as MIGraphX wrote them in 2023, and signed /
unsigned (``si32``, ``ui8``) in ``!migraphx.shaped<>`` syntax, as MIGraphX writes them
since; ``bool`` as an 8-bit integer (``i8`` / ``si8``): MIGraphX hands booleans to rocMLIR
as i8 (rocMLIR's ``migraphx.where`` takes an i8 condition).  When parsing, signless and
signed integers are the same dtype (``i32`` = ``si32``) and ``i1`` is bool.
"""
from __future__ import annotations

from io import StringIO

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.printer import Printer

from pytest_mlirtrace._internal.ir.dtypes import DType
from pytest_mlirtrace._internal.ir.shape import Shape, standard_strides

from .dialect import ShapedType
from .elements import dtype_of

BOOL_AS = "i8"


def mlir_elt(dt: DType, syntax: str = "tensor") -> str:
    """The element type MIGraphX writes for ``dt`` in ``syntax`` ("tensor" | "shaped")."""
    if dt.name == "bool":
        return BOOL_AS if syntax == "tensor" else "s" + BOOL_AS
    if syntax == "shaped" and dt.mlir.startswith("i"):
        return "s" + dt.mlir
    return dt.mlir


def tensor_text(shape: Shape, syntax: str = "tensor") -> str:
    """``tensor<1x2xf32>``; ``syntax`` picks the integer spelling (a literal's dense type follows its op)."""
    lens = "x".join(map(str, shape.lens))
    return f"tensor<{lens + 'x' if lens else ''}{mlir_elt(shape.dtype, syntax)}>"


def shaped_body(shape: Shape) -> str:
    """``1x5x4xf32, 20x4x1`` (rank 0: ``f32``)."""
    elt = mlir_elt(shape.dtype, "shaped")
    if not shape.lens:
        return elt
    return f"{'x'.join(map(str, shape.lens))}x{elt}, {'x'.join(map(str, shape.strides))}"


def type_text(shape: Shape, syntax: str, short: bool = False) -> str:
    """The MLIR type of a value: ``tensor<..>`` or ``!migraphx.shaped<..>`` (``<..>`` when ``short``)."""
    if syntax == "tensor":
        return tensor_text(shape)
    body = f"<{shaped_body(shape)}>"
    return body if short else "!migraphx.shaped" + body


def attr_text(attr: Attribute) -> str:
    """MLIR text of an xDSL attribute or type, as xDSL prints it."""
    out = StringIO()
    Printer(stream=out).print_attribute(attr)
    return out.getvalue()


class TypeProblem(ValueError):
    """A value type the IR cannot hold; the message names the type."""


def shape_of(t: Attribute) -> tuple[Shape, str]:
    """(IR shape, syntax "tensor"|"shaped") of an MLIR value type; raises :class:`TypeProblem`."""
    if isinstance(t, ShapedType):
        elt, lens, strides, syntax = t.element_type, t.lens, t.stride_list, "shaped"
    elif isinstance(t, TensorType):
        elt, lens, syntax = t.element_type, tuple(t.get_shape()), "tensor"
        if any(n < 0 for n in lens):
            raise TypeProblem(f"type {attr_text(t)} has a dynamic dimension")
        strides = standard_strides(lens)
    else:
        raise TypeProblem(f"type {attr_text(t)} is not a tensor<> or !migraphx.shaped<> type")
    dt = dtype_of(elt)
    if dt is None:
        raise TypeProblem(f"element type {attr_text(elt)} (in {attr_text(t)}) is not supported")
    return Shape.of(dt, lens, strides), syntax


def same_dtype(printed: DType, rule: DType) -> bool:
    """Does the dtype printed in MLIR stand for the dtype the shape rule gives (bool may be printed as i8)?"""
    if printed == rule:
        return True
    return rule.name == "bool" and printed.name in ("i8", "u8")
