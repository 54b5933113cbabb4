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

Convolutions
------------
A ``conv`` plan also carries one integer per :data:`CONV_FIELDS` entry (drawn last, for a conv only):
spatial rank (2-D mostly, some 1-D and 3-D), batch, channels per group, groups (group 1, grouped,
depthwise), strides, dilations, padding (none, symmetric ``{p0, p1}``, MIGraphX's ``{b0, b1, e0, e1}``
symmetric or not), layout (NCHW; NHWC as MIGraphX expresses it: a parameter with NHWC strides, or an NHWC
parameter transposed to NCHW and the result transposed back) and float (``convolution``) or i8
(``quant_convolution`` -> i32). Each field's smallest value is its plainest choice, so a conv shrinks to a
1x1 convolution on a 1x1 image (batch 1, one channel, group 1, NCHW, no padding, stride or dilation, no
epilogue) plus only what the failure needs. Shapes obey the shape rules: an image smaller than its padded,
dilated kernel is grown to fit (every output spatial dim >= 1); tensors over ``max_elements`` have their
largest size halved. The epilogue is a dot's (a step's op is the same in every kind, so a failure in it
shrinks out of the conv) in MIGraphX's forms after a conv: a new second operand drawn plain is the residual
input (laid out as the output), one drawn as a ``broadcast`` is the bias ([channels] broadcast along the
channel axis), ``min`` is the clip (ReLU6, ``min(max(x, 0), 6)``: the IR has no clip op), and some rarer ops
are drawn as bias, relu, sigmoid, clip or residual steps (:data:`CONV_OP_MAP`) so that those come often.

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

Numerics (why the oracle comparison does not flake)
---------------------------------------------------
Inputs are uniform in [-1, 1] (``ir.random_inputs``). The builder tracks for each value a bound on
its magnitude and whether it is positive (bounded away from 0), and keeps every op well-conditioned:

* ``log``, ``sqrt``, ``rsqrt``, ``recip`` and the divisor of ``div`` take a value that is positive
  (≥ 0.25, e.g. after ``exp``/``sigmoid`` of a bounded value); anything else is guarded first as
  ``add(abs(x), 1)`` (``1`` a literal, multibroadcast);
* ``exp`` takes a value of magnitude ≤ 4; a larger one is squashed by ``tanh`` first;
* ``pow`` takes a guarded positive base and an exponent of magnitude ≤ 1 (``tanh`` otherwise);
* ``floor``/``ceil`` (discontinuous: a rounding difference flips them) only take parameters
  (exact values); elsewhere they are applied to a fresh parameter and added to the chain;
* comparisons (``greater``/``less``/``equal``) only compare parameters, and only feed ``where``;
* ``mul`` never lets the magnitude bound exceed 256 in f16 (the chain is ``tanh``-squashed first).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .. import ir

# The shrink order (simplest first). ``conv`` comes last: attention stays next to gemm (a dot failure found in an
# attention graph shrinks to a gemm) and, where attention is not drawn (the fuzz: it is not lowered), a conv
# failure that a plain gemm also has shrinks to the gemm.
ALL_KINDS = ("pointwise", "reduce", "softmax", "gemm", "attention", "conv")
_KIND_ORDER = {k: i for i, k in enumerate(ALL_KINDS)}

# Plainest first: shrinking goes toward the front.
FLOAT_OPS = ("add", "mul", "sub", "max", "min", "relu", "neg", "abs", "tanh", "sigmoid", "exp", "erf",
             "div", "recip", "sqrt", "rsqrt", "log", "pow", "floor", "ceil", "where", "convert")
INT_OPS = ("add", "mul", "sub", "max", "min", "relu", "neg", "abs")
UNARY = frozenset(ir.UNARY_OPS)
BINARY = frozenset(ir.BINARY_OPS)
NEEDS_POSITIVE = frozenset({"log", "sqrt", "rsqrt", "recip"})
LEAF_ONLY = frozenset({"floor", "ceil"})
VIEW_RECIPES = ("plain", "transpose", "multibroadcast", "broadcast", "slice", "reshape", "transpose_reshape")

_POS_LO = 0.25     # "positive" means >= this
_EXP_MAX = 4.0     # exp takes |x| <= this
_F16_MUL_MAX = 256.0

# Value profiles (``values=``): what the main input is scaled by (a literal ``mul`` before the chain; index 0,
# the first a shrink tries, is no scaling) and how far the numeric guards hold values in. The oracle defines
# every result (float64, rounded per op: an overflow is inf, inf - inf is NaN) and the error bounds follow
# the values (ir.error_bounds), so the wide profiles need no guard to stay free of false alarms.
VALUES = ("unit", "wide", "extreme")
_SCALES = {
    "unit": (),
    # large magnitudes for softmax / exp / reductions, sign flips, small values
    "wide": (1.0, 3.0, -0.25, 40.0, 1000.0, 2.0 ** -12),
    # ... and the dtype's limits: near its largest finite value, subnormals, past the overflow of exp
    "extreme": (1.0, 3.0, -0.25, 40.0, 1000.0, 2.0 ** -12, 100.0, "max", "subnormal", -1e4),
}
_GUARDS = {"unit": (_EXP_MAX, _F16_MUL_MAX, 1e4), "wide": (80.0, 6e4, 6e4), "extreme": (math.inf, math.inf, math.inf)}
_DT_MAX = {"f16": 65504.0, "bf16": 3.38e38, "f32": 3.4028234e38, "f64": 1.7e308}
_DT_SUB = {"f16": 2.0 ** -20, "bf16": 2.0 ** -130, "f32": 2.0 ** -140, "f64": 2.0 ** -1060}

# The graph forms beyond the op chains (issue 20; ``fused_graphs(forms=...)``, default all). Each is one Plan
# field, drawn whatever the kind and kept only for the kinds it applies to; 0 is "off" (three quarters of the
# draws; half for ``softmax_overflow``), 1..n its variants, so a failure that does not need it
# shrinks it away. What each draws: :func:`_tail` and the GraphBuilder methods it calls.
FORMS = ("view", "bool", "multi_output", "literal", "reductions", "softmax_overflow", "f16_convert")
_FORM_KINDS = {"view": ("gemm", "conv", "reduce", "softmax"), "bool": ALL_KINDS,
               "multi_output": ("pointwise", "gemm", "conv"), "literal": ALL_KINDS, "reductions": ("reduce",),
               "softmax_overflow": ("softmax",), "f16_convert": ALL_KINDS}
_LIT_FLOATS = (0.5, -2.0, 3.0, 0.125, -0.75, 10.0, 0.1, -1.5)
_LIT_INTS = (2, -3, 5, -1, 7, 3, -2, 4)
_R2_PRE = ("abs", "same", "neg")
_BIG = (100.0, -300.0, 1000.0, 90.0)       # x * this: |x| >= 88 for |x| >= 1 (exp overflows f32 past 88.7)
_FORM_N = {"view": 4, "bool": 4, "multi_output": 3, "literal": len(_LIT_FLOATS) * 2,
           "reductions": len(_R2_PRE), "softmax_overflow": len(_BIG), "f16_convert": 2}


@dataclass
class Val:
    name: str
    dtype: str
    lens: tuple
    mag: float = 1.0          # bound on |x| (statistical for dots: sqrt(k) * |a| * |b|)
    pos: float = 0.0          # > 0: x >= pos
    leaf: bool = False        # a parameter (or a view of one): exact input values


def _lit_values(values, dt: str):
    """What a literal of ``dt`` holds for ``values``: the values, but for bf16 their bits (the IR's convention:
    a literal is read as ``astype(dtype.np)``, and bf16 is stored as uint16 bits -- ``mlir.literals``)."""
    if dt == "bf16":
        return ir.dtypes.f32_to_bf16(np.asarray(values, dtype=np.float32))
    return values


def _prod(xs) -> int:
    return math.prod(xs) if xs else 1


def _fit(lens: list[int], max_elements: int) -> list[int]:
    lens = list(lens)
    while _prod(lens) > max_elements:
        i = max(range(len(lens)), key=lambda j: lens[j])
        lens[i] = max(1, lens[i] // 2)
    return lens


# A drawn "input descriptor": (recipe index, a1, a2, a3); the a's pick the recipe's details by modulo,
# so every input costs the same draws whatever its recipe (keeps draws aligned while shrinking).
_DESC = st.tuples(st.integers(0, len(VIEW_RECIPES) - 1), st.integers(0, 255), st.integers(0, 255),
                  st.integers(0, 255))
_PLAIN = (0, 0, 0, 0)


def _non_identity_perm(r: int, a: int) -> list[int]:
    """A permutation of range(r) other than the identity (r >= 2); a = 0 swaps the last two dims."""
    return _nth_perm(r, 1 + a % (math.factorial(r) - 1))


def _nth_perm(r: int, idx: int) -> list[int]:
    """The ``idx``-th permutation of range(r) in Lehmer order (0 = identity, 1 = swap the last two)."""
    items = list(range(r))
    idx %= math.factorial(r)
    out = []
    for i in range(r, 0, -1):
        f = math.factorial(i - 1)
        out.append(items.pop(idx // f))
        idx %= f
    return out


@dataclass(frozen=True)
class Step:
    """One drawn pointwise step: which op (index into the op list) and one packed integer ``arg``
    for the rest (second operand, comparison, descriptor of a new input). Two choices per step keep
    a list element within what Hypothesis' deletion passes remove in one go, so steps shrink away."""
    op: int
    arg: int = 0

    @property
    def operand(self) -> int:
        return self.arg & 7

    @property
    def cmp(self) -> int:
        return (self.arg >> 3) & 3

    @property
    def desc(self) -> tuple:
        a = self.arg >> 5
        return (a & 7, (a >> 3) & 255, (a >> 11) & 255, (a >> 19) & 255)


def _steps(n_ops: int, max_size: int):
    return st.lists(st.builds(Step, st.integers(0, n_ops - 1), st.integers(0, (1 << 27) - 1)),
                    max_size=max(0, max_size))


class GraphBuilder:
    """Builds one module from drawn descriptors; keeps the numerics well-conditioned (module docstring)."""

    def __init__(self, *, ops, cmp_ops=("greater", "less", "equal"), max_rank, max_elements, views=True,
                 values: str = "unit"):
        self.m = ir.Module()
        self.values = values
        self.exp_max, self.f16_mul_max, self.f16_sum_max = _GUARDS[values]
        self.cmp_ops = tuple(cmp_ops) or ("greater",)
        self.n_params = 0
        self.ops = ops
        self.max_rank = max_rank
        self.max_elements = max_elements
        self.views = views
        # (value, descriptor) -> a new second operand, or None for :meth:`input`'s (a conv's bias / residual)
        self.new_input = None
        self.min_is_clip = False      # a conv's epilogue: ``min`` is MIGraphX's clip (ReLU6)
        self.op_map: dict = {}        # a conv's epilogue: exotic ops drawn as the usual ones (:data:`CONV_OP_MAP`)
        self.extra_input = None       # (``"bias"`` | ``"residual"``, value) -> that input, for those steps
        self.core: Val | None = None  # the value the epilogue starts from (a second output may be it)
        self.pool: list = []          # the last chain's values
        # the forms' second operands, each taken (made from the value it meets) by the next binary step of the
        # epilogue in place of its own; what no step takes is combined by ``max`` after the chain (:func:`_tail`)
        self.operands: list = []

    # ---- leaves -----------------------------------------------------------
    def param(self, dt: str, lens, strides=None) -> str:
        name = f"x{self.n_params}"
        self.n_params += 1
        return self.m.add_param(name, dt, list(lens), strides=list(strides) if strides is not None else None)

    def strided_param(self, dt: str, lens, a1: int, a2: int) -> str:
        """A parameter whose storage is not packed row-major (as MIGraphX hands them: a transposed or
        channels-last buffer, a padded row pitch, a broadcast one): ``a1`` picks permuted / padded / zero
        stride (with ``a2``), ``a2`` the permutation, the pad or the broadcast dim."""
        lens = list(lens)
        rank = len(lens)
        kind = (a1 + a2) % 3
        strides = None
        if kind == 0 and rank >= 2:
            order = _non_identity_perm(rank, a2)          # storage order, outermost first
            strides = [0] * rank
            acc = 1
            for d in reversed(order):
                strides[d] = acc
                acc *= max(lens[d], 1)
        elif kind == 1:
            pad = 1 + a2 % 3
            strides = [0] * rank
            acc = 1
            for i in reversed(range(rank)):
                strides[i] = acc
                acc *= lens[i] + (pad if i == rank - 1 else 0)
        else:
            cands = [i for i, n in enumerate(lens) if n > 1]
            if cands:
                z = cands[a2 % len(cands)]
                strides = [0] * rank
                acc = 1
                for i in reversed(range(rank)):
                    strides[i] = 0 if i == z else acc
                    acc *= 1 if i == z else max(lens[i], 1)
        return self.param(dt, lens, strides)

    def input(self, dt: str, lens, desc=_PLAIN, recipes=VIEW_RECIPES, batch_dims: int | None = None) -> Val:
        """A value of logical ``lens``: a parameter, maybe seen through views (recipe 0 = plain)."""
        lens = tuple(lens)
        recipe = VIEW_RECIPES[desc[0] % len(VIEW_RECIPES)] if self.views else "plain"
        recipe = recipe if recipe in recipes else "plain"
        name = self._view_input(dt, lens, recipe, desc[1:], batch_dims)
        return Val(name, dt, lens, mag=1.0, leaf=True)

    def _transposed_param(self, dt, lens, perm) -> str:
        stored = [0] * len(lens)
        for i, p in enumerate(perm):
            stored[p] = lens[i]
        return self.m.add("transpose", self.param(dt, stored), permutation=list(perm))

    def _view_input(self, dt, lens, recipe, a, batch_dims) -> str:
        rank = len(lens)
        m = self.m
        a1, a2, a3 = a
        if recipe == "transpose" and a2 % 2 == 1:
            # a parameter whose own strides are not packed (the layout a transpose would give, a padded
            # row pitch, a zero stride) -- a variant of the transpose recipe, so the draws of the others stay
            return self.strided_param(dt, lens, a1, a3)
        if recipe == "transpose" and rank >= 2:
            perm = _non_identity_perm(rank, a1)
            return self._transposed_param(dt, lens, perm)
        if recipe == "multibroadcast":
            nb = rank if batch_dims is None else batch_dims
            drop = a1 % (nb + 1)                          # leading dims the parameter does not have
            ones = [bool((a2 >> i) & 1) if i < nb else False for i in range(rank)]
            stored = [1 if ones[i] else n for i, n in enumerate(lens)][drop:] or [1]
            return m.add("multibroadcast", self.param(dt, stored), out_lens=list(lens))
        if recipe == "broadcast" and rank >= 2:
            axis = a1 % rank
            j = 1 + a2 % (rank - axis)
            if (axis, j) == (0, rank):
                j = rank - 1 if rank > 1 else j
            stored = list(lens[axis:axis + j])
            return m.add("broadcast", self.param(dt, stored), axis=axis, out_lens=list(lens))
        if recipe == "slice":
            axis = a1 % rank
            extra = 1 + a2 % 4
            start = a3 % (extra + 1)
            stored = list(lens)
            stored[axis] += extra
            axes, starts, ends = [axis], [start], [start + lens[axis]]
            if (a3 >> 3) & 1 and rank >= 2:               # a second axis
                ax2 = (axis + 1 + (a1 >> 3) % (rank - 1)) % rank
                ex2 = 1 + (a2 >> 3) % 3
                st2 = (a3 >> 5) % (ex2 + 1)
                stored[ax2] += ex2
                axes, starts, ends = axes + [ax2], starts + [st2], ends + [st2 + lens[ax2]]
            if (a3 >> 4) & 1:                             # negative axes and indices, counted from the end
                starts = [b - stored[a] for b, a in zip(starts, axes)]
                ends = [e if e == stored[a] else e - stored[a] for e, a in zip(ends, axes)]
                axes = [a - rank for a in axes]
            return m.add("slice", self.param(dt, stored), axes=axes, starts=starts, ends=ends)
        if recipe == "reshape" and (a3 >> 6) & 1:
            # squeeze / unsqueeze: a size-1 dim the parameter lacks, or one it has more
            ones = [i for i, n in enumerate(lens) if n == 1]
            if ones:
                d = ones[a1 % len(ones)]
                return m.add("unsqueeze", self.param(dt, [n for i, n in enumerate(lens) if i != d]), axes=[d])
            if rank < self.max_rank:
                d = a1 % (rank + 1)
                return m.add("squeeze", self.param(dt, list(lens[:d]) + [1] + list(lens[d:])), axes=[d])
        if recipe in ("reshape", "transpose_reshape") and rank < self.max_rank:
            # the parameter has one dim of lens split in two
            cands = [i for i, n in enumerate(lens) if any(n % f == 0 for f in range(2, n))]
            if cands:
                d = cands[a1 % len(cands)]
                n = lens[d]
                divs = [f for f in range(2, n) if n % f == 0]
                f = divs[a2 % len(divs)]
                split = list(lens[:d]) + [f, n // f] + list(lens[d + 1:])
                if recipe == "transpose_reshape":
                    # the seed's pattern: y0 {1,12,384,64} -> transpose -> contiguous -> reshape {1,384,768}
                    t = self._transposed_param(dt, split, _non_identity_perm(len(split), a3))
                    return m.add("reshape", m.add("contiguous", t), dims=list(lens))
                return m.add("reshape", self.param(dt, split), dims=list(lens))
        return self.param(dt, lens)

    def scaled(self, v: Val, index: int) -> Val:
        """``v`` times the profile's scale ``index`` (0: ``v`` itself), as a broadcast literal ``mul``."""
        scales = _SCALES[self.values]
        if not scales or not ir.dtype(v.dtype).is_float or index % len(scales) == 0:
            return v
        c = scales[index % len(scales)]
        if c == "max":
            c = _DT_MAX.get(v.dtype, 1e4) / 2
        elif c == "subnormal":
            c = _DT_SUB.get(v.dtype, 1e-30)
        lit = Val(self.literal(c, v.dtype, v.lens), v.dtype, v.lens, mag=abs(c), pos=c if c > 0 else 0.0)
        return self.new("mul", v, lit, mag=v.mag * abs(c), pos=0.0)

    def literal(self, value, dt: str, lens) -> str:
        lit = self.m.add_literal(_lit_values(value, dt), dt, lens=(1,))
        return self.m.add("multibroadcast", lit, out_lens=list(lens))

    # ---- pointwise --------------------------------------------------------
    def new(self, op, *inputs: Val, mag=None, pos=0.0, dt=None, **attrs) -> Val:
        name = self.m.add(op, *[v.name for v in inputs], **attrs)
        shape = self.m.get(name).shape
        return Val(name, dt or shape.dtype.name, tuple(shape.lens),
                   mag=inputs[0].mag if mag is None else mag, pos=pos)

    def squash(self, v: Val) -> Val:
        return self.new("tanh", v, mag=1.0)

    def positive(self, v: Val) -> Val:
        if v.pos >= _POS_LO:
            return v
        a = self.new("abs", v)
        one = Val(self.literal(1, v.dtype, v.lens), v.dtype, v.lens, mag=1.0, pos=1.0)
        return self.new("add", a, one, mag=v.mag + 1.0, pos=1.0)

    def unary(self, op: str, v: Val) -> Val:
        if op in NEEDS_POSITIVE:
            v = self.positive(v)
            lo, hi = v.pos, max(v.mag, v.pos)
            if op == "log":
                return self.new(op, v, mag=max(abs(math.log(lo)), math.log(hi), 1e-3))
            if op == "sqrt":
                return self.new(op, v, mag=math.sqrt(hi), pos=math.sqrt(lo))
            if op == "rsqrt":
                return self.new(op, v, mag=1 / math.sqrt(lo), pos=1 / math.sqrt(hi))
            return self.new(op, v, mag=1 / lo, pos=1 / hi)           # recip
        if op == "exp":
            if v.mag > self.exp_max:
                v = self.squash(v)
            return self.new(op, v, mag=math.exp(min(v.mag, 700.0)), pos=math.exp(-min(v.mag, 700.0)))
        if op in ("tanh", "erf"):
            return self.new(op, v, mag=1.0)
        if op == "sigmoid":
            return self.new(op, v, mag=1.0, pos=1 / (1 + math.exp(v.mag)) if v.mag <= _EXP_MAX else 0.0)
        if op in ("abs", "relu"):
            return self.new(op, v, pos=v.pos)
        if op == "neg":
            return self.new(op, v)
        raise ValueError(op)

    def binary(self, op: str, a: Val, b: Val) -> Val:
        if op == "div":
            b = self.positive(b)
            return self.new(op, a, b, mag=a.mag / b.pos, pos=a.pos / max(b.mag, b.pos) if a.pos else 0.0)
        if op == "pow":
            a = self.positive(a)
            if b.mag > 1.0:
                b = self.squash(b)
            e = max(b.mag, 1e-3)
            hi = max(a.mag, a.pos, 1 / a.pos) ** e
            return self.new(op, a, b, mag=hi, pos=min(a.pos, 1 / max(a.mag, 1.0)) ** e)
        if op == "mul":
            if not ir.dtype(a.dtype).is_float and a.mag * b.mag > 2.0 ** 30:
                # would overflow i32 (the oracle saturates, devices wrap): add instead
                return self.new("add", a, b, mag=a.mag + b.mag)
            if a.dtype == "f16" and a.mag * b.mag > self.f16_mul_max:
                a = self.squash(a)
                if a.mag * b.mag > self.f16_mul_max:
                    b = self.squash(b)
            return self.new(op, a, b, mag=a.mag * b.mag, pos=a.pos * b.pos)
        if op == "add":
            return self.new(op, a, b, mag=a.mag + b.mag, pos=a.pos + b.pos if a.pos and b.pos else 0.0)
        if op == "sub":
            return self.new(op, a, b, mag=a.mag + b.mag)
        if op in ("max", "min"):
            pos = max(a.pos, b.pos) if op == "max" else (min(a.pos, b.pos) if a.pos and b.pos else 0.0)
            return self.new(op, a, b, mag=max(a.mag, b.mag), pos=pos)
        raise ValueError(op)

    def other(self, cur: Val, pool: list[Val], step: Step) -> Val:
        """The second operand of a binary op: the chain itself (0) / an earlier value, or a new input; a form's
        operand (a literal, a converted bool, a second reduction: :attr:`operands`) takes the place of the first."""
        if self.operands:
            return self.operands.pop(0)(cur)
        same = [v for v in pool if v.lens == cur.lens and v.dtype == cur.dtype]
        # operand < the values there are: that one back (0: the chain itself); any larger: a new input -- so a step
        # that takes a new input still does when an earlier step is deleted (a shrink keeps what it needs)
        choice = step.operand
        if choice < len(same):
            return same[-1 - choice]
        if self.new_input is not None:
            v = self.new_input(cur, step.desc)
            if v is not None:
                return v
        return self.input(cur.dtype, cur.lens, step.desc)

    def chain(self, cur: Val, steps, float_dt: str, keep_dtype: bool = False, to_int: bool = False) -> Val:
        """A pointwise chain on ``cur``: each step consumes the latest value (nothing is left dead).
        ``keep_dtype``: no ``convert`` (the value feeds an op that needs the dtype it has); ``to_int``: a
        ``convert`` may go float -> int (an epilogue: nothing after it needs a float)."""
        self._to_int = to_int
        pool = [cur]
        self.pool = pool              # the chain's values (a second output may be one of them)
        for step in steps:
            op = self.ops[step.op % len(self.ops)]
            op = self.op_map.get(op, op)
            if keep_dtype and op == "convert":
                op = "add"
            if not ir.dtype(cur.dtype).is_float and op not in INT_OPS and op not in ("convert", "bias", "residual"):
                ints = [o for o in self.ops if o in INT_OPS or o == "convert"]
                if not ints:
                    break
                op = ints[step.op % len(ints)]
            cur = self.step(op, cur, pool, step, float_dt)
            pool.append(cur)
        return cur

    def step(self, op: str, cur: Val, pool: list[Val], step: Step, float_dt: str) -> Val:
        if op in ("bias", "residual"):         # a conv's epilogue (``op_map``): add that input
            return self.binary("add", cur, self.extra_input(op, cur))
        if op == "convert" and getattr(self, "_to_int", False) and ir.dtype(cur.dtype).is_float and step.arg & 1 \
                and cur.mag < 2.0 ** 30:
            # float -> int (truncation toward zero; bit-exact from exact inputs): an integer chain follows
            target = "i32" if (step.arg >> 1) & 1 or cur.mag >= 100 else "i8"
            return self.new("convert", cur, dt=target, mag=max(1.0, math.floor(cur.mag)), pos=0.0,
                            target_type=ir.dtype(target).type_id)
        if op == "convert":
            target = ("f16" if cur.dtype == "f32" else "f32") if ir.dtype(cur.dtype).is_float else float_dt
            if target == "f16" and cur.mag > 6e4:
                if ir.dtype(cur.dtype).is_float:
                    cur = self.squash(cur)
                else:
                    target = "f32"
            return self.new("convert", cur, dt=target, pos=cur.pos, target_type=ir.dtype(target).type_id)
        if op == "min" and self.min_is_clip:
            return self.clip(cur)
        if op in LEAF_ONLY:
            if cur.leaf:
                return self.new(op, cur, mag=1.0)
            # on a new input, added: a viewed one only where a binary step's operand would take a new input too,
            # so that the add it shrinks to (op 0, same arg) keeps the view (else a plain input)
            same = sum(v.lens == cur.lens and v.dtype == cur.dtype for v in pool)
            f = self.new(op, self.input(cur.dtype, cur.lens, step.desc if step.operand >= same else (0, 0, 0, 0)),
                         mag=1.0)
            return self.binary("add", cur, f)
        if op == "where":
            return self.where(cur, pool, step)
        if op in UNARY:
            return self.unary(op, cur)
        return self.binary(op, cur, self.other(cur, pool, step))

    def clip(self, cur: Val, lo: float = 0, hi: float = 6) -> Val:
        """MIGraphX's clip (default ReLU6) as ``min(max(x, lo), hi)`` of broadcast literals (the IR has no clip)."""
        dt = cur.dtype
        lo_v = Val(self.literal(lo, dt, cur.lens), dt, cur.lens, mag=abs(lo))
        hi_v = Val(self.literal(hi, dt, cur.lens), dt, cur.lens, mag=abs(hi), pos=max(hi, 0))
        v = self.new("max", cur, lo_v, mag=max(cur.mag, abs(lo)), pos=max(cur.pos, lo))
        return self.new("min", v, hi_v, mag=max(abs(lo), min(v.mag, abs(hi))), pos=min(v.pos, hi) if v.pos else 0.0)

    def where(self, cur: Val, pool: list[Val], step: Step) -> Val:
        cmp_ops = self.cmp_ops
        how = step.cmp % (len(cmp_ops) + 1)
        if how == 0:
            cond = self.input("bool", cur.lens).name
        else:
            x = self.input(cur.dtype, cur.lens)
            y = self.input(cur.dtype, cur.lens)
            cond = self.m.add(cmp_ops[how - 1], x.name, y.name)
        b = self.other(cur, pool, step)
        name = self.m.add("where", cond, cur.name, b.name)
        return Val(name, cur.dtype, cur.lens, mag=max(cur.mag, b.mag), pos=min(cur.pos, b.pos))

    # ---- the forms of :data:`FORMS` (issue 20) ---------------------------------------------------
    def view_after(self, v: Val, form: int, *, reduced=(), channel_axis: int | None = None) -> Val:
        """``v`` (a dot's, a convolution's, a reduction's or a softmax's result) seen through a view, as
        MIGraphX's fusions leave one after the anchor: 1 a transpose (the last two dims; a reduction's result:
        reversed; a convolution's: its spatial dims reversed), 2 a squeeze of size-1 dims (a reduction's reduced
        ones) or else an unsqueeze, 3 a reshape that merges dims (the leading ones; a reduction's result: to its
        kept elements; a convolution's: its spatial dims), 4 the split of the last dim into heads moved before
        the rows (reshape + transpose, the attention layout). An inapplicable variant falls to the next.
        ``channel_axis``: a convolution's (kept where it is, so a bias broadcast along it still means one)."""
        lens = list(v.lens)
        r = len(lens)
        conv = channel_axis is not None
        lo = channel_axis + 1 if conv else 0          # the dims a view may touch
        for k in range(4):
            f = (form - 1 + k) % 4 + 1
            if f == 1:
                if reduced and r >= 2 and sum(n > 1 for n in lens) >= 1:
                    return self.new("transpose", v, permutation=list(reversed(range(r))))
                if conv and r - lo >= 2:
                    return self.new("transpose", v, permutation=list(range(lo)) + list(reversed(range(lo, r))))
                if not conv and not reduced and r >= 2:
                    return self.new("transpose", v, permutation=list(range(r - 2)) + [r - 1, r - 2])
            elif f == 2:
                ones = [i for i in (reduced or range(lo, r)) if lens[i] == 1 and i >= lo]
                if ones and len(ones) == r:
                    ones = ones[1:]
                if ones:
                    return self.new("squeeze", v, axes=ones)
                if r < self.max_rank:
                    return self.new("unsqueeze", v, axes=[r if conv else 0])
            elif f == 3:
                if reduced and r >= 2:
                    return self.new("reshape", v, dims=[_prod(lens)])
                first, last = (lo, r) if conv else (0, r - 1 if r >= 3 else r)    # merge dims first .. last - 1
                if last - first >= 2:
                    return self.new("reshape", v, dims=lens[:first] + [_prod(lens[first:last])] + lens[last:])
            elif f == 4 and not reduced and not conv and 2 <= r <= self.max_rank:
                n = lens[-1]
                divs = [d for d in range(2, n) if n % d == 0]
                if divs:
                    h = divs[0]
                    split = self.new("reshape", v, dims=lens[:-1] + [h, n // h])
                    return self.new("transpose", split, permutation=list(range(r - 2)) + [r - 1, r - 2, r])
        return v

    def to_float(self, v: Val, target: str) -> Val:
        """``v`` converted to the float type ``target`` (one that would overflow f16 ``tanh``-squashed first,
        as the chain's ``convert`` step does)."""
        if target == v.dtype:
            return v
        if target == "f16" and v.mag > 6e4:
            v = self.squash(v)
        return self.new("convert", v, dt=target, pos=v.pos, target_type=ir.dtype(target).type_id)

    def literal_operand(self, form: int):
        """A literal operand (a maker of one for the value it meets): a scalar of a drawn value
        (:data:`_LIT_FLOATS` / :data:`_LIT_INTS`) broadcast, or a small full tensor (at most 64 elements, else one
        row broadcast along the rest) of drawn multiples of 1/8 (exact in every float type)."""
        k = form - 1

        def make(cur: Val) -> Val:
            is_f = ir.dtype(cur.dtype).is_float
            dt, lens = cur.dtype, tuple(cur.lens)
            shape = lens if _prod(lens) <= 64 else (lens[-1],) if lens and lens[-1] <= 256 else None
            if k % 2 and shape is not None:
                rng = np.random.default_rng(k)
                vals = rng.integers(-16, 17, size=shape).astype(np.float64) / 8.0 if is_f else \
                    rng.integers(-4, 5, size=shape).astype(np.int64)
                if vals.size > 1 and np.all(vals == vals.flat[0]):
                    vals.flat[0] += 1
                name = self.m.add_literal(_lit_values(vals, dt), dt)
                if shape != lens:
                    name = self.m.add("multibroadcast", name, out_lens=list(lens))
                mag = float(np.max(np.abs(vals))) or 1.0
                pos = float(np.min(vals)) if np.all(vals > 0) else 0.0
                return Val(name, dt, lens, mag=mag, pos=pos)
            c = (_LIT_FLOATS if is_f else _LIT_INTS)[k // 2 % len(_LIT_FLOATS)]
            return Val(self.literal(c, dt, lens), dt, lens, mag=float(abs(c)), pos=float(c) if c > 0 else 0.0)
        return make

    def bool_operand(self, form: int, float_dt: str):
        """A boolean converted to the type of the value it meets (a maker of one): 1 ``greater(x, y)``, 2
        ``less(x, y)`` (fresh parameters), 3 ``convert(x, bool)`` (float -> bool: nonzero -> true, as MIGraphX
        defines it: 0.3 is true, not truncated to 0), 4 ``convert(i, bool)`` (an i32 parameter: its zeros are
        false). Only from exact values (parameters), so a rounding never flips the bool."""
        k = (form - 1) % 4

        def make(cur: Val) -> Val:
            lens = cur.lens
            if k < 2:
                cmps = [o for o in self.cmp_ops if o != "equal"] or list(self.cmp_ops)
                x, y = self.input(float_dt, lens), self.input(float_dt, lens)
                cond = self.m.add(cmps[k % len(cmps)], x.name, y.name)
            else:
                x = self.input(float_dt if k == 2 else "i32", lens)
                cond = self.m.add("convert", x.name, target_type=ir.dtype("bool").type_id)
            return Val(self.m.add("convert", cond, target_type=ir.dtype(cur.dtype).type_id), cur.dtype, lens, mag=1.0)
        return make

    def second_output(self, out: Val, form: int, float_dt: str) -> Val | None:
        """A second value to return besides ``out``: 1 the value the epilogue starts from (the anchor's result),
        2 a value in the middle of the epilogue chain, 3 a second epilogue branch from the anchor's result (its
        ``sigmoid``; an op outside the common ones, so a failure that needs a common op never stops at this
        form's copy of it). A parameter or ``out`` itself is never returned (the variant falls to the branch)."""
        core, pool = self.core, [v for v in self.pool if v.lens == self.core.lens] if self.core else []
        if core is None:
            return None
        k = (form - 1) % 3
        cand = None
        if k == 0:
            cand = core
        elif k == 1 and pool:
            cand = pool[len(pool) // 2]
        if cand is not None and not cand.leaf and cand.name != out.name and cand.dtype != "bool":
            return cand
        ops = [o for o in ("sigmoid", "neg", "tanh", "abs") if o in self.ops]
        if not ops or not ir.dtype(core.dtype).is_float and ops[0] not in INT_OPS:
            return None
        br = self.unary(ops[0], core)
        return br if br.name != out.name else None

    def finish(self, v: Val, *more: Val) -> ir.Module:
        self.m.add_return(v.name, *[x.name for x in more])
        self.m.verify()
        return self.m


@dataclass(frozen=True)
class Plan:
    """Everything one module is built from, drawn in a fixed layout whatever the kind (so that the
    shrinker can move a failure to a simpler kind and keep the rest of the draws meaning the same)."""
    kind: str
    dtype: str
    rank: int
    dims: tuple
    inputs: tuple          # descriptors: main input / A, B, V (attention), mask
    core: int              # reduce op / gemm-vs-quant
    axes: tuple            # booleans, one per dim
    prologue: tuple        # Steps
    epilogue: tuple        # Steps
    conv: tuple = ()       # a convolution's draws (:data:`CONV_FIELDS`); () -> derived from dims/inputs
    long: int = 0          # gemm / reduce / softmax: 0, or a long reduction (1: a quarter of the cap, 2: the cap)
    scale: int = 0         # the value profile's scale of the main input (0: none)
    # the forms of :data:`FORMS` (drawn last, in this order; 0: off, n > 0: the n-th variant; see :func:`_tail`)
    view: int = 0          # gemm / conv / reduce / softmax: a view after the anchor
    boolean: int = 0       # a comparison's or a float -> bool convert's result converted and used in the chain
    multi: int = 0         # pointwise / gemm / conv: a second output
    literal: int = 0       # a binary op with a literal operand (a drawn scalar or a small full tensor)
    reduce2: int = 0       # reduce: a second reduction sharing the kernel
    big: int = 0           # softmax (wide / extreme values): its input scaled past exp's overflow
    half: int = 0          # a convert to f16 (f32 graphs) or a chain computed in f32 (f16 / bf16 graphs)


# ------------------------------------------------------------------ kinds --
def _float_dtypes(dtypes) -> list[str]:
    fl = [d for d in dtypes if ir.dtype(d).is_float]
    return fl or ["f32"]


def _long_lens(p: Plan, b: GraphBuilder) -> list[int]:
    """The main input's lens; with ``p.long`` the last reduced axis is long (up to the element cap) and the
    other dims small (at most 2): a long reduction at low cost."""
    lens = list(p.dims[:p.rank])
    if not p.long:
        return _fit(lens, b.max_elements)
    axis = _axes(p, p.rank)[-1]
    lens = [min(n, 2) if i != axis else n for i, n in enumerate(lens)]
    room = b.max_elements // _prod([n for i, n in enumerate(lens) if i != axis])
    lens[axis] = max(lens[axis], room // (4 if p.long == 1 else 1))
    return _fit(lens, b.max_elements)


def _pointwise(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, _fit(p.dims[:p.rank], b.max_elements), p.inputs[0])
    x = b.scaled(x, p.scale)
    steps = p.prologue + p.epilogue or (Step(0),)
    return _tail(b, p, x, lambda v: b.chain(v, steps, p.dtype, to_int=True))


def _tail(b: GraphBuilder, p: Plan, v: Val, chain) -> Val:
    """The epilogue ``chain`` from ``v`` (the anchor's result) with the forms of :data:`FORMS` around it: an f16
    convert (an f32 value: to f16 before the chain (variant 1) or after it (2); an f16 / bf16 value: the chain
    computed in f32 and converted back at the end); a literal, a converted bool (and a reduce's second reduction,
    queued by :func:`_reduce`) as the second operands of the chain's first binary steps -- the steps' own ops, so
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


def _reduce(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, _long_lens(p, b), p.inputs[0])
    x = b.chain(b.scaled(x, p.scale), p.prologue, p.dtype)
    ops = ir.REDUCE_OPS
    op = ops[p.core % len(ops)]
    axes = _axes(p, p.rank)
    n = _prod([x.lens[i] for i in axes])
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
    return _tail(b, p, r, lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def _second_reduction(b: GraphBuilder, form: int, x: Val, r: Val, axes, n: int, view: int):
    """A maker of a second reduction of ``x`` over the same axes, sharing the first's kernel (the code generator
    fuses reductions of one shape side by side; one that reads another's result, such as layernorm's
    ``reduce_mean((x - reduce_mean(x))^2)``, it refuses, so that is not drawn): of ``abs(x)`` or ``neg(x)`` with
    the first's op, or of ``x`` itself with the op paired with the first's (sum / mean, max / min), seen through
    the same view as the first; an epilogue step takes it as its second operand (:func:`_tail`)."""
    k = form - 1
    pre = _R2_PRE[k % len(_R2_PRE)]
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
                b.new("convert", r2, dt=cur.dtype, mag=max(1.0, math.floor(r2.mag)), target_type=ir.dtype(cur.dtype).type_id)
        return r2
    return make


def _softmax(b: GraphBuilder, p: Plan) -> Val:
    x = b.input(p.dtype, _long_lens(p, b), p.inputs[0])
    x = b.chain(b.scaled(x, p.scale), p.prologue, p.dtype)
    if p.big and b.values != "unit" and "where" in b.ops and ir.dtype(x.dtype).is_float:
        # past a naive exp's overflow (|x| >= 88): where(a bool parameter, c, x) -- about half the row at c (a
        # softmax must subtract the maximum first); ``where``: not one of the ops a shrink aims at
        c = _BIG[(p.big - 1) % len(_BIG)]
        cond = b.input("bool", x.lens)
        x = Val(b.m.add("where", cond.name, b.literal(c, x.dtype, x.lens), x.name), x.dtype, x.lens,
                mag=max(abs(c), x.mag))
    s = b.new("softmax", x, mag=1.0, axis=_axes(p, p.rank)[-1])
    if p.view:
        s = b.view_after(s, p.view)
    return _tail(b, p, s, lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def _shrink_to(dims: list[int], sizes, limit: int) -> list[int]:
    """Halve the largest dim until every tensor (a product of some of dims) fits ``limit``."""
    dims = list(dims)
    while any(_prod([dims[i] for i in s]) > limit for s in sizes) and max(dims) > 1:
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


def _gemm(b: GraphBuilder, p: Plan, quant: bool) -> Val:
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
    return _tail(b, p, b.scaled(c, p.scale), lambda v: b.chain(v, p.epilogue, p.dtype, to_int=True))


def _attention(b: GraphBuilder, p: Plan) -> Val:
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
    return _tail(b, p, o, lambda x: b.chain(x, p.epilogue, dt))


def _causal_mask(b: GraphBuilder, s: Val, m: int, n: int) -> Val:
    """``where(greater(key iota, query iota + offset), -inf, s)`` from index literals, as MIGraphX writes it."""
    lens = list(s.lens)
    keys = b.m.add("multibroadcast", b.m.add_literal(np.arange(n, dtype=np.int32), "i32"), out_lens=lens)
    qcol = b.m.add_literal((np.arange(m, dtype=np.int32) + max(0, n - m)).reshape(m, 1), "i32")
    queries = b.m.add("multibroadcast", qcol, out_lens=lens)
    masked = b.m.add("greater", keys, queries)
    ninf = b.literal(float("-inf"), s.dtype, lens)
    return Val(b.m.add("where", masked, ninf, s.name), s.dtype, s.lens, mag=s.mag)


# ------------------------------------------------------------------ conv --
#: a convolution's draws, in draw order: (name, lo, hi); every value shrinks to ``lo``, the plainest choice
#: (2-D, batch 1, one channel, group 1, NCHW, no stride / dilation / padding; a 1x1 image and kernel)
CONV_FIELDS = (
    ("spatial", 0, 7),      # 0..4: 2-D, 5..6: 1-D, 7: 3-D (capped by max_rank - 1)
    ("batch", 1, 3),
    ("cin", 1, 8),          # input channels per group (depthwise: the channels)
    ("kout", 1, 8),         # output channels per group (depthwise: the multiplier, 1 or 2)
    ("groups", 0, 3),       # 0, 1: group 1; 2: grouped (``gcount`` groups); 3: depthwise (group = channels)
    ("gcount", 2, 4),
    ("layout", 0, 3),       # 0, 1: NCHW; 2: NHWC strides on the parameter; 3: NHWC through transposes
    ("layout_of", 0, 2),    # which operands take the NHWC layout: 0 both, 1 the input, 2 the weights
    ("strided", 0, 1),
    ("dilated", 0, 2),      # 2: dilated
    ("padding", 0, 3),      # 0 none; 1 symmetric {p0, p1}; 2 symmetric {b.., e..}; 3 asymmetric {b.., e..}
) + tuple((f"{name}{i}", lo, hi) for i in range(3)
          for name, lo, hi in (("image", 1, 64), ("kernel", 1, 3), ("stride", 1, 3), ("dilation", 1, 3),
                               ("pad_begin", 0, 2), ("pad_end", 0, 2)))


def conv_draws():
    """The strategy of a :class:`Plan`'s ``conv`` tuple (one integer per :data:`CONV_FIELDS` entry)."""
    return st.tuples(*[st.integers(lo, hi) for _, lo, hi in CONV_FIELDS])


def _conv_values(p: Plan) -> dict:
    """The conv draws by name; a plan without them (built by hand) takes them from its dims and inputs."""
    raw = list(p.conv)
    if len(raw) < len(CONV_FIELDS):
        extra = list(p.dims) + [x for d in p.inputs for x in d] + [p.core]
        raw += [extra[i % len(extra)] if extra else 0 for i in range(len(raw), len(CONV_FIELDS))]
    out = {}
    for (name, lo, hi), v in zip(CONV_FIELDS, raw):
        v = int(v)
        out[name] = v if lo <= v <= hi else lo + (v - lo) % (hi - lo + 1)
    return out


def _channels_last(lens) -> list[int]:
    """Strides of ``lens`` (N, C, spatial...) stored N, spatial..., C (MIGraphX's NHWC)."""
    order = [0] + list(range(2, len(lens))) + [1]
    strides = [0] * len(lens)
    acc = 1
    for i in reversed(order):
        strides[i] = acc
        acc *= max(lens[i], 1)
    return strides


@dataclass
class ConvShape:
    spatial: int
    batch: int
    group: int
    cg: int                 # input channels per group
    kg: int                 # output channels per group
    image: list
    kernel: list
    stride: list
    dilation: list
    begin: list
    end: list
    pad_form: int           # 0 none, 1 symmetric (spatial values), 2 symmetric (2 x spatial), 3 asymmetric

    def need(self, i: int) -> int:
        """The smallest image dim ``i`` that the dilated kernel fits once padded (output >= 1)."""
        return max(1, self.dilation[i] * (self.kernel[i] - 1) + 1 - self.begin[i] - self.end[i])

    def out(self, i: int) -> int:
        span = self.dilation[i] * (self.kernel[i] - 1) + 1
        return (self.image[i] + self.begin[i] + self.end[i] - span) // self.stride[i] + 1

    def sizes(self) -> list[int]:
        """Elements of the input, the weights and the output."""
        c, k = self.group * self.cg, self.group * self.kg
        return [self.batch * c * _prod(self.image), k * self.cg * _prod(self.kernel),
                self.batch * k * _prod([self.out(i) for i in range(self.spatial)])]

    def padding_attr(self) -> list[int]:
        if self.pad_form == 1:
            return list(self.begin)
        return list(self.begin) + list(self.end)


def conv_shape(p: Plan, max_rank: int = 4, max_dim: int = 64, max_elements: int = 1 << 14) -> ConvShape:
    """The convolution a plan describes, fitted to ``max_elements`` (every tensor) and valid under the shape
    rules (every output spatial dim >= 1: an image smaller than its padded, dilated kernel is grown)."""
    c = _conv_values(p)
    sel = c["spatial"]
    sp = 2 if sel <= 4 else (1 if sel <= 6 else 3)
    sp = max(1, min(sp, max_rank - 1))
    cap = {1: 32, 2: 12, 3: 6}[sp]
    dim = lambda v, hi: max(1, min(v, hi, max_dim))                                  # noqa: E731
    g = c["groups"]
    if g <= 1:
        group, cg, kg = 1, dim(c["cin"], 8), dim(c["kout"], 8)
    elif g == 2:
        group, cg, kg = c["gcount"], dim(c["cin"], 4), dim(c["kout"], 4)
    else:   # depthwise: one input channel per group, 1 or 2 outputs per channel
        group, cg, kg = max(2, dim(c["cin"], 8)), 1, 1 + (c["kout"] - 1) % 2
    pad_form = c["padding"]
    begin = [c[f"pad_begin{i}"] if pad_form else 0 for i in range(sp)]
    end = [(begin[i] if pad_form in (1, 2) else c[f"pad_end{i}"]) if pad_form else 0 for i in range(sp)]
    s = ConvShape(sp, dim(c["batch"], 3), group, cg, kg,
                  image=[dim(c[f"image{i}"], cap) for i in range(sp)],
                  kernel=[dim(c[f"kernel{i}"], 3) for i in range(sp)],
                  stride=[c[f"stride{i}"] if c["strided"] else 1 for i in range(sp)],
                  dilation=[c[f"dilation{i}"] if c["dilated"] == 2 else 1 for i in range(sp)],
                  begin=begin, end=end, pad_form=pad_form)
    for i in range(sp):
        s.image[i] = max(s.image[i], s.need(i))
    # fit: halve the largest of the sizes that can shrink (an image dim only down to what its kernel needs)
    while max(s.sizes()) > max_elements:
        cands = []          # (value, tie-break, setter)
        for i in range(sp):
            if s.image[i] > s.need(i):
                cands.append((s.image[i], 5, ("image", i)))
            if s.dilation[i] > 1:
                cands.append((s.dilation[i] * s.kernel[i], 4, ("dilation", i)))
            if s.kernel[i] > 1:
                cands.append((s.kernel[i], 3, ("kernel", i)))
        for attr, lo, tb in (("batch", 1, 2), ("cg", 1, 1), ("kg", 1, 1), ("group", 2, 0)):
            if getattr(s, attr) > lo:
                cands.append((getattr(s, attr), tb, (attr, None)))
        if not cands:
            break
        _, _, (attr, i) = max(cands, key=lambda t: (t[0], t[1]))
        if i is None:
            lo = 2 if attr == "group" else 1
            setattr(s, attr, max(lo, getattr(s, attr) // 2))
        elif attr == "image":
            s.image[i] = max(s.need(i), s.image[i] // 2)
        else:
            getattr(s, attr)[i] = max(1, getattr(s, attr)[i] // 2)
            s.image[i] = max(s.image[i], s.need(i))
    return s


def _conv_operand(b: GraphBuilder, dt: str, lens, layout: int) -> Val:
    """An NCHW-logical operand: a plain parameter (0), one with NHWC strides (2), or an NHWC parameter
    transposed to NCHW (3)."""
    lens = list(lens)
    if layout == 2 and len(lens) > 2:
        name = f"x{b.n_params}"
        b.n_params += 1
        v = b.m.add_param(name, dt, lens, strides=_channels_last(lens))
    elif layout == 3 and len(lens) > 2:
        r = len(lens)
        v = b._transposed_param(dt, lens, [0] + list(range(2, r)) + [1])
    else:
        v = b.param(dt, lens)
    return Val(v, dt, tuple(lens), mag=1.0 if ir.dtype(dt).is_float else 8.0, leaf=True)


def _conv(b: GraphBuilder, p: Plan, quant: bool, max_dim: int) -> Val:
    s = conv_shape(p, b.max_rank, max_dim, b.max_elements)
    c = _conv_values(p)
    op, dt = "convolution", p.dtype
    if quant and p.core % 4 == 3:
        op, dt = "quant_convolution", "i8"
    layout = c["layout"] if c["layout"] >= 2 else 0
    on_x = layout and c["layout_of"] in (0, 1)
    on_w = layout and c["layout_of"] in (0, 2)
    x = _conv_operand(b, dt, [s.batch, s.group * s.cg] + s.image, layout if on_x else 0)
    w = _conv_operand(b, dt, [s.group * s.kg, s.cg] + s.kernel, layout if on_w else 0)
    k = s.cg * _prod(s.kernel)
    mag = math.sqrt(k) * (64.0 if op == "quant_convolution" else 1.0)
    out = b.new(op, x, w, mag=mag, padding=s.padding_attr(), stride=list(s.stride), dilation=list(s.dilation),
                group=s.group, padding_mode=0)
    channel_axis = 1
    if layout == 3 and on_x:
        # the result goes back to NHWC as MIGraphX writes it: transpose(conv(transpose(x), w))
        r = s.spatial + 2
        out = b.new("transpose", out, permutation=[0] + list(range(2, r)) + [1])
        channel_axis = r - 1
    residual_strides = list(b.m.get(out.name).shape.strides) if layout == 2 and on_x else None
    if p.view and channel_axis == 1:
        v = b.view_after(out, p.view, channel_axis=channel_axis)
        if v.name != out.name:
            out, residual_strides = v, None
    return _tail(b, p, out, lambda v: _conv_epilogue(b, v, p.epilogue, p.dtype, channel_axis, residual_strides))


#: a conv's epilogue draws these (rarer) ops as the adds MIGraphX fuses after a convolution, so that bias and
#: residual adds come often (``bias``: add a [channels] parameter broadcast along the channel axis;
#: ``residual``: add a second input laid out as the output). Only adds: a step's op shrinks toward 0 (``add``)
#: first, so a failure that needs the add finds it in any kind; a rare op standing for relu, sigmoid or clip
#: would be a shrink trap (from its index, no single step down reaches relu's, and a simpler kind reads the
#: index as the rare op itself). Relu, sigmoid and clip (``min``) keep their own indexes in every kind.
CONV_OP_MAP = {"neg": "bias", "floor": "residual", "erf": "bias", "recip": "bias", "sqrt": "residual",
               "rsqrt": "bias", "log": "residual", "pow": "bias", "ceil": "residual"}


def _conv_epilogue(b: GraphBuilder, cur: Val, steps, float_dt: str, channel_axis: int, residual_strides) -> Val:
    """The pointwise epilogue after a convolution: the chain a dot's epilogue is (a step's op is the same in
    every kind, so a failure in the epilogue shrinks out of the conv) in MIGraphX's forms: ``min`` is the clip
    (ReLU6, ``min(max(x, 0), 6)``: the IR has no clip op), a new second operand drawn as a plain parameter is
    the residual input (laid out as the output) and one drawn as a ``broadcast`` the bias (a [channels]
    parameter broadcast along the channel axis), and the rarer ops of :data:`CONV_OP_MAP` are drawn as bias,
    relu, sigmoid, clip or residual steps."""
    def extra(kind: str, v: Val) -> Val:
        dt, is_float = v.dtype, ir.dtype(v.dtype).is_float
        mag = 1.0 if is_float else 8.0
        if kind == "bias":
            bias = b.param(dt, [v.lens[channel_axis]])
            return Val(b.m.add("broadcast", bias, axis=channel_axis, out_lens=list(v.lens)), dt, v.lens, mag=mag,
                       leaf=True)
        if residual_strides is not None and len(residual_strides) == len(v.lens):
            name = f"x{b.n_params}"
            b.n_params += 1
            return Val(b.m.add_param(name, dt, list(v.lens), strides=residual_strides), dt, v.lens, mag=mag,
                       leaf=True)
        return Val(b.param(dt, v.lens), dt, v.lens, mag=mag, leaf=True)

    def conv_input(v: Val, desc) -> Val | None:
        recipe = VIEW_RECIPES[desc[0] % len(VIEW_RECIPES)] if b.views else "plain"
        return extra("bias", v) if recipe == "broadcast" else (extra("residual", v) if recipe == "plain" else None)

    needs = {"bias": "add", "residual": "add", "relu": "relu", "sigmoid": "sigmoid", "min": "min"}
    saved = (b.new_input, b.min_is_clip, b.op_map, b.extra_input)
    b.new_input, b.min_is_clip, b.extra_input = conv_input, True, extra
    b.op_map = {k: v for k, v in CONV_OP_MAP.items() if needs[v] in b.ops}
    try:
        return b.chain(cur, steps, float_dt)
    finally:
        b.new_input, b.min_is_clip, b.op_map, b.extra_input = saved


def build_module(p: Plan, *, ops=FLOAT_OPS, cmp_ops=("greater", "less", "equal"), max_rank: int = 4, max_elements: int = 1 << 14, quant: bool = True,
                 views: bool = True, max_dim: int = 64, values: str = "unit") -> ir.Module:
    """The module a :class:`Plan` describes."""
    b = GraphBuilder(ops=ops, cmp_ops=cmp_ops, max_rank=max_rank, max_elements=max_elements, views=views,
                     values=values)
    if p.kind == "pointwise":
        out = _pointwise(b, p)
    elif p.kind == "reduce":
        out = _reduce(b, p)
    elif p.kind == "softmax":
        out = _softmax(b, p)
    elif p.kind == "gemm":
        out = _gemm(b, p, quant)
    elif p.kind == "conv":
        out = _conv(b, p, quant, max_dim)
    else:
        out = _attention(b, p)
    if out.dtype == "bool":  # never a bool output
        out = b.new("convert", out, dt=p.dtype, target_type=ir.dtype(p.dtype).type_id)
    more = []
    if p.multi and p.kind in _FORM_KINDS["multi_output"]:
        second = b.second_output(out, p.multi, p.dtype)
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
    bad = [k for k in kinds if k not in _KIND_ORDER]
    if bad or not kinds:
        raise InvalidArgument(f"kinds={kinds!r}: unknown graph kinds {bad or list(kinds)}; accepted: "
                              f"{', '.join(ALL_KINDS)} (at least one)")
    return sorted(set(kinds), key=_KIND_ORDER.__getitem__)


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
    if not isinstance(kind_weights, dict) or any(k not in _KIND_ORDER for k in kind_weights) or any(
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
    kinds it applies to (``softmax_overflow``: half of the softmaxes), and each shrinking away when a failure does not need it: ``view`` (a transpose,
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
    float_dts = _float_dtypes((dtypes,) if isinstance(dtypes, str) else dtypes)
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
    steps = _steps(len(chain_ops), max_epilogue)

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
        inputs = tuple(draw(_DESC) for _ in range(4))
        core = draw(st.integers(0, 7))
        axes = tuple(draw(st.booleans()) for _ in range(max_rank))
        pro, epi = tuple(draw(steps)), tuple(draw(steps))
        # then, only where asked for: a long reduction (drawn whatever the kind, kept for gemm / reduce / softmax,
        # so that a shrink to another kind leaves the draws after it where they were), a scale
        long = draw(st.integers(0, 2)) if long_reductions else 0
        long = long if kind in ("gemm", "reduce", "softmax") else 0
        scale = draw(st.integers(0, len(_SCALES[values]) - 1)) if _SCALES[values] else 0
        # then the forms: 0 (off) for three quarters of the draws (half, for the softmax's overflow: the softmax
        # kind is a small share of the draws, and what it finds is found nowhere else). Drawn whatever the kind
        # (kept only for the kinds a form applies to): a shrink to a simpler kind finds the draws after it in place
        f = {}
        for name in forms_t:
            if name != "softmax_overflow" or values != "unit":
                n, off = _FORM_N[name], (_FORM_N[name] if name == "softmax_overflow" else 3 * _FORM_N[name])
                v = max(0, draw(st.integers(0, n + off)) - off)
                f[name] = v if kind in _FORM_KINDS[name] else 0
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


__all__ = ["fused_graphs", "graph_kind", "build_module", "conv_shape", "conv_draws", "Plan", "Step", "GraphBuilder",
           "ConvShape", "ALL_KINDS", "FLOAT_OPS", "INT_OPS", "VIEW_RECIPES", "CONV_FIELDS", "CONV_OP_MAP", "FORMS"]
