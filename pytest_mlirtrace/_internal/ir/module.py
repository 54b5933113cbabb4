"""The migraphx program of one fused op: an ordered list of instructions.

Each instruction has a local name (``@4``, ``y0``), an op name, attributes in the
order MIGraphX prints them, input names and an output :class:`Shape`.
Building through :meth:`Module.add` runs the op's shape rule, so a module that
was built is a module that verifies.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .dtypes import DType
from .dtypes import dtype as _dtype
from .instruction import Instruction, IRError
from .ops import RULES, compiled_op, infer_shape
from .printer import print_module
from .shape import Shape

VIEW_OPS = frozenset({"multibroadcast", "broadcast", "transpose", "reshape", "contiguous", "slice",
                      "squeeze", "unsqueeze", "reshape_lazy"})
# Ops MIGraphX leaves out of the fused function's symbol name (gen::generate_name_from_ops).
_UNNAMED_OPS = frozenset({"contiguous", "multibroadcast", "identity"})


@dataclass
class Module:
    name: str | None = None              # e.g. "mlir_main:pointwise4"; prefixes instruction names when printed
    instructions: list[Instruction] = field(default_factory=list)
    target_id: bool = True               # newer MIGraphX prints ", target_id=0" after each instruction
    # how MIGraphX printed it (ir.printer.TextStyle: header, prefixes, older attribute names, ...), to print it back
    text_style: object = field(default=None, compare=False, repr=False)

    # ---- lookup -------------------------------------------------------------
    def get(self, name: str) -> Instruction:
        for ins in self.instructions:
            if ins.name == name:
                return ins
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        return any(i.name == name for i in self.instructions)

    def params(self) -> list[Instruction]:
        """Parameters sorted by name, the order MIGraphX gives the fused function's arguments."""
        return sorted((i for i in self.instructions if i.op == "@param"), key=lambda i: i.param)

    def returns(self) -> list[str]:
        for ins in self.instructions:
            if ins.op == "@return":
                return list(ins.inputs)
        # A module without @return returns its last instruction.
        return [self.instructions[-1].name] if self.instructions else []

    def output_shapes(self) -> list[Shape]:
        return [self.get(n).shape for n in self.returns()]

    def ops(self) -> list[str]:
        return [i.op for i in self.instructions if not i.op.startswith("@")]

    def symbol_name(self) -> str:
        """``mlir_<op names joined by _>`` as MIGraphX names the fused function (``mlir_noop`` if none)."""
        names = [op for op in self.ops() if op not in _UNNAMED_OPS]
        return "mlir_" + ("_".join(names) if names else "noop")

    def host_bytes(self) -> int:
        """An upper estimate of the host memory one checked run of this module takes, computed from the
        shapes alone (nothing is allocated): every parameter's random input and its packed copy for the
        kernel (storage type), the numpy oracle's value of every instruction (computed in 8-byte
        float64/int64), and every output twice (the oracle's and the kernel's, storage type)."""
        total = 0
        for ins in self.instructions:
            if ins.shape is None or ins.op == "@return":
                continue
            n = ins.shape.elements
            total += 8 * n                                   # the oracle's compute value
            if ins.op == "@param":
                total += 2 * n * ins.shape.dtype.itemsize    # the input and its packed copy
        for s in self.output_shapes():
            if s is not None:
                total += 2 * s.elements * s.dtype.itemsize
        return total

    def users(self, name: str) -> list[Instruction]:
        return [i for i in self.instructions if name in i.inputs]

    def copy(self) -> Module:
        return copy.deepcopy(self)

    # ---- building -----------------------------------------------------------
    def _fresh(self) -> str:
        n = len(self.instructions)
        while f"@{n}" in self:
            n += 1
        return f"@{n}"

    def add_param(self, param: str, dt: str | DType, lens, strides=None, name: str | None = None) -> str:
        name = name or param
        if name in self:
            raise IRError(f"{name}: a second instruction with this name")
        self.instructions.append(Instruction(name, "@param", param=param, shape=Shape.of(dt, lens, strides)))
        return name

    def add_literal(self, values, dt: str | DType, lens=None, strides=None, name: str | None = None) -> str:
        dt = _dtype(dt)
        arr = np.asarray(values)
        lens = tuple(arr.shape) if lens is None else tuple(lens)
        arr = np.broadcast_to(arr, lens) if arr.size == 1 and lens else arr.reshape(lens)
        name = name or self._fresh()
        self.instructions.append(Instruction(name, "@literal", literal=np.array(arr),
                                             shape=Shape.of(dt, lens, strides)))
        return name

    def add(self, op: str, *inputs: str, name: str | None = None, **attrs) -> str:
        name = name or self._fresh()
        if name in self:
            raise IRError(f"{name}: a second instruction with this name")
        for i in inputs:
            if i not in self:
                raise IRError(f"{name} = {op}: input {i} is not defined before it")
        shapes = [self.get(i).shape for i in inputs]
        if any(s is None for s in shapes):
            raise IRError(f"{name} = {op}: an input has no value")
        ins = Instruction(name, op, list(inputs), dict(attrs))
        ins.shape = infer_shape(ins, shapes)
        self.instructions.append(ins)
        return name

    def add_return(self, *inputs: str) -> str:
        for i in inputs:
            if i not in self:
                raise IRError(f"@return: input {i} is not defined before it")
        name = self._fresh()
        self.instructions.append(Instruction(name, "@return", list(inputs)))
        return name

    # ---- checking -----------------------------------------------------------
    def verify(self) -> None:
        """Re-run every shape rule; raise :class:`IRError` naming the first bad instruction."""
        seen: dict[str, Shape | None] = {}
        for ins in self.instructions:
            if ins.name in seen:
                raise IRError(f"{ins.name}: a second instruction with this name")
            for i in ins.inputs:
                if i not in seen:
                    raise IRError(f"{ins.name} = {ins.op}: input {i} is not defined before it")
            if ins.op in ("@param", "@literal"):
                if ins.shape is None:
                    ex = getattr(self.text_style, "ins", {}).get(ins.name)
                    if ex is not None and ex.shape_text is not None:
                        raise IRError(f"{ins.name} = {ins.op}: shape {ex.shape_text!r} is not a tensor shape here "
                                      "(dynamic, tuple, symbolic, or an element type with no dtype here)")
                    raise IRError(f"{ins.name}: {ins.op} without a shape")
                if ins.op == "@literal" and ins.literal is None and not self._compiled():
                    # MIGraphX prints a literal of more than 10 elements as {{ ... }}: a program without its values
                    raise IRError(f"{ins.name} = @literal{{ ... }}: its values were left out of the printout "
                                  "(MIGraphX elides literals of more than 10 elements)")
            elif ins.op != "@return":
                if any(seen[i] is None for i in ins.inputs):
                    raise IRError(f"{ins.name} = {ins.op}: an input has no value")
                self.verify_instruction(ins)
            seen[ins.name] = ins.shape

    def _compiled(self) -> bool:
        """A compiled program (gpu::/ref::/hip:: ops): refused to run as such, whatever else it lacks."""
        return any(compiled_op(i.op) for i in self.instructions)

    def verify_instruction(self, ins: Instruction) -> None:
        """Check one instruction against its op's shape rule (ops without a rule keep their printed shape)."""
        if ins.op.startswith("@") or ins.op not in RULES:
            return
        want = infer_shape(ins, [self.get(i).shape for i in ins.inputs])
        if ins.shape is None:
            ins.shape = want
        elif want.lens != ins.shape.lens or want.dtype != ins.shape.dtype:
            raise IRError(f"{ins.name} = {ins.op}: printed shape {ins.shape} does not match the op's rule, "
                          f"expected {want}")

    def unsupported_ops(self) -> list[str]:
        return sorted({i.op for i in self.instructions if not i.op.startswith("@") and i.op not in RULES})

    def __str__(self) -> str:
        return print_module(self)
