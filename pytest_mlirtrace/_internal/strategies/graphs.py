"""Hypothesis strategies for the fused modules MIGraphX hands to rocMLIR.

Every module is built through :class:`ir.Module`'s builder, so its shape rules hold and it verifies.

Shrinking
---------
Draws are laid out so that Hypothesis' shrinking (toward smaller integers, shorter lists, the first
element of a ``sampled_from``) means *fewer ops and smaller dims*:

* everything is drawn first as a :class:`Plan` in one fixed layout whatever the kind (kind, dtype,
  rank, dims, four input descriptors, core op, axes, prologue steps, epilogue steps) and only then
  built, so when the shrinker moves a failure to a simpler kind the other draws keep their meaning
  (the op chains and the main input's views carry over);
* the kind is drawn from the requested kinds sorted simplest first (pointwise, reduce, softmax,
  gemm, attention, conv), so a bug that does not need a dot shrinks to a pointwise module;
* every op chain is a list of two-choice steps (small enough for Hypothesis' deletion passes) and
  the op of each step indexes a list whose first entries are the plainest ops (``add``, ``mul``, ...);
* every input is drawn as "view recipe" 0 = a plain parameter, other recipes (transpose, broadcast,
  multibroadcast, slice, reshape, transpose+reshape) only when they are needed;
* every dim is ``integers(1, max_dim)`` (shrinks to 1); tensors bigger than ``max_elements`` have
  their largest dim halved until they fit.

So a failure caused by one op shrinks to a module with that op and what it needs (a parameter,
and for the conditioned ops below, their guard).

Values, sizes and layouts beyond the plain ones (issue 20)
--------------------------------------------------------
* ``values=`` (:data:`VALUES`): ``unit`` is what the rest of this section describes; ``wide`` scales the main
  input by a literal (3, -0.25, 40, 1000, 2^-12: large magnitudes for softmax, exp and reductions) and loosens
  the guards (exp up to 80, f16 products and sums up to 6e4); ``extreme`` adds the dtype's limits (half its
  largest finite value, a subnormal scale, -1e4) and drops the guards, so overflows to inf and NaN occur. The
  oracle defines every result and the check's bounds follow the values (``ir.error_bounds``), so no guard is
  needed against false alarms; index 0 of the scales is "none", so a failure that does not need a scale loses it;
* ``long_reductions=True``: a gemm, reduce or softmax may draw a long reduction (K of the dot, the last reduced
  axis) up to the element cap, with the other dims small (M, N <= 4, others <= 2): what a narrow accumulator
  shows on, at low cost;
* parameters with non-standard strides (a variant of recipe ``transpose``: permuted, padded row pitch, a
  zero-stride dim),
  slices over two axes and with negative axes / indices, squeeze / unsqueeze of size-1 dims, and in epilogues
  float -> int converts (i8 / i32, truncating) followed by integer ops; ``bf16`` where the dtypes allow.

The pieces: :mod:`.graph_builder` (the plan of draws and the builder that keeps the numerics well-conditioned),
:mod:`.graph_kinds` (each kind's module from a plan), :mod:`.conv_graphs` (convolutions); here the strategy.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .. import ir
from .conv_graphs import conv_draws, conv_graph
from .graph_builder import (
    ALL_KINDS,
    FLOAT_OPS,
    FORM_KINDS,
    FORM_VARIANTS,
    FORMS,
    INPUT_DESC,
    KIND_ORDER,
    SCALES,
    VALUES,
    GraphBuilder,
    Plan,
    step_lists,
)
from .graph_kinds import attention_graph, float_dtypes, gemm_graph, pointwise_graph, reduce_graph, softmax_graph


def build_module(p: Plan, *, ops=FLOAT_OPS, cmp_ops=("greater", "less", "equal"), max_rank: int = 4,
                 max_elements: int = 1 << 14, quant: bool = True,
                 views: bool = True, max_dim: int = 64, values: str = "unit") -> ir.Module:
    """The module a :class:`Plan` describes."""
    b = GraphBuilder(ops=ops, cmp_ops=cmp_ops, max_rank=max_rank, max_elements=max_elements, views=views,
                     values=values)
    if p.kind == "pointwise":
        out = pointwise_graph(b, p)
    elif p.kind == "reduce":
        out = reduce_graph(b, p)
    elif p.kind == "softmax":
        out = softmax_graph(b, p)
    elif p.kind == "gemm":
        out = gemm_graph(b, p, quant)
    elif p.kind == "conv":
        out = conv_graph(b, p, quant, max_dim)
    else:
        out = attention_graph(b, p)
    if out.dtype == "bool":  # never a bool output
        out = b.new("convert", out, dt=p.dtype, target_type=ir.dtype(p.dtype).type_id)
    more = []
    if p.multi and p.kind in FORM_KINDS["multi_output"]:
        second = b.second_output(out, p.multi)
        if second is not None:
            more.append(second)
    return b.finish(out, *more)


def _norm_kinds(kinds) -> list[str]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    try:
        kinds = tuple(kinds)
    except TypeError:
        raise InvalidArgument(f"kinds={kinds!r} must be a kind or a collection of kinds of: "
                              f"{', '.join(ALL_KINDS)}") from None
    bad = [k for k in kinds if k not in KIND_ORDER]
    if bad or not kinds:
        raise InvalidArgument(f"kinds={kinds!r}: unknown graph kinds {bad or list(kinds)}; accepted: "
                              f"{', '.join(ALL_KINDS)} (at least one)")
    return sorted(set(kinds), key=KIND_ORDER.__getitem__)


def _norm_ops(ops) -> tuple[str, ...]:
    if ops is None:
        return FLOAT_OPS
    known = set(FLOAT_OPS) | {"greater", "less", "equal"}
    if isinstance(ops, str):
        ops = (ops,)
    try:
        ops = tuple(ops)
    except TypeError:
        raise InvalidArgument(f"ops={ops!r} must be None or a collection of pointwise ops of: "
                              f"{', '.join(sorted(known))}") from None
    bad = [o for o in ops if o not in known]
    if bad:
        raise InvalidArgument(f"ops={ops!r}: unknown pointwise ops {bad}; accepted: {', '.join(sorted(known))}")
    # keep the shrink order of FLOAT_OPS whatever order was given
    return tuple(o for o in FLOAT_OPS if o in ops) + tuple(o for o in ("greater", "less", "equal") if o in ops)


def _norm_forms(forms) -> tuple[str, ...]:
    if forms is None:
        return FORMS
    if isinstance(forms, str):
        forms = (forms,)
    try:
        forms = tuple(forms)
    except TypeError:
        raise InvalidArgument(f"forms={forms!r} must be None or a collection of forms of: {', '.join(FORMS)}") \
            from None
    bad = [f for f in forms if f not in FORMS]
    if bad:
        raise InvalidArgument(f"forms={forms!r}: unknown forms {bad}; accepted: {', '.join(FORMS)} (or () for none)")
    return tuple(f for f in FORMS if f in forms)


def _check_int(name: str, value, lo: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise InvalidArgument(f"{name}={value!r} must be an integer >= {lo}")


def _check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be True or False")


def _check_dtypes(dtypes) -> None:
    if isinstance(dtypes, str):
        dtypes = (dtypes,)
    try:
        dtypes = tuple(dtypes)
    except TypeError:
        dtypes = None
    known = ("f32", "f16", "bf16", "f64")
    bad = dtypes is None or not dtypes or [d for d in dtypes if not isinstance(d, str) or d not in ir.dtypes.BY_NAME]
    if bad:
        raise InvalidArgument(f"dtypes={dtypes!r}: accepted: a non-empty collection of dtype names such as "
                              f"{', '.join(known)} (the float ones are drawn; none float: f32)")


def _check_weights(kind_weights) -> None:
    if kind_weights is None:
        return
    if not isinstance(kind_weights, dict) or any(k not in KIND_ORDER for k in kind_weights) or any(
            isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0 for w in kind_weights.values()):
        raise InvalidArgument(f"kind_weights={kind_weights!r} must be None or a dict {{kind: weight >= 0}} with kinds "
                              f"of: {', '.join(ALL_KINDS)}")


def fused_graphs(kinds=("gemm", "conv", "pointwise", "reduce", "softmax", "attention"), dtypes=("f32", "f16"),
                 max_rank: int = 4, max_dim: int = 64, max_elements: int = 1 << 14, ops=None,
                 max_epilogue: int = 3, quant: bool = True, views: bool = True, kind_weights=None,
                 values: str = "unit", long_reductions: bool = False, forms=None,
                 _plans_only: bool = False) -> st.SearchStrategy:
    """Valid fused :class:`ir.Module` s of the kinds MIGraphX fuses (see this module's docstring).

    - ``gemm``: ``dot`` (float) or ``quant_dot`` (i8 -> i32, when ``quant``) whose inputs may come
      through transposes, reshapes (also transpose+contiguous+reshape as in the seed issue),
      multibroadcasts of batch dims and slices, then a pointwise epilogue of up to ``max_epilogue``
      ops with extra inputs broadcast in;
    - ``pointwise``: the prologue and epilogue chains (at least one op);
    - ``reduce``: pointwise prologue, one ``reduce_*`` over some axes, pointwise epilogue;
    - ``softmax``: pointwise prologue, ``softmax``, pointwise epilogue;
    - ``attention``: dot(Q, K^T) [* 1/sqrt(d) literal] -> prologue (scale, mask, bias...) -> softmax
      -> dot(., V) -> epilogue (one kernel with an online softmax: README, "Two gemms");
    - ``conv``: ``convolution`` (float) or ``quant_convolution`` (i8 -> i32, when ``quant``) in 1-D, 2-D
      (mostly) or 3-D, grouped / depthwise, strided, dilated, padded, NCHW or NHWC, then up to
      ``max_epilogue`` epilogue steps as for ``gemm`` (a bias, a residual input and clip among them: module
      docstring); its tensors have up to ``max_rank`` - 1 spatial dims (3 at most) besides N and C.

    ``ops`` restricts the pointwise ops (default :data:`FLOAT_OPS`); the numeric guards of this
    module's docstring (``abs`` + ``add`` of a literal, ``tanh``) may still appear; ``views=False`` draws plain
    parameters only; ``kind_weights`` ({kind: weight}) makes some kinds more frequent (the draw still
    shrinks toward the simplest kind). Dims are in 1..``max_dim``; every tensor has at most
    ``max_elements`` elements (a sliced parameter up to 4 more in one dim).

    ``forms`` (default: all of :data:`FORMS`; ``()``: none) adds, each to about a quarter of the modules of the
    kinds it applies to (``softmax_overflow``: half of the softmaxes), and each shrinking away when a failure does not
    need it: ``view`` (a transpose,
    squeeze / unsqueeze, reshape or split-heads reshape + transpose right after a dot, convolution, reduction or
    softmax), ``bool`` (a comparison's bool, or a float -> bool convert's, converted and used in the chain),
    ``multi_output`` (pointwise, gemm and conv modules returning a second value: the anchor's result, an
    intermediate of the chain or a second branch), ``literal`` (a binary op with a literal of a drawn value or a
    small full literal tensor), ``reductions`` (a second reduction sharing the first's kernel; a reduction of
    another's result is not drawn: the code generator refuses it), ``softmax_overflow`` (``wide`` / ``extreme``
    values: a softmax input scaled to |x| >= 88), ``f16_convert`` (f32 -> f16 converts; f16 / bf16 chains computed
    in f32).

    Everything drawn lowers (``codegen.problem_of`` and the default solution; attention included) and is checked
    by the oracle's bounds (``ir.error_bounds``). Bad arguments raise ``hypothesis.errors.InvalidArgument`` when
    this is called.
    """
    kinds = _norm_kinds(kinds)
    if values not in VALUES:
        raise InvalidArgument(f"values={values!r}: unknown value profile; accepted: {', '.join(VALUES)}")
    _check_dtypes(dtypes)
    float_dts = float_dtypes((dtypes,) if isinstance(dtypes, str) else dtypes)
    ops_t = _norm_ops(ops)
    forms_t = _norm_forms(forms)
    for name, value, lo in (("max_rank", max_rank, 1), ("max_dim", max_dim, 1), ("max_elements", max_elements, 1),
                            ("max_epilogue", max_epilogue, 0)):
        _check_int(name, value, lo)
    for name, value in (("quant", quant), ("views", views), ("long_reductions", long_reductions)):
        _check_bool(name, value)
    _check_weights(kind_weights)
    if ({"gemm", "attention", "conv"} & set(kinds)) and max_rank < 2:
        raise InvalidArgument(f"max_rank={max_rank!r}: the kinds gemm, conv and attention need max_rank >= 2")

    chain_ops = tuple(o for o in ops_t if o not in ("greater", "less", "equal")) or ("add",)
    steps = step_lists(len(chain_ops), max_epilogue)

    weights = [max(0, int((kind_weights or {}).get(k, 1) * 4)) for k in kinds]
    if not any(weights):
        weights = [1] * len(kinds)
    cum = [sum(weights[:i + 1]) for i in range(len(kinds))]

    @st.composite
    def plans(draw):
        w = draw(st.integers(0, cum[-1] - 1))
        kind = kinds[next(i for i, c in enumerate(cum) if w < c)]
        dt = float_dts[draw(st.integers(0, len(float_dts) - 1))]
        rank = draw(st.integers(1, max_rank))
        dims = tuple(draw(st.integers(1, max_dim)) for _ in range(max_rank + 4))
        inputs = tuple(draw(INPUT_DESC) for _ in range(4))
        core = draw(st.integers(0, 7))
        axes = tuple(draw(st.booleans()) for _ in range(max_rank))
        pro, epi = tuple(draw(steps)), tuple(draw(steps))
        # then, only where asked for: a long reduction (drawn whatever the kind, kept for gemm / reduce / softmax,
        # so that a shrink to another kind leaves the draws after it where they were), a scale
        long = draw(st.integers(0, 2)) if long_reductions else 0
        long = long if kind in ("gemm", "reduce", "softmax") else 0
        scale = draw(st.integers(0, len(SCALES[values]) - 1)) if SCALES[values] else 0
        # then the forms: 0 (off) for three quarters of the draws (half, for the softmax's overflow: the softmax
        # kind is a small share of the draws, and what it finds is found nowhere else). Drawn whatever the kind
        # (kept only for the kinds a form applies to): a shrink to a simpler kind finds the draws after it in place
        f = {}
        for name in forms_t:
            if name != "softmax_overflow" or values != "unit":
                n = FORM_VARIANTS[name]
                off = n if name == "softmax_overflow" else 3 * n
                v = max(0, draw(st.integers(0, n + off)) - off)
                f[name] = v if kind in FORM_KINDS[name] else 0
        # drawn last, for a conv only: everything above keeps its meaning whatever the kind, so a shrink from a
        # convolution to a simpler kind drops only these trailing draws
        conv = draw(convs) if kind == "conv" else ()
        return Plan(kind, dt, rank, dims, inputs, core, axes, pro, epi, conv, long, scale,
                    view=f.get("view", 0), boolean=f.get("bool", 0), multi=f.get("multi_output", 0),
                    literal=f.get("literal", 0), reduce2=f.get("reductions", 0), big=f.get("softmax_overflow", 0),
                    half=f.get("f16_convert", 0))

    convs = conv_draws()
    kw = dict(ops=chain_ops, cmp_ops=tuple(o for o in ops_t if o in ("greater", "less", "equal")), max_rank=max_rank,
              max_elements=max_elements, quant=quant, views=views, max_dim=max_dim, values=values)
    if _plans_only:
        return plans()
    return plans().map(lambda p: build_module(p, **kw))


def graph_kind(module: ir.Module) -> str:
    """Which of :data:`ALL_KINDS` a module is (by its ops)."""
    ops = module.ops()
    dots = sum(o in ir.GEMM_OPS for o in ops)
    if any(o in ir.CONV_OPS for o in ops):
        return "conv"
    if dots >= 2:           # attention, or without a softmax the gemm-gemm it shrinks to
        return "attention"
    if dots:
        return "gemm"
    if "softmax" in ops:
        return "softmax"
    if any(o in ir.REDUCE_OPS for o in ops):
        return "reduce"
    return "pointwise"


__all__ = ["fused_graphs", "graph_kind", "build_module"]
