"""Comparing a computed result with the oracle's, with tolerances per dtype."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dtypes import DType, to_compute
from .dtypes import dtype as _dtype
from .module import VIEW_OPS
from .ops import BINARY_OPS, COMPARE_OPS, REDUCE_OPS, UNARY_OPS
from .reference import convolve, eval_instruction, scaled_operands

# (rtol, atol per sqrt of reduction length): f16/bf16 results are rounded to
# 11/8 significant bits at the end, f32 accumulates in float32 on the device.
_TOL = {"f64": (1e-9, 1e-9), "f32": (1e-4, 2e-5), "f16": (1e-2, 2e-3), "bf16": (2e-2, 1e-2)}


# significant bits of each float dtype: the fewer, the looser the tolerance
_BITS = {"bf16": 8, "f16": 11, "f32": 24, "f64": 53}


def result_precisions(module) -> list[DType]:
    """Per output of ``module``: the dtype whose tolerance its values deserve.

    That is the coarsest float dtype any computed instruction on the way to the output rounds
    to: a ``dot`` in f16 that is converted to f32 carries f16's error (the device's f32
    accumulation and the oracle's float64 one may round to neighbouring f16 values), so an f32
    tolerance would call a correct kernel wrong. Integer and bool outputs keep their own dtype.
    """
    out = []
    for name in module.returns():
        own = _dtype(module.get(name).shape.dtype)
        if not own.is_float:
            out.append(own)
            continue
        coarsest, seen, todo = own, set(), [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            ins = module.get(n)
            if ins.op in ("@param", "@literal"):
                continue
            d = _dtype(ins.shape.dtype)
            if d.is_float and _BITS.get(d.name, 24) < _BITS.get(coarsest.name, 24):
                coarsest = d
            todo.extend(ins.inputs)
        out.append(coarsest)
    return out


def tolerance(dt: DType | str, reduction: int = 1) -> tuple[float, float]:
    dt = _dtype(dt)
    if not dt.is_float:
        return 0.0, 0.0
    rtol, atol = _TOL.get(dt.name, (1e-4, 1e-5))
    scale = max(1.0, float(reduction) ** 0.5)
    return rtol, atol * scale


@dataclass
class Mismatch:
    count: int
    total: int
    max_abs: float
    max_rel: float
    worst_index: tuple
    got: float
    want: float
    rtol: float
    atol: float
    bound: float | None = None       # compare_bounded: the error bound at the worst element (0: bit-exact)

    def __str__(self) -> str:
        if self.bound is not None:
            allowed = "bit-exact" if self.bound == 0 else f"bound {self.bound:.3g} from the computation"
            return (f"{self.count}/{self.total} elements differ ({allowed} at the worst); "
                    f"worst at {list(self.worst_index)}: got {self.got!r}, expected {self.want!r} "
                    f"(abs {self.max_abs:.3g}, rel {self.max_rel:.3g})")
        return (f"{self.count}/{self.total} elements differ (rtol={self.rtol:g}, atol={self.atol:g}); "
                f"worst at {list(self.worst_index)}: got {self.got!r}, expected {self.want!r} "
                f"(abs {self.max_abs:.3g}, rel {self.max_rel:.3g})")


def compare(actual: np.ndarray, expected: np.ndarray, dt: DType | str, reduction: int = 1,
            tolerances: tuple[float, float] | None = None) -> Mismatch | None:
    """None when ``actual`` matches ``expected`` within tolerance, else what differs.

    ``dt`` is the arrays' storage dtype; the tolerance is ``dt``'s for ``reduction`` unless
    ``tolerances`` gives (rtol, atol), e.g. from :func:`result_precisions`."""
    dt = _dtype(dt)
    a = to_compute(np.asarray(actual), dt).astype(np.float64)
    e = to_compute(np.asarray(expected), dt).astype(np.float64)
    if a.shape != e.shape:
        a = a.reshape(e.shape) if a.size == e.size else a
    if a.shape != e.shape:
        return Mismatch(max(a.size, e.size), e.size, float("inf"), float("inf"), (), float("nan"),
                        float("nan"), 0.0, 0.0)
    rtol, atol = tolerance(dt, reduction) if tolerances is None else tolerances
    with np.errstate(all="ignore"):
        diff = np.abs(a - e)
        bad = ~((diff <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e)) | (a == e))
    n = int(bad.sum())
    if n == 0:
        return None
    with np.errstate(all="ignore"):
        score = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -1.0)
    idx = np.unravel_index(int(np.argmax(score)), e.shape) if e.ndim else ()
    worst = float(diff[idx]) if e.ndim else float(diff)
    want = float(e[idx]) if e.ndim else float(e)
    got = float(a[idx]) if e.ndim else float(a)
    return Mismatch(n, int(e.size), worst, worst / max(abs(want), 1e-30), tuple(int(i) for i in idx),
                    got, want, rtol, atol)


# ---- error bounds derived from the computation ------------------------------------------------------------
#
# ``error_bounds(module, env)`` walks the module with the oracle's own values (``evaluate(..., keep_all=True)``)
# and gives, for every element of every output, how far a *correct* kernel's result may lie from the oracle's:
#
#   D(v) = L * D(inputs)  +  T(v)
#
# L*D(inputs) is how much the op can move a difference its inputs already carry (first order, with the
# oracle's values: add/sub D_a+D_b, mul |b|D_a+|a|D_b+D_aD_b, div (D_a+|q|D_b)/(|b|-D_b), exp |v|expm1(D),
# log D/(x-D), tanh D, sigmoid D/4, erf 2D/sqrt(pi), sqrt/rsqrt/recip the interval image, max/min/relu/abs/neg
# and every view move it unchanged, reductions add it up / take its max, dot and convolution
# |A|D_B + D_A|B| + D_A D_B).  T(v) is what the op itself may add:
#
# * exact ops -- views, neg/abs/relu, max/min, floor/ceil, comparisons, where, integer ops, conversions
#   (float->float round-to-nearest-even, float->int truncation, int->float), reduce_max/min -- add nothing,
#   so with exact inputs (parameters, literals) the result must be **bit-exact**; add and sub in f16/bf16/f32
#   (computed in float and rounded to the op's type, as the oracle rounds its float64 result: the same
#   correctly rounded value) are exact too;
# * every rounding that may land differently: 2 u|v| (the oracle's and the device's rounding to the op's
#   type, u = 2^-p: 2^-11 f16, 2^-8 bf16, 2^-24 f32), plus the smallest subnormal twice, plus for ops
#   the device computes in float with OpenCL's accuracy (ULP32: exp 3, log 3, tanh 5, erf 16, pow 16,
#   div and recip 2.5, sqrt 3, rsqrt 2, sigmoid 8) 2k*2^-24|v|; an f32/f64 ``mul`` adds u|v| even with exact
#   inputs (``-cl-mad-enable``: a*b+c may skip the product's rounding);
# * reductions accumulate in at least f32 in any order: reduce_sum adds (n+1) u32 sum|x|, dot and
#   convolution (K+1) u32 (|A| @ |B|) (f64: u64; integers: exact); softmax a relative
#   (n + 11) u32 + 4 u_dt + |x-max| u_dt (x - max and exp may round to the input type).
#
# A narrower accumulator (f16 partial sums), a rounding mode other than round-to-nearest-even, or one ulp lost per
# op are outside these bounds: on a long enough reduction (K in the hundreds for an f16 accumulator) or chain
# they show.  Specials: an oracle NaN must be a NaN; an oracle +-inf must be the same inf, except where the
# computation may or may not overflow (|v| + D over the type's overflow threshold): there inf of v's sign
# and the largest finite value are both right, and every value computed from such an element is unchecked
# (D = inf).  Negative zero equals zero.

_U = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24, "f64": 2.0 ** -53,
      # narrow floats (round to nearest); f8E8M0FNU's rounding from a float keeps the exponent only (down by
      # up to a factor 2)
      "f8E4M3FN": 2.0 ** -4, "f8E5M2": 2.0 ** -3, "f4E2M1FN": 2.0 ** -2, "f8E8M0FNU": 1.0}
# twice the absolute rounding error in the subnormal range (f32: the device may flush subnormals to zero)
_TINY = {"bf16": 2.0 ** -133, "f16": 2.0 ** -24, "f32": 2.0 ** -126, "f64": 2.0 ** -1022,
         "f8E4M3FN": 2.0 ** -9, "f8E5M2": 2.0 ** -16, "f4E2M1FN": 0.5, "f8E8M0FNU": 2.0 ** -127}
_MAXF = {"bf16": 3.3895313892515355e38, "f16": 65504.0, "f32": float(np.finfo(np.float32).max),
         "f64": float(np.finfo(np.float64).max), "f8E4M3FN": 448.0, "f8E5M2": 57344.0, "f4E2M1FN": 6.0,
         "f8E8M0FNU": 2.0 ** 127}
_U32 = 2.0 ** -24
# single-precision accuracy (ulp) OpenCL 1.2 allows each op the kernels compute in float
ULP32 = {"exp": 3, "log": 3, "tanh": 5, "sigmoid": 8, "erf": 16, "pow": 16, "div": 2.5, "recip": 2.5,
         "sqrt": 3, "rsqrt": 2}
_EXACT_UNARY = {"relu", "neg", "abs", "floor", "ceil"}


def _u(dt: DType) -> float:
    return _U.get(dt.name, 2.0 ** -24) if dt.is_float else 0.0


def _round_term(v: np.ndarray, dt: DType, ulps32: float = 0.0) -> np.ndarray:
    """Two roundings to ``dt`` (oracle, device) of ``v``, plus ``ulps32`` single-precision ulps of the device's op."""
    if not dt.is_float:
        return np.zeros(np.shape(v))
    with np.errstate(all="ignore"):
        a = np.abs(np.asarray(v, dtype=np.float64))
        t = (2 * _u(dt) + 2 * ulps32 * _U32) * a + 2 * _TINY.get(dt.name, 0.0)
    return np.where(np.isfinite(a), t, 0.0)


def _shaped(d, v) -> np.ndarray:
    return np.broadcast_to(np.asarray(d, dtype=np.float64), np.shape(v))


def _m(x, d):
    """x * d with 0 wherever d is 0 (an inf value carrying no difference carries none on)."""
    with np.errstate(all="ignore"):
        return np.where(d == 0, 0.0, x * d)


def _f(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _interval_image(fn, x, d):
    """max |fn(y) - fn(x)| for |y - x| <= d, for fn monotonic on [x-d, x+d] (inf where it is not defined)."""
    with np.errstate(all="ignore"):
        lo, hi = fn(x - d), fn(x + d)
        fx = fn(x)
        out = np.maximum(np.abs(hi - fx), np.abs(fx - lo))
    return np.where(np.isfinite(out), out, np.inf)


def _unary_bound(op, x, d, v, dt):
    with np.errstate(all="ignore"):
        if op in ("relu", "neg", "abs"):
            return d
        if op in ("floor", "ceil"):
            return np.where(d > 0, d + 1.0, 0.0)
        if op == "exp":
            prop = _m(np.abs(v), np.expm1(d))
        elif op == "log":
            prop = np.where(x - d > 0, d / (x - d), np.inf)
        elif op == "tanh":
            prop = d
        elif op == "sigmoid":
            prop = d / 4
        elif op == "erf":
            prop = d * (2 / math.sqrt(math.pi))
        elif op == "sqrt":
            prop = np.where(x - d >= 0, _interval_image(np.sqrt, x, d), np.inf)
        elif op == "rsqrt":
            prop = np.where(x - d > 0, _interval_image(lambda y: 1 / np.sqrt(y), x, d), np.inf)
        elif op == "recip":
            prop = np.where(np.abs(x) > d, d / (np.abs(x) * (np.abs(x) - d)), np.inf)
        else:
            raise KeyError(op)
        prop = np.where(d > 0, prop, 0.0)
    return prop + _round_term(v, dt, ULP32.get(op, 16))


def _binary_bound(op, a, b, da, db, v, dt, in_float):
    with np.errstate(all="ignore"):
        exact_in = (da == 0) & (db == 0)
        if op in ("max", "min"):
            return _shaped(np.maximum(da, db), v)
        if op in ("greater", "less", "equal", "greater_or_equal"):
            near = np.abs(a - b) <= da + db
            return _shaped(np.where(~exact_in & near, 1.0, 0.0), v)
        if op in ("add", "sub"):
            prop = da + db
            return prop + np.where(exact_in, 0.0, _round_term(v, dt))
        if op == "mul":
            prop = _m(np.abs(b), da) + _m(np.abs(a), db) + da * db
            t = _round_term(v, dt)
            if dt.name in ("f32", "f64"):       # -cl-mad-enable: the product may go unrounded into an add
                return prop + np.where(exact_in, t / 2, t)
            return prop + np.where(exact_in, 0.0, t)
        if op == "div":
            if not in_float:
                return _shaped(np.where(exact_in, 0.0, np.inf), v)
            q = np.abs(v)
            prop = np.where(np.abs(b) > db, (da + _m(q, db)) / (np.abs(b) - db), np.inf)
            prop = np.where(exact_in, 0.0, prop)
            return prop + _round_term(v, dt, ULP32["div"])
        if op == "pow":
            if not in_float:
                return _shaped(np.where(exact_in, 0.0, np.inf), v)
            rel = np.where(np.abs(a) > da, np.abs(b) * da / (np.abs(a) - da), np.inf) + np.abs(np.log(np.abs(a))) * db
            prop = np.where(exact_in, 0.0, np.abs(v) * np.expm1(rel))
            return prop + _round_term(v, dt, ULP32["pow"])
    raise KeyError(op)


def _reduce_bound(op, x, d, v, axes, dt):
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    with np.errstate(all="ignore"):
        if op in ("reduce_max", "reduce_min"):
            return _shaped(np.max(d, axis=axes, keepdims=True), v)
        acc = (n + 1) * (_U["f64"] if dt.name == "f64" else _U32) if dt.is_float else 0.0
        s = np.sum(d, axis=axes, keepdims=True) + acc * np.sum(np.abs(x), axis=axes, keepdims=True)
        if op == "reduce_mean":
            return s / n + _round_term(v, dt, ULP32["div"])
        return s + _round_term(v, dt)


def _softmax_bound(x, d, v, axis, dt):
    n = x.shape[axis]
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        a = _u(dt) * np.abs(x - m)                          # x - max rounded to the input type
        # a masked score (-inf, with a finite maximum in its row) has probability exactly 0 and adds nothing
        a = np.where(np.isneginf(x) & np.isfinite(m), 0.0, a)
        y = np.abs(v)
        rel = (d + np.max(d, axis=axis, keepdims=True) + a + np.sum(y * a, axis=axis, keepdims=True)
               + (n + 11) * _U32 + 4 * _u(dt))
        out = y * np.expm1(rel) + _round_term(v, dt)
    return np.where(np.isfinite(out), out, np.inf)


def _contraction(ins, args, ds, v, out_dt, k):
    A, B = np.abs(_f(args[0])), np.abs(_f(args[1]))
    dA, dB = ds
    if ins.op in ("convolution", "quant_convolution"):
        mm = lambda p, q: convolve(ins, p, q).astype(np.float64)        # noqa: E731
    else:
        mm = lambda p, q: np.matmul(p, q)                                # noqa: E731
    exact = not out_dt.is_float and not dA.any() and not dB.any()
    if exact:
        return np.zeros(np.shape(v))
    with np.errstate(all="ignore"):
        out = np.zeros(np.shape(v))
        if dB.any():
            out = out + mm(A, dB)
        if dA.any():
            out = out + mm(dA, B)
            if dB.any():
                out = out + mm(dA, dB)
        if out_dt.is_float:
            acc = (k + 1) * (_U["f64"] if out_dt.name == "f64" else _U32)
            out = out + acc * mm(A, B) + _round_term(v, out_dt)
    return out


def _overflow_uncertain(v, d, dt) -> np.ndarray:
    """Elements whose value may or may not overflow ``dt`` (both inf and the largest finite are right)."""
    if not dt.is_float:
        return np.zeros(np.shape(v), dtype=bool)
    top = _MAXF[dt.name] * (1 + _u(dt))            # the overflow threshold of round-to-nearest
    with np.errstate(all="ignore"):
        a = np.abs(_f(v))
        return (np.isinf(a) & (d > 0)) | (np.isfinite(a) & (a + d >= top))


@dataclass
class Bound:
    """Per element of one output: how far a correct result may lie from the oracle's (``abs``; 0: bit-exact,
    inf: not checked) and where an overflow to +-inf or to the largest finite value is right either way."""
    abs: np.ndarray
    overflow_ok: np.ndarray

    @property
    def exact(self) -> bool:
        return not self.abs.any()


def error_bounds(module, env: dict) -> list[Bound]:
    """Per output of ``module``: its :class:`Bound`, from the oracle's values ``env`` (``evaluate(module,
    inputs, keep_all=True)[1]``). See the comment above for the rules."""
    D: dict[str, np.ndarray] = {}
    OVF: dict[str, np.ndarray] = {}
    for ins in module.instructions:
        if ins.op == "@return":
            continue
        if ins.op in ("@param", "@literal"):
            lens = tuple(ins.shape.lens) if ins.shape is not None else np.shape(env.get(ins.name))
            D[ins.name] = np.zeros(lens)
            OVF[ins.name] = np.zeros(lens, dtype=bool)
            continue
        dt = _dtype(ins.shape.dtype)
        in_dts = [_dtype(module.get(i).shape.dtype) for i in ins.inputs]
        args = [env[i] for i in ins.inputs]
        ds = [np.where(OVF[i], np.inf, D[i]) for i in ins.inputs]
        v = _f(env[ins.name]) if ins.op not in COMPARE_OPS else np.asarray(env[ins.name], dtype=np.float64)
        d = np.asarray(_op_bound(ins, args, ds, in_dts, v, dt), dtype=np.float64)
        d = np.where(np.isnan(d), np.inf, d)
        if d.shape != np.shape(v):
            d = np.broadcast_to(d, np.shape(v))
        D[ins.name] = d
        OVF[ins.name] = _overflow_uncertain(v, d, dt)
    out = []
    for name in module.returns():
        out.append(Bound(np.asarray(D[name]), np.asarray(OVF[name])))
    return out


def _op_bound(ins, args: list, ds: list, in_dts: list[DType], v: np.ndarray, dt: DType):
    """How far the computed instruction ``ins`` (of type ``dt``, the oracle's value ``v``) may be from the
    oracle's, its inputs (``args``, of types ``in_dts``) being at most ``ds`` away; inf where unknown."""
    op = ins.op
    if op in VIEW_OPS:
        return eval_instruction(ins, ds, in_dts)
    if op == "convert":
        return _convert_bound(ds[0], in_dts[0], v, dt)
    if op in UNARY_OPS:
        if op in _EXACT_UNARY or not dt.is_float:
            return ds[0] if op not in ("floor", "ceil") else np.where(ds[0] > 0, ds[0] + 1.0, 0.0)
        return _unary_bound(op, _f(args[0]), ds[0], v, dt)
    if op in BINARY_OPS or op in COMPARE_OPS:
        d = _binary_bound(op, _f(args[0]), _f(args[1]), ds[0], ds[1], v, dt, in_dts[0].is_float)
        if not dt.is_float and op not in COMPARE_OPS and op not in ("max", "min"):
            d = np.where((ds[0] == 0) & (ds[1] == 0), 0.0, d)
        return d
    if op == "where":
        return _where_bound(args, ds)
    if op == "clip":
        # min(max(x, lo), hi): exact, moving at most the largest difference its inputs carry
        return np.maximum(np.maximum(ds[0], ds[1]), ds[2])
    if op == "quantizelinear":
        return _quantize_bound(args, ds, in_dts, v)
    if op == "dequantizelinear":
        return _dequantize_bound(args, ds, v, dt)
    if op in REDUCE_OPS:
        axes = tuple(a % args[0].ndim for a in ins.attrs["axes"])
        return _reduce_bound(op, _f(args[0]), ds[0], v, axes, dt)
    if op == "softmax":
        axis = ins.attrs.get("axis", 1) % args[0].ndim
        return _softmax_bound(_f(args[0]), ds[0], v, axis, dt)
    if op == "quant_dot" and len(args) == 4:
        return _scaled_dot_bound(ins, args, ds, v, dt)
    if op in ("dot", "quant_dot"):
        return _contraction(ins, args, ds, v, dt, int(np.shape(args[0])[-1]))
    if op == "unpack":
        # two nibbles of a byte, exact: output 2j and 2j+1 differ only where byte j may
        axis = ins.attrs["axis"] % np.ndim(args[0])
        return np.where(np.repeat(np.asarray(ds[0]), 2, axis=axis) > 0, np.inf, 0.0)
    if op in ("convolution", "quant_convolution"):
        w = np.shape(args[1])
        return _contraction(ins, args, ds, v, dt, int(np.prod(w[1:])))
    # an op these rules don't know yet: the result is not checked (rather than called wrong)
    return np.full(np.shape(v), np.inf)


def _convert_bound(d0, src: DType, v: np.ndarray, dt: DType) -> np.ndarray:
    """A ``convert`` from ``src`` to ``dt``: float -> int may move by one, a narrowing rounds, else exact."""
    with np.errstate(all="ignore"):
        if not dt.is_float and src.is_float:
            d = np.where(d0 > 0, d0 + 1.0, 0.0)
        elif dt.is_float and _u(dt) > _u(src):       # narrowing (or int -> float): exact from exact
            d = np.where(d0 > 0, d0 + _round_term(v, dt), 0.0)
        else:
            d = d0 + 0.0
    return np.broadcast_to(d, np.shape(v))


def _where_bound(args: list, ds: list):
    """``where(c, a, b)``: a condition that may flip moves the result by ``|a - b|`` and both differences."""
    dc = ds[0]
    with np.errstate(all="ignore"):
        both = np.maximum(ds[1], ds[2])
        sel = np.where(_f(args[0]) != 0, ds[1], ds[2])
        return np.where(dc > 0, np.abs(_f(args[1]) - _f(args[2])) + both, sel)


def _quantize_bound(args: list, ds: list, in_dts: list[DType], v: np.ndarray) -> np.ndarray:
    """The oracle follows rocMLIR's steps (1/scale and x * (1/scale) rounded to the input's type, then
    round-half-even and the zero point): bit-exact from exact inputs; else the difference scaled by
    1/scale, and a rounding that may flip by one."""
    with np.errstate(all="ignore"):
        inv = np.abs(1.0 / _f(args[1]))
        d = _m(inv, ds[0]) * (1 + 2 * _u(in_dts[0])) + _m(np.abs(_f(args[0])) * inv * inv, ds[1])
        if len(ds) > 2:
            d = d + ds[2]
        exact_in = np.ones(np.shape(v), dtype=bool)
        for x in ds:
            exact_in = exact_in & (np.broadcast_to(x, np.shape(v)) == 0)
        return np.where(exact_in, 0.0, d + 1.0)


def _dequantize_bound(args: list, ds: list, v: np.ndarray, dt: DType) -> np.ndarray:
    """(x - zero point) * scale, rounded as rocMLIR lowers it (the oracle's steps): bit-exact from exact
    inputs; else the moved difference and two roundings."""
    xs = _f(args[0]) - (_f(args[2]) if len(args) > 2 else 0.0)
    dx = ds[0] + (ds[2] if len(ds) > 2 else 0.0)
    with np.errstate(all="ignore"):
        d = _m(np.abs(_f(args[1])), dx) + _m(np.abs(xs), ds[1]) + dx * ds[1]
        return np.where(np.broadcast_to(d, np.shape(v)) == 0, 0.0, d + _round_term(v, dt))


def _scaled_dot_bound(ins, args: list, ds: list, v: np.ndarray, dt: DType) -> np.ndarray:
    """``quant_dot`` with scales: dot(f32(a) * f32(sa), f32(b) * f32(sb)) (reference.scaled_operands): each
    operand's difference carried through its f32 mul, plus that mul's rounding where anything differs, then
    the dot's."""
    A, B = scaled_operands(args)
    dAB = []
    for x, s_, dx, dsc, X in ((args[0], args[2], ds[0], ds[2], A), (args[1], args[3], ds[1], ds[3], B)):
        with np.errstate(all="ignore"):
            dd = _m(np.abs(_f(s_)), dx) + _m(np.abs(_f(x)), dsc) + _m(dx, dsc)
        dAB.append(np.where(dd == 0, 0.0, dd + 2 * _U32 * np.abs(X)))
    return _contraction(ins, [A, B], dAB, v, dt, int(np.shape(args[0])[-1]))


def compare_bounded(actual: np.ndarray, expected: np.ndarray, dt: DType | str, bound: Bound) -> Mismatch | None:
    """None when every element of ``actual`` lies within ``bound`` of the oracle's ``expected`` (storage arrays of
    ``dt``): bit-exact where the bound is 0, NaN where the oracle has NaN, the same inf where it has +-inf (unless
    the element may or may not overflow), else what differs."""
    dt = _dtype(dt)
    a_s, e_s = np.asarray(actual), np.asarray(expected)
    if a_s.shape != e_s.shape and a_s.size == e_s.size:
        a_s = a_s.reshape(e_s.shape)
    if a_s.shape != e_s.shape:
        return Mismatch(max(a_s.size, e_s.size), e_s.size, float("inf"), float("inf"), (), float("nan"),
                        float("nan"), 0.0, 0.0, bound=0.0)
    b = np.broadcast_to(bound.abs, e_s.shape)
    ovf = np.broadcast_to(bound.overflow_ok, e_s.shape)
    if not dt.is_float:
        if dt.name == "bool":
            ai, ei = a_s.astype(np.int64), e_s.astype(np.int64)
        else:
            ai, ei = to_compute(a_s, dt), to_compute(e_s, dt)
        with np.errstate(all="ignore"):
            diff_i = np.abs(ai.astype(np.float64) - ei.astype(np.float64))
        bad = (ai != ei) & ~(diff_i <= b)
        a, e, diff = ai.astype(np.float64), ei.astype(np.float64), diff_i
    else:
        a = to_compute(a_s, dt).astype(np.float64)
        e = to_compute(e_s, dt).astype(np.float64)
        top = _MAXF.get(dt.name, np.inf)
        with np.errstate(all="ignore"):
            diff = np.abs(a - e)
            same = (a == e) | (np.isnan(a) & np.isnan(e))
            finite_e = np.isfinite(e)
            within = finite_e & np.isfinite(a) & (diff <= b)
            unchecked = np.isinf(b) & ~np.isnan(e)
            # may or may not overflow: inf of the oracle's sign or the largest finite value
            edge = ovf & ~np.isnan(e) & (np.sign(a) == np.sign(e)) & (np.isinf(a) | (np.abs(a) >= top))
            ok = same | within | unchecked | edge | (ovf & np.isinf(b))
        bad = ~ok
    n = int(bad.sum())
    if n == 0:
        return None
    with np.errstate(all="ignore"):
        excess = np.where(bad, np.nan_to_num(diff - np.where(np.isfinite(b), b, 0), nan=np.inf, posinf=np.inf),
                          -np.inf)
    idx = np.unravel_index(int(np.argmax(excess)), e.shape) if e.ndim else ()
    worst = float(diff[idx]) if e.ndim else float(diff)
    want = float(e[idx]) if e.ndim else float(e)
    got = float(a[idx]) if e.ndim else float(a)
    allowed = float(b[idx]) if e.ndim else float(b)
    return Mismatch(n, int(e.size), worst, worst / max(abs(want), 1e-30) if np.isfinite(worst) else float("inf"),
                    tuple(int(i) for i in idx), got, want, 0.0, allowed, bound=allowed)
