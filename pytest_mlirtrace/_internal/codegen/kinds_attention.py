"""The kernel-kind analyser's two-gemm kinds (:func:`two_gemms`): gemm-gemm (pointwise ops between the gemms)
and attention (a softmax between them, with its causal mask and log-sum-exp outputs), also as MIGraphX writes a
decomposed softmax.  Called by :func:`.kinds.analyse`.
"""
from __future__ import annotations

from math import prod

from ..ir import CONV_OPS, Module
from ..ir.ops import conv_params
from . import expr as E
from .analysis import Analysis, Output, ancestors, gemm_epilogue, stride_of, transposed
from .element_dag import Builder, Dag, Node, delinearize, forward_map, linearize, same_index
from .errors import NotSupported
from .masks import causal_offset
from .problem import Problem, conv_key_fields


# ----------------------------------------------------- gemm-gemm, attention ----
def two_gemms(module: Module, dots, reds) -> Analysis:
    """``dot(f(dot(Q, K)), V)`` with pointwise ops and views f between the gemms (gemm-gemm), or with one
    softmax over the first gemm's columns among them (attention: computed with an online softmax).

    The kernel's variables: ``gb`` (the second gemm's batch), ``m`` (rows), ``n1`` (the first gemm's
    columns = the second's K), ``d`` (the second gemm's columns); the first gemm is an inline dot over
    its own K (the head dim) wherever its value is read."""
    d1, d2 = dots
    if d2.op in CONV_OPS:
        raise NotSupported(f"{d2.name} = {d2.op} after the gemm {d1.name} = {d1.op}: a convolution as the second "
                           "of two fused gemms is not supported")
    if d1.name not in ancestors(module, d2.name):
        raise NotSupported(f"two independent gemms in one module ({d1.name} = {d1.op}, {d2.name} = "
                           f"{d2.op}): only a gemm feeding the next (gemm-gemm, attention) is fused")
    a2, b2 = module.get(d2.inputs[0]), module.get(d2.inputs[1])
    if d1.name == b2.name or d1.name in ancestors(module, b2.name):
        raise NotSupported(f"{d1.name} = {d1.op} feeds the second operand of {d2.name} = {d2.op}: only the "
                           "first operand (the attention probabilities) may come from the first gemm")
    ops = sorted(r.op for r in reds)
    if ops not in ([], ["softmax"], ["reduce_max", "reduce_sum"]):
        bad = next((r for r in reds if r.op not in ("softmax", "reduce_max", "reduce_sum")), reds[0])
        raise NotSupported(f"{bad.name} = {bad.op} between the gemms {d1.name} and {d2.name}: only a softmax "
                           "(the op, or reduce_max/sub/exp/reduce_sum/div) for attention, or pointwise ops and "
                           "views (gemm-gemm) are fused between two gemms")
    for r in reds:
        if not (d1.name in ancestors(module, r.name) and r.name in ancestors(module, d2.name)):
            raise NotSupported(f"{r.name} = {r.op} is not between the gemms {d1.name} and {d2.name}")
    if reds and reds[0].op != "softmax":
        return _decomposed_attention(module, d1, d2, reds)
    sm = reds[0] if reds else None
    lens = d2.shape.lens
    batch = tuple(lens[:-2])
    M, D = lens[-2], lens[-1]
    N1 = a2.shape.lens[-1]
    K = _inner_len(module, d1)
    g = int(prod(batch)) if batch else 1
    gb = E.var("gb", g)
    bidx = delinearize(gb, batch) if batch else []
    m, n1 = E.var("m", M), E.var("n1", N1)
    dag = Dag()
    seen: list = []

    def at_softmax(idx):
        if seen and not same_index(idx, seen[0]):
            raise NotSupported(f"{sm.name} = softmax: read at two different indices before {d2.name}")
        seen.append(idx)
        return dag.add(Node("acc", sm.shape.dtype, op=sm.name))

    anchors = {sm.name: at_softmax} if sm is not None else {}
    p_root = Builder(module, anchors=anchors, dag=dag, inline_dots=True).value(a2.name, bidx + [m, n1])
    x_root = p_root
    if sm is not None:
        sidx = seen[0]
        axis = sm.attrs.get("axis", 1) % len(sidx)
        if sidx[axis].key() != n1.key() or any("n1" in x.vars() for j, x in enumerate(sidx) if j != axis):
            raise NotSupported(f"{sm.name} = softmax: its axis is not the columns of {d1.name} that "
                               f"{d2.name} sums over")
        # between softmax and the second gemm only conversions (roundings) may come: the online softmax
        # divides by the sum at the end
        for i in dag.reachable([p_root]):
            nd = dag.nodes[i]
            if nd.kind == "op" and nd.op != "convert" or nd.kind in ("load", "table", "dot"):
                raise NotSupported(f"{nd.op or nd.kind} between {sm.name} = softmax and {d2.name} = {d2.op}: "
                                   "only conversions may follow the softmax of an attention")
        x_root = Builder(module, dag=dag, inline_dots=True).value(sm.inputs[0], sidx)
    return _attention_analysis(module, d1, d2, dag, x_root, p_root, sm is not None, sm.name if sm else "",
                               (g, M, N1, K, D), bidx)


def _inner_len(module: Module, d1) -> int:
    """The first gemm's K: a dot's inner dim, a convolution's window (input channels x kernel positions)."""
    if d1.op in CONV_OPS:
        w = module.get(d1.inputs[1]).shape.lens
        return int(prod(w[1:]))
    return module.get(d1.inputs[0]).shape.lens[-1]


def _reduced_at(red, idx: list, n1) -> list:
    """The index of a reduction's input where its (single) reduced axis runs over ``n1``, given the index
    at which its result is read; NotSupported when that is not a reduction over the columns."""
    axes = [a % len(idx) for a in red.attrs.get("axes", [])]
    if len(axes) != 1 or idx[axes[0]].key() != E.ZERO.key() or any("n1" in x.vars() for x in idx):
        raise NotSupported(f"{red.name} = {red.op}: not a reduction over the columns of the first gemm "
                           "(the attention scores' rows)")
    out = list(idx)
    out[axes[0]] = n1
    return out


def _through_converts(dag: Dag, i: int) -> int:
    while dag.nodes[i].kind == "op" and dag.nodes[i].op == "convert":
        i = dag.nodes[i].args[0]
    return i


def _decomposed_attention(module: Module, d1, d2, reds) -> Analysis:
    """Attention whose softmax MIGraphX wrote out: ``e = exp(x - reduce_max(x)); p = e / reduce_sum(e)``
    (the form of its fuse_attention pass), recognised on the folded DAG: the sum must reduce the very
    values the division divides, and the exponent subtract the maximum of the very values it exponentiates."""
    rmax = next(r for r in reds if r.op == "reduce_max")
    rsum = next(r for r in reds if r.op == "reduce_sum")
    a2 = module.get(d2.inputs[0])
    lens = d2.shape.lens
    batch = tuple(lens[:-2])
    M, D = lens[-2], lens[-1]
    N1 = a2.shape.lens[-1]
    K = _inner_len(module, d1)
    g = int(prod(batch)) if batch else 1
    bidx = delinearize(E.var("gb", g), batch) if batch else []
    m, n1 = E.var("m", M), E.var("n1", N1)
    dag = Dag()
    seen: dict[str, list] = {}

    def at(red):
        def cb(idx):
            if red.name in seen and not same_index(idx, seen[red.name]):
                raise NotSupported(f"{red.name} = {red.op}: read at two different indices")
            seen[red.name] = idx
            return dag.add(Node("acc", red.shape.dtype, op=red.name))
        return cb
    anchors = {rmax.name: at(rmax), rsum.name: at(rsum)}
    b = Builder(module, anchors=anchors, dag=dag, inline_dots=True)
    p_root = b.value(a2.name, bidx + [m, n1])
    why = f"the ops between {d1.name} and {d2.name} are not a softmax (exp(x - max) / sum)"
    div = dag.nodes[_through_converts(dag, p_root)]
    if not (div.kind == "op" and div.op == "div" and rsum.name in seen):
        raise NotSupported(why)
    den = dag.nodes[_through_converts(dag, div.args[1])]
    if not (den.kind == "acc" and den.op == rsum.name):
        raise NotSupported(why)
    e_root = b.value(rsum.inputs[0], _reduced_at(rsum, seen[rsum.name], n1))
    if _through_converts(dag, e_root) != _through_converts(dag, div.args[0]):
        raise NotSupported(why + f": {rsum.name} = reduce_sum does not sum what is divided")
    ex = dag.nodes[_through_converts(dag, e_root)]
    sub = dag.nodes[_through_converts(dag, ex.args[0])] if ex.kind == "op" and ex.op == "exp" else None
    if sub is None or not (sub.kind == "op" and sub.op == "sub") or rmax.name not in seen:
        raise NotSupported(why)
    mx = dag.nodes[_through_converts(dag, sub.args[1])]
    if not (mx.kind == "acc" and mx.op == rmax.name):
        raise NotSupported(why)
    x_root = b.value(rmax.inputs[0], _reduced_at(rmax, seen[rmax.name], n1))
    if _through_converts(dag, x_root) != _through_converts(dag, sub.args[0]):
        raise NotSupported(why + f": {rmax.name} = reduce_max is not the maximum of what is exponentiated")
    lse = (rmax, rsum, seen, anchors)
    return _attention_analysis(module, d1, d2, dag, sub.args[0], p_root, True, rsum.name, (g, M, N1, K, D), bidx,
                               lse)


def _lse_outputs(module: Module, dag: Dag, primary: str, lse) -> list:
    """The outputs besides the attention's result: values of the softmax's maximum and sum (the log-sum-exp
    a split-KV attention returns), each at the row's coordinates (gb, m)."""
    rets = module.returns()
    if len(rets) == 1:
        return []
    if lse is None:
        raise NotSupported(f"an attention returning {len(rets)} values: only the softmax written out "
                           "(reduce_max ... reduce_sum) gives values besides the result (the log-sum-exp)")
    rmax, rsum, seen, anchors = lse
    phi = forward_map(module, rsum.name, seen[rsum.name], strict=False)
    phi.update({k: v for k, v in forward_map(module, rmax.name, seen[rmax.name], strict=False).items()
                if k not in phi})
    b = Builder(module, anchors=anchors, dag=dag)
    out = []
    for i, r in enumerate(rets):
        if r == primary:
            continue
        idx = phi.get(r)
        if idx is None or any(v in x.vars() for x in idx for v in ("n1", "d")):
            raise NotSupported(f"output {r} of the attention is neither its result nor computed per row from "
                               f"its softmax's maximum and sum ({rmax.name}, {rsum.name})")
        ins = module.get(r)
        out.append(Output(i, r, ins.shape.dtype, tuple(ins.shape.lens), linearize(idx, ins.shape.lens),
                          b.value(r, idx)))
    return out


def _attention_analysis(module: Module, d1, d2, dag: Dag, x_root: int, p_root: int, softmax: bool, anchor: str,
                        sizes, bidx, lse=None) -> Analysis:
    g, M, N1, K, D = sizes
    sm = softmax
    m, n1, d = E.var("m", M), E.var("n1", N1), E.var("d", D)
    b2 = module.get(d2.inputs[1])
    v_root = Builder(module, dag=dag).value(b2.name, bidx + [n1, d])
    batch = tuple(d2.shape.lens[:-2])
    if not any(dag.nodes[i].kind == "dot" for i in dag.reachable([x_root])):
        raise NotSupported(f"{d2.name} = {d2.op}: its first operand does not read {d1.name} at the columns "
                           "it sums over")
    ret, out_idx, root = gemm_epilogue(module, dag, d2, bidx + [m, d], "gemm", ret=_primary(module, d2))
    extras = _lse_outputs(module, dag, ret, lse) if sm else []
    out = module.get(ret)
    dt = module.get(d1.inputs[0]).shape.dtype
    dot_node = next(dag.nodes[i] for i in dag.reachable([x_root]) if dag.nodes[i].kind == "dot")
    kv = dot_node.op
    tq = transposed(dag, dot_node.args[0], kv, "m", K)
    tk = transposed(dag, dot_node.args[1], "n1", kv, N1)
    tv = transposed(dag, v_root, "d", "n1", D)
    out_off = linearize(out_idx, out.shape.lens)
    to = abs(stride_of(out_off, "d", {})) != 1 and D > 1
    causal = causal_offset(dag, x_root, g, M, N1) if sm else None
    if d1.op in CONV_OPS:
        x, w = module.get(d1.inputs[0]).shape, module.get(d1.inputs[1]).shape
        begin, _end, stride, dilation, G = conv_params(d1, x.rank - 2)
        cf = conv_key_fields(x, w, d1.shape, begin, stride, dilation, G)
        key = {f: cf[f] for f in ("t", "f", "I", "n", "c", "H", "W", "k", "y", "x", "p", "q", "u", "v", "l", "j",
                                  "g")}
        key.update(transC=tv, transO=to, gemmO=D)
        for f in ("in_d", "fil_d", "padding_d", "conv_stride_d", "dilation_d"):
            if f in cf:
                key[f] = cf[f]
    elif sm:
        key = dict(t=dt.name, transQ=tq, transK=tk, transV=tv, transO=to, causal=causal is not None,
                   return_lse=bool(extras),
                   g=g, seq_len_q=M, seq_len_k=N1, head_dim_qk=K, head_dim_v=D)
    else:
        key = dict(t=dt.name, transA=tq, transB=tk, transC=tv, transO=to, g=g, m=M, n=N1, k=K, gemmO=D)
    prob = Problem("attention", dt.name, out.shape.dtype.name, tq, tk, g, M, N1, K, elements=out.shape.elements,
                   op="attention" if sm else ("conv_gemm" if d1.op in CONV_OPS else "gemm_gemm"),
                   attn=tuple(sorted(key.items())))
    return Analysis(module, "attention", prob, dag, ret, out.shape.dtype, out.shape.lens, out_off, root,
                    dot=d2.name, a_root=x_root, b_root=v_root, acc_dtype=d2.shape.dtype, batch_lens=batch,
                    anchor=anchor, pre_root=p_root,
                    info={"D": D, "N1": N1, "softmax": sm, "causal": causal, "max_name": lse[0].name if lse else ""},
                    extra_outputs=extras)


def _primary(module: Module, d2) -> str:
    """The returned value computed from the second gemm (the first such one)."""
    phi = forward_map(module, d2.name, [E.ZERO] * len(d2.shape.lens), strict=False)
    return next((r for r in module.returns() if r in phi), module.returns()[0])
