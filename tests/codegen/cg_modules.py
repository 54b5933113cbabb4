"""Small fused modules for the codegen tests (built with the IR builder)."""
from __future__ import annotations

import os

from pytest_mlirtrace._internal.ir import Module, parse_module
from pytest_mlirtrace._internal.ir.examples import seed_module

HERE = os.path.dirname(__file__)

SEED_TEXT = """\
mlir_main:pointwise4:y1.0 = @param:y1.0 -> half_type, {1, 768, 768}, {589824, 768, 1}, target_id=0
mlir_main:pointwise4:x1 = @param:x1 -> half_type, {1, 384, 768}, {294912, 768, 1}, target_id=0
mlir_main:pointwise4:@2 = multibroadcast[out_lens={1, 768, 768},out_dyn_dims={}](mlir_main:pointwise4:y1.0) -> half_type, {1, 768, 768}, {589824, 768, 1}, target_id=0
mlir_main:pointwise4:y0 = @param:y0 -> half_type, {1, 12, 384, 64}, {294912, 24576, 64, 1}, target_id=0
mlir_main:pointwise4:@4 = transpose[permutation={0, 2, 1, 3}](mlir_main:pointwise4:y0) -> half_type, {1, 384, 12, 64}, {294912, 64, 24576, 1}, target_id=0
mlir_main:pointwise4:@5 = contiguous(mlir_main:pointwise4:@4) -> half_type, {1, 384, 12, 64}, {294912, 768, 64, 1}, target_id=0
mlir_main:pointwise4:@6 = reshape[dims={0, 0, 768}](mlir_main:pointwise4:@5) -> half_type, {1, 384, 768}, {294912, 768, 1}, target_id=0
mlir_main:pointwise4:@7 = contiguous(mlir_main:pointwise4:@2) -> half_type, {1, 768, 768}, {589824, 768, 1}, target_id=0
mlir_main:pointwise4:@8 = dot(mlir_main:pointwise4:@6,mlir_main:pointwise4:@7) -> half_type, {1, 384, 768}, {294912, 768, 1}, target_id=0
mlir_main:pointwise4:@9 = add(mlir_main:pointwise4:@8,mlir_main:pointwise4:x1) -> half_type, {1, 384, 768}, {294912, 768, 1}, target_id=0
mlir_main:pointwise4:@10 = @return(mlir_main:pointwise4:@9), target_id=0
"""  # noqa: E501 (verbatim MIGraphX / MLIR text)


def seed(dt: str = "f16", heads: int = 12, m: int = 384, hd: int = 64, n: int | None = None) -> Module:
    """The seed's transpose -> reshape -> dot -> add (parsed from tests/data when present)."""
    path = os.path.join(HERE, "..", "data", "seed_module.txt")
    if dt == "f16" and (heads, m, hd, n) == (12, 384, 64, None) and os.path.exists(path):
        with open(path) as f:
            return parse_module(f.read())
    if dt == "f16" and (heads, m, hd, n) == (12, 384, 64, None):
        return parse_module(SEED_TEXT)
    return seed_module(dt, heads=heads, seq=m, hd=hd, n=n)


def gemm(m, n, k, dt="f32", batch=(), transA=False, transB=False, epilogue=("add",), pre=None) -> Module:
    """dot of two params (optionally stored transposed) with a pointwise epilogue."""
    mod = Module()
    nb = len(batch)
    perm_last = list(range(nb)) + [nb + 1, nb]
    if transA:
        a = mod.add("transpose", mod.add_param("a", dt, [*batch, k, m]), permutation=perm_last)
    else:
        a = mod.add_param("a", dt, [*batch, m, k])
    if transB:
        b = mod.add("transpose", mod.add_param("b", dt, [*batch, n, k]), permutation=perm_last)
    else:
        b = mod.add_param("b", dt, [*batch, k, n])
    if pre:
        a = mod.add(pre, a)
    op = "quant_dot" if dt in ("i8", "u8") else "dot"
    y = mod.add(op, a, b)
    for e in epilogue:
        if e == "add":
            y = mod.add("add", y, mod.add_param("x", mod.get(y).shape.dtype.name, [*batch, m, n]))
        elif e == "bias":      # a row vector broadcast over rows
            bias = mod.add_param("bias", mod.get(y).shape.dtype.name, [n])
            y = mod.add("add", y, mod.add("multibroadcast", bias, out_lens=[*batch, m, n]))
        elif e.startswith("convert:"):
            y = mod.add("convert", y, target_type=e.split(":")[1])
        else:
            y = mod.add(e, y)
    mod.add_return(y)
    return mod


def pointwise_mod(dt="f32") -> Module:
    """transpose + broadcast bias + slice feeding add/mul/relu/convert/where."""
    mod = Module()
    x = mod.add_param("x", dt, [3, 5, 7])
    y = mod.add_param("y", dt, [7, 5, 3])
    bias = mod.add_param("bias", dt, [7])
    big = mod.add_param("big", dt, [3, 9, 7])
    yt = mod.add("transpose", y, permutation=[2, 1, 0])
    bb = mod.add("multibroadcast", bias, out_lens=[3, 5, 7])
    sl = mod.add("slice", big, axes=[1], starts=[2], ends=[7])
    s = mod.add("add", x, yt)
    s = mod.add("mul", s, bb)
    s = mod.add("sub", s, sl)
    r = mod.add("relu", s)
    c = mod.add("greater", s, sl)
    w = mod.add("where", c, r, mod.add("neg", sl))
    mod.add_return(w)
    return mod


def pointwise_reshape(dt="f16") -> Module:
    """a transposed input reshaped (non-affine index map) times a scalar literal, then exp."""
    mod = Module()
    x = mod.add_param("x", dt, [4, 6, 10])
    t = mod.add("transpose", x, permutation=[1, 0, 2])
    c = mod.add("contiguous", t)
    r = mod.add("reshape", c, dims=[6, 40])
    lit = mod.add_literal(0.5, dt, [6, 40])
    y = mod.add("mul", r, lit)
    y = mod.add("exp", y)
    mod.add_return(y)
    return mod


def pointwise_int() -> Module:
    mod = Module()
    a = mod.add_param("a", "i32", [5, 13])
    b = mod.add_param("b", "i32", [5, 13])
    s = mod.add("div", mod.add("mul", a, b), mod.add("add", a, b))
    s = mod.add("convert", s, target_type="int8_type")
    mod.add_return(s)
    return mod


def reduce_mod(op="reduce_sum", axes=(1,), dt="f32", lens=(3, 37, 5), post=None, pre=None) -> Module:
    mod = Module()
    x = mod.add_param("x", dt, list(lens))
    v = mod.add(pre, x) if pre else x
    r = mod.add(op, v, axes=list(axes))
    if post == "sub":      # x - reduce(x), the reduction broadcast back over its axes
        b = mod.add("multibroadcast", r, out_lens=list(lens))
        r = mod.add("sub", v, b)
    elif post == "squeeze":
        r = mod.add("squeeze", r, axes=list(axes))
    elif post:
        r = mod.add(post, r)
    mod.add_return(r)
    return mod


def softmax_mod(dt="f32", lens=(4, 3, 19), axis=-1, pre=None, post=None) -> Module:
    mod = Module()
    x = mod.add_param("x", dt, list(lens))
    v = mod.add(pre, x) if pre else x
    s = mod.add("softmax", v, axis=axis)
    if post:
        s = mod.add(post, s)
    mod.add_return(s)
    return mod


def gemm_tangled(dt="f32") -> Module:
    """A's index map mixes m and k (reshape across a transpose); B's n is a composite (div/mod) dim."""
    mod = Module()
    p = mod.add_param("p", dt, [4, 6])
    a = mod.add("reshape", mod.add("contiguous", mod.add("transpose", p, permutation=[1, 0])), dims=[8, 3])
    q = mod.add_param("q", dt, [3, 2, 5])
    b = mod.add("reshape", mod.add("contiguous", mod.add("transpose", q, permutation=[0, 2, 1])), dims=[3, 10])
    y = mod.add("dot", a, b)
    mod.add_return(mod.add("add", y, mod.add_param("x", dt, [8, 10])))
    return mod
