"""Each kind's module from a :class:`~.graph_builder.Plan`: pointwise, reduce (and a second reduction),
softmax, gemm, attention (with its causal mask), and the epilogue with the forms around it
(:func:`epilogue`), which every kind ends with."""
from __future__ import annotations

import math

import numpy as np

from .. import ir
from .graph_builder import (
    OVERFLOW_SCALES,
    SECOND_REDUCTION_PRE,
    VIEW_RECIPES,
    GraphBuilder,
    Plan,
    Step,
    Val,
    fit_elements,
    prod,
)


# ------------------------------------------------------------------ kinds --
def float_dtypes(dtypes) -> list[str]:
    fl = [d for d in dtypes if ir.dtype(d).is_float]
    return fl or ["f32"]


def _long_lens(p: Plan, b: GraphBuilder) -> list[int]:
    """The main input's lens; with ``p.long`` the last reduced axis is long (up to the element cap) and the
    other dims small (at most 2): a long reduction at low cost."""
    lens = list(p.dims[:p.rank])
    if not p.long:
        return fit_elements(lens, b.max_elements)
    axis = _axes(p, p.rank)[-1]
    lens = [min(n, 2) if i != axis else n for i, n in enumerate(lens)]
    room = b.max_elements // prod([n for i, n in enumerate(lens) if i != axis])
    lens[axis] = max(lens[axis], room // (4 if p.long == 1 else 1))
    return fit_elements(lens, b.max_elements)


def pointwise_graph(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, fit_elements(p.dims[:p.rank], b.max_elements), p.inputs[0])
    x = b.scaled(x, p.scale)
    steps = p.prologue + p.epilogue or (Step(0),)
    return epilogue(b, p, x, lambda v: b.chain(v, steps, p.dtype, to_int=True))


def epilogue(b: GraphBuilder, p: Plan, v: Val, chain) -> Val:
    """The epilogue ``chain`` from ``v`` (the anchor's result) with the forms of :data:`FORMS` around it: an f16
    convert (an f32 value: to f16 before the chain (variant 1) or after it (2); an f16 / bf16 value: the chain
    computed in f32 and converted back at the end); a literal, a converted bool (and a reduce's second reduction,
    queued by :func:`reduce_graph`) as the second operands of the chain's first binary steps -- the steps' own ops, so
    a failure that needs the op and not the form shrinks the form away -- or, where no step takes one, combined
    by ``max`` after the chain."""
    back = None
    if p.half and "convert" in b.ops and ir.dtype(v.dtype).is_float:
        if v.dtype == "f32" and p.half == 1:
            v = b.to_float(v, "f16")
        elif v.dtype == "f32":
            back = "f16"
        else:
            back, v = v.dtype, b.to_float(v, "f32")
    b.core = v
    if p.literal:
        b.operands.append(b.literal_operand(p.literal))
    if p.boolean and "convert" in b.ops:
        b.operands.append(b.bool_operand(p.boolean, p.dtype))
    v = chain(v)
    while b.operands:       # no binary step took it: max(v, operand) (max: not one of the ops a shrink aims at)
        make = b.operands.pop(0)
        if "max" in b.ops:
            v = b.binary("max", v, make(v))
    if back and v.dtype == "f32":
        v = b.to_float(v, back)
    return v


def _axes(p: Plan, rank: int) -> list[int]:
    return [i for i in range(rank) if p.axes[i]] or [rank - 1]


def reduce_graph(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, _long_lens(p, b), p.inputs[0])
    x = b.chain(b.scaled(x, p.scale), p.prologue, p.dtype)
    ops = ir.REDUCE_OPS
    op = ops[p.core % len(ops)]
    axes = _axes(p, p.rank)
    n = prod([x.lens[i] for i in axes])
    if op == "reduce_sum" and x.dtype == "f16" and x.mag * n > b.f16_sum_max:
        x = b.squash(x)
    mag = x.mag * (n if op == "reduce_sum" else 1)
    pos = x.pos * (n if op == "reduce_sum" else 1)
    r = b.new(op, x, mag=mag, pos=pos, axes=axes)
    viewed = bool(p.view)
    if p.reduce2 and {"abs", "neg"} & set(b.ops):
        b.operands.append(_second_reduction(b, p.reduce2, x, r, axes, n, p.view))
    if viewed:
        r = b.view_after(r, p.view, reduced=axes)
    return epilogue(b, p, r, lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def _second_reduction(b: GraphBuilder, form: int, x: Val, r: Val, axes, n: int, view: int):
    """A maker of a second reduction of ``x`` over the same axes, sharing the first's kernel (the code generator
    fuses reductions of one shape side by side; one that reads another's result, such as layernorm's
    ``reduce_mean((x - reduce_mean(x))^2)``, it refuses, so that is not drawn): of ``abs(x)`` or ``neg(x)`` with
    the first's op, or of ``x`` itself with the op paired with the first's (sum / mean, max / min), seen through
    the same view as the first; an epilogue step takes it as its second operand (:func:`epilogue`)."""
    k = form - 1
    pre = SECOND_REDUCTION_PRE[k % len(SECOND_REDUCTION_PRE)]
    if pre not in b.ops and pre != "same":
        pre = next(o for o in ("abs", "neg") if o in b.ops)
    first = b.m.get(r.name).op
    op2 = {"reduce_sum": "reduce_mean", "reduce_mean": "reduce_sum", "reduce_max": "reduce_min",
           "reduce_min": "reduce_max"}[first] if pre == "same" else first

    def make(cur: Val) -> Val:
        y = x if pre == "same" else b.unary(pre, x)
        if op2 == "reduce_sum" and y.dtype == "f16" and y.mag * n > b.f16_sum_max:
            y = b.squash(y)
        sc = n if op2 == "reduce_sum" else 1
        r2 = b.new(op2, y, mag=y.mag * sc, pos=y.pos * sc, axes=list(axes))
        if view:
            r2 = b.view_after(r2, view, reduced=axes)
        if r2.lens != cur.lens:         # (never: the same view of the same lens)
            return b.input(cur.dtype, cur.lens)
        if r2.dtype != cur.dtype:
            to_int = not ir.dtype(cur.dtype).is_float
            r2 = b.to_float(r2, cur.dtype) if not to_int else \
                b.new("convert", r2, dt=cur.dtype, mag=max(1.0, math.floor(r2.mag)),
                      target_type=ir.dtype(cur.dtype).type_id)
        return r2
    return make


def softmax_graph(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, _long_lens(p, b), p.inputs[0])
    x = b.chain(b.scaled(x, p.scale), p.prologue, p.dtype)
    if p.big and b.values != "unit" and "where" in b.ops and ir.dtype(x.dtype).is_float:
        # past a naive exp's overflow (|x| >= 88): where(a bool parameter, c, x) -- about half the row at c (a
        # softmax must subtract the maximum first); ``where``: not one of the ops a shrink aims at
        c = OVERFLOW_SCALES[(p.big - 1) % len(OVERFLOW_SCALES)]
        cond = b.input("bool", x.lens)
        x = Val(b.m.add("where", cond.name, b.literal(c, x.dtype, x.lens), x.name), x.dtype, x.lens,
                mag=max(abs(c), x.mag))
    s = b.new("softmax", x, mag=1.0, axis=_axes(p, p.rank)[-1])
    if p.view:
        s = b.view_after(s, p.view)
    return epilogue(b, p, s, lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def _shrink_to(dims: list[int], sizes, limit: int) -> list[int]:
    """Halve the largest dim until every tensor (a product of some of dims) fits ``limit``."""
    dims = list(dims)
    while any(prod([dims[i] for i in s]) > limit for s in sizes) and max(dims) > 1:
        i = max(range(len(dims)), key=lambda j: dims[j])
        dims[i] = max(1, dims[i] // 2)
    return dims


_GEMM_A = ("plain", "transpose", "reshape", "transpose_reshape", "slice", "multibroadcast")
_GEMM_B = ("plain", "transpose", "multibroadcast", "slice", "reshape")


def _gemm_input(b: GraphBuilder, dt, batch, rows, cols, desc, recipes) -> Val:
    lens = tuple(batch) + (rows, cols)
    recipe = VIEW_RECIPES[desc[0] % len(VIEW_RECIPES)] if b.views else "plain"
    recipe = recipe if recipe in recipes else "plain"
    if recipe == "transpose":
        # the usual transA/transB: the parameter holds the matrix transposed (last two dims swapped)
        r = len(lens)
        name = b._transposed_param(dt, lens, list(range(r - 2)) + [r - 1, r - 2])
    else:
        name = b._view_input(dt, lens, recipe, desc[1:], batch_dims=len(batch))
    return Val(name, dt, lens, mag=1.0, leaf=True)


def _batch(p: Plan, b: GraphBuilder) -> list[int]:
    nb = min(p.rank - 1, b.max_rank - 2)
    return [min(d, 4) for d in p.dims[:nb]]


def gemm_graph(b: GraphBuilder, p: Plan, quant: bool) -> Val:
    batch = _batch(p, b)
    nb = len(batch)
    m, n, k = p.dims[b.max_rank:b.max_rank + 3]
    if p.long:      # a long K with small M, N (and batch): what a narrow accumulator shows on, at low cost
        batch = [1] * nb
        m, n = min(m, 4), min(n, 4)
        k = max(k, b.max_elements // max(m, n) // (4 if p.long == 1 else 1))
    *batch, m, n, k = _shrink_to(batch + [m, n, k], [list(range(nb)) + [nb, nb + 2], list(range(nb)) + [nb + 2, nb + 1],
                                                     list(range(nb)) + [nb, nb + 1]], b.max_elements)
    op, in_dt = "dot", p.dtype
    if quant and p.core % 4 == 3:
        op, in_dt = "quant_dot", "i8"
    a = _gemm_input(b, in_dt, batch, m, k, p.inputs[0], _GEMM_A)
    w = _gemm_input(b, in_dt, batch, k, n, p.inputs[1], _GEMM_B)
    c = b.new(op, a, w, mag=math.sqrt(k) * (64 if op == "quant_dot" else 1))
    if p.view:
        c = b.view_after(c, p.view)
    return epilogue(b, p, b.scaled(c, p.scale), lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def attention_graph(b: GraphBuilder, p: Plan) -> Val:
    batch = _batch(p, b)
    nb = len(batch)
    dt = p.dtype
    m, n, d, dv = p.dims[b.max_rank:b.max_rank + 4]
    B = list(range(nb))
    *batch, m, n, d, dv = _shrink_to(batch + [m, n, d, dv], [B + [nb, nb + 2], B + [nb + 1, nb + 2], B + [nb, nb + 1],
                                                             B + [nb + 1, nb + 3], B + [nb, nb + 3]], b.max_elements)
    # descriptors: V takes inputs[0] (the main input of the simpler kinds), so a failure in a view of
    # V keeps that view when the shrinker moves it to a simpler kind; the same for the prologue chain
    # (scale / mask / bias between the dots), which the simpler kinds also apply
    q = _gemm_input(b, dt, batch, m, d, p.inputs[2], ("plain", "transpose_reshape", "reshape"))
    kt = _gemm_input(b, dt, batch, d, n, p.inputs[1], ("transpose", "plain"))
    s = b.new("dot", q, kt, mag=math.sqrt(d))
    s = b.chain(s, p.prologue, dt, keep_dtype=True)
    # core % 4: 0 attention; 1 attention with a causal mask (key > query + offset set to -inf, the offset
    # making the last query see every key, as a KV cache's); 2 gemm-gemm (no softmax); 3 attention
    form = p.core % 4
    if form == 1 and m > 1 and n > 1:       # (over one query or one key a causal mask masks nothing)
        s = _causal_mask(b, s, m, n)
    if form == 2:
        pr = s
    else:
        pr = b.new("softmax", s, mag=1.0, axis=len(s.lens) - 1)
    v = _gemm_input(b, dt, batch, n, dv, p.inputs[0], ("plain", "transpose", "slice"))
    o = b.new("dot", pr, v, mag=pr.mag * math.sqrt(n) if form == 2 else 1.0)
    return epilogue(b, p, o, lambda x: b.chain(x, p.epilogue, dt))


def _causal_mask(b: GraphBuilder, s: Val, m: int, n: int) -> Val:
    """``where(greater(key iota, query iota + offset), -inf, s)`` from index literals, as MIGraphX writes it."""
    lens = list(s.lens)
    keys = b.m.add("multibroadcast", b.m.add_literal(np.arange(n, dtype=np.int32), "i32"), out_lens=lens)
    qcol = b.m.add_literal((np.arange(m, dtype=np.int32) + max(0, n - m)).reshape(m, 1), "i32")
    queries = b.m.add("multibroadcast", qcol, out_lens=lens)
    masked = b.m.add("greater", keys, queries)
    ninf = b.literal(float("-inf"), s.dtype, lens)
    return Val(b.m.add("where", masked, ninf, s.name), s.dtype, s.lens, mag=s.mag)
