"""The tuning problem a fused module asks for: :class:`Problem` (what the tuning layer keys on; its key text is
written by :mod:`..vocab.problem_key`), the kernel kinds, the ops the code generator lowers, and a
convolution's key fields.  Which problem a module is: :func:`.kinds.problem_of` (the kernel-kind analyser).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import CONV_OPS, GEMM_OPS, POINTWISE_OPS, REDUCE_OPS, VIEW_OPS
from ..vocab.problem_key import format_problem_key

KINDS = ("gemm", "pointwise", "reduce", "softmax", "attention")
#: the migraphx ops the code generator lowers (views are folded into index maps)
LOWERED_OPS = frozenset(VIEW_OPS) | frozenset(POINTWISE_OPS) | frozenset(GEMM_OPS) | frozenset(REDUCE_OPS) \
    | frozenset(CONV_OPS) | {"softmax", "unpack"}


@dataclass(frozen=True)
class Problem:
    kind: str                 # gemm | pointwise | reduce | softmax
    dtype: str                # element type of the main input (dot operands, reduced input, output for pointwise)
    out_dtype: str            # element type of the output
    transA: bool = False      # gemm: A's innermost logical dim (k) is not its fastest storage dim
    transB: bool = False      # gemm: B's innermost logical dim (n) is not its fastest storage dim
    g: int = 1                # gemm: batch count (product of batch dims)
    m: int = 0
    n: int = 0
    k: int = 0
    elements: int = 0         # number of output elements
    outer: int = 0            # reduce/softmax: number of independent reductions; pointwise: rows
    reduce_len: int = 0       # reduce/softmax: elements per reduction; pointwise: row length
    op: str = ""              # gemm: dot | quant_dot | convolution | quant_convolution; reduce: reduce_sum, ...
    # a convolution lowered as an implicit gemm: its key fields (rocMLIR's conv key), as sorted pairs
    conv: tuple = ()
    # attention / gemm-gemm (kind ``attention``): rocMLIR's key fields, as sorted pairs
    attn: tuple = ()
    # a scaled (MX) gemm: the scales' key fields (scale_a_dtype, scale_b_dtype, transScaleA, transScaleB), as pairs
    scales: tuple = ()

    @property
    def key_kind(self) -> str:
        """The form of this problem's key: ``conv`` for a convolution (its kernels are gemm kernels),
        ``attention`` or ``gemm_gemm`` for two fused gemms (with or without a softmax between them)."""
        if self.conv:
            return "conv"
        if self.attn:
            f = dict(self.attn)
            return "attention" if "seq_len_q" in f else "conv_gemm" if "I" in f else "gemm_gemm"
        return self.kind

    @property
    def softmax(self) -> bool:
        """An attention problem (a softmax between its two gemms), not a plain gemm-gemm."""
        return self.key_kind == "attention"

    def key_fields(self) -> dict:
        """The fields of this problem's key (``vocab.problem_key.KEY_FIELDS[key_kind]``), by name."""
        if self.conv:
            return dict(self.conv)
        if self.attn:
            return dict(self.attn)
        if self.kind == "gemm":
            return {"t": self.dtype, "out_datatype": self.out_dtype, "transA": self.transA, "transB": self.transB,
                    **dict(self.scales), "g": self.g, "m": self.m, "n": self.n, "k": self.k}
        return {"op": self.kind, "t": self.dtype, "out_datatype": self.out_dtype, "elements": self.elements,
                "reduce_len": self.reduce_len, "outer": self.outer, "g": self.g}

    def key(self) -> str:
        """rocMLIR-style problem key (without the device prefix), written by ``vocab.format_problem_key``."""
        return format_problem_key(self.key_kind, self.key_fields())

    def __str__(self) -> str:
        return self.key()


_SPATIAL = "0123456789"


def _layout(strides, names: list[str], group_before: str | None) -> str:
    """A layout word (``NGC01``, ``N01GC``): dim names outermost first by stride (ties: logical order),
    ``G`` (the channels' group split) inserted before ``group_before`` (or first when None)."""
    order = sorted(range(len(names)), key=lambda i: (-strides[i], i))
    word = [names[i] for i in order]
    if group_before is None:
        return "G" + "".join(word)
    i = word.index(group_before)
    return "".join(word[:i] + ["G"] + word[i:])


def conv_key_fields(x, w, out, begin, stride, dilation, group) -> dict:
    """rocMLIR's conv key fields (``vocab.problem_key``) of a convolution with these shapes."""
    sp = x.rank - 2
    xl, wl = list(x.lens), list(w.lens)
    spn = list(_SPATIAL[:sp])
    lay = dict(f=_layout(w.strides, ["N", "C"] + spn, None),
               I=_layout(x.strides, ["N", "C"] + spn, "C"),
               O=_layout(out.strides, ["N", "C"] + spn, "C"))
    # the last two spatial dims are H, W (a 1-D conv: H = 1); a third, the depth, comes first
    hw = [1] * max(0, 2 - sp) + xl[2:][-2:]
    yx = [1] * max(0, 2 - sp) + wl[2:][-2:]
    pq = [0] * max(0, 2 - sp) + list(begin)[-2:]
    uv = [1] * max(0, 2 - sp) + list(stride)[-2:]
    lj = [1] * max(0, 2 - sp) + list(dilation)[-2:]
    f = dict(F=1, **lay, n=xl[0], c=xl[1], H=hw[0], W=hw[1], k=wl[0], y=yx[0], x=yx[1], p=pq[0], q=pq[1],
             u=uv[0], v=uv[1], l=lj[0], j=lj[1], g=group, t=x.dtype.name)
    if sp == 3:
        f.update(in_d=xl[2], fil_d=wl[2], padding_d=begin[0], conv_stride_d=stride[0], dilation_d=dilation[0])
    return f
