"""The plan of one drawn module (:class:`Plan`: one fixed layout of draws whatever the kind, so that shrinking
keeps their meaning; :mod:`.graphs`) and the builder that makes a module from it op by op (:class:`GraphBuilder`),
with the vocabulary the draws index: kinds, ops, view recipes, value profiles, forms.

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

from .. import ir

# The shrink order (simplest first). ``conv`` comes last: attention stays next to gemm (a dot failure found in an
# attention graph shrinks to a gemm) and, where attention is not drawn (the fuzz: it is not lowered), a conv
# failure that a plain gemm also has shrinks to the gemm.
ALL_KINDS = ("pointwise", "reduce", "softmax", "gemm", "attention", "conv")
KIND_ORDER = {k: i for i, k in enumerate(ALL_KINDS)}

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
SCALES = {
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
# shrinks it away. What each draws: :func:`epilogue` and the GraphBuilder methods it calls.
FORMS = ("view", "bool", "multi_output", "literal", "reductions", "softmax_overflow", "f16_convert")
FORM_KINDS = {"view": ("gemm", "conv", "reduce", "softmax"), "bool": ALL_KINDS,
               "multi_output": ("pointwise", "gemm", "conv"), "literal": ALL_KINDS, "reductions": ("reduce",),
               "softmax_overflow": ("softmax",), "f16_convert": ALL_KINDS}
_LIT_FLOATS = (0.5, -2.0, 3.0, 0.125, -0.75, 10.0, 0.1, -1.5)
_LIT_INTS = (2, -3, 5, -1, 7, 3, -2, 4)
SECOND_REDUCTION_PRE = ("abs", "same", "neg")
OVERFLOW_SCALES = (100.0, -300.0, 1000.0, 90.0)       # x * this: |x| >= 88 for |x| >= 1 (exp overflows f32 past 88.7)
FORM_VARIANTS = {"view": 4, "bool": 4, "multi_output": 3, "literal": len(_LIT_FLOATS) * 2,
           "reductions": len(SECOND_REDUCTION_PRE), "softmax_overflow": len(OVERFLOW_SCALES), "f16_convert": 2}


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


def prod(xs) -> int:
    return math.prod(xs) if xs else 1


def fit_elements(lens: list[int], max_elements: int) -> list[int]:
    lens = list(lens)
    while prod(lens) > max_elements:
        i = max(range(len(lens)), key=lambda j: lens[j])
        lens[i] = max(1, lens[i] // 2)
    return lens


# A drawn "input descriptor": (recipe index, a1, a2, a3); the a's pick the recipe's details by modulo,
# so every input costs the same draws whatever its recipe (keeps draws aligned while shrinking).
INPUT_DESC = st.tuples(st.integers(0, len(VIEW_RECIPES) - 1), st.integers(0, 255), st.integers(0, 255),
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


def step_lists(n_ops: int, max_size: int):
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
        # epilogue in place of its own; what no step takes is combined by ``max`` after the chain (:func:`epilogue`)
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
                starts = [b - stored[a] for b, a in zip(starts, axes, strict=False)]
                ends = [e if e == stored[a] else e - stored[a] for e, a in zip(ends, axes, strict=False)]
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
        scales = SCALES[self.values]
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
                    return self.new("reshape", v, dims=[prod(lens)])
                first, last = (lo, r) if conv else (0, r - 1 if r >= 3 else r)    # merge dims first .. last - 1
                if last - first >= 2:
                    return self.new("reshape", v, dims=lens[:first] + [prod(lens[first:last])] + lens[last:])
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
            shape = lens if prod(lens) <= 64 else (lens[-1],) if lens and lens[-1] <= 256 else None
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

    def second_output(self, out: Val, form: int) -> Val | None:
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
    # the forms of :data:`FORMS` (drawn last, in this order; 0: off, n > 0: the n-th variant; see :func:`epilogue`)
    view: int = 0          # gemm / conv / reduce / softmax: a view after the anchor
    boolean: int = 0       # a comparison's or a float -> bool convert's result converted and used in the chain
    multi: int = 0         # pointwise / gemm / conv: a second output
    literal: int = 0       # a binary op with a literal operand (a drawn scalar or a small full tensor)
    reduce2: int = 0       # reduce: a second reduction sharing the kernel
    big: int = 0           # softmax (wide / extreme values): its input scaled past exp's overflow
    half: int = 0          # a convert to f16 (f32 graphs) or a chain computed in f32 (f16 / bf16 graphs)
