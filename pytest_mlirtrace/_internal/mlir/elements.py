"""MLIR element types as IR dtypes (no dialect needed: the migraphx dialect and the value types both use it)."""
from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float4E2M1FNType,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float8E8M0FNUType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

from pytest_mlirtrace._internal.ir.dtypes import BY_NAME, DType


def dtype_of(elt: Attribute) -> DType | None:
    """The IR dtype of an MLIR element type, or None when the IR has no such dtype (fp6, f8E4M3FNUZ, index...)."""
    if isinstance(elt, Float16Type):
        return BY_NAME["f16"]
    if isinstance(elt, Float32Type):
        return BY_NAME["f32"]
    if isinstance(elt, Float64Type):
        return BY_NAME["f64"]
    if isinstance(elt, BFloat16Type):
        return BY_NAME["bf16"]
    for cls, name in ((Float8E4M3FNType, "f8E4M3FN"), (Float8E5M2Type, "f8E5M2"),
                      (Float8E8M0FNUType, "f8E8M0FNU"), (Float4E2M1FNType, "f4E2M1FN")):
        if isinstance(elt, cls):
            return BY_NAME[name]
    if isinstance(elt, IntegerType):
        width = elt.width.data
        if width == 1:
            return BY_NAME["bool"]
        unsigned = elt.signedness.data == Signedness.UNSIGNED
        return BY_NAME.get(f"{'u' if unsigned else 'i'}{width}")
    return None
