"""Gemms of narrow floats rewritten into what the gemm kernels lower: converts to f32 and a float dot.

rocMLIR decomposes a scaled ``quant_dot`` (``-migraphx-transform``, its test
``Dialect/MIGraphX/quant-dot-decompose.mlir``) into::

    a32 = convert(a) to f32;  sa32 = convert(scale_a) to f32;  A = mul(a32, sa32)     (the same for B)
    dot(A, B)

and so does this module, before the kind of kernel is chosen: the converts and muls become part of the
gemm's operand loads (an fp4/fp8 byte decoded to float, times its block's scale), the dot an f32 gemm.
A ``dot`` or unscaled ``quant_dot`` of fp8/fp4 operands gets the converts only.  The oracle
(:mod:`pytest_mlirtrace._internal.ir.reference`) computes the same thing from the original module.
"""
from __future__ import annotations

from ..ir import Module
from ..ir.dtypes import BY_NAME, NARROW_FLOATS
from ..ir.instruction import Instruction
from ..ir.ops import infer_shape

_F32 = BY_NAME["f32"]


def narrow_gemm(module: Module) -> str | None:
    """The operand dtype of the first gemm of narrow floats in ``module`` (None when there is none)."""
    for ins in module.instructions:
        if ins.op in ("dot", "quant_dot") and ins.inputs:
            dt = module.get(ins.inputs[0]).shape.dtype
            if dt.name in NARROW_FLOATS or (ins.op == "quant_dot" and len(ins.inputs) == 4):
                return dt.name
    return None


def decompose_narrow_gemms(module: Module) -> Module:
    """``module`` with every gemm of fp8/fp4 operands (scaled or not) rewritten as converts to f32, the
    scales' muls and an f32 ``dot`` that keeps the gemm's name; ``module`` itself when there is none."""
    if narrow_gemm(module) is None:
        return module
    out = module.copy()
    shapes = {}
    new: list[Instruction] = []

    def add(name: str, op: str, inputs: list[str], attrs: dict) -> str:
        ins = Instruction(name, op, list(inputs), dict(attrs))
        ins.shape = infer_shape(ins, [shapes[i] for i in inputs])
        shapes[name] = ins.shape
        new.append(ins)
        return name

    def as_f32(name: str, tag: str) -> str:
        if shapes[name].dtype == _F32:
            return name
        return add(f"{tag}:f32", "convert", [name], {"target_type": _F32.type_id})

    for ins in out.instructions:
        narrow = ins.op in ("dot", "quant_dot") and ins.inputs and (
            shapes[ins.inputs[0]].dtype.name in NARROW_FLOATS or len(ins.inputs) == 4)
        if not narrow:
            new.append(ins)
            if ins.shape is not None:
                shapes[ins.name] = ins.shape
            continue
        operands = []
        for k, what in ((0, "a"), (1, "b")):
            x = as_f32(ins.inputs[k], f"{ins.name}:{what}")
            if len(ins.inputs) == 4:
                s = as_f32(ins.inputs[2 + k], f"{ins.name}:scale_{what}")
                x = add(f"{ins.name}:{what}_scaled", "mul", [x, s], {})
            operands.append(x)
        dot = Instruction(ins.name, "dot", operands, {})
        dot.shape = infer_shape(dot, [shapes[i] for i in operands])
        if dot.shape.dtype != ins.shape.dtype:
            conv = add(f"{ins.name}:dot", "dot", operands, {})
            add(ins.name, "convert", [conv], {"target_type": ins.shape.dtype.type_id})
        else:
            new.append(dot)
            shapes[ins.name] = dot.shape
    out.instructions = new
    return out


__all__ = ["decompose_narrow_gemms", "narrow_gemm"]
