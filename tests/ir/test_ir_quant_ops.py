"""quantizelinear, dequantizelinear, clip and greater_or_equal: shape rules (good and bad inputs) and the
oracle against values worked out by hand (not by the code under test).

The semantics are those of rocMLIR's lowering of its migraphx dialect (scale and zero point arrive broadcast
to the input's lens): quantizelinear = saturate(round_half_even(x * (1/scale)) + zero_point), output type the
zero point's (else ``out_type``, else uint8 as MIGraphX); dequantizelinear = (T(x) - T(zp)) * scale with T the
scale's type; clip = min(max(x, lo), hi).
"""
from __future__ import annotations

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import IRError, Module, Shape, evaluate
from pytest_mlirtrace._internal.ir.dtypes import f32_to_bf16


def mod(*params):
    m = Module()
    names = [m.add_param(f"p{i}", dt, lens) for i, (dt, lens) in enumerate(params)]
    return m, names


def run(op, arrays, dtypes, **attrs):
    m = Module()
    names = [m.add_param(f"p{i}", dt, list(np.shape(a))) for i, (a, dt) in enumerate(zip(arrays, dtypes, strict=False))]
    out = m.add(op, *names, **attrs)
    m.add_return(out)
    return evaluate(m, {f"p{i}": a for i, a in enumerate(arrays)})[0], m.get(out).shape


# ------------------------------------------------------------- shape rules --
@pytest.mark.parametrize("ft", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("zp", ["i8", "u8", "i32"])
def test_quantizelinear_takes_the_zero_points_type(ft, zp):
    m, (x, s, z) = mod((ft, [2, 3]), (ft, [2, 3]), (zp, [2, 3]))
    assert m.get(m.add("quantizelinear", x, s, z)).shape == Shape.of(zp, [2, 3])


def test_quantizelinear_without_zero_point_is_uint8_unless_out_type():
    m, (x, s) = mod(("f32", [4]), ("f32", [4]))
    assert m.get(m.add("quantizelinear", x, s)).shape == Shape.of("u8", [4])
    assert m.get(m.add("quantizelinear", x, s, out_type=5)).shape == Shape.of("i8", [4])
    assert m.get(m.add("quantizelinear", x, s, out_type="int32_type")).shape == Shape.of("i32", [4])


def test_quant_ops_keep_a_packed_inputs_layout():
    m, (x, s) = mod(("f32", [2, 3]), ("f32", [3, 1]))       # a per-axis scale along axis 0 of x's transpose
    xt = m.add("transpose", x, permutation=[1, 0])
    sb = m.add("multibroadcast", s, out_lens=[3, 2])
    q = m.get(m.add("quantizelinear", xt, sb))
    assert (q.shape.dtype.name, q.shape.lens, q.shape.strides) == ("u8", (3, 2), (1, 3))
    d = m.get(m.add("dequantizelinear", q.name, sb))
    assert (d.shape.dtype.name, d.shape.lens, d.shape.strides) == ("f32", (3, 2), (1, 3))


@pytest.mark.parametrize("params,attrs,msg", [
    ((("f32", [4]),), {}, r"@1 = quantizelinear: takes 2 inputs \(x, scale\) or 3 \(x, scale, zero point\), got 1"),
    ((("i8", [4]), ("i8", [4])), {}, r"input must be a float type, got int8_type"),
    ((("f32", [4]), ("f16", [4])), {}, r"scale is half_type, the input float_type \(they must match\)"),
    ((("f32", [4]), ("f32", [1])), {}, r"scale lens \[1\] differ from the input's \[4\] \(broadcast the scale"),
    ((("f32", [4]), ("f32", [4]), ("f32", [4])), {}, r"zero point must be an integer type, got float_type"),
    ((("f32", [4]), ("f32", [4]), ("i8", [2])), {}, r"zero point lens \[2\] differ from the input's \[4\]"),
    ((("f32", [4]), ("f32", [4]), ("i8", [4])), {"out_type": 4},
     r"out_type uint8_type differs from the zero point's type int8_type"),
    ((("f32", [4]), ("f32", [4])), {"out_type": 2}, r"output type must be an integer type of at most 32 bits"),
    ((("f32", [4]), ("f32", [4])), {"out_type": 99}, r"unknown out_type 99"),
    ((("f32", [4]), ("f32", [4])), {"out_type": "nope"}, r"out_type: unknown element type 'nope'"),
    ((("f32", [4]), ("f32", [4])), {"out_type": 1.5}, r"out_type must be a type id or a type name, got 1.5"),
])
def test_quantizelinear_refuses(params, attrs, msg):
    m, names = mod(*params)
    with pytest.raises(IRError, match=msg):
        m.add("quantizelinear", *names, **attrs)


def test_dequantizelinear_gives_the_scales_type():
    for xt in ("i8", "u8", "i32"):
        for ft in ("f32", "f16", "bf16"):
            m, (x, s, z) = mod((xt, [3]), (ft, [3]), (xt, [3]))
            assert m.get(m.add("dequantizelinear", x, s, z)).shape == Shape.of(ft, [3])
            assert m.get(m.add("dequantizelinear", x, s)).shape == Shape.of(ft, [3])


@pytest.mark.parametrize("params,msg", [
    ((("f32", [4]), ("f32", [4])), r"@2 = dequantizelinear: input must be an integer type, got float_type"),
    ((("bool", [4]), ("f32", [4])), r"input must be an integer type, got bool_type"),
    ((("i8", [4]), ("i32", [4])), r"scale must be a float type, got int32_type"),
    ((("i8", [4]), ("f32", [4]), ("i32", [4])), r"zero point is int32_type, the input int8_type \(they must match\)"),
    ((("i8", [4]), ("f32", [2])), r"scale lens \[2\] differ from the input's \[4\]"),
    ((("i8", [4]), ("f32", [4]), ("i8", [4]), ("i8", [4])), r"takes 2 inputs .* got 4"),
])
def test_dequantizelinear_refuses(params, msg):
    m, names = mod(*params)
    with pytest.raises(IRError, match=msg):
        m.add("dequantizelinear", *names)


def test_clip_rule():
    m, (x, lo, hi) = mod(("f16", [2, 2]), ("f16", [2, 2]), ("f16", [2, 2]))
    assert m.get(m.add("clip", x, lo, hi)).shape == Shape.of("f16", [2, 2])
    m, (x, lo, hi) = mod(("i32", [3]), ("i32", [3]), ("i32", [3]))
    assert m.get(m.add("clip", x, lo, hi)).shape == Shape.of("i32", [3])
    m, (x, lo) = mod(("f32", [3]), ("f32", [3]))
    with pytest.raises(IRError, match=r"@2 = clip: takes 3 inputs, got 2"):
        m.add("clip", x, lo)
    m, (x, lo, hi) = mod(("f32", [3]), ("f32", [1]), ("f32", [3]))
    with pytest.raises(IRError, match=r"clip: inputs differ in lens: \[3\] vs \[1\] \(broadcast them first\)"):
        m.add("clip", x, lo, hi)
    m, (x, lo, hi) = mod(("f32", [3]), ("f32", [3]), ("f16", [3]))
    with pytest.raises(IRError, match=r"clip: max bound is half_type, x is float_type \(they must match\)"):
        m.add("clip", x, lo, hi)


def test_greater_or_equal_rule():
    m, (a, b) = mod(("f32", [2]), ("f32", [2]))
    assert m.get(m.add("greater_or_equal", a, b)).shape == Shape.of("bool", [2])
    m, (a, b) = mod(("f32", [2]), ("i32", [2]))
    with pytest.raises(IRError, match=r"greater_or_equal: inputs differ in type: float_type vs int32_type"):
        m.add("greater_or_equal", a, b)


# ------------------------------------------------------------------ oracle --
def test_quantizelinear_values_by_hand():
    x = np.array([1.25, 1.75, -1.25, 3.0, 100.0, -100.0, 0.0, 0.2], np.float32)
    s = np.full(8, 0.5, np.float32)                  # 1/s = 2 exactly: x/s = 2.5, 3.5, -2.5, 6, 200, -200, 0, 0.4
    z = np.array([0, 0, 0, -10, 0, 0, 127, -128], np.int8)
    got, shape = run("quantizelinear", [x, s, z], ["f32", "f32", "i8"])
    # half to even: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2; 6 - 10 = -4; 200 and -200 saturate; 0 + 127; 0 - 128
    np.testing.assert_array_equal(got, np.array([2, 4, -2, -4, 127, -128, 127, -128], np.int8))
    assert got.dtype == np.int8 and shape.dtype.name == "i8"
    got, _ = run("quantizelinear", [x, s], ["f32", "f32"])                # uint8: negatives saturate to 0
    np.testing.assert_array_equal(got, np.array([2, 4, 0, 6, 200, 0, 0, 0], np.uint8))
    zu = np.array([250, 0, 3, 0, 0, 255, 9, 1], np.uint8)
    got, _ = run("quantizelinear", [x, s, zu], ["f32", "f32", "u8"])      # 2 + 250, -2 + 3, -200 + 255
    np.testing.assert_array_equal(got, np.array([252, 4, 1, 6, 200, 55, 9, 1], np.uint8))


def test_quantizelinear_adds_the_zero_point_in_int32_then_saturates():
    x = np.array([1e10, -1e10, 300.0, -300.0], np.float32)
    s = np.ones(4, np.float32)
    z = np.array([-5, 5, -100, 100], np.int32)
    got, _ = run("quantizelinear", [x, s, z], ["f32", "f32", "i32"])
    np.testing.assert_array_equal(got, np.array([2**31 - 6, -2**31 + 5, 200, -200], np.int32))
    z8 = np.array([-5, 5, -100, 100], np.int8)
    got, _ = run("quantizelinear", [x, s, z8], ["f32", "f32", "i8"])      # 2^31-1 - 5 saturates to 127
    np.testing.assert_array_equal(got, np.array([127, -128, 127, -128], np.int8))


def test_quantizelinear_nan_and_inf():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    s = np.array([1.0, 1.0, 1.0, 0.0], np.float32)                       # 1/0 = inf: 1 * inf saturates
    z = np.array([3, 0, 0, 0], np.int8)
    got, _ = run("quantizelinear", [x, s, z], ["f32", "f32", "i8"])
    np.testing.assert_array_equal(got, np.array([3, 127, -128, 127], np.int8))


def test_quantizelinear_rounds_in_the_inputs_type():
    # f16, as rocMLIR computes it: r = f16(1/s), y = f16(x*r), then half to even. 18/0.14 is 128.56 exactly
    # (129), but f16(1/0.14) = 7.140625 and f16(18 * 7.140625) = 128.5, so 128; 10.234/0.585 = 17.496 (17),
    # but y = 17.5 in f16, so 18
    x = np.array([18.0, 10.234], np.float16)
    s = np.array([0.14, 0.585], np.float16)
    r = (np.float16(1) / s).astype(np.float16)
    y = (x * r).astype(np.float16)
    assert list(r) == [np.float16(7.140625), np.float16(1.7099609375)] and list(y) == [128.5, 17.5]
    got, _ = run("quantizelinear", [x, s], ["f16", "f16"], out_type="int32_type")
    np.testing.assert_array_equal(got, np.array([128, 18], np.int32))


def test_dequantizelinear_values_by_hand():
    x = np.array([0, 1, -128, 127, 5], np.int8)
    s = np.array([0.5, 0.25, 2.0, 1.0, 0.1], np.float32)
    z = np.array([0, 3, -128, -1, 5], np.int8)
    got, shape = run("dequantizelinear", [x, s, z], ["i8", "f32", "i8"])
    np.testing.assert_array_equal(got, np.array([0.0, -0.5, 0.0, 128.0, 0.0], np.float32))
    assert shape.dtype.name == "f32"
    got, _ = run("dequantizelinear", [x, s], ["i8", "f32"])
    np.testing.assert_array_equal(got, np.array([0.0, 0.25, -256.0, 127.0, np.float32(0.1) * 5], np.float32))


def test_dequantizelinear_rounds_each_step_to_the_output_type():
    # f16 keeps 11 bits: 2049 -> 2048 when converted, 2049 - 0 stays 2048, times 1 = 2048
    x = np.array([2049, 4097, 3], np.int32)
    s = np.array([1.0, 1.0, 0.5], np.float16)
    z = np.array([0, 1, 2], np.int32)
    got, _ = run("dequantizelinear", [x, s, z], ["i32", "f16", "i32"])
    np.testing.assert_array_equal(got, np.array([2048.0, 4096.0, 0.5], np.float16))
    sb = f32_to_bf16(np.array([1.0, 1.0, 0.5], np.float32))
    got, _ = run("dequantizelinear", [x, sb, z], ["i32", "bf16", "i32"])   # bf16: 8 bits: 2049 -> 2048, 4097 -> 4096
    np.testing.assert_array_equal(got, f32_to_bf16(np.array([2048.0, 4096.0, 0.5], np.float32)))


def test_clip_values_by_hand():
    x = np.array([-3.0, 0.5, 7.0, np.nan], np.float32)
    lo = np.array([-1.0, -1.0, -1.0, 0.0], np.float32)
    hi = np.array([1.0, 1.0, 5.0, 1.0], np.float32)
    got, _ = run("clip", [x, lo, hi], ["f32"] * 3)
    np.testing.assert_array_equal(got, np.array([-1.0, 0.5, 5.0, np.nan], np.float32))
    xi = np.array([-300, 4, 300], np.int32)
    got, _ = run("clip", [xi, np.full(3, -128, np.int32), np.full(3, 127, np.int32)], ["i32"] * 3)
    np.testing.assert_array_equal(got, np.array([-128, 4, 127], np.int32))


def test_greater_or_equal_values_by_hand():
    a = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    b = np.array([2.0, 2.0, 2.0, 1.0], np.float32)
    got, shape = run("greater_or_equal", [a, b], ["f32", "f32"])
    np.testing.assert_array_equal(got, np.array([False, True, True, False]))
    assert shape.dtype.name == "bool"


def test_per_axis_quantize_dequantize_round_trip_by_hand():
    """Per-channel scales and zero points (axis 1), broadcast by views as MIGraphX writes them."""
    m = Module()
    x = m.add_param("x", "f32", [2, 3])
    s = m.add_param("s", "f32", [3])
    z = m.add_param("z", "i8", [3])
    sb = m.add("broadcast", s, axis=1, out_lens=[2, 3])
    zb = m.add("broadcast", z, axis=1, out_lens=[2, 3])
    q = m.add("quantizelinear", x, sb, zb)
    m.add_return(q, m.add("dequantizelinear", q, sb, zb))
    xs = np.array([[1.0, 1.0, 1.0], [-0.3, 0.7, 100.0]], np.float32)
    ss = np.array([0.5, 0.25, 2.0], np.float32)
    zs = np.array([1, -2, 0], np.int8)
    q_got, d_got = evaluate(m, {"x": xs, "s": ss, "z": zs})
    # x/s: [2, 4, 0.5], [-0.6, 2.8, 50] -> half even [2, 4, 0], [-1, 3, 50]; + z -> [3, 2, 0], [0, 1, 50]
    np.testing.assert_array_equal(q_got, np.array([[3, 2, 0], [0, 1, 50]], np.int8))
    # (q - z) * s: [1, 1, 0], [-0.5, 0.75, 100]
    np.testing.assert_array_equal(d_got, np.array([[1.0, 1.0, 0.0], [-0.5, 0.75, 100.0]], np.float32))
