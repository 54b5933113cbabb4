"""The numpy reference interpreter: the oracle every check compares against.

Values flow as logical arrays (shape = lens; strides are layout, not meaning),
computed in float64 (floats) or int64 (integers) and rounded to each
instruction's element type after it, as MIGraphX defines the op.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .dtypes import BY_NAME, NARROW_VALUES, DType, from_compute, narrow_random_codes, to_compute
from .module import Instruction, IRError, Module
from .ops import BINARY_OPS, COMPARE_OPS, REDUCE_OPS, UNARY_OPS, conv_params

_erf = np.frompyfunc(math.erf, 1, 1)


def _round(x: np.ndarray, dt: DType) -> np.ndarray:
    return to_compute(from_compute(x, dt), dt)


def _unary(op: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return {
            "relu": lambda: np.maximum(x, 0),
            "neg": lambda: -x,
            "exp": lambda: np.exp(x),
            "log": lambda: np.log(x),
            "tanh": lambda: np.tanh(x),
            "sigmoid": lambda: 1.0 / (1.0 + np.exp(-x)),
            "sqrt": lambda: np.sqrt(x),
            "rsqrt": lambda: 1.0 / np.sqrt(x),
            "erf": lambda: _erf(x).astype(np.float64),
            "abs": lambda: np.abs(x),
            "floor": lambda: np.floor(x),
            "ceil": lambda: np.ceil(x),
            "recip": lambda: 1.0 / x,
        }[op]()


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    return np.where(b == 0, 0, np.sign(a) * np.sign(safe) * q)


def _binary(op: str, a: np.ndarray, b: np.ndarray, is_float: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / b if is_float else _int_div(a, b)
        if op == "max":
            return np.maximum(a, b)
        if op == "min":
            return np.minimum(a, b)
        if op == "pow":
            return np.power(a, b) if is_float else np.power(a, np.maximum(b, 0))
        if op == "greater":
            return a > b
        if op == "less":
            return a < b
        if op == "equal":
            return a == b
        if op == "greater_or_equal":
            return a >= b
    raise KeyError(op)


def _reduce(op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    if op == "reduce_sum":
        return np.sum(x, axis=axes, keepdims=True)
    if op == "reduce_max":
        return np.max(x, axis=axes, keepdims=True)
    if op == "reduce_min":
        return np.min(x, axis=axes, keepdims=True)
    if op == "reduce_mean":
        return np.mean(x, axis=axes, keepdims=True)
    raise KeyError(op)


def convolve(ins: Instruction, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """MIGraphX's (quant_)convolution in float64 (int64 for integers): for each kernel position, the
    strided window of the zero-padded input times that position's weights, summed; groups split the
    channels."""
    spatial = x.ndim - 2
    begin, end, stride, dilation, group = conv_params(ins, spatial)
    acc = np.int64 if x.dtype.kind in "iub" else np.float64
    x, w = x.astype(acc), w.astype(acc)
    n, c = x.shape[:2]
    k, cg = w.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(b, e) for b, e in zip(begin, end, strict=False)])
    out_sp = [(xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(spatial)]
    xg = xp.reshape((n, group, cg) + xp.shape[2:])
    wg = w.reshape((group, k // group, cg) + w.shape[2:])
    out = np.zeros((n, group, k // group) + tuple(out_sp), dtype=acc)
    for pos in np.ndindex(*w.shape[2:]):
        window = tuple(slice(p * d, p * d + (o - 1) * s + 1, s)
                       for p, d, o, s in zip(pos, dilation, out_sp, stride, strict=False))
        xs = xg[(slice(None), slice(None), slice(None)) + window]          # n, g, cg, out...
        ws = wg[(slice(None), slice(None), slice(None)) + pos]             # g, kg, cg
        out += np.einsum("ngc...,gkc->ngk...", xs, ws)
    return out.reshape((n, k) + tuple(out_sp))


_I32 = (-(1 << 31), (1 << 31) - 1)
_F32 = BY_NAME["f32"]


def quantize_linear(args: list[np.ndarray], in_dtypes: list[DType], out: DType) -> np.ndarray:
    """migraphx.quantizelinear as rocMLIR lowers it: ``r = 1 / scale`` and ``y = x * r``, each rounded to
    the input's float type; ``y`` rounded half to even and saturated to int32 when there is a zero point
    (which is then added in int32), to the output type when there is none; the sum saturated to the output
    type. NaN quantizes to 0 (plus the zero point)."""
    x, scale = args[0], args[1]
    ft = in_dtypes[0]
    with np.errstate(all="ignore"):
        r = _round(1.0 / scale, ft)
        y = _round(x * r, ft)
    q = np.nan_to_num(np.round(y), nan=0.0, posinf=np.inf, neginf=-np.inf)
    if len(args) == 3:
        q = np.clip(q, *_I32).astype(np.int64) + args[2].astype(np.int64)
    return _round(q, out)


def dequantize_linear(args: list[np.ndarray], out: DType) -> np.ndarray:
    """migraphx.dequantizelinear as rocMLIR lowers it: with ``T`` the scale's (output) type,
    ``(T(x) - T(zero_point)) * scale``, each step rounded to ``T``."""
    xt = _round(args[0].astype(np.float64), out)
    if len(args) == 3:
        xt = _round(xt - _round(args[2].astype(np.float64), out), out)
    return _round(xt * args[1], out)


def scaled_operands(args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A scaled ``quant_dot``'s operands as rocMLIR decomposes it (``-migraphx-transform``): each operand and
    its scale (the scale already broadcast to the operand's lens: a block scale repeated over its block)
    converted to f32, multiplied in f32.  ``args``: a, b, scale_a, scale_b (decoded values)."""
    a, b, sa, sb = args
    with np.errstate(all="ignore"):
        return _round(_round(a, _F32) * _round(sa, _F32), _F32), _round(_round(b, _F32) * _round(sb, _F32), _F32)


def unpack(x: np.ndarray, axis: int, unsigned: bool) -> np.ndarray:
    """migraphx.unpack: each byte along ``axis`` holds two int4 values, the low nibble first (output index
    2j), the high nibble second (2j + 1), sign-extended unless ``unsigned`` (MIGraphX's unpack_int4; rocMLIR's
    realize-int4 reads the bytes as i4 elements and extends them)."""
    u = np.asarray(x).astype(np.int64) & 0xFF
    lo, hi = u & 0xF, u >> 4
    if not unsigned:
        lo, hi = (lo ^ 8) - 8, (hi ^ 8) - 8
    both = np.stack([lo, hi], axis=axis + 1)
    shape = list(x.shape)
    shape[axis] *= 2
    return both.reshape(shape)


def eval_instruction(ins: Instruction, args: list[np.ndarray], in_dtypes: list[DType]) -> np.ndarray:
    op, a = ins.op, ins.attrs
    out = ins.shape
    if op in ("contiguous",):
        return args[0]
    if op == "multibroadcast":
        return np.broadcast_to(args[0], out.lens)
    if op == "broadcast":
        x = args[0]
        axis = a.get("axis", 0)
        shape = (1,) * axis + x.shape + (1,) * (len(out.lens) - axis - x.ndim)
        return np.broadcast_to(x.reshape(shape), out.lens)
    if op == "transpose":
        return np.transpose(args[0], a["permutation"])
    if op in ("reshape", "reshape_lazy", "squeeze", "unsqueeze"):
        return np.reshape(args[0], out.lens)
    if op == "slice":
        x = args[0]
        idx = [slice(None)] * x.ndim
        for ax, b, e in zip(a["axes"], a["starts"], a["ends"], strict=False):
            idx[ax % x.ndim] = slice(b, e)
        return x[tuple(idx)]
    if op == "convert":
        x = args[0]
        if out.dtype.name == "bool":
            # MIGraphX (static_cast<bool>): nonzero -> true, without truncating first (0.5 -> true)
            return np.asarray(x) != 0
        if not out.dtype.is_float and in_dtypes[0].is_float:
            x = np.trunc(x)
        return _round(x, out.dtype)
    if op == "quant_dot" and len(args) == 4:
        return _round(np.matmul(*scaled_operands(args)), out.dtype)
    if op in ("dot", "quant_dot"):
        return _round(np.matmul(args[0], args[1]), out.dtype)
    if op == "unpack":
        return unpack(args[0], a["axis"] % args[0].ndim, bool(a.get("isUnsigned", False)))
    if op in ("convolution", "quant_convolution"):
        return _round(convolve(ins, args[0], args[1]), out.dtype)
    if op in UNARY_OPS:
        return _round(_unary(op, args[0]), out.dtype)
    if op in BINARY_OPS or op in COMPARE_OPS:
        return _round(_binary(op, args[0], args[1], in_dtypes[0].is_float), out.dtype)
    if op == "where":
        return _round(np.where(args[0] != 0, args[1], args[2]), out.dtype)
    if op == "clip":
        with np.errstate(all="ignore"):
            return _round(np.minimum(np.maximum(args[0], args[1]), args[2]), out.dtype)
    if op == "quantizelinear":
        return quantize_linear(args, in_dtypes, out.dtype)
    if op == "dequantizelinear":
        return dequantize_linear(args, out.dtype)
    if op in REDUCE_OPS:
        axes = tuple(x % args[0].ndim for x in a["axes"])
        return _round(_reduce(op, args[0], axes), out.dtype)
    if op == "softmax":
        x = args[0]
        axis = a.get("axis", 1) % x.ndim
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return _round(e / np.sum(e, axis=axis, keepdims=True), out.dtype)
    raise IRError(f"{ins.name} = {op}: the reference interpreter has no rule for {op!r}")


def evaluate(module: Module, inputs: dict[str, np.ndarray], keep_all: bool = False):
    """Run ``module`` on ``inputs`` (param name -> storage array of the param's lens and dtype).

    Returns the list of outputs as storage arrays (``keep_all``: also a dict of every value).
    """
    env: dict[str, np.ndarray] = {}
    for ins in module.instructions:
        if ins.op == "@param":
            if ins.param not in inputs:
                raise IRError(f"{ins.name}: no input given for parameter {ins.param!r}")
            x = np.asarray(inputs[ins.param])
            if tuple(x.shape) != ins.shape.lens:
                raise IRError(f"{ins.name}: input for {ins.param!r} has shape {list(x.shape)}, "
                              f"expected {list(ins.shape.lens)}")
            env[ins.name] = to_compute(x, ins.shape.dtype)
        elif ins.op == "@literal":
            env[ins.name] = to_compute(np.broadcast_to(ins.literal, ins.shape.lens).astype(
                ins.shape.dtype.np), ins.shape.dtype)
        elif ins.op == "@return":
            continue
        else:
            args = [env[i] for i in ins.inputs]
            env[ins.name] = eval_instruction(ins, args, [module.get(i).shape.dtype for i in ins.inputs])
    outs = [from_compute(env[n], module.get(n).shape.dtype) for n in module.returns()]
    return (outs, env) if keep_all else outs


def _shares_elements(lens, strides) -> bool:
    """Do two indices of the view map to one element (dims longer than 1, taken by stride: each stride
    must pass the last element of the dims inside it)?"""
    span = 0
    for s, n in sorted((s, n) for n, s in zip(lens, strides, strict=False) if n > 1):
        if s <= span:
            return True
        span += (n - 1) * s
    return False


def as_laid_out(values: np.ndarray, lens, strides) -> np.ndarray:
    """The logical array a buffer laid out at ``strides`` holds after ``values`` are written into it in
    order: where the layout maps several indices to one element -- a broadcast (stride 0) dim, or dims
    that overlap -- they all read the one value stored there (the value written last, as a strided
    copy writes it; for a broadcast dim: its index 0).  ``values`` itself when no index shares an element."""
    x = np.asarray(values)
    lens, strides = tuple(int(n) for n in lens), tuple(int(s) for s in strides)
    if x.size == 0 or not _shares_elements(lens, strides):
        return x
    keep = [not (s == 0 and n > 1) for n, s in zip(lens, strides, strict=False)]
    space = 1 + sum((n - 1) * s for n, s in zip(lens, strides, strict=False))
    buf = np.zeros(max(space, 1), dtype=x.dtype)
    item = buf.itemsize
    view = as_strided(buf, shape=[n for n, k in zip(lens, keep, strict=False) if k],
                      strides=[s * item for s, k in zip(strides, keep, strict=False) if k], writeable=True)
    view[...] = x[tuple(slice(None) if k else 0 for k in keep)]
    return np.array(as_strided(buf, shape=lens, strides=[s * item for s in strides], writeable=False))


def random_inputs(module: Module, seed: int = 0, low: float = -1.0, high: float = 1.0) -> dict[str, np.ndarray]:
    """Fresh random inputs for every parameter (never zeros): floats in [low, high), ints in [-8, 8].

    A parameter's value is what its layout can hold (:func:`as_laid_out`): along a broadcast (stride-0)
    dim every index reads the one stored element, so the oracle computes with the values the kernel
    reads from the packed buffer (``codegen.pack_input``).  The random draws are the same whatever the
    strides (a reproducer's generator relies on that)."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in module.params():
        s = p.shape
        dt = s.dtype
        if dt.name == "bool":
            v = rng.integers(0, 2, size=s.lens).astype(np.bool_)
        elif dt.name in NARROW_VALUES:
            v = narrow_random_codes(rng, dt.name, s.lens)
        elif dt.is_float:
            v = from_compute(rng.uniform(low, high, size=s.lens), dt)
        else:
            info = np.iinfo(dt.np)
            v = rng.integers(max(info.min, -8), min(info.max, 8) + 1, size=s.lens).astype(dt.np)
        out[p.param] = as_laid_out(v, s.lens, s.strides)
    return out
