"""Shape rules of the migraphx ops the project knows, and the op families."""
from __future__ import annotations

from collections.abc import Callable

from .dtypes import BY_NAME, BY_TYPE_ID, NARROW_FLOATS, DType
from .dtypes import dtype as _dtype
from .instruction import Instruction, IRError
from .shape import Shape, standard_strides

UNARY_OPS = ("relu", "neg", "exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "erf", "abs",
             "floor", "ceil", "recip")
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "pow")
# greater_or_equal: in rocMLIR's dialect from January to May 2025 (then replaced by greater); MIGraphX has it
COMPARE_OPS = ("greater", "less", "equal", "greater_or_equal")
# the scale (and zero point) arrive broadcast to the input's lens, as in rocMLIR's migraphx dialect
QUANT_OPS = ("quantizelinear", "dequantizelinear")
POINTWISE_OPS = UNARY_OPS + BINARY_OPS + COMPARE_OPS + ("where", "convert", "clip") + QUANT_OPS
REDUCE_OPS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_mean")
GEMM_OPS = ("dot", "quant_dot")
CONV_OPS = ("convolution", "quant_convolution")
KNOWN_OPS = frozenset(("@param", "@literal", "@return", "multibroadcast", "broadcast", "transpose", "unpack",
                       "reshape", "contiguous", "slice", "squeeze", "unsqueeze", "softmax")
                      + POINTWISE_OPS + REDUCE_OPS + GEMM_OPS + CONV_OPS)
# Op namespaces of compiled programs (lowered for a target): they parse and print, they never run here.
COMPILED_PREFIXES = ("gpu::", "ref::", "hip::", "cpu::", "dnnl::", "check_context::", "fpga::")
COMPILED_OPS = frozenset({"load", "allocate", "@outline"})


def compiled_op(op: str) -> bool:
    """An op of a compiled (lowered) program: ``gpu::gemm``, ``ref::add``, ``hip::copy``, ``load`` ..."""
    return op.startswith(COMPILED_PREFIXES) or op in COMPILED_OPS


def _err(ins: Instruction, msg: str) -> IRError:
    return IRError(f"{ins.name} = {ins.op}: {msg}")


def _ints(ins: Instruction, key: str, required: bool = True) -> list[int]:
    if key not in ins.attrs:
        if required:
            raise _err(ins, f"missing attribute {key}")
        return []
    v = ins.attrs[key]
    if isinstance(v, int):
        return [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, int) for x in v):
        raise _err(ins, f"attribute {key} must be a list of integers, got {v!r}")
    return list(v)


def _arity(ins: Instruction, shapes: list[Shape], n: int) -> None:
    if len(shapes) != n:
        raise _err(ins, f"takes {n} input{'s' if n != 1 else ''}, got {len(shapes)}")


def _norm_axis(ins: Instruction, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise _err(ins, f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def _pointwise_out(shapes: list[Shape], dt: DType) -> Shape:
    first = shapes[0]
    if all(s.lens == first.lens and s.strides == first.strides for s in shapes) and first.packed:
        return Shape(dt, first.lens, first.strides)
    return Shape(dt, first.lens, standard_strides(first.lens))


def _same_lens(ins: Instruction, shapes: list[Shape]) -> None:
    for s in shapes[1:]:
        if s.lens != shapes[0].lens:
            raise _err(ins, f"inputs differ in lens: {list(shapes[0].lens)} vs {list(s.lens)} "
                            "(broadcast them first)")


def _unary(ins, shapes):
    _arity(ins, shapes, 1)
    return _pointwise_out(shapes, shapes[0].dtype)


def _binary(ins, shapes):
    _arity(ins, shapes, 2)
    _same_lens(ins, shapes)
    if shapes[0].dtype != shapes[1].dtype:
        raise _err(ins, f"inputs differ in type: {shapes[0].dtype.migraphx} vs {shapes[1].dtype.migraphx}")
    return _pointwise_out(shapes, shapes[0].dtype)


def _compare(ins, shapes):
    out = _binary(ins, shapes)
    return out.with_dtype("bool")


def _where(ins, shapes):
    _arity(ins, shapes, 3)
    _same_lens(ins, shapes)
    if shapes[1].dtype != shapes[2].dtype:
        raise _err(ins, f"branches differ in type: {shapes[1].dtype.migraphx} vs {shapes[2].dtype.migraphx}")
    if shapes[0].dtype.is_float:
        raise _err(ins, f"condition must be bool or integer, got {shapes[0].dtype.migraphx}")
    return _pointwise_out(shapes, shapes[1].dtype)


def _clip(ins, shapes):
    """clip(x, min, max) = min(max(x, min), max); the bounds arrive broadcast to x's lens."""
    _arity(ins, shapes, 3)
    _same_lens(ins, shapes)
    for what, s in (("min", shapes[1]), ("max", shapes[2])):
        if s.dtype != shapes[0].dtype:
            raise _err(ins, f"{what} bound is {s.dtype.migraphx}, x is {shapes[0].dtype.migraphx} (they must match)")
    return _pointwise_out(shapes, shapes[0].dtype)


def _type_attr(ins: Instruction, key: str) -> DType | None:
    t = ins.attrs.get(key)
    if t is None:
        return None
    if isinstance(t, int) and not isinstance(t, bool):
        if t not in BY_TYPE_ID:
            raise _err(ins, f"unknown {key} {t}")
        return BY_TYPE_ID[t]
    if isinstance(t, str):
        try:
            return _dtype(t)
        except ValueError as e:
            raise _err(ins, f"{key}: {e}") from None
    raise _err(ins, f"{key} must be a type id or a type name, got {t!r}")


def _quant_arity(ins, shapes):
    if len(shapes) not in (2, 3):
        raise _err(ins, f"takes 2 inputs (x, scale) or 3 (x, scale, zero point), got {len(shapes)}")
    for what, s in zip(("scale", "zero point"), shapes[1:], strict=False):
        if s.lens != shapes[0].lens:
            raise _err(ins, f"{what} lens {list(s.lens)} differ from the input's {list(shapes[0].lens)} "
                            f"(broadcast the {what} to the input first)")


def _quantizelinear(ins, shapes):
    """y = saturate(round_half_even(x * (1 / scale)) + zero_point) in the output type: the zero point's
    type, else the ``out_type`` attribute, else uint8 (MIGraphX's default)."""
    _quant_arity(ins, shapes)
    x, scale = shapes[0], shapes[1]
    if not x.dtype.is_float:
        raise _err(ins, f"input must be a float type, got {x.dtype.migraphx}")
    if scale.dtype != x.dtype:
        raise _err(ins, f"scale is {scale.dtype.migraphx}, the input {x.dtype.migraphx} (they must match)")
    out = _type_attr(ins, "out_type")
    if len(shapes) == 3:
        zp = shapes[2].dtype
        if zp.is_float or zp.name == "bool":
            raise _err(ins, f"zero point must be an integer type, got {zp.migraphx}")
        if out is not None and out != zp:
            raise _err(ins, f"out_type {out.migraphx} differs from the zero point's type {zp.migraphx}")
        out = zp
    elif out is None:
        out = BY_NAME["u8"]
    if out.is_float or out.name in ("bool", "u64", "i64"):
        raise _err(ins, f"output type must be an integer type of at most 32 bits, got {out.migraphx}")
    return _pointwise_out(shapes[:1], out)


def _dequantizelinear(ins, shapes):
    """y = (T(x) - T(zero_point)) * scale with T = the scale's float type (the output type)."""
    _quant_arity(ins, shapes)
    x, scale = shapes[0], shapes[1]
    if x.dtype.is_float or x.dtype.name == "bool":
        raise _err(ins, f"input must be an integer type, got {x.dtype.migraphx}")
    if not scale.dtype.is_float:
        raise _err(ins, f"scale must be a float type, got {scale.dtype.migraphx}")
    if len(shapes) == 3 and shapes[2].dtype != x.dtype:
        raise _err(ins, f"zero point is {shapes[2].dtype.migraphx}, the input {x.dtype.migraphx} (they must match)")
    return _pointwise_out(shapes[:1], scale.dtype)


def _convert(ins, shapes):
    _arity(ins, shapes, 1)
    t = ins.attrs.get("target_type")
    if isinstance(t, int):
        if t not in BY_TYPE_ID:
            raise _err(ins, f"unknown target_type {t}")
        dt = BY_TYPE_ID[t]
    elif isinstance(t, str):
        dt = _dtype(t)
    else:
        raise _err(ins, "missing attribute target_type")
    return _pointwise_out(shapes, dt)


def _multibroadcast(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    out = _ints(ins, "out_lens")
    if len(out) < s.rank:
        raise _err(ins, f"out_lens {out} has lower rank than input {list(s.lens)}")
    off = len(out) - s.rank
    strides = [0] * len(out)
    for i, (n, st) in enumerate(zip(s.lens, s.strides, strict=False)):
        if n == out[off + i]:
            strides[off + i] = st
        elif n == 1:
            strides[off + i] = 0
        else:
            raise _err(ins, f"cannot broadcast input lens {list(s.lens)} to {out}")
    return Shape(s.dtype, tuple(out), tuple(strides))


def _broadcast(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    out = _ints(ins, "out_lens")
    axis = ins.attrs.get("axis", 0)
    if not isinstance(axis, int) or axis < 0 or axis + s.rank > len(out):
        raise _err(ins, f"axis {axis} does not fit input lens {list(s.lens)} into out_lens {out}")
    strides = [0] * len(out)
    for i, (n, st) in enumerate(zip(s.lens, s.strides, strict=False)):
        if n != out[axis + i]:
            raise _err(ins, f"input dim {i} ({n}) != out_lens[{axis + i}] ({out[axis + i]})")
        strides[axis + i] = st
    return Shape(s.dtype, tuple(out), tuple(strides))


def _transpose(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    perm = _ints(ins, "permutation")
    if sorted(perm) != list(range(s.rank)):
        raise _err(ins, f"permutation {perm} is not a permutation of {s.rank} dims")
    return Shape(s.dtype, tuple(s.lens[p] for p in perm), tuple(s.strides[p] for p in perm))


def _reshape(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    dims = _ints(ins, "dims")
    out = []
    for i, d in enumerate(dims):
        if d == 0:
            if i >= s.rank:
                raise _err(ins, f"dims[{i}] = 0 copies an input dim that does not exist")
            out.append(s.lens[i])
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise _err(ins, f"dims {dims} has more than one -1")
    if -1 in out:
        known = 1
        for d in out:
            if d != -1:
                known *= d
        if known == 0 or s.elements % known:
            raise _err(ins, f"cannot infer -1 in dims {dims} from {s.elements} elements")
        out[out.index(-1)] = s.elements // known
    if any(d < 0 for d in out):
        raise _err(ins, f"negative dimension in dims {dims}")
    n = 1
    for d in out:
        n *= d
    if n != s.elements:
        raise _err(ins, f"dims {dims} give {n} elements, input {list(s.lens)} has {s.elements}")
    return Shape(s.dtype, tuple(out), standard_strides(out))


def _contiguous(ins, shapes):
    _arity(ins, shapes, 1)
    return shapes[0].as_standard()


def _slice(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    axes = _ints(ins, "axes")
    starts = _ints(ins, "starts")
    ends = _ints(ins, "ends")
    if not len(axes) == len(starts) == len(ends):
        raise _err(ins, "axes, starts and ends differ in length")
    lens = list(s.lens)
    for a, b, e in zip(axes, starts, ends, strict=False):
        a = _norm_axis(ins, a, s.rank)
        n = s.lens[a]
        b = max(0, min(n, b + n if b < 0 else b))
        e = max(0, min(n, e + n if e < 0 else e))
        if e < b:
            raise _err(ins, f"slice [{b}, {e}) on axis {a} is empty-reversed")
        lens[a] = e - b
    return Shape(s.dtype, tuple(lens), s.strides)


def _squeeze(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    axes = [_norm_axis(ins, a, s.rank) for a in _ints(ins, "axes", required=False)]
    if not axes:
        axes = [i for i, n in enumerate(s.lens) if n == 1]
    for a in axes:
        if s.lens[a] != 1:
            raise _err(ins, f"cannot squeeze axis {a} of length {s.lens[a]}")
    keep = [i for i in range(s.rank) if i not in axes]
    return Shape(s.dtype, tuple(s.lens[i] for i in keep), tuple(s.strides[i] for i in keep))


def _unsqueeze(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    axes = _ints(ins, "axes")
    rank = s.rank + len(axes)
    axes = sorted(_norm_axis(ins, a, rank) for a in axes)
    lens, strides = list(s.lens), list(s.strides)
    for a in axes:
        st = strides[a] * lens[a] if a < len(lens) else 1
        lens.insert(a, 1)
        strides.insert(a, st)
    return Shape(s.dtype, tuple(lens), tuple(strides))


def _gemm(ins, shapes):
    if ins.op == "quant_dot" and len(shapes) == 4:
        return _scaled_quant_dot(ins, shapes)
    _arity(ins, shapes, 2)
    a, b = shapes
    if a.rank < 2 or b.rank < 2:
        raise _err(ins, f"inputs must have rank >= 2, got {list(a.lens)} and {list(b.lens)}")
    if a.rank != b.rank or a.lens[:-2] != b.lens[:-2]:
        raise _err(ins, f"batch dims differ: {list(a.lens)} vs {list(b.lens)}")
    if a.lens[-1] != b.lens[-2]:
        raise _err(ins, f"inner dims differ: {list(a.lens)} x {list(b.lens)} (k {a.lens[-1]} != {b.lens[-2]})")
    if a.dtype != b.dtype:
        raise _err(ins, f"inputs differ in type: {a.dtype.migraphx} vs {b.dtype.migraphx}")
    lens = a.lens[:-1] + (b.lens[-1],)
    if ins.op == "quant_dot":
        if a.dtype.name in NARROW_FLOATS:          # fp8 / fp4 operands: an f32 result (rocMLIR)
            return Shape.of("f32", lens)
        if a.dtype.name not in ("i8", "u8"):
            raise _err(ins, f"quant_dot takes int8 inputs (or fp8 / fp4), got {a.dtype.migraphx}")
        return Shape.of("i32", lens)
    if not a.dtype.is_float:
        raise _err(ins, f"dot takes float inputs, got {a.dtype.migraphx} (use quant_dot for int8)")
    if a.dtype.name in NARROW_FLOATS:              # rocMLIR's dot of fp8 / fp4 operands gives f32
        return Shape.of("f32", lens)
    return Shape.of(a.dtype, lens)


SCALE_DTYPES = ("f32", "f16", "bf16", "f8E8M0FNU")


def _scaled_quant_dot(ins, shapes):
    """``quant_dot a scaled by sa, b scaled by sb`` (inputs a, b, sa, sb): MX block scaling.  Each scale has
    its operand's lens (a block scale broadcast over its block by views, as MIGraphX fuses it); the result is
    ``dot(f32(a) * f32(sa), f32(b) * f32(sb))`` in f32 (rocMLIR's ``-migraphx-transform``)."""
    a, b, sa, sb = shapes
    for what, x, s in (("A", a, sa), ("B", b, sb)):
        if not x.dtype.is_float or x.dtype.name == "f8E8M0FNU":
            raise _err(ins, f"scaled operand {what} must be a float type (fp4 / fp8 in MX quantization), "
                            f"got {x.dtype.mlir}")
        if s.dtype.name not in SCALE_DTYPES:
            raise _err(ins, f"scale of {what} must be one of {', '.join(SCALE_DTYPES)}, got {s.dtype.mlir}")
        if s.lens != x.lens:
            raise _err(ins, f"scale of {what} has lens {list(s.lens)}, its operand {list(x.lens)} (broadcast "
                            "the block scale over its block first)")
    ab = _gemm(Instruction(ins.name, "dot", list(ins.inputs[:2]), {}), [a, b])
    return Shape.of("f32", ab.lens)


def _unpack(ins, shapes):
    """migraphx.unpack: two int4 values per byte along ``axis`` (low nibble first); ``isUnsigned`` picks zero
    or sign extension.  The result has the input's type and twice its length along ``axis``."""
    _arity(ins, shapes, 1)
    x = shapes[0]
    if x.dtype.name not in ("i8", "u8"):
        raise _err(ins, f"unpack takes int8 input, got {x.dtype.migraphx}")
    axis = _norm_axis(ins, ins.attrs.get("axis", -1), x.rank)
    lens = list(x.lens)
    lens[axis] *= 2
    return Shape.of(x.dtype, lens)


def with_lens_like(s: Shape, lens) -> Shape:
    """A packed shape of ``lens`` whose dims are laid out in the order of ``s``'s strides (outermost
    first; ties keep the logical order), as MIGraphX's ``shape::with_lens``: an NHWC-strided input
    gives an NHWC-strided output."""
    lens = tuple(int(x) for x in lens)
    order = sorted(range(len(lens)), key=lambda i: (-s.strides[i], i)) if len(s.strides) == len(lens) \
        else list(range(len(lens)))
    strides = [0] * len(lens)
    acc = 1
    for i in reversed(order):
        strides[i] = acc
        acc *= max(lens[i], 1)
    return Shape(s.dtype, lens, tuple(strides))


def conv_params(ins: Instruction, spatial: int) -> tuple[list[int], list[int], list[int], list[int], int]:
    """(pad_begin, pad_end, stride, dilation, group) of a convolution with ``spatial`` spatial dims.
    ``padding`` has one value per spatial dim (symmetric) or two (MIGraphX's begin..., end... form)."""
    pad = _ints(ins, "padding", required=False) or [0] * spatial
    if len(pad) == spatial:
        begin, end = list(pad), list(pad)
    elif len(pad) == 2 * spatial:
        begin, end = list(pad[:spatial]), list(pad[spatial:])
    else:
        raise _err(ins, f"padding {pad} must have {spatial} or {2 * spatial} values for {spatial} spatial dims")
    stride = _ints(ins, "stride", required=False) or [1] * spatial
    dilation = _ints(ins, "dilation", required=False) or [1] * spatial
    for key, v in (("stride", stride), ("dilation", dilation)):
        if len(v) != spatial:
            raise _err(ins, f"{key} {v} must have {spatial} values")
        if any(x < 1 for x in v):
            raise _err(ins, f"{key} {v} must be positive")
    if any(x < 0 for x in begin + end):
        raise _err(ins, f"padding {pad} must not be negative")
    group = ins.attrs.get("group", 1)
    if not isinstance(group, int) or group < 1:
        raise _err(ins, f"group must be a positive integer, got {group!r}")
    mode = ins.attrs.get("padding_mode", 0)
    if not isinstance(mode, int) or mode not in (0, 1, 2):
        raise _err(ins, f"padding_mode must be 0 (default), 1 (same_lower) or 2 (same_upper), got {mode!r}")
    return begin, end, stride, dilation, group


def _conv(ins, shapes):
    _arity(ins, shapes, 2)
    x, w = shapes
    if x.rank < 3 or x.rank != w.rank:
        raise _err(ins, f"input {list(x.lens)} and weights {list(w.lens)} must have the same rank, at least 3 "
                        "(N, C, spatial...)")
    spatial = x.rank - 2
    begin, end, stride, dilation, group = conv_params(ins, spatial)
    n, c = x.lens[:2]
    k, cg = w.lens[:2]
    if c != cg * group:
        raise _err(ins, f"input channels {c} != weight channels {cg} x group {group}")
    if k % group:
        raise _err(ins, f"output channels {k} are not a multiple of group {group}")
    out = [n, k]
    for i in range(spatial):
        span = dilation[i] * (w.lens[2 + i] - 1) + 1
        size = x.lens[2 + i] + begin[i] + end[i] - span
        if size < 0:
            raise _err(ins, f"kernel {list(w.lens[2:])} (dilation {dilation}) does not fit the padded input "
                            f"{list(x.lens[2:])} (padding {begin + end})")
        out.append(size // stride[i] + 1)
    if x.dtype != w.dtype:
        raise _err(ins, f"inputs differ in type: {x.dtype.migraphx} vs {w.dtype.migraphx}")
    if ins.op == "quant_convolution":
        if x.dtype.name not in ("i8", "u8"):
            raise _err(ins, f"quant_convolution takes int8 inputs, got {x.dtype.migraphx}")
        return with_lens_like(x.with_dtype("i32"), out)
    if not x.dtype.is_float:
        raise _err(ins, f"convolution takes float inputs, got {x.dtype.migraphx} (use quant_convolution for int8)")
    return with_lens_like(x, out)


def _reduce(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    axes = [_norm_axis(ins, a, s.rank) for a in _ints(ins, "axes")]
    lens = tuple(1 if i in axes else n for i, n in enumerate(s.lens))
    return Shape.of(s.dtype, lens)


def _softmax(ins, shapes):
    _arity(ins, shapes, 1)
    s = shapes[0]
    _norm_axis(ins, ins.attrs.get("axis", 1), s.rank)
    if not s.dtype.is_float:
        raise _err(ins, f"softmax takes float input, got {s.dtype.migraphx}")
    return s.as_standard()


RULES: dict[str, Callable[[Instruction, list[Shape]], Shape]] = {
    "multibroadcast": _multibroadcast, "broadcast": _broadcast, "transpose": _transpose,
    "reshape": _reshape, "reshape_lazy": _reshape, "contiguous": _contiguous, "slice": _slice,
    "squeeze": _squeeze, "unsqueeze": _unsqueeze, "dot": _gemm, "quant_dot": _gemm,
    "convolution": _conv, "quant_convolution": _conv,
    "softmax": _softmax, "where": _where, "convert": _convert, "clip": _clip,
    "quantizelinear": _quantizelinear, "dequantizelinear": _dequantizelinear, "unpack": _unpack,
    **{op: _unary for op in UNARY_OPS}, **{op: _binary for op in BINARY_OPS},
    **{op: _compare for op in COMPARE_OPS}, **{op: _reduce for op in REDUCE_OPS},
}


class UnsupportedOp(IRError):
    pass


def infer_shape(ins: Instruction, shapes: list[Shape]) -> Shape:
    rule = RULES.get(ins.op)
    if rule is None:
        raise UnsupportedOp(f"{ins.name} = {ins.op}: op {ins.op!r} is not supported "
                            f"(supported: {', '.join(sorted(RULES))})")
    return rule(ins, shapes)


__all__ = ["infer_shape", "UnsupportedOp", "KNOWN_OPS", "UNARY_OPS", "BINARY_OPS", "COMPARE_OPS",
           "POINTWISE_OPS", "QUANT_OPS", "REDUCE_OPS", "GEMM_OPS", "CONV_OPS", "RULES", "BY_NAME", "conv_params",
           "with_lens_like", "COMPILED_PREFIXES", "COMPILED_OPS", "compiled_op"]
