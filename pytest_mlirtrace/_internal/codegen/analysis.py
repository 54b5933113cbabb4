"""What the kernel-kind analyser (:mod:`.kinds`) hands the kernel generators: :class:`Analysis` (the problem
plus the element DAGs, every view folded into index expressions) and its :class:`Output` s, with the helpers
the kinds share: the gemm-like anchor's epilogue (:func:`gemm_epilogue`), the outputs after the first
(:func:`other_outputs`), whether an operand is stored transposed (:func:`transposed`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Module
from ..ir.dtypes import DType
from . import expr as E
from .element_dag import Builder, Dag, Node, forward_map, linearize, same_index
from .errors import NotSupported
from .problem import Problem


@dataclass(frozen=True)
class Output:
    """A second (third, ...) output of a multi-output module, computed at the primary output's coordinates."""
    index: int                            # into module.returns()
    name: str
    dtype: DType
    lens: tuple
    offset: E.Lin                         # standard-layout offset in the kernel's variables
    root: int                             # DAG root of its value


@dataclass
class Analysis:
    module: Module
    kind: str
    problem: Problem
    dag: Dag
    out_name: str                         # the returned instruction
    out_dtype: DType
    out_lens: tuple
    out_offset: E.Lin                     # standard-layout output offset in the kernel's variables
    epilogue: int                         # DAG root of the output value
    # gemm
    dot: str = ""
    a_root: int = -1
    b_root: int = -1
    acc_dtype: DType | None = None
    batch_lens: tuple = ()
    # reduce / softmax
    anchor: str = ""
    pre_root: int = -1
    out_per_group: bool = True            # reduce: one output element per reduction
    reduce_op: str = ""
    # pointwise
    rows: int = 1
    cols: int = 1
    info: dict = field(default_factory=dict)
    # the module's other outputs (gemm and pointwise kinds), stored as out1, out2, ...
    extra_outputs: list = field(default_factory=list)


def ancestors(module: Module, name: str) -> set[str]:
    out: set[str] = set()
    stack = list(module.get(name).inputs)
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(module.get(n).inputs)
    return out


def reduced_axes(red, rank: int) -> list[int]:
    return [red.attrs.get("axis", 1) % rank] if red.op == "softmax" else sorted({a % rank for a in red.attrs["axes"]})


def first_load(dag: Dag, root: int) -> Node | None:
    loads = dag.loads([root])
    return dag.nodes[loads[0]] if loads else None


def stride_of(off: E.Lin, name: str, env0: dict) -> int:
    a = E.evaluate(off, env0)
    env1 = dict(env0)
    env1[name] = 1
    return int(E.evaluate(off, env1) - a)


def gemm_epilogue(module: Module, dag: Dag, anchor_ins, acc_idx: list, what: str, ret: str | None = None):
    """(output name, its index in the kernel's variables, the DAG root of its value) of a gemm-like anchor
    (a dot, a convolution) computed at ``acc_idx``, with the views and pointwise ops that follow it.
    ``ret``: which output (default the first)."""
    ret = ret or module.returns()[0]
    phi = forward_map(module, anchor_ins.name, acc_idx)
    if ret not in phi:
        raise NotSupported(f"the output {ret} does not use the {what} {anchor_ins.name}")

    def anchor(idx):
        if not same_index(idx, acc_idx):
            raise NotSupported(f"{anchor_ins.name} = {anchor_ins.op}: its result is read at a different index "
                               "than the one computed (e.g. a transpose of the result combined with itself)")
        return dag.add(Node("acc", anchor_ins.shape.dtype, op=anchor_ins.name))

    out_idx = phi[ret]
    b = Builder(module, anchors={anchor_ins.name: anchor}, dag=dag)
    return ret, out_idx, b.value(ret, out_idx)


def other_outputs(module: Module, value, index_of) -> list:
    """The module's outputs after the first, each computed by ``value(name, idx)`` at ``index_of(name)``
    (None: not at the kernel's coordinates, then the module is not lowered)."""
    out = []
    for i, r in enumerate(module.returns()[1:], start=1):
        idx = index_of(r)
        if idx is None:
            return out
        ins = module.get(r)
        out.append(Output(i, r, ins.shape.dtype, tuple(ins.shape.lens), linearize(idx, ins.shape.lens),
                          value(r, idx)))
    return out


def gemm_extras(module: Module, dag: Dag, anchor_ins, acc_idx: list) -> list:
    if len(module.returns()) == 1:
        return []
    phi = forward_map(module, anchor_ins.name, acc_idx)

    def anchor(idx):
        if not same_index(idx, acc_idx):
            raise NotSupported(f"{anchor_ins.name} = {anchor_ins.op}: its result is read at a different index "
                               "than the one computed")
        return dag.add(Node("acc", anchor_ins.shape.dtype, op=anchor_ins.name))
    b = Builder(module, anchors={anchor_ins.name: anchor}, dag=dag)
    return other_outputs(module, b.value, phi.get)


def transposed(dag: Dag, root: int, inner: str, outer: str, ext_in: int) -> bool:
    """Whether an operand's logically innermost dim ``inner`` is not its fastest storage dim (first load)."""
    ld = first_load(dag, root)
    if ld is None:
        return False
    s_in, s_out = abs(stride_of(ld.offset, inner, {})), abs(stride_of(ld.offset, outer, {}))
    return bool(ext_in > 1 and s_in != 1 and s_out != 0 and (s_out < s_in or s_out == 1))


def trans_flags(dag: Dag, a_root: int, b_root: int, K: int, N: int) -> list[bool]:
    """Whether A's k and B's n are not their fastest storage dims (from their first loads)."""
    return [transposed(dag, a_root, "k", "m", K), transposed(dag, b_root, "n", "k", N)]
