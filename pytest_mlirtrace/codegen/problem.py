"""What a fused module asks for: its kind, the tuning problem, and the folded index maps.

``analyse(module)`` classifies the module (gemm / pointwise / reduce / softmax),
builds the element DAGs with every view folded into index expressions and
returns an :class:`Analysis`; ``problem_of(module)`` returns its :class:`Problem`
(what the tuning layer keys on; its key text is written by :mod:`pytest_mlirtrace.vocab.problem_key`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod

from ..ir import CONV_OPS, GEMM_OPS, POINTWISE_OPS, REDUCE_OPS, VIEW_OPS, Module
from ..ir.ops import conv_params
from ..ir.dtypes import BY_NAME, NARROW_FLOATS, DType
from ..vocab.problem_key import format_problem_key
from . import expr as E
from .decompose import decompose_narrow_gemms, narrow_gemm
from .errors import LoweringError, NotSupported
from .graph import Builder, Dag, Node, delinearize, forward_map, linearize, same_index
from .masks import causal_offset

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


@dataclass(frozen=True)
class Output:
    """A second (third, ...) output of a multi-output module, computed at the primary output's coordinates."""
    index: int                            # into module.returns()
    name: str
    dtype: DType
    lens: tuple
    offset: E.Lin                         # standard-layout offset in the kernel's variables
    root: int                             # DAG root of its value


@dataclass
class Analysis:
    module: Module
    kind: str
    problem: Problem
    dag: Dag
    out_name: str                         # the returned instruction
    out_dtype: DType
    out_lens: tuple
    out_offset: E.Lin                     # standard-layout output offset in the kernel's variables
    epilogue: int                         # DAG root of the output value
    # gemm
    dot: str = ""
    a_root: int = -1
    b_root: int = -1
    acc_dtype: DType | None = None
    batch_lens: tuple = ()
    # reduce / softmax
    anchor: str = ""
    pre_root: int = -1
    out_per_group: bool = True            # reduce: one output element per reduction
    reduce_op: str = ""
    # pointwise
    rows: int = 1
    cols: int = 1
    info: dict = field(default_factory=dict)
    # the module's other outputs (gemm and pointwise kinds), stored as out1, out2, ...
    extra_outputs: list = field(default_factory=list)


def _check_ops(module: Module) -> None:
    for ins in module.instructions:
        if ins.op.startswith("@"):
            continue
        if ins.op in LOWERED_OPS:
            continue
        raise NotSupported(f"{ins.name} = {ins.op}: op {ins.op!r} cannot be lowered by the code generator")
    for ins in module.instructions:
        if ins.op == "@literal" and ins.literal is None:
            raise NotSupported(f"{ins.name} = @literal: its values were left out of the printout "
                               "(@literal{ ... }); nothing can run without them")


def _check_narrow(module: Module) -> None:
    """fp8 / fp4 values are read (decoded to float) and f8E8M0FNU scales computed by a convert; no kernel
    computes or stores the others."""
    outs = set(module.returns())
    for ins in module.instructions:
        if ins.op.startswith("@") or ins.shape is None or ins.shape.dtype.name not in NARROW_FLOATS:
            continue
        dt = ins.shape.dtype.name
        if ins.op in VIEW_OPS and ins.name not in outs:
            continue
        if dt == "f8E8M0FNU" and ins.op == "convert":
            continue
        what = "returns" if ins.name in outs else "computes"
        raise NotSupported(f"{ins.name} = {ins.op}: the module {what} {dt} values; kernels only read fp8 / fp4 "
                           "values (decoded to float) and compute f8E8M0FNU scales by a convert")


def _scale_fields(original: Module, decomposed: Module, an: Analysis) -> tuple:
    """The scale fields of a scaled gemm's key (() for other gemms): each scale's type, and whether its
    logically innermost dim (A's k, B's n) is not its fastest storage dim (as transA / transB)."""
    qd = next((i for i in original.instructions if i.name == an.dot and i.op == "quant_dot" and len(i.inputs) == 4),
              None)
    if qd is None:
        return ()
    p = an.problem
    bidx = delinearize(E.var("gb", p.g), an.batch_lens) if an.batch_lens else []
    m, n, k = E.var("m", p.m), E.var("n", p.n), E.var("k", p.k)
    dag = Dag()
    b = Builder(decomposed, dag=dag)
    ra, rb = b.value(qd.inputs[2], bidx + [m, k]), b.value(qd.inputs[3], bidx + [k, n])
    return (("scale_a_dtype", original.get(qd.inputs[2]).shape.dtype.name),
            ("scale_b_dtype", original.get(qd.inputs[3]).shape.dtype.name),
            ("transScaleA", _transposed(dag, ra, "k", "m", p.k)), ("transScaleB", _transposed(dag, rb, "n", "k", p.n)))


def _live(module: Module) -> list:
    """Instructions the return value depends on, in order."""
    need = set(module.returns())
    for ins in reversed(module.instructions):
        if ins.name in need:
            need.update(ins.inputs)
    return [i for i in module.instructions if i.name in need and not i.op.startswith("@")]


def analyse(module: Module) -> Analysis:
    _check_ops(module)
    _check_narrow(module)
    rets = module.returns()
    narrow = narrow_gemm(module)
    original = module
    if narrow is not None:
        # fp8 / fp4 gemms (scaled or not): converts to f32 (and the scales' muls) fused into the operand loads of
        # an f32 gemm, as rocMLIR decomposes them; the problem keeps the operands' type
        module = decompose_narrow_gemms(module)
    an = _analyse(module)
    if narrow is not None and an.kind == "gemm":
        an.problem = replace(an.problem, dtype=narrow, scales=_scale_fields(original, module, an))
    if an.kind != "pointwise" and any(n.kind == "idx" for n in an.dag.nodes):
        raise NotSupported(f"unpack in a {an.kind} kernel: only pointwise kernels lower it")
    if len(rets) != 1 + len(an.extra_outputs):
        raise NotSupported(f"module returns {len(rets)} values ({', '.join(rets)}); a {an.problem.key_kind} "
                           "kernel has one output (gemm and pointwise kernels store several)")
    return an


def _analyse(module: Module) -> Analysis:
    live = _live(module)
    if any(i.shape is not None and i.shape.elements == 0 for i in live):
        bad = next(i for i in live if i.shape.elements == 0)
        raise NotSupported(f"{bad.name} = {bad.op}: empty tensor {list(bad.shape.lens)}")
    for p in module.params():
        if p.shape.element_space >= 1 << 31:
            raise NotSupported(f"{p.name} = @param: {p.shape.element_space} storage elements do not fit the "
                               "kernels' 32-bit index arithmetic")
    big = next((i for i in live if i.shape is not None and i.shape.elements >= 1 << 31), None)
    if big is not None:
        raise NotSupported(f"{big.name} = {big.op}: {big.shape.elements} elements do not fit the kernels' "
                           "32-bit index arithmetic")
    dots = [i for i in live if i.op in GEMM_OPS or i.op in CONV_OPS]
    reds = [i for i in live if i.op in REDUCE_OPS or i.op == "softmax"]
    if len(dots) > 2:
        names = ", ".join(f"{i.name} = {i.op}" for i in dots)
        raise NotSupported(f"{len(dots)} gemms in one module ({names}): at most two (gemm-gemm, attention) "
                           "are fused")
    if len(dots) == 2:
        return _two_gemms(module, dots, reds)
    if dots and reds:
        return _gemm_reduce(module, dots[0], reds)
    if len(reds) > 1:
        return _reduce(module, reds[0], siblings=_siblings(module, reds))
    if dots:
        return _conv(module, dots[0]) if dots[0].op in CONV_OPS else _gemm(module, dots[0])
    if reds:
        return _reduce(module, reds[0])
    return _pointwise(module)


def _ancestors(module: Module, name: str) -> set[str]:
    out: set[str] = set()
    stack = list(module.get(name).inputs)
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(module.get(n).inputs)
    return out


def _gemm_reduce(module: Module, dot, reds) -> Analysis:
    """A gemm whose result feeds one reduction (or softmax): the reduction kernel with the dot computed
    inline (a K loop per element it reads)."""
    red = reds[0]
    siblings = _siblings(module, reds)
    if dot.op in CONV_OPS:
        raise NotSupported(f"{red.name} = {red.op} after the convolution {dot.name}: a convolution fused with "
                           "a reduction is not supported")
    if dot.name not in _ancestors(module, red.name):
        raise NotSupported(f"{dot.name} = {dot.op} after the reduction {red.name} = {red.op}: a reduction "
                           "feeding a gemm is only fused as attention (dot -> softmax -> dot)")
    return _reduce(module, red, inline_dots=True, siblings=siblings)


def _axes(red, rank: int) -> list[int]:
    return [red.attrs.get("axis", 1) % rank] if red.op == "softmax" else sorted({a % rank for a in red.attrs["axes"]})


def _siblings(module: Module, reds) -> list:
    """The reductions after the first, when they can share its kernel: each reduces an input of the same lens
    over the same axes, none reads another's result (a variance: sum(x) and sum(x*x)); else NotSupported."""
    if len(reds) == 1:
        return []
    first = reds[0]
    lens = tuple(module.get(first.inputs[0]).shape.lens)
    dt = module.get(first.inputs[0]).shape.dtype
    names = ", ".join(r.name + " = " + r.op for r in reds)
    for r in reds:
        rl = tuple(module.get(r.inputs[0]).shape.lens)
        if r.op == "softmax" or rl != lens or _axes(r, len(rl)) != _axes(first, len(lens)) or \
                module.get(r.inputs[0]).shape.dtype != dt:
            raise NotSupported(f"more than one reduction in one module ({names}): only reductions of inputs of the "
                               "same shape and type over the same axes share a kernel (not a softmax)")
        if any(o.name in _ancestors(module, r.name) for o in reds if o is not r):
            raise NotSupported(f"more than one reduction in one module ({names}): {r.name} reads another's "
                               "result (reductions in sequence are not fused)")
    return list(reds[1:])


def problem_of(module: Module) -> Problem:
    return analyse(module).problem


# ---------------------------------------------------------------- gemm ----
def _first_load(dag: Dag, root: int) -> Node | None:
    loads = dag.loads([root])
    return dag.nodes[loads[0]] if loads else None


def _stride(off: E.Lin, name: str, env0: dict) -> int:
    a = E.evaluate(off, env0)
    env1 = dict(env0)
    env1[name] = 1
    return int(E.evaluate(off, env1) - a)


def _gemm(module: Module, dot) -> Analysis:
    a_ins, b_ins = module.get(dot.inputs[0]), module.get(dot.inputs[1])
    lens = dot.shape.lens
    batch = tuple(lens[:-2])
    M, N = lens[-2], lens[-1]
    K = a_ins.shape.lens[-1]
    g = int(prod(batch)) if batch else 1
    gb = E.var("gb", g)
    bidx = delinearize(gb, batch) if batch else []
    m, n, k = E.var("m", M), E.var("n", N), E.var("k", K)
    dag = Dag()
    pre = Builder(module, dag=dag)
    a_root = pre.value(a_ins.name, bidx + [m, k])
    b_root = pre.value(b_ins.name, bidx + [k, n])
    ret, out_idx, root = _epilogue(module, dag, dot, bidx + [m, n], "gemm")
    out = module.get(ret)
    out_off = linearize(out_idx, out.shape.lens)
    dt = a_ins.shape.dtype
    trans = _trans_flags(dag, a_root, b_root, K, N)
    prob = Problem("gemm", dt.name, out.shape.dtype.name, trans[0], trans[1], g, M, N, K,
                   elements=out.shape.elements, op=dot.op)
    return Analysis(module, "gemm", prob, dag, ret, out.shape.dtype, out.shape.lens, out_off, root,
                    dot=dot.name, a_root=a_root, b_root=b_root, acc_dtype=dot.shape.dtype, batch_lens=batch,
                    extra_outputs=_gemm_extras(module, dag, dot, bidx + [m, n]))


def _epilogue(module: Module, dag: Dag, anchor_ins, acc_idx: list, what: str, ret: str | None = None):
    """(output name, its index in the kernel's variables, the DAG root of its value) of a gemm-like anchor
    (a dot, a convolution) computed at ``acc_idx``, with the views and pointwise ops that follow it.
    ``ret``: which output (default the first)."""
    ret = ret or module.returns()[0]
    phi = forward_map(module, anchor_ins.name, acc_idx)
    if ret not in phi:
        raise NotSupported(f"the output {ret} does not use the {what} {anchor_ins.name}")

    def anchor(idx):
        if not same_index(idx, acc_idx):
            raise NotSupported(f"{anchor_ins.name} = {anchor_ins.op}: its result is read at a different index "
                               "than the one computed (e.g. a transpose of the result combined with itself)")
        return dag.add(Node("acc", anchor_ins.shape.dtype, op=anchor_ins.name))

    out_idx = phi[ret]
    b = Builder(module, anchors={anchor_ins.name: anchor}, dag=dag)
    return ret, out_idx, b.value(ret, out_idx)


def _extra_outputs(module: Module, value, index_of) -> list:
    """The module's outputs after the first, each computed by ``value(name, idx)`` at ``index_of(name)``
    (None: not at the kernel's coordinates, then the module is not lowered)."""
    out = []
    for i, r in enumerate(module.returns()[1:], start=1):
        idx = index_of(r)
        if idx is None:
            return out
        ins = module.get(r)
        out.append(Output(i, r, ins.shape.dtype, tuple(ins.shape.lens), linearize(idx, ins.shape.lens),
                          value(r, idx)))
    return out


def _gemm_extras(module: Module, dag: Dag, anchor_ins, acc_idx: list) -> list:
    if len(module.returns()) == 1:
        return []
    phi = forward_map(module, anchor_ins.name, acc_idx)

    def anchor(idx):
        if not same_index(idx, acc_idx):
            raise NotSupported(f"{anchor_ins.name} = {anchor_ins.op}: its result is read at a different index "
                               "than the one computed")
        return dag.add(Node("acc", anchor_ins.shape.dtype, op=anchor_ins.name))
    b = Builder(module, anchors={anchor_ins.name: anchor}, dag=dag)
    return _extra_outputs(module, b.value, phi.get)


def _transposed(dag: Dag, root: int, inner: str, outer: str, ext_in: int) -> bool:
    """Whether an operand's logically innermost dim ``inner`` is not its fastest storage dim (first load)."""
    ld = _first_load(dag, root)
    if ld is None:
        return False
    s_in, s_out = abs(_stride(ld.offset, inner, {})), abs(_stride(ld.offset, outer, {}))
    return bool(ext_in > 1 and s_in != 1 and s_out != 0 and (s_out < s_in or s_out == 1))


def _trans_flags(dag: Dag, a_root: int, b_root: int, K: int, N: int) -> list[bool]:
    """Whether A's k and B's n are not their fastest storage dims (from their first loads)."""
    return [_transposed(dag, a_root, "k", "m", K), _transposed(dag, b_root, "n", "k", N)]


# ---------------------------------------------------------------- conv ----
_SPATIAL = "0123456789"


def _layout(lens, strides, names: list[str], group_before: str | None) -> str:
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
    lay = dict(f=_layout(wl, w.strides, ["N", "C"] + spn, None),
               I=_layout(xl, x.strides, ["N", "C"] + spn, "C"),
               O=_layout(list(out.lens), out.strides, ["N", "C"] + spn, "C"))
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


def _conv(module: Module, conv) -> Analysis:
    """A convolution as an implicit gemm (rocMLIR's forward mapping): per group, M = output channels,
    N = batch x output pixels, K = input channels x kernel positions; A is the weights, B the input's
    im2col view folded into the index map, a padded position read at a clamped index and replaced by 0."""
    x, w = module.get(conv.inputs[0]), module.get(conv.inputs[1])
    out_shape = conv.shape
    sp = x.shape.rank - 2
    begin, _end, stride, dilation, G = conv_params(conv, sp)
    Nb, C = x.shape.lens[:2]
    Kout, Cg = w.shape.lens[:2]
    ksp, isp, osp = list(w.shape.lens[2:]), list(x.shape.lens[2:]), list(out_shape.lens[2:])
    Kg = Kout // G
    M, N, K = Kg, Nb * int(prod(osp)), Cg * int(prod(ksp))
    gb = E.var("gb", G)
    m, n, k = E.var("m", M), E.var("n", N), E.var("k", K)
    ni, *o = delinearize(n, [Nb] + osp)
    ci, *y = delinearize(k, [Cg] + ksp)
    dag = Dag()
    pre = Builder(module, dag=dag)
    a_root = pre.value(w.name, [gb * Kg + m, ci] + y)
    # the input at the padded positions: clamped into the input, 0 selected where outside
    pos = [oj * sj + yj * dj + (-bj) for oj, yj, sj, dj, bj in zip(o, y, stride, dilation, begin)]
    clamped = [E.clamp(p, 0, size - 1) for p, size in zip(pos, isp)]
    b_root = pre.value(x.name, [ni, gb * Cg + ci] + clamped)
    xdt = x.shape.dtype
    zero = dag.add(Node("const", xdt, value=0.0 if xdt.is_float else 0))
    for p, c, size in zip(pos, clamped, isp):
        if c.key() != p.key():
            inb = dag.add(Node("inb", BY_NAME["bool"], offset=p, value=int(size)))
            b_root = dag.add(Node("op", xdt, args=(inb, b_root, zero), op="where"))
    ret, out_idx, root = _epilogue(module, dag, conv, [ni, gb * Kg + m] + o, "convolution")
    out = module.get(ret)
    trans = _trans_flags(dag, a_root, b_root, K, N)
    key = conv_key_fields(x.shape, w.shape, out_shape, begin, stride, dilation, G)
    prob = Problem("gemm", xdt.name, out.shape.dtype.name, trans[0], trans[1], G, M, N, K,
                   elements=out.shape.elements, op=conv.op, conv=tuple(sorted(key.items())))
    return Analysis(module, "gemm", prob, dag, ret, out.shape.dtype, out.shape.lens,
                    linearize(out_idx, out.shape.lens), root, dot=conv.name, a_root=a_root, b_root=b_root,
                    acc_dtype=out_shape.dtype, batch_lens=(G,),
                    extra_outputs=_gemm_extras(module, dag, conv, [ni, gb * Kg + m] + o))


# ----------------------------------------------------------- pointwise ----
def _pointwise(module: Module) -> Analysis:
    ret = module.returns()[0]
    out = module.get(ret)
    if out.op in ("@param", "@literal"):
        raise NotSupported(f"{ret} = {out.op}: the module computes nothing (returns a {out.op})")
    lens = tuple(out.shape.lens)
    rank = len(lens)
    best = None
    for p in range(max(rank, 1)):
        outer, inner = lens[:p], lens[p:]
        R, C = int(prod(outer)) if outer else 1, int(prod(inner)) if inner else 1
        r, c = E.var("r", R), E.var("c", C)
        idx = (delinearize(r, outer) if outer else []) + (delinearize(c, inner) if inner else [])
        dag = Dag()
        root = Builder(module, dag=dag).value(ret, idx)
        ok = all(E.coeff(dag.nodes[i].offset, "c") is not None
                 for i in dag.reachable([root]) if dag.nodes[i].kind in ("load", "table"))
        cand = (dag, root, R, C, linearize(idx, lens), idx)
        if best is None or ok:
            best = cand
        if ok:
            break
    dag, root, R, C, off, idx = best
    # the other outputs at the same element (when their lens are the first output's)
    b = Builder(module, dag=dag)
    extras = _extra_outputs(module, b.value, lambda r: idx if tuple(module.get(r).shape.lens) == lens else None)
    first = _first_load(dag, root)
    dt = first.dtype.name if first is not None else out.shape.dtype.name
    prob = Problem("pointwise", dt, out.shape.dtype.name, elements=out.shape.elements, outer=R, reduce_len=C,
                   op="pointwise")
    return Analysis(module, "pointwise", prob, dag, ret, out.shape.dtype, lens, off, root, rows=R, cols=C,
                    extra_outputs=extras)


# -------------------------------------------------------------- reduce ----
def _reduce(module: Module, red, inline_dots: bool = False, siblings=()) -> Analysis:
    x = module.get(red.inputs[0])
    xl = tuple(x.shape.lens)
    rank = len(xl)
    if red.op == "softmax":
        axes = [red.attrs.get("axis", 1) % rank]
    else:
        axes = sorted({a % rank for a in red.attrs["axes"]})
    kept = [d for d in range(rank) if d not in axes]
    G = int(prod(xl[d] for d in kept)) if kept else 1
    Rn = int(prod(xl[d] for d in axes)) if axes else 1
    gi, j = E.var("gi", G), E.var("j", Rn)
    gidx = delinearize(gi, [xl[d] for d in kept]) if kept else []
    jidx = delinearize(j, [xl[d] for d in axes]) if axes else []
    xidx = [E.ZERO] * rank
    for d, v in zip(kept, gidx):
        xidx[d] = v
    for d, v in zip(axes, jidx):
        xidx[d] = v
    if red.op == "softmax":
        ridx = list(xidx)
    else:
        ridx = [E.ZERO if d in axes else xidx[d] for d in range(rank)]
    dag = Dag()
    pre = Builder(module, dag=dag, inline_dots=inline_dots)
    pre_root = pre.value(x.name, xidx)
    ret = module.returns()[0]
    out = module.get(ret)

    def anchor_of(r):
        def anchor(idx):
            if not same_index(idx, ridx):
                raise NotSupported(f"{r.name} = {r.op}: its result is read at an index that does not match "
                                   "the reduction it belongs to")
            return dag.add(Node("acc", r.shape.dtype, op=r.name))
        return anchor

    out_idx = None
    for r in [red, *siblings]:
        try:
            out_idx = forward_map(module, r.name, ridx).get(ret)
        except NotSupported:
            out_idx = None
        if out_idx is not None:
            break
    if out_idx is None:
        if tuple(out.shape.lens) != xl:
            raise NotSupported(f"{red.name} = {red.op}: the output {ret} {list(out.shape.lens)} is neither "
                               f"the reduction's shape nor its input's shape {list(xl)}")
        out_idx = list(xidx)
    anchors = {r.name: anchor_of(r) for r in [red, *siblings]}
    root = Builder(module, anchors=anchors, dag=dag).value(ret, out_idx)
    # the other reductions sharing the kernel: (name, op, the DAG of their input, their result's dtype)
    sibs = [(r.name, r.op, pre.value(r.inputs[0], xidx), r.shape.dtype) for r in siblings]
    out_off = linearize(out_idx, out.shape.lens)
    per_group = "j" not in out_off.vars() and all("j" not in i.vars() for i in out_idx)
    if red.op == "softmax" and per_group and Rn > 1:
        raise LoweringError(f"{red.name} = softmax: output does not cover the softmax axis")
    kind = "softmax" if red.op == "softmax" else "reduce"
    prob = Problem(kind, x.shape.dtype.name, out.shape.dtype.name, elements=out.shape.elements, outer=G,
                   reduce_len=Rn, op=red.op)
    return Analysis(module, kind, prob, dag, ret, out.shape.dtype, tuple(out.shape.lens), out_off, root,
                    anchor=red.name, pre_root=pre_root, out_per_group=per_group, reduce_op=red.op,
                    acc_dtype=red.shape.dtype, info={"axes": axes, "G": G, "R": Rn, "siblings": sibs})


# ----------------------------------------------------- gemm-gemm, attention ----
def _two_gemms(module: Module, dots, reds) -> Analysis:
    """``dot(f(dot(Q, K)), V)`` with pointwise ops and views f between the gemms (gemm-gemm), or with one
    softmax over the first gemm's columns among them (attention: computed with an online softmax).

    The kernel's variables: ``gb`` (the second gemm's batch), ``m`` (rows), ``n1`` (the first gemm's
    columns = the second's K), ``d`` (the second gemm's columns); the first gemm is an inline dot over
    its own K (the head dim) wherever its value is read."""
    d1, d2 = dots
    if d2.op in CONV_OPS:
        raise NotSupported(f"{d2.name} = {d2.op} after the gemm {d1.name} = {d1.op}: a convolution as the second "
                           "of two fused gemms is not supported")
    if d1.name not in _ancestors(module, d2.name):
        raise NotSupported(f"two independent gemms in one module ({d1.name} = {d1.op}, {d2.name} = "
                           f"{d2.op}): only a gemm feeding the next (gemm-gemm, attention) is fused")
    a2, b2 = module.get(d2.inputs[0]), module.get(d2.inputs[1])
    if d1.name == b2.name or d1.name in _ancestors(module, b2.name):
        raise NotSupported(f"{d1.name} = {d1.op} feeds the second operand of {d2.name} = {d2.op}: only the "
                           "first operand (the attention probabilities) may come from the first gemm")
    ops = sorted(r.op for r in reds)
    if ops not in ([], ["softmax"], ["reduce_max", "reduce_sum"]):
        bad = next((r for r in reds if r.op not in ("softmax", "reduce_max", "reduce_sum")), reds[0])
        raise NotSupported(f"{bad.name} = {bad.op} between the gemms {d1.name} and {d2.name}: only a softmax "
                           "(the op, or reduce_max/sub/exp/reduce_sum/div) for attention, or pointwise ops and "
                           "views (gemm-gemm) are fused between two gemms")
    for r in reds:
        if not (d1.name in _ancestors(module, r.name) and r.name in _ancestors(module, d2.name)):
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
    ret, out_idx, root = _epilogue(module, dag, d2, bidx + [m, d], "gemm", ret=_primary(module, d2))
    extras = _lse_outputs(module, dag, ret, lse) if sm else []
    out = module.get(ret)
    dt = module.get(d1.inputs[0]).shape.dtype
    dot_node = next(dag.nodes[i] for i in dag.reachable([x_root]) if dag.nodes[i].kind == "dot")
    kv = dot_node.op
    tq = _transposed(dag, dot_node.args[0], kv, "m", K)
    tk = _transposed(dag, dot_node.args[1], "n1", kv, N1)
    tv = _transposed(dag, v_root, "d", "n1", D)
    out_off = linearize(out_idx, out.shape.lens)
    to = abs(_stride(out_off, "d", {})) != 1 and D > 1
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
