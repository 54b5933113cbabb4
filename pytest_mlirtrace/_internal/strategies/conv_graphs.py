"""Convolution modules from a :class:`~.graph_builder.Plan`: the conv draws (:data:`CONV_FIELDS`), the shape they
give (:class:`ConvShape`, :func:`conv_shape`) and the module (:func:`conv_graph`).

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
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import strategies as st

from .. import ir
from .graph_builder import VIEW_RECIPES, GraphBuilder, Plan, Val, prod
from .graph_kinds import epilogue

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
    for (name, lo, hi), v in zip(CONV_FIELDS, raw, strict=False):
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
        return [self.batch * c * prod(self.image), k * self.cg * prod(self.kernel),
                self.batch * k * prod([self.out(i) for i in range(self.spatial)])]

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


def conv_graph(b: GraphBuilder, p: Plan, quant: bool, max_dim: int) -> Val:
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
    k = s.cg * prod(s.kernel)
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
    return epilogue(b, p, out, lambda v: _conv_epilogue(b, v, p.epilogue, p.dtype, channel_axis, residual_strides))


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
