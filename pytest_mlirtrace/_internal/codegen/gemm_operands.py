"""The operands and the edge element of the gemm kernels, shared by the FMA kernels (:mod:`.gemm`) and the
tensor-core kernel (:mod:`.mma`): how an operand's leaves are addressed along K (:class:`Operand`), one element
or one vector of an operand's DAG (:func:`scalar_operand`, :func:`vector_operand`), and one output element at
the tile's edge (:func:`edge_element`)."""
from __future__ import annotations

import numpy as np

from . import expr as E
from .cgen import DagEmitter, compute, vectorizable, vt
from .kernel import Ctx, emit_output


def _kind_of_terms(off: E.Lin, row: str, k: str):
    """Split an operand offset into (row part incl. const and batch, k part, mixed?)."""
    rowp, kp = [], []
    mixed = False
    for a, c in off.terms:
        vs = E.atom_vars(a)
        if row in vs and k in vs:
            mixed = True
        elif k in vs:
            kp.append((a, c))
        else:
            rowp.append((a, c))
    return E.lin(off.const, rowp), E.lin(0, kp), mixed


def _k_mode(kp: E.Lin, K: int, KB: int):
    """('affine', s) | ('chunk', s) | ('general', None) for the k part of an offset."""
    if kp.is_const:
        return "affine", 0
    if kp.vars() != {"k"}:
        return "general", None
    s = E.coeff(kp, "k")
    if s is not None:
        return "affine", s
    ks = np.arange(K, dtype=np.int64)
    f = np.asarray(E.evaluate(kp, {"k": ks}), dtype=np.int64)
    s = int(f[1] - f[0]) if K > 1 else 0
    nfull = (K // KB) * KB
    if nfull == 0:
        return "general", None
    blk = f[:nfull].reshape(-1, KB)
    if np.all(blk - blk[:, :1] == s * np.arange(KB)[None, :]):
        return "chunk", s
    return "general", None


class Operand:
    """Rendering of one GEMM operand's leaves (A: row var 'm', B: row var 'n')."""

    def __init__(self, ctx: Ctx, root: int, row: str, K: int, KB: int, tag: str, faults, transposed: bool,
                 inner_extent: int):
        self.ctx, self.root, self.row, self.tag = ctx, root, row, tag
        dag = ctx.dag
        self.leaves = [i for i in dag.reachable([root]) if dag.nodes[i].kind in ("load", "table", "inb")]
        self.plan = {}
        # [fault hook] conv_group_stride: the input's (B's) group offset is dropped, every group reads group 0
        drop_group = "conv_group_stride" in faults and row == "n" and bool(ctx.an.problem.conv)
        for i in self.leaves:
            off = dag.nodes[i].offset
            if drop_group and dag.nodes[i].kind == "load":
                off = E.substitute(off, {"gb": E.ZERO})
            if "wrong_transpose_stride" in faults and transposed and dag.nodes[i].kind != "inb":
                inner = "k" if row == "m" else "n"
                c = E.coeff(off, inner)
                if c not in (None, 0, 1):
                    off = E.lin(off.const, [(a, (inner_extent if (isinstance(a, E.Var) and a.name == inner) else k))
                                            for a, k in off.terms])
            rp, kp, mixed = _kind_of_terms(off, row, "k")
            mode = ("general", None) if mixed else _k_mode(kp, K, KB)
            self.plan[i] = (off, rp, kp, mixed, mode)


def scalar_operand(ctx: Ctx, op: Operand, leaf_off, acc_t: str, prefix: str, lines: list[str]) -> str:
    """Emit the operand's DAG for one element; ``leaf_off(i)`` gives the C offset of leaf node i."""
    dag = ctx.dag
    node = dag.nodes[op.root]
    if node.kind in ("load", "table"):
        v = ctx.load(node, leaf_off(op.root))
        return f"({acc_t})({v})" if compute(node.dtype) != acc_t else v
    em = DagEmitter(dag, ctx.helpers, lambda i, n: ctx.load(n, leaf_off(i)), 1, prefix=prefix)
    v = em.emit(op.root)
    lines += em.lines
    return f"({acc_t})({v})" if compute(node.dtype) != acc_t else v


def vector_operand(ctx: Ctx, op: Operand, leaf_offs, acc_t: str, w: int, prefix: str, lines: list[str]) -> str:
    """The operand's DAG for ``w`` lanes as an ``acc_t``-vector; ``leaf_offs(i)`` -> list of C offsets."""
    dag = ctx.dag
    node = dag.nodes[op.root]
    V = vt(acc_t, w)
    if node.kind in ("load", "table"):
        v = ctx.load_lanes(node, leaf_offs(op.root))
        if w == 1 and compute(node.dtype) != acc_t:
            v = f"({acc_t})({v})"
        return v
    if w > 1 and acc_t == "float" and vectorizable(dag, [op.root]):
        em = DagEmitter(dag, ctx.helpers, lambda i, n: ctx.load_lanes(n, leaf_offs(i)), w, prefix=prefix)
        v = em.emit(op.root)
        lines += em.lines
        return v
    parts = []
    for ll in range(w):
        em = DagEmitter(dag, ctx.helpers, lambda i, n, ll=ll: ctx.load(n, leaf_offs(i)[ll]), 1,
                        prefix=f"{prefix}{ll}_")
        parts.append(f"({acc_t})({em.emit(op.root)})")
        lines += em.lines
    return parts[0] if w == 1 else f"({V})({', '.join(parts)})"


def edge_element(ctx: Ctx, M: int, N: int, acc: str) -> list[str]:
    """The epilogue of the one output element at (``row``, ``col``), the accumulator ``acc``, its other
    inputs read at (``row``, ``colc``): the body of an edge loop, whose guards are the caller's."""
    gbv = {"gb": "gb"}
    mvar, nvar = E.var("mm", M), E.var("nn", N)

    def at(col: str):
        return lambda _ll: ({"m": mvar, "n": nvar}, {"mm": "row", "nn": col, **gbv})
    return emit_output(ctx, lambda _w, _lane: acc, 1, at("colc"), at("col"), lambda _ll, t, v: f"{t} = {v};", "s")
