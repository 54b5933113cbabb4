"""convolution / quant_convolution: shape rules as MIGraphX prints them (real shapes from rocMLIR's tests)
and the oracle against a direct per-output-element definition written here."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import IRError, Module, evaluate, random_inputs


def conv_module(x, w, dt="f32", xs=None, ws=None, op="convolution", **attrs):
    m = Module()
    a = m.add_param("x", dt, x, xs)
    b = m.add_param("w", dt, w, ws)
    out = m.add(op, a, b, **attrs)
    m.add_return(out)
    return m, m.get(out).shape


# ---- shapes of real programs (../shared/corpus/rocmlir) -------------------------------------------
@pytest.mark.parametrize("x, w, attrs, out", [
    # resnet50 fusion case 1: 7x7 stem, stride 2, padding 3
    ([1, 3, 224, 224], [64, 3, 7, 7], dict(padding=[3, 3, 3, 3], stride=[2, 2], dilation=[1, 1]), [1, 64, 112, 112]),
    # 1x1, stride 2
    ([1, 1024, 14, 14], [2048, 1024, 1, 1], dict(padding=[0, 0, 0, 0], stride=[2, 2]), [1, 2048, 7, 7]),
    # 3x3 stride 2 padding 1
    ([1, 256, 28, 28], [256, 256, 3, 3], dict(padding=[1, 1, 1, 1], stride=[2, 2]), [1, 256, 14, 14]),
    ([1, 5, 4, 4], [4, 5, 1, 1], dict(padding=[0, 0, 0, 0]), [1, 4, 4, 4]),
])
def test_output_lens_of_real_programs(x, w, attrs, out):
    _, shape = conv_module(x, w, **attrs)
    assert list(shape.lens) == out and shape.standard


def test_nhwc_strided_input_gives_an_nhwc_strided_output():
    """migraphx-to-rock-conv-nhwc.mlir: <1x4x5x5xf32, 100x1x20x4> * <7x4x3x3xf32, 36x1x12x4> ->
    <1x7x3x3xf32, 63x1x21x7>."""
    _, shape = conv_module([1, 4, 5, 5], [7, 4, 3, 3], xs=[100, 1, 20, 4], ws=[36, 1, 12, 4],
                           padding=[0, 0, 0, 0], stride=[1, 1], dilation=[1, 1], group=1, padding_mode=0)
    assert (list(shape.lens), list(shape.strides)) == ([1, 7, 3, 3], [63, 1, 21, 7])


def test_quant_convolution_gives_int32():
    # resnet50 fusion case 1 int8: <1x128x56x56xi8> * <128x128x3x3xi8>, stride 2, padding 1 -> <1x128x28x28xi32>
    _, shape = conv_module([1, 128, 56, 56], [128, 128, 3, 3], dt="i8", op="quant_convolution",
                           padding=[1, 1, 1, 1], stride=[2, 2])
    assert shape.dtype.name == "i32" and list(shape.lens) == [1, 128, 28, 28]


@pytest.mark.parametrize("x, w, attrs, msg", [
    ([1, 6, 5, 5], [4, 4, 3, 3], dict(group=1), "input channels 6 != weight channels 4 x group 1"),
    ([1, 6, 5, 5], [4, 2, 3, 3], dict(group=3), "output channels 4 are not a multiple of group 3"),
    ([1, 4, 2, 2], [4, 4, 3, 3], {}, "does not fit the padded input"),
    ([1, 4, 5, 5], [4, 4, 3, 3], dict(padding=[1, 1, 1]), "padding [1, 1, 1] must have 2 or 4 values"),
    ([1, 4, 5, 5], [4, 4, 3, 3], dict(stride=[0, 1]), "stride [0, 1] must be positive"),
    ([1, 4, 5], [4, 4, 3, 3], {}, "must have the same rank"),
])
def test_bad_convolutions_name_the_instruction(x, w, attrs, msg):
    with pytest.raises(IRError) as e:
        conv_module(x, w, **attrs)
    assert msg in str(e.value) and "= convolution:" in str(e.value)


def test_dot_types_are_refused():
    with pytest.raises(IRError, match="quant_convolution takes int8"):
        conv_module([1, 4, 5, 5], [4, 4, 3, 3], op="quant_convolution")
    with pytest.raises(IRError, match="use quant_convolution for int8"):
        conv_module([1, 4, 5, 5], [4, 4, 3, 3], dt="i8")


# ---- the oracle against the definition --------------------------------------------------------
def direct(x, w, pad_begin, stride, dilation, group, out_sp):
    """out[n, k, o...] = sum over c in k's group and kernel positions p of x[n, c, o*s + p*d - pad] * w[k, c', p],
    zero outside the input: the definition, one output element at a time."""
    n_, c_ = x.shape[:2]
    k_, cg = w.shape[:2]
    kg = k_ // group
    out = np.zeros((n_, k_) + tuple(out_sp))
    for n, k in itertools.product(range(n_), range(k_)):
        g = k // kg
        for o in itertools.product(*[range(s) for s in out_sp]):
            acc = 0.0
            for ci in range(cg):
                for p in itertools.product(*[range(s) for s in w.shape[2:]]):
                    pos = [oi * si + pi * di - bi
                           for oi, si, pi, di, bi in zip(o, stride, p, dilation, pad_begin, strict=False)]
                    if all(0 <= q < size for q, size in zip(pos, x.shape[2:], strict=False)):
                        acc += float(x[(n, g * cg + ci) + tuple(pos)]) * float(w[(k, ci) + p])
            out[(n, k) + o] = acc
    return out


@pytest.mark.parametrize("x, w, attrs", [
    ([2, 3, 7], [4, 3, 3], dict(padding=[1], stride=[2])),                                      # 1-D
    ([1, 4, 6, 5], [6, 2, 3, 2], dict(padding=[1, 0, 2, 1], stride=[2, 1], dilation=[1, 2], group=2)),
    ([1, 3, 5, 5], [3, 1, 3, 3], dict(padding=[1, 1, 1, 1], group=3)),                          # depthwise
    ([1, 2, 4, 3, 4], [2, 2, 2, 2, 3], dict(padding=[1, 0, 1], stride=[1, 2, 1])),              # 3-D
])
def test_oracle_matches_the_definition(x, w, attrs):
    m, shape = conv_module(x, w, **attrs)
    inputs = random_inputs(m, seed=7)
    assert np.abs(inputs["x"]).max() > 0
    [got] = evaluate(m, inputs)
    spatial = len(x) - 2
    pad = attrs.get("padding", [0] * spatial)
    want = direct(inputs["x"], inputs["w"], pad[:spatial], attrs.get("stride", [1] * spatial),
                  attrs.get("dilation", [1] * spatial), attrs.get("group", 1), shape.lens[2:])
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-5, atol=1e-5)


def test_quant_oracle_is_exact_in_int32():
    m, _ = conv_module([1, 4, 5, 5], [3, 4, 3, 3], dt="i8", op="quant_convolution", padding=[1, 1, 1, 1])
    inputs = random_inputs(m, seed=3)
    [got] = evaluate(m, inputs)
    want = direct(inputs["x"].astype(np.int64), inputs["w"].astype(np.int64), [1, 1], [1, 1], [1, 1], 1, [5, 5])
    assert got.dtype == np.int32 and np.array_equal(got, want.astype(np.int64))
