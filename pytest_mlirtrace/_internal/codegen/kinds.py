"""The kernel-kind analyser: ``analyse(module)`` checks what the code generator lowers, classifies the module
(gemm / conv as an implicit gemm / pointwise / reduce / softmax; two gemms: :mod:`.kinds_attention`), builds
the element DAGs with every view folded into index expressions and returns an :class:`~.analysis.Analysis`;
``problem_of(module)`` returns its :class:`~.problem.Problem`.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod

from ..ir import CONV_OPS, GEMM_OPS, REDUCE_OPS, VIEW_OPS, Module
from ..ir.dtypes import BY_NAME, NARROW_FLOATS
from ..ir.ops import conv_params
from . import expr as E
from .analysis import (
    Analysis,
    ancestors,
    first_load,
    gemm_epilogue,
    gemm_extras,
    other_outputs,
    reduced_axes,
    trans_flags,
    transposed,
)
from .decompose import decompose_narrow_gemms, narrow_gemm
from .element_dag import Builder, Dag, Node, delinearize, forward_map, linearize, same_index
from .errors import LoweringError, NotSupported
from .kinds_attention import two_gemms
from .problem import LOWERED_OPS, Problem, conv_key_fields


def _check_ops(module: Module) -> None:
    for ins in module.instructions:
        if ins.op.startswith("@"):
            continue
        if ins.op in LOWERED_OPS:
            continue
        raise NotSupported(f"{ins.name} = {ins.op}: op {ins.op!r} cannot be lowered by the code generator")
    for ins in module.instructions:
        if ins.op == "@literal" and ins.literal is None:
            raise NotSupported(f"{ins.name} = @literal: its values were left out of the printout "
                               "(@literal{ ... }); nothing can run without them")


def _check_narrow(module: Module) -> None:
    """fp8 / fp4 values are read (decoded to float) and f8E8M0FNU scales computed by a convert; no kernel
    computes or stores the others."""
    outs = set(module.returns())
    for ins in module.instructions:
        if ins.op.startswith("@") or ins.shape is None or ins.shape.dtype.name not in NARROW_FLOATS:
            continue
        dt = ins.shape.dtype.name
        if ins.op in VIEW_OPS and ins.name not in outs:
            continue
        if dt == "f8E8M0FNU" and ins.op == "convert":
            continue
        what = "returns" if ins.name in outs else "computes"
        raise NotSupported(f"{ins.name} = {ins.op}: the module {what} {dt} values; kernels only read fp8 / fp4 "
                           "values (decoded to float) and compute f8E8M0FNU scales by a convert")


def _scale_fields(original: Module, decomposed: Module, an: Analysis) -> tuple:
    """The scale fields of a scaled gemm's key (() for other gemms): each scale's type, and whether its
    logically innermost dim (A's k, B's n) is not its fastest storage dim (as transA / transB)."""
    qd = next((i for i in original.instructions if i.name == an.dot and i.op == "quant_dot" and len(i.inputs) == 4),
              None)
    if qd is None:
        return ()
    p = an.problem
    bidx = delinearize(E.var("gb", p.g), an.batch_lens) if an.batch_lens else []
    m, n, k = E.var("m", p.m), E.var("n", p.n), E.var("k", p.k)
    dag = Dag()
    b = Builder(decomposed, dag=dag)
    ra, rb = b.value(qd.inputs[2], bidx + [m, k]), b.value(qd.inputs[3], bidx + [k, n])
    return (("scale_a_dtype", original.get(qd.inputs[2]).shape.dtype.name),
            ("scale_b_dtype", original.get(qd.inputs[3]).shape.dtype.name),
            ("transScaleA", transposed(dag, ra, "k", "m", p.k)), ("transScaleB", transposed(dag, rb, "n", "k", p.n)))


def _live(module: Module) -> list:
    """Instructions the return value depends on, in order."""
    need = set(module.returns())
    for ins in reversed(module.instructions):
        if ins.name in need:
            need.update(ins.inputs)
    return [i for i in module.instructions if i.name in need and not i.op.startswith("@")]


def analyse(module: Module) -> Analysis:
    _check_ops(module)
    _check_narrow(module)
    rets = module.returns()
    narrow = narrow_gemm(module)
    original = module
    if narrow is not None:
        # fp8 / fp4 gemms (scaled or not): converts to f32 (and the scales' muls) fused into the operand loads of
        # an f32 gemm, as rocMLIR decomposes them; the problem keeps the operands' type
        module = decompose_narrow_gemms(module)
    an = _analyse(module)
    if narrow is not None and an.kind == "gemm":
        an.problem = replace(an.problem, dtype=narrow, scales=_scale_fields(original, module, an))
    if an.kind != "pointwise" and any(n.kind == "idx" for n in an.dag.nodes):
        raise NotSupported(f"unpack in a {an.kind} kernel: only pointwise kernels lower it")
    if len(rets) != 1 + len(an.extra_outputs):
        raise NotSupported(f"module returns {len(rets)} values ({', '.join(rets)}); a {an.problem.key_kind} "
                           "kernel has one output (gemm and pointwise kernels store several)")
    return an


def _analyse(module: Module) -> Analysis:
    live = _live(module)
    if any(i.shape is not None and i.shape.elements == 0 for i in live):
        bad = next(i for i in live if i.shape.elements == 0)
        raise NotSupported(f"{bad.name} = {bad.op}: empty tensor {list(bad.shape.lens)}")
    for p in module.params():
        if p.shape.element_space >= 1 << 31:
            raise NotSupported(f"{p.name} = @param: {p.shape.element_space} storage elements do not fit the "
                               "kernels' 32-bit index arithmetic")
    big = next((i for i in live if i.shape is not None and i.shape.elements >= 1 << 31), None)
    if big is not None:
        raise NotSupported(f"{big.name} = {big.op}: {big.shape.elements} elements do not fit the kernels' "
                           "32-bit index arithmetic")
    dots = [i for i in live if i.op in GEMM_OPS or i.op in CONV_OPS]
    reds = [i for i in live if i.op in REDUCE_OPS or i.op == "softmax"]
    if len(dots) > 2:
        names = ", ".join(f"{i.name} = {i.op}" for i in dots)
        raise NotSupported(f"{len(dots)} gemms in one module ({names}): at most two (gemm-gemm, attention) "
                           "are fused")
    if len(dots) == 2:
        return two_gemms(module, dots, reds)
    if dots and reds:
        return _gemm_reduce(module, dots[0], reds)
    if len(reds) > 1:
        return _reduce(module, reds[0], siblings=_siblings(module, reds))
    if dots:
        return _conv(module, dots[0]) if dots[0].op in CONV_OPS else _gemm(module, dots[0])
    if reds:
        return _reduce(module, reds[0])
    return _pointwise(module)


def _gemm_reduce(module: Module, dot, reds) -> Analysis:
    """A gemm whose result feeds one reduction (or softmax): the reduction kernel with the dot computed
    inline (a K loop per element it reads)."""
    red = reds[0]
    siblings = _siblings(module, reds)
    if dot.op in CONV_OPS:
        raise NotSupported(f"{red.name} = {red.op} after the convolution {dot.name}: a convolution fused with "
                           "a reduction is not supported")
    if dot.name not in ancestors(module, red.name):
        raise NotSupported(f"{dot.name} = {dot.op} after the reduction {red.name} = {red.op}: a reduction "
                           "feeding a gemm is only fused as attention (dot -> softmax -> dot)")
    return _reduce(module, red, inline_dots=True, siblings=siblings)


def _siblings(module: Module, reds) -> list:
    """The reductions after the first, when they can share its kernel: each reduces an input of the same lens
    over the same axes, none reads another's result (a variance: sum(x) and sum(x*x)); else NotSupported."""
    if len(reds) == 1:
        return []
    first = reds[0]
    lens = tuple(module.get(first.inputs[0]).shape.lens)
    dt = module.get(first.inputs[0]).shape.dtype
    names = ", ".join(r.name + " = " + r.op for r in reds)
    for r in reds:
        rl = tuple(module.get(r.inputs[0]).shape.lens)
        if r.op == "softmax" or rl != lens or reduced_axes(r, len(rl)) != reduced_axes(first, len(lens)) or \
                module.get(r.inputs[0]).shape.dtype != dt:
            raise NotSupported(f"more than one reduction in one module ({names}): only reductions of inputs of the "
                               "same shape and type over the same axes share a kernel (not a softmax)")
        if any(o.name in ancestors(module, r.name) for o in reds if o is not r):
            raise NotSupported(f"more than one reduction in one module ({names}): {r.name} reads another's "
                               "result (reductions in sequence are not fused)")
    return list(reds[1:])


def problem_of(module: Module) -> Problem:
    return analyse(module).problem


# ---------------------------------------------------------------- gemm ----
def _gemm(module: Module, dot) -> Analysis:
    a_ins, b_ins = module.get(dot.inputs[0]), module.get(dot.inputs[1])
    lens = dot.shape.lens
    batch = tuple(lens[:-2])
    M, N = lens[-2], lens[-1]
    K = a_ins.shape.lens[-1]
    g = int(prod(batch)) if batch else 1
    gb = E.var("gb", g)
    bidx = delinearize(gb, batch) if batch else []
    m, n, k = E.var("m", M), E.var("n", N), E.var("k", K)
    dag = Dag()
    pre = Builder(module, dag=dag)
    a_root = pre.value(a_ins.name, bidx + [m, k])
    b_root = pre.value(b_ins.name, bidx + [k, n])
    ret, out_idx, root = gemm_epilogue(module, dag, dot, bidx + [m, n], "gemm")
    out = module.get(ret)
    out_off = linearize(out_idx, out.shape.lens)
    dt = a_ins.shape.dtype
    trans = trans_flags(dag, a_root, b_root, K, N)
    prob = Problem("gemm", dt.name, out.shape.dtype.name, trans[0], trans[1], g, M, N, K,
                   elements=out.shape.elements, op=dot.op)
    return Analysis(module, "gemm", prob, dag, ret, out.shape.dtype, out.shape.lens, out_off, root,
                    dot=dot.name, a_root=a_root, b_root=b_root, acc_dtype=dot.shape.dtype, batch_lens=batch,
                    extra_outputs=gemm_extras(module, dag, dot, bidx + [m, n]))


# ---------------------------------------------------------------- conv ----
def _conv(module: Module, conv) -> Analysis:
    """A convolution as an implicit gemm (rocMLIR's forward mapping): per group, M = output channels,
    N = batch x output pixels, K = input channels x kernel positions; A is the weights, B the input's
    im2col view folded into the index map, a padded position read at a clamped index and replaced by 0."""
    x, w = module.get(conv.inputs[0]), module.get(conv.inputs[1])
    out_shape = conv.shape
    sp = x.shape.rank - 2
    begin, _end, stride, dilation, G = conv_params(conv, sp)
    Nb, C = x.shape.lens[:2]
    Kout, Cg = w.shape.lens[:2]
    ksp, isp, osp = list(w.shape.lens[2:]), list(x.shape.lens[2:]), list(out_shape.lens[2:])
    Kg = Kout // G
    M, N, K = Kg, Nb * int(prod(osp)), Cg * int(prod(ksp))
    gb = E.var("gb", G)
    m, n, k = E.var("m", M), E.var("n", N), E.var("k", K)
    ni, *o = delinearize(n, [Nb] + osp)
    ci, *y = delinearize(k, [Cg] + ksp)
    dag = Dag()
    pre = Builder(module, dag=dag)
    a_root = pre.value(w.name, [gb * Kg + m, ci] + y)
    # the input at the padded positions: clamped into the input, 0 selected where outside
    pos = [oj * sj + yj * dj + (-bj) for oj, yj, sj, dj, bj in zip(o, y, stride, dilation, begin, strict=False)]
    clamped = [E.clamp(p, 0, size - 1) for p, size in zip(pos, isp, strict=False)]
    b_root = pre.value(x.name, [ni, gb * Cg + ci] + clamped)
    xdt = x.shape.dtype
    zero = dag.add(Node("const", xdt, value=0.0 if xdt.is_float else 0))
    for p, c, size in zip(pos, clamped, isp, strict=False):
        if c.key() != p.key():
            inb = dag.add(Node("inb", BY_NAME["bool"], offset=p, value=int(size)))
            b_root = dag.add(Node("op", xdt, args=(inb, b_root, zero), op="where"))
    ret, out_idx, root = gemm_epilogue(module, dag, conv, [ni, gb * Kg + m] + o, "convolution")
    out = module.get(ret)
    trans = trans_flags(dag, a_root, b_root, K, N)
    key = conv_key_fields(x.shape, w.shape, out_shape, begin, stride, dilation, G)
    prob = Problem("gemm", xdt.name, out.shape.dtype.name, trans[0], trans[1], G, M, N, K,
                   elements=out.shape.elements, op=conv.op, conv=tuple(sorted(key.items())))
    return Analysis(module, "gemm", prob, dag, ret, out.shape.dtype, out.shape.lens,
                    linearize(out_idx, out.shape.lens), root, dot=conv.name, a_root=a_root, b_root=b_root,
                    acc_dtype=out_shape.dtype, batch_lens=(G,),
                    extra_outputs=gemm_extras(module, dag, conv, [ni, gb * Kg + m] + o))


# ----------------------------------------------------------- pointwise ----
def _pointwise(module: Module) -> Analysis:
    ret = module.returns()[0]
    out = module.get(ret)
    if out.op in ("@param", "@literal"):
        raise NotSupported(f"{ret} = {out.op}: the module computes nothing (returns a {out.op})")
    lens = tuple(out.shape.lens)
    rank = len(lens)
    best = None
    for p in range(max(rank, 1)):
        outer, inner = lens[:p], lens[p:]
        R, C = int(prod(outer)) if outer else 1, int(prod(inner)) if inner else 1
        r, c = E.var("r", R), E.var("c", C)
        idx = (delinearize(r, outer) if outer else []) + (delinearize(c, inner) if inner else [])
        dag = Dag()
        root = Builder(module, dag=dag).value(ret, idx)
        ok = all(E.coeff(dag.nodes[i].offset, "c") is not None
                 for i in dag.reachable([root]) if dag.nodes[i].kind in ("load", "table"))
        cand = (dag, root, R, C, linearize(idx, lens), idx)
        if best is None or ok:
            best = cand
        if ok:
            break
    dag, root, R, C, off, idx = best
    # the other outputs at the same element (when their lens are the first output's)
    b = Builder(module, dag=dag)
    extras = other_outputs(module, b.value, lambda r: idx if tuple(module.get(r).shape.lens) == lens else None)
    first = first_load(dag, root)
    dt = first.dtype.name if first is not None else out.shape.dtype.name
    prob = Problem("pointwise", dt, out.shape.dtype.name, elements=out.shape.elements, outer=R, reduce_len=C,
                   op="pointwise")
    return Analysis(module, "pointwise", prob, dag, ret, out.shape.dtype, lens, off, root, rows=R, cols=C,
                    extra_outputs=extras)


# -------------------------------------------------------------- reduce ----
def _reduce(module: Module, red, inline_dots: bool = False, siblings=()) -> Analysis:
    x = module.get(red.inputs[0])
    xl = tuple(x.shape.lens)
    rank = len(xl)
    if red.op == "softmax":
        axes = [red.attrs.get("axis", 1) % rank]
    else:
        axes = sorted({a % rank for a in red.attrs["axes"]})
    kept = [d for d in range(rank) if d not in axes]
    G = int(prod(xl[d] for d in kept)) if kept else 1
    Rn = int(prod(xl[d] for d in axes)) if axes else 1
    gi, j = E.var("gi", G), E.var("j", Rn)
    gidx = delinearize(gi, [xl[d] for d in kept]) if kept else []
    jidx = delinearize(j, [xl[d] for d in axes]) if axes else []
    xidx = [E.ZERO] * rank
    for d, v in zip(kept, gidx, strict=False):
        xidx[d] = v
    for d, v in zip(axes, jidx, strict=False):
        xidx[d] = v
    if red.op == "softmax":
        ridx = list(xidx)
    else:
        ridx = [E.ZERO if d in axes else xidx[d] for d in range(rank)]
    dag = Dag()
    pre = Builder(module, dag=dag, inline_dots=inline_dots)
    pre_root = pre.value(x.name, xidx)
    ret = module.returns()[0]
    out = module.get(ret)

    def anchor_of(r):
        def anchor(idx):
            if not same_index(idx, ridx):
                raise NotSupported(f"{r.name} = {r.op}: its result is read at an index that does not match "
                                   "the reduction it belongs to")
            return dag.add(Node("acc", r.shape.dtype, op=r.name))
        return anchor

    out_idx = None
    for r in [red, *siblings]:
        try:
            out_idx = forward_map(module, r.name, ridx).get(ret)
        except NotSupported:
            out_idx = None
        if out_idx is not None:
            break
    if out_idx is None:
        if tuple(out.shape.lens) != xl:
            raise NotSupported(f"{red.name} = {red.op}: the output {ret} {list(out.shape.lens)} is neither "
                               f"the reduction's shape nor its input's shape {list(xl)}")
        out_idx = list(xidx)
    anchors = {r.name: anchor_of(r) for r in [red, *siblings]}
    root = Builder(module, anchors=anchors, dag=dag).value(ret, out_idx)
    # the other reductions sharing the kernel: (name, op, the DAG of their input, their result's dtype)
    sibs = [(r.name, r.op, pre.value(r.inputs[0], xidx), r.shape.dtype) for r in siblings]
    out_off = linearize(out_idx, out.shape.lens)
    per_group = "j" not in out_off.vars() and all("j" not in i.vars() for i in out_idx)
    if red.op == "softmax" and per_group and Rn > 1:
        raise LoweringError(f"{red.name} = softmax: output does not cover the softmax axis")
    kind = "softmax" if red.op == "softmax" else "reduce"
    prob = Problem(kind, x.shape.dtype.name, out.shape.dtype.name, elements=out.shape.elements, outer=G,
                   reduce_len=Rn, op=red.op)
    return Analysis(module, kind, prob, dag, ret, out.shape.dtype, tuple(out.shape.lens), out_off, root,
                    anchor=red.name, pre_root=pre_root, out_per_group=per_group, reduce_op=red.op,
                    acc_dtype=red.shape.dtype, info={"axes": axes, "G": G, "R": Rn, "siblings": sibs})
