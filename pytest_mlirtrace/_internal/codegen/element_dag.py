"""From a module to an element-wise expression DAG with views folded into index maps.

``Builder.value(name, idx)`` returns the DAG node computing the element of
instruction ``name`` at index vector ``idx`` (one :class:`~.expr.Lin` per dim).
Views rewrite ``idx`` (backward: output index -> input index), pointwise ops
become :class:`Node` ops, parameters become loads at ``sum(idx_i * stride_i)``.
The fused op's anchor (the dot, the reduction) is handed to a callback of the
kernel kind, which checks that it is read at the kernel's own coordinates.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import prod

import numpy as np

from ..ir import CONV_OPS, GEMM_OPS, POINTWISE_OPS, VIEW_OPS, Instruction, Module
from ..ir.dtypes import BY_NAME, DType
from ..ir.ops import conv_params
from . import expr as E
from .errors import NotSupported

# biggest non-uniform literal embedded as a __constant table
MAX_TABLE = 16384


@dataclass(frozen=True)
class Node:
    kind: str                 # load | const | table | op | acc | inb | idx | dot
    # idx: the value of the index expression ``offset`` (an int; unpack's nibble select: the output index's
    # parity along its axis)
    # dot: an inline dot product, sum over the loop variable ``op`` (0 .. value-1) of args[0] * args[1];
    # the two operand DAGs index with that variable (a gemm fused inside a reduction or an attention)
    # inb: 1 when ``offset`` (a padded input index, may be negative) lies in 0 .. value-1, else 0: a
    # convolution's padding reads its input at a clamped index and selects 0 where this is 0
    dtype: DType
    args: tuple = ()          # input node ids (op)
    op: str = ""              # op name (op), anchor name (acc)
    param: str = ""           # parameter name (load), table name (table)
    offset: E.Lin | None = None
    value: object = None      # const value; (target dtype name) for convert

    def key(self):
        return (self.kind, self.dtype.name, self.args, self.op, self.param,
                None if self.offset is None else self.offset.key(), self.value)


@dataclass
class Dag:
    nodes: list[Node] = field(default_factory=list)
    _ids: dict = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict)   # name -> flat array (storage dtype)

    def add(self, node: Node) -> int:
        k = node.key()
        if k not in self._ids:
            self._ids[k] = len(self.nodes)
            self.nodes.append(node)
        return self._ids[k]

    def loads(self, roots) -> list[int]:
        return [i for i in self.reachable(roots) if self.nodes[i].kind == "load"]

    def reachable(self, roots) -> list[int]:
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(self.nodes[i].args)
        return sorted(seen)


def row_major_weights(lens) -> list[int]:
    w, acc = [], 1
    for n in reversed(list(lens)):
        w.append(acc)
        acc *= max(int(n), 1)
    return list(reversed(w))


def linearize(idx, lens) -> E.Lin:
    out = E.ZERO
    for i, w in zip(idx, row_major_weights(lens), strict=False):
        out = out + i * w
    return out


def delinearize(flat: E.Lin, lens) -> list[E.Lin]:
    ws = row_major_weights(lens)
    out = []
    for j, (n, w) in enumerate(zip(lens, ws, strict=False)):
        v = E.fdiv(flat, w)
        if j > 0:
            v = E.fmod(v, n)
        if n == 1:
            v = E.ZERO
        out.append(v)
    return out


def index_vars(prefix: str, lens) -> list[E.Lin]:
    return [E.var(f"{prefix}{i}", n) for i, n in enumerate(lens)]


def _slice_starts(ins: Instruction, lens) -> dict[int, int]:
    out = {}
    rank = len(lens)
    for a, b in zip(ins.attrs["axes"], ins.attrs["starts"], strict=False):
        a %= rank
        n = lens[a]
        out[a] = max(0, min(n, b + n if b < 0 else b))
    return out


def _squeeze_axes(ins: Instruction, in_lens) -> list[int]:
    axes = ins.attrs.get("axes", [])
    if isinstance(axes, int):
        axes = [axes]
    if not axes:
        return [i for i, n in enumerate(in_lens) if n == 1]
    return sorted(a % len(in_lens) for a in axes)


def _unsqueeze_axes(ins: Instruction, out_rank) -> list[int]:
    axes = ins.attrs.get("axes", [])
    if isinstance(axes, int):
        axes = [axes]
    return sorted(a % out_rank for a in axes)


def view_back(ins: Instruction, in_lens, idx: list[E.Lin]) -> list[E.Lin]:
    """Index into the view's input for index ``idx`` of its output."""
    op, out_lens = ins.op, ins.shape.lens
    if op == "contiguous":
        return list(idx)
    if op == "transpose":
        perm = ins.attrs["permutation"]
        res = [E.ZERO] * len(perm)
        for j, p in enumerate(perm):
            res[p] = idx[j]
        return res
    if op == "multibroadcast":
        off = len(out_lens) - len(in_lens)
        return [idx[off + i] if n == out_lens[off + i] else E.ZERO for i, n in enumerate(in_lens)]
    if op == "broadcast":
        axis = ins.attrs.get("axis", 0)
        return [idx[axis + i] if n != 1 else E.ZERO for i, n in enumerate(in_lens)]
    if op == "slice":
        res = list(idx)
        for a, b in _slice_starts(ins, in_lens).items():
            res[a] = res[a] + b
        return res
    if op == "squeeze":
        axes = _squeeze_axes(ins, in_lens)
        it = iter(idx)
        return [E.ZERO if i in axes else next(it) for i in range(len(in_lens))]
    if op == "unsqueeze":
        axes = set(_unsqueeze_axes(ins, len(out_lens)))
        return [x for j, x in enumerate(idx) if j not in axes]
    if op in ("reshape", "reshape_lazy"):
        return delinearize(linearize(idx, out_lens), in_lens)
    raise NotSupported(f"{ins.name} = {op}: view op {op!r} is not supported by the code generator")


def view_forward(ins: Instruction, in_lens, idx: list[E.Lin]) -> list[E.Lin]:
    """Index into the view's output for index ``idx`` of its input (invertible views only)."""
    op, out_lens = ins.op, ins.shape.lens
    if op == "contiguous":
        return list(idx)
    if op == "transpose":
        return [idx[p] for p in ins.attrs["permutation"]]
    if op == "squeeze":
        axes = _squeeze_axes(ins, in_lens)
        return [x for i, x in enumerate(idx) if i not in axes]
    if op == "unsqueeze":
        axes = set(_unsqueeze_axes(ins, len(out_lens)))
        it = iter(idx)
        return [E.ZERO if j in axes else next(it) for j in range(len(out_lens))]
    if op in ("reshape", "reshape_lazy"):
        return delinearize(linearize(idx, in_lens), out_lens)
    if op == "multibroadcast" and tuple(in_lens) == tuple(out_lens[len(out_lens) - len(in_lens):]) \
            and all(n == 1 for n in out_lens[:len(out_lens) - len(in_lens)]):
        return [E.ZERO] * (len(out_lens) - len(in_lens)) + list(idx)
    raise NotSupported(f"{ins.name} = {op}: a {op} after the fused op's anchor is not supported "
                       "(only transpose/reshape/squeeze/unsqueeze/contiguous may follow it)")


class Builder:
    """Builds DAG nodes for the values of ``module``; ``anchors`` maps instruction name -> callback(idx)."""

    def __init__(self, module: Module, anchors: dict[str, Callable[[list[E.Lin]], int]] | None = None,
                 dag: Dag | None = None, inline_dots: bool = False):
        self.m = module
        self.anchors = anchors or {}
        self.dag = dag or Dag()
        self._memo: dict = {}
        # a dot reached here becomes an inline dot node (its K loop runs where its value is needed)
        self.inline_dots = inline_dots

    def value(self, name: str, idx: list[E.Lin]) -> int:
        key = (name, tuple(i.key() for i in idx))
        if key in self._memo:
            return self._memo[key]
        r = self._value(self.m.get(name), list(idx))
        self._memo[key] = r
        return r

    def _value(self, ins: Instruction, idx: list[E.Lin]) -> int:
        dag = self.dag
        if ins.name in self.anchors:
            return self.anchors[ins.name](idx)
        if ins.op == "@param":
            off = E.ZERO
            for i, (n, s) in zip(idx, zip(ins.shape.lens, ins.shape.strides, strict=False), strict=False):
                if n > 1:
                    off = off + i * s
            return dag.add(Node("load", ins.shape.dtype, param=ins.param, offset=off))
        if ins.op == "@literal":
            dt = ins.shape.dtype
            lit = np.broadcast_to(ins.literal, ins.shape.lens).astype(dt.np)
            flat = lit.reshape(-1)
            if flat.size == 0:
                raise NotSupported(f"{ins.name} = @literal: empty literal")
            if np.all(flat == flat[0]) or (dt.is_float and np.all(np.isnan(flat))):
                v = flat[0].item()
                return dag.add(Node("const", dt, value=v))
            if flat.size > MAX_TABLE:
                raise NotSupported(f"{ins.name} = @literal: non-uniform literal of {flat.size} elements "
                                   f"(at most {MAX_TABLE} are embedded)")
            tname = f"lit{len(dag.tables)}"
            for k, v in dag.tables.items():
                if v.dtype == flat.dtype and v.shape == flat.shape and np.array_equal(v, flat):
                    tname = k
                    break
            dag.tables[tname] = np.ascontiguousarray(flat)
            return dag.add(Node("table", dt, param=tname, offset=linearize(idx, ins.shape.lens)))
        if ins.op in VIEW_OPS:
            src = self.m.get(ins.inputs[0])
            return self.value(src.name, view_back(ins, src.shape.lens, idx))
        if ins.op == "unpack":
            # output index j along the axis reads byte j/2 of the input, its low nibble when j is even
            axis = ins.attrs.get("axis", -1) % len(idx)
            src_idx = list(idx)
            src_idx[axis] = E.fdiv(idx[axis], 2)
            byte = self.value(ins.inputs[0], src_idx)
            odd = dag.add(Node("idx", BY_NAME["i32"], offset=E.fmod(idx[axis], 2)))
            unsigned = "u" if ins.attrs.get("isUnsigned", False) else "s"
            return dag.add(Node("op", ins.shape.dtype, args=(byte, odd), op="unpack", value=unsigned))
        if ins.op in POINTWISE_OPS:
            args = tuple(self.value(i, idx) for i in ins.inputs)
            val = ins.shape.dtype.name if ins.op == "convert" else None
            return dag.add(Node("op", ins.shape.dtype, args=args, op=ins.op, value=val))
        if self.inline_dots and ins.op in GEMM_OPS:
            return self.inline_dot(ins, idx)
        if self.inline_dots and ins.op in CONV_OPS:
            return self.inline_conv(ins, idx)
        raise NotSupported(f"{ins.name} = {ins.op}: {ins.op!r} cannot be fused here "
                           f"(this kernel kind takes pointwise ops and views around its anchor)")

    def inline_dot(self, ins: Instruction, idx: list[E.Lin]) -> int:
        """The dot ``ins`` at ``idx`` as an inline dot node: its operands built at (batch, m, kv) and
        (batch, kv, n) with a loop variable ``kv`` of its own."""
        a, b = self.m.get(ins.inputs[0]), self.m.get(ins.inputs[1])
        K = a.shape.lens[-1]
        # named for the instruction: the same dot built twice (the softmax's numerator and its sum) is
        # one node
        kname = "kd_" + "".join(c if c.isalnum() else "_" for c in ins.name)
        kv = E.var(kname, K)
        batch, mi, ni = list(idx[:-2]), idx[-2], idx[-1]
        ar = self.value(a.name, batch + [mi, kv])
        br = self.value(b.name, batch + [kv, ni])
        return self.dag.add(Node("dot", ins.shape.dtype, args=(ar, br), op=kname, value=int(K)))

    def inline_conv(self, ins: Instruction, idx: list[E.Lin]) -> int:
        """The convolution ``ins`` at output index ``idx`` (n, k, spatial...) as an inline dot over its
        window: the loop variable runs over (input channel of the group, kernel positions); a padded
        position reads the input at a clamped index and selects 0."""
        x, w = self.m.get(ins.inputs[0]), self.m.get(ins.inputs[1])
        sp = x.shape.rank - 2
        begin, _end, stride, dilation, G = conv_params(ins, sp)
        Cg, ksp, isp = w.shape.lens[1], list(w.shape.lens[2:]), list(x.shape.lens[2:])
        Kg = w.shape.lens[0] // G
        K = Cg * int(prod(ksp))
        kname = "kd_" + "".join(c if c.isalnum() else "_" for c in ins.name)
        kv = E.var(kname, K)
        ci, *y = delinearize(kv, [Cg] + ksp)
        ni, ko, *o = idx
        ar = self.value(w.name, [ko, ci] + y)
        pos = [oj * sj + yj * dj + (-bj) for oj, yj, sj, dj, bj in zip(o, y, stride, dilation, begin, strict=False)]
        clamped = [E.clamp(p, 0, size - 1) for p, size in zip(pos, isp, strict=False)]
        br = self.value(x.name, [ni, E.fdiv(ko, Kg) * Cg + ci] + clamped)
        xdt = x.shape.dtype
        zero = self.dag.add(Node("const", xdt, value=0.0 if xdt.is_float else 0))
        for p, c, size in zip(pos, clamped, isp, strict=False):
            if c.key() != p.key():
                inb = self.dag.add(Node("inb", BY_NAME["bool"], offset=p, value=int(size)))
                br = self.dag.add(Node("op", xdt, args=(inb, br, zero), op="where"))
        return self.dag.add(Node("dot", ins.shape.dtype, args=(ar, br), op=kname, value=int(K)))


def forward_map(module: Module, anchor: str, anchor_idx: list[E.Lin], strict: bool = True) -> dict[str, list[E.Lin]]:
    """For each value reached from ``anchor`` through views and pointwise ops: its index as a function
    of the anchor's index (the coordinates the kernel iterates over).  ``strict``: any other op using
    such a value raises NotSupported (else it is skipped, with what only it reaches)."""
    phi: dict[str, list[E.Lin]] = {anchor: list(anchor_idx)}
    seen = False
    for ins in module.instructions:
        if ins.name == anchor:
            seen = True
            continue
        if not seen or ins.op.startswith("@"):
            continue
        src = [i for i in ins.inputs if i in phi]
        if not src:
            continue
        if ins.op in VIEW_OPS:
            try:
                phi[ins.name] = view_forward(ins, module.get(src[0]).shape.lens, phi[src[0]])
            except NotSupported:
                if strict:
                    raise
        elif ins.op in POINTWISE_OPS:
            phi[ins.name] = phi[src[0]]
        elif strict:
            raise NotSupported(f"{ins.name} = {ins.op}: {ins.op!r} uses the result of {anchor}; only "
                               "pointwise ops and views may follow it in one fused kernel")
    return phi


def same_index(a: list[E.Lin], b: list[E.Lin]) -> bool:
    return len(a) == len(b) and all(x.key() == y.key() for x, y in zip(a, b, strict=False))


def elements(lens) -> int:
    return int(prod(lens)) if lens else 1

