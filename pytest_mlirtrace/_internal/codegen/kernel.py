"""Pieces every kernel kind shares: arguments, the header comment, leaf rendering, the epilogue."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import Module
from . import expr as E
from .analysis import Analysis
from .cgen import (
    DagEmitter,
    Helpers,
    LaneOffsets,
    compute,
    lane,
    lane_refs,
    load_scalar,
    load_vector,
    round_to,
    storage,
    store_value,
    store_vector,
    vectorizable,
    vt,
)
from .element_dag import Dag
from .spec import ArgBinding

BUILD_OPTIONS = "-cl-std=CL1.2 -cl-mad-enable"
# the same with the compiler's optimisations off: the fuzz's ``--build fast`` (PoCL builds and first-launch
# compiles are most of a fuzz case's time; the kernel's text, and so what the code generator got right or
# wrong, is the same)
FAST_BUILD_OPTIONS = BUILD_OPTIONS + " -cl-opt-disable"


def c_name(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    return s if s and not s[0].isdigit() else f"k_{s}"


@dataclass
class Ctx:
    """Per-kernel state: helpers used, argument names, extra top-level text."""
    an: Analysis
    helpers: Helpers = field(default_factory=Helpers)
    pnames: dict = field(default_factory=dict)     # module param name -> C name
    needs_fp64: bool = False
    faults: frozenset = frozenset()                # [fault hook] planted faults the leaves see (conv_pad_edge)
    mma: str = ""                                  # the device's matrix-core instructions (DeviceLimits.mma)

    def __post_init__(self):
        for i, p in enumerate(self.an.module.params()):
            self.pnames[p.param] = f"p{i}"
        for n in self.an.dag.nodes:
            if n.dtype.name == "f64":
                self.needs_fp64 = True

    @property
    def dag(self) -> Dag:
        return self.an.dag

    def args(self) -> list[ArgBinding]:
        out = []
        for p in self.an.module.params():
            s = p.shape
            out.append(ArgBinding("input", self.pnames[p.param], s.dtype.name, param=p.param, lens=tuple(s.lens),
                                  strides=tuple(s.strides), elements=s.element_space,
                                  nbytes=s.element_space * s.dtype.itemsize, ctype=storage(s.dtype)))
        for j, (index, dt, lens) in enumerate(self._outputs()):
            ne = int(np.prod(lens)) if lens else 1
            out.append(ArgBinding("output", f"out{j}", dt.name, index=index, lens=tuple(lens), strides=(),
                                  elements=ne, nbytes=ne * dt.itemsize, ctype=storage(dt)))
        return out

    def _outputs(self) -> list:
        """(index into ``module.returns()``, dtype, lens) of every output, the kernel's out0, out1, ..."""
        an = self.an
        rets = an.module.returns()
        return [(rets.index(an.out_name), an.out_dtype, an.out_lens)] + [
            (x.index, x.dtype, x.lens) for x in an.extra_outputs]

    def signature(self) -> str:
        parts = []
        for p in self.an.module.params():
            parts.append(f"__global const {storage(p.shape.dtype)}* restrict {self.pnames[p.param]}")
        for j, (_, dt, _) in enumerate(self._outputs()):
            parts.append(f"__global {storage(dt)}* restrict out{j}")
        return ", ".join(parts)

    def tables(self) -> str:
        out = []
        for name, arr in self.dag.tables.items():
            if arr.dtype.kind == "f":
                vals = ", ".join(_float_text(float(v), arr.dtype) for v in arr)
            elif arr.dtype.kind == "b":
                vals = ", ".join("1" if v else "0" for v in arr)
            else:
                vals = ", ".join(str(int(v)) for v in arr)
            ct = {"float32": "float", "float64": "double", "float16": "ushort"}.get(str(arr.dtype))
            if ct is None:
                ct = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
                      "uint32": "uint", "int64": "long", "uint64": "ulong", "bool": "uchar"}[str(arr.dtype)]
            if str(arr.dtype) == "float16":
                vals = ", ".join(str(int(v)) for v in arr.view(np.uint16))
            out.append(f"__constant {ct} {name}[{arr.size}] = {{{vals}}};\n")
        return "".join(out)

    # -------------------------------------------------------------- leaves --
    def load(self, node, off_c: str) -> str:
        if node.kind == "idx":      # an index expression's value (unpack's nibble select)
            return f"(long)({off_c})"
        if node.kind == "inb":
            # [fault hook] conv_pad_edge: the bound is off by one, a read just past the edge counts as inside
            cmp = "<=" if "conv_pad_edge" in self.faults else "<"
            return f"(int)((uint)({off_c}) {cmp} {int(node.value)}u)"
        ptr = self.pnames[node.param] if node.kind == "load" else node.param
        return load_scalar(self.helpers, node.dtype, ptr, off_c)

    def load_lanes(self, node, offs) -> str:
        if node.kind == "inb":
            lanes = [offs[ln] for ln in range(len(offs))]
            return f"({vt('int', len(lanes))})({', '.join(self.load(node, o) for o in lanes)})"
        ptr = self.pnames[node.param] if node.kind == "load" else node.param
        return load_vector(self.helpers, node.dtype, ptr, offs)


def _float_text(v: float, dt) -> str:
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return v.hex() + ("f" if dt == np.float32 else "")


def render(off: E.Lin, subst: dict, names: dict) -> str:
    """C text of ``off`` after substituting variables (Lin) and renaming them (C expressions)."""
    return E.to_c(E.substitute(off, subst), names)


def lanes_of(off: E.Lin, lane_subst, w: int):
    """The offsets of ``w`` lanes (``lane_subst(l) -> (subst, names)``): a :class:`LaneOffsets` when
    lane l is lane 0 plus l*stride, else a list of C offsets."""
    lins = []
    for ll in range(w):
        s, nm = lane_subst(ll)
        lins.append((E.substitute(off, s), nm))
    if w > 1:
        d = [lins[ll][0] + lins[0][0] * -1 for ll in range(w)]
        if all(x.is_const for x in d) and all(d[ll].const == ll * d[1].const for ll in range(w)):
            return LaneOffsets(E.to_c(lins[0][0], lins[0][1]), d[1].const, w)
    return [E.to_c(x, nm) for x, nm in lins]


def header(module: Module, an: Analysis, solution, faults, kernel_name: str) -> str:
    p = an.problem
    lines = [
        "// mlirtrace generated OpenCL C kernel",
        f"// module: {module.symbol_name()}" + (f" ({module.name})" if module.name else ""),
        f"// kernel: {kernel_name}",
        f"// kind: {p.kind}",
        f"// problem: {p.key()}",
        f"// solution: {solution} ({solution.describe()})",
        f"// output: {an.out_name} {an.out_dtype.name} {list(an.out_lens)}",
    ]
    if faults:
        lines.append(f"// injected faults: {','.join(sorted(faults))}")
    return "\n".join(lines) + "\n"


def assemble(ctx: Ctx, module: Module, solution, faults, kernel_name: str, attrs: str, body: list[str],
             prelude: str = "") -> str:
    text = header(module, ctx.an, solution, faults, kernel_name)
    if ctx.needs_fp64:
        text += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    text += "#define MINI(a, b) ((a) < (b) ? (a) : (b))\n"
    text += ctx.helpers.text() + ctx.tables() + prelude
    text += f"__kernel {attrs}\nvoid {kernel_name}({ctx.signature()}) {{\n"
    text += "".join(f"  {line}\n" if line else "\n" for line in body)
    text += "}\n"
    return text


# ------------------------------------------------------------ epilogue --
def emit_output(ctx: Ctx, acc_value, w: int, lane_subst, out_lane_subst, store_lane,
                prefix: str, only_primary: bool = False, anchor_values: dict | None = None) -> list[str]:
    """Compute the output DAG for ``w`` lanes and store them.

    ``acc_value(w, l)`` -> C expr of the anchor value (vector when l is None, lane l otherwise, compute type).
    ``lane_subst(l)`` -> (subst, names) for the kernel variables at lane ``l`` (loads);
    ``out_lane_subst(l)`` the same for the output offset.
    ``store_lane(l, target, value_c)`` -> statement storing lane ``l`` into the lvalue ``target``
    (value already in storage type).  ``anchor_values``: anchor name -> a C scalar holding its value, for
    kernels with several anchors (sibling reductions); the others take ``acc_value``.
    """
    an = ctx.an
    lines: list[str] = []
    targets = [(an.epilogue, an.out_offset, an.out_dtype)] + (
        [] if only_primary else [(x.root, x.offset, x.dtype) for x in an.extra_outputs])
    for j, (root, offset, dt) in enumerate(targets):
        lines += _emit_one(ctx, root, offset, dt, f"out{j}", acc_value, w, lane_subst, out_lane_subst, store_lane,
                           prefix if j == 0 else f"{prefix}{j}_", anchor_values or {})
    return lines


def _emit_one(ctx: Ctx, root: int, offset, out_dtype, ptr: str, acc_value, w: int, lane_subst, out_lane_subst,
              store_lane, prefix: str, anchor_values: dict) -> list[str]:
    """One output of :func:`emit_output`: the DAG ``root`` stored at ``offset`` of ``ptr``."""
    dag = ctx.an.dag
    h = ctx.helpers
    lines: list[str] = []
    vec = w > 1 and vectorizable(dag, [root])
    outs = lane_refs(ptr, lanes_of(offset, out_lane_subst, w))

    def leaf_for(ln):
        def leaf(_i, n):
            if n.kind == "acc" and n.op in anchor_values:
                v = anchor_values[n.op]
                if ln is None and w > 1:
                    v = f"({vt(compute(n.dtype), w)})({v})"
                return round_to(h, n.dtype, v, w if ln is None else 1)
            if n.kind == "acc":
                v = acc_value(w if ln is None else 1, ln)
                if compute(n.dtype) != "float":
                    v = f"({compute(n.dtype)})({v})"
                return round_to(h, n.dtype, v, w if ln is None else 1)
            if ln is None:
                return ctx.load_lanes(n, lanes_of(n.offset, lane_subst, w))
            s, nm = lane_subst(ln)
            return ctx.load(n, render(n.offset, s, nm))
        return leaf

    if vec:
        em = DagEmitter(dag, h, leaf_for(None), w, prefix=f"{prefix}v")
        val = em.emit(root)
        lines += em.lines
        sv = f"{prefix}s"
        lines.append(f"const {vt(storage(out_dtype), w)} {sv} = {store_vector(h, out_dtype, val, w)};")
        for ll in range(w):
            lines.append(store_lane(ll, outs[ll], f"{sv}.{lane(ll)}"))
        return lines
    for ll in range(w):
        em = DagEmitter(dag, h, leaf_for(ll if w > 1 else 0), 1, prefix=f"{prefix}l{ll}_")
        val = em.emit(root)
        lines += em.lines
        lines.append(store_lane(ll, outs[ll], store_value(h, out_dtype, val)))
    return lines


__all__ = ["Ctx", "render", "assemble", "emit_output", "c_name", "BUILD_OPTIONS", "FAST_BUILD_OPTIONS", "compute",
           "vt"]
