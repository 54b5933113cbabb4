"""When is a module parsed back from MLIR "the same" as the module the MLIR came from?

MLIR cannot carry everything the MIGraphX text has, so equality is defined on a
canonical form (:func:`canonical`):

* ``contiguous`` is gone (its users take its input) -- MLIR has no such op;
* params come first, renamed by position (``x0``, ``x1``... in :meth:`Module.params` order),
  and the other instructions are renumbered ``@k`` -- MLIR values have no names, and where
  a param line stands in MIGraphX's text means nothing;
* ``reshape``, ``reshape_lazy``, ``squeeze``, ``unsqueeze`` and ``flatten`` are all
  ``reshape {dims = <result lens>}`` (MIGraphX emits them so); ``perf_config`` is dropped;
* a bool is an ``i8`` (MIGraphX hands booleans to rocMLIR as i8);
* strides are compared only when asked (``strides=True``): ``tensor<>`` has none.

:func:`module_difference` says what differs (None when equal).  Together with "re-emits
identical MLIR" and "the oracle gives identical outputs on the same random inputs" this
is what the tests check for a round trip.
"""
from __future__ import annotations

import numpy as np

from pytest_mlirtrace._internal.ir.dtypes import BY_NAME
from pytest_mlirtrace._internal.ir.module import Instruction, Module
from pytest_mlirtrace._internal.ir.shape import Shape

from .literals import literal_storage


def _norm_dtype(s: Shape) -> Shape:
    return Shape(BY_NAME["i8"], s.lens, s.strides) if s.dtype.name == "bool" else s


def canonical(module: Module) -> Module:
    alias: dict[str, str] = {}
    params = module.params()
    width = len(str(len(params) - 1)) if len(params) > 1 else 1
    for i, p in enumerate(params):
        alias[p.name] = f"x{i:0{width}d}"
    out = Module(name=None, target_id=module.target_id)
    for p in params:
        out.instructions.append(Instruction(alias[p.name], "@param", param=alias[p.name], shape=_norm_dtype(p.shape)))
    k = 0
    for ins in module.instructions:
        if ins.op == "contiguous":
            alias[ins.name] = alias[ins.inputs[0]]
            continue
        if ins.op == "@param":
            continue
        else:
            name = f"@{k}"
            k += 1
            attrs = {a: v for a, v in ins.attrs.items() if a != "perf_config"}
            op = ins.op
            if op in ("reshape", "reshape_lazy", "squeeze", "unsqueeze", "flatten"):
                op, attrs = "reshape", {"dims": list(ins.shape.lens)}
            if op == "convert" and ins.shape is not None and ins.shape.dtype.name == "bool":
                attrs["target_type"] = BY_NAME["i8"].type_id
            lit = None
            if ins.op == "@literal":
                lit = literal_storage(ins.literal, ins.shape.dtype, ins.shape.lens)
                if ins.shape.dtype.name == "bool":
                    lit = lit.astype(np.int8)
            new = Instruction(name, op, [alias[i] for i in ins.inputs], attrs,
                              _norm_dtype(ins.shape) if ins.shape is not None else None, literal=lit)
            alias[ins.name] = name
        out.instructions.append(new)
    return out


def module_difference(a: Module, b: Module, *, strides: bool = False) -> str | None:
    """None when ``a`` and ``b`` are the same program in canonical form, else the first difference."""
    ca, cb = canonical(a), canonical(b)
    if len(ca.instructions) != len(cb.instructions):
        return f"{len(ca.instructions)} vs {len(cb.instructions)} instructions (contiguous dropped)"
    for x, y in zip(ca.instructions, cb.instructions, strict=False):
        if (x.name, x.op, x.inputs) != (y.name, y.op, y.inputs):
            return f"{x.name} = {x.op}({', '.join(x.inputs)}) vs {y.name} = {y.op}({', '.join(y.inputs)})"
        if x.attrs != y.attrs:
            return f"{x.name} = {x.op}: attributes {x.attrs} vs {y.attrs}"
        if (x.shape is None) != (y.shape is None):
            return f"{x.name} = {x.op}: shape {x.shape} vs {y.shape}"
        if x.shape is not None:
            if (x.shape.dtype, x.shape.lens) != (y.shape.dtype, y.shape.lens) or (
                    strides and x.shape.strides != y.shape.strides):
                return f"{x.name} = {x.op}: shape {x.shape} vs {y.shape}"
        if (x.literal is None) != (y.literal is None) or (
                x.literal is not None and not np.array_equal(x.literal, y.literal, equal_nan=True)):
            return f"{x.name} = {x.op}: literal values differ"
    return None
