"""The numpy oracle agrees with numpy written out by hand, for every op, on fresh random data."""
import math

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import (
    BINARY_OPS,
    COMPARE_OPS,
    REDUCE_OPS,
    UNARY_OPS,
    Module,
    evaluate,
    random_inputs,
)
from pytest_mlirtrace._internal.ir.dtypes import bf16_to_f32, f32_to_bf16
from pytest_mlirtrace._internal.ir.ops import RULES


def rng(seed):
    return np.random.default_rng(seed)


def nonzero(r, shape, dtype=np.float32, low=0.25, high=2.0):
    """Random values away from zero (both signs)."""
    mag = r.uniform(low, high, size=shape)
    sign = np.where(r.integers(0, 2, size=shape) == 0, -1.0, 1.0)
    return (mag * sign).astype(dtype)


def run1(op, x, dt="f32", **attrs):
    m = Module()
    a = m.add_param("a", dt, x.shape)
    m.add_return(m.add(op, a, **attrs))
    return evaluate(m, {"a": x})[0]


def run2(op, x, y, dt="f32", **attrs):
    m = Module()
    a = m.add_param("a", dt, x.shape)
    b = m.add_param("b", dt, y.shape)
    m.add_return(m.add(op, a, b, **attrs))
    return evaluate(m, {"a": x, "b": y})[0]


HAND_UNARY = {
    "relu": lambda x: np.maximum(x, 0), "neg": lambda x: -x, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "erf": np.vectorize(math.erf), "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "recip": lambda x: 1 / x,
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}


def test_every_op_is_covered():
    covered = set(HAND_UNARY) | set(BINARY_OPS) | set(COMPARE_OPS) | set(REDUCE_OPS) | {
        "where", "convert", "multibroadcast", "broadcast", "transpose", "reshape", "reshape_lazy", "contiguous",
        "slice", "squeeze", "unsqueeze", "dot", "quant_dot", "softmax",
        "convolution", "quant_convolution",      # test_ir_conv.py
        "clip", "quantizelinear", "dequantizelinear",      # test_ir_quant_ops.py
        "unpack"}                                          # tests/mlir/test_corpus_quantize.py
    assert set(RULES) <= covered
    assert set(UNARY_OPS) == set(HAND_UNARY)


@pytest.mark.parametrize("op", UNARY_OPS)
def test_unary_f32(op):
    r = rng(sum(map(ord, op)))
    x = nonzero(r, (3, 5))
    if op in POSITIVE_ONLY:
        x = np.abs(x)
    want = HAND_UNARY[op](x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(run1(op, x), want)


@pytest.mark.parametrize("op", ["relu", "exp", "tanh", "sigmoid"])
def test_unary_f16_rounds_once(op):
    x = nonzero(rng(7), (4, 4), np.float16)
    want = HAND_UNARY[op](x.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(run1(op, x, "f16"), want)


HAND_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
               "min": np.minimum, "pow": np.power}


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_f32(op):
    r = rng(11)
    x, y = nonzero(r, (2, 3, 4)), nonzero(r, (2, 3, 4))
    if op == "pow":
        x = np.abs(x)
    want = HAND_BINARY[op](x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(run2(op, x, y), want)


def test_integer_div_truncates_toward_zero_and_pow():
    r = rng(3)
    x = r.integers(-20, 20, size=(10,)).astype(np.int32)
    y = r.integers(1, 6, size=(10,)).astype(np.int32) * np.where(r.integers(0, 2, size=10) == 0, -1, 1)
    want = (np.trunc(x / y)).astype(np.int32)
    np.testing.assert_array_equal(run2("div", x, y, "i32"), want)
    yp = np.abs(y)
    np.testing.assert_array_equal(run2("pow", x, yp.astype(np.int32), "i32"), (x.astype(np.int64) ** yp).astype(
        np.int32))


@pytest.mark.parametrize("op,fn", [("greater", np.greater), ("less", np.less), ("equal", np.equal),
                                   ("greater_or_equal", np.greater_equal)])
def test_compare(op, fn):
    r = rng(5)
    x = r.integers(-3, 4, size=(3, 4)).astype(np.int32)
    y = r.integers(-3, 4, size=(3, 4)).astype(np.int32)
    got = run2(op, x, y, "i32")
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, fn(x, y))


def test_where():
    r = rng(9)
    c = r.integers(0, 2, size=(2, 5)).astype(np.bool_)
    x, y = nonzero(r, (2, 5)), nonzero(r, (2, 5))
    m = Module()
    pc, px, py = m.add_param("c", "bool", c.shape), m.add_param("x", "f32", x.shape), m.add_param("y", "f32", y.shape)
    m.add_return(m.add("where", pc, px, py))
    np.testing.assert_array_equal(evaluate(m, {"c": c, "x": x, "y": y})[0], np.where(c, x, y))


def test_convert_float_to_int_truncates_and_saturates():
    x = np.array([2.7, -2.7, 300.0, -300.0, 0.4], np.float32)
    np.testing.assert_array_equal(run1("convert", x, target_type=5), np.array([2, -2, 127, -128, 0], np.int8))
    x16 = nonzero(rng(1), (6,), np.float32)
    np.testing.assert_array_equal(run1("convert", x16, target_type=1), x16.astype(np.float16))


def test_convert_float_to_bool_is_nonzero_without_truncating():
    """MIGraphX converts to bool as static_cast<bool>: any nonzero value (0.5, -0.25, a subnormal) is true."""
    x = np.array([0.5, -0.25, 0.0, -0.0, 2.0, 1e-40], np.float32)
    got = run1("convert", x, target_type=0)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, np.array([True, True, False, False, True, True]))


def test_convert_to_bf16_rounds_to_nearest_even():
    x = nonzero(rng(2), (8,))
    got = run1("convert", x, target_type=15)
    np.testing.assert_array_equal(got, f32_to_bf16(x))
    assert np.allclose(bf16_to_f32(got), x, rtol=1 / 128)


def test_views():
    r = rng(13)
    x = nonzero(r, (1, 12, 8, 4))
    np.testing.assert_array_equal(run1("transpose", x, permutation=[0, 2, 1, 3]), x.transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(run1("reshape", x, dims=[0, 0, 32]), x.reshape(1, 12, 32))
    np.testing.assert_array_equal(run1("contiguous", x), x)
    np.testing.assert_array_equal(run1("slice", x, axes=[1, 3], starts=[2, -3], ends=[7, 4]), x[:, 2:7, :, 1:4])
    np.testing.assert_array_equal(run1("squeeze", x, axes=[0]), x[0])
    np.testing.assert_array_equal(run1("unsqueeze", x, axes=[2]), x[:, :, None])
    b = nonzero(r, (1, 4, 1))
    np.testing.assert_array_equal(run1("multibroadcast", b, out_lens=[3, 4, 5]), np.broadcast_to(b, (3, 4, 5)))
    v = nonzero(r, (4,))
    np.testing.assert_array_equal(run1("broadcast", v, axis=1, out_lens=[2, 4, 3]),
                                  np.broadcast_to(v[None, :, None], (2, 4, 3)))


@pytest.mark.parametrize("op,fn", [("reduce_sum", np.sum), ("reduce_max", np.max), ("reduce_min", np.min),
                                   ("reduce_mean", np.mean)])
def test_reduce(op, fn):
    x = nonzero(rng(17), (2, 3, 4))
    want = fn(x.astype(np.float64), axis=(0, 2), keepdims=True).astype(np.float32)
    np.testing.assert_array_equal(run1(op, x, axes=[0, -1]), want)


def test_softmax():
    x = nonzero(rng(19), (2, 6))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run1("softmax", x, axis=1), (e / e.sum(axis=1, keepdims=True)).astype(np.float32),
                               rtol=1e-6)


def test_dot_f16_accumulates_wide_and_rounds_once():
    r = rng(23)
    a, b = nonzero(r, (2, 5, 7), np.float16), nonzero(r, (2, 7, 3), np.float16)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(run2("dot", a, b, "f16"), want)


def test_quant_dot_int8_to_int32():
    r = rng(29)
    a = r.integers(-128, 128, size=(3, 16)).astype(np.int8)
    b = r.integers(-128, 128, size=(16, 2)).astype(np.int8)
    got = run2("quant_dot", a, b, "i8")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_literal_and_seeded_random_inputs():
    m = Module()
    x = m.add_param("x", "f32", [2, 2])
    lit = m.add_literal(np.array([[1.5, -2.0], [0.25, 4.0]]), "f32")
    m.add_return(m.add("mul", x, lit))
    ins = random_inputs(m, seed=4)
    assert not np.any(ins["x"] == 0)
    np.testing.assert_array_equal(evaluate(m, ins)[0], ins["x"] * np.array([[1.5, -2.0], [0.25, 4.0]], np.float32))
    np.testing.assert_array_equal(random_inputs(m, seed=4)["x"], ins["x"])


def _dot_then(dot_dt, out_dt, between=None):
    from pytest_mlirtrace._internal.ir import dtype

    m = Module()
    a = m.add_param("a", dot_dt, [2, 8, 16])
    b = m.add_param("b", dot_dt, [2, 16, 8])
    v = m.add("dot", a, b)
    if between:
        v = m.add(between, v)
    m.add_return(m.add("convert", v, target_type=dtype(out_dt).type_id))
    return m


@pytest.mark.parametrize("dot_dt,out_dt,want", [
    ("f16", "f32", "f16"),    # the f16 dot's rounding is in the f32 result
    ("f32", "f16", "f16"),    # the output's own dtype is the coarser
    ("bf16", "f16", "bf16"),
    ("f32", "f32", "f32"),
])
def test_result_precision_is_the_coarsest_float_on_the_way(dot_dt, out_dt, want):
    from pytest_mlirtrace._internal.ir import result_precisions

    assert [d.name for d in result_precisions(_dot_then(dot_dt, out_dt, "relu"))] == [want]


def test_result_precision_ignores_parameter_dtypes_and_keeps_integer_outputs():
    from pytest_mlirtrace._internal.ir import dtype, result_precisions

    m = Module()
    a = m.add_param("a", "f16", [4])          # exact in f32: its dtype adds no rounding
    f = m.add("convert", a, target_type=dtype("f32").type_id)
    i = m.add("convert", m.add("exp", f), target_type=dtype("i32").type_id)
    m.add_return(m.add("exp", f), i)
    assert [d.name for d in result_precisions(m)] == ["f32", "i32"]


def test_a_scalar_bf16_parameter_gets_a_scalar_input():
    """A rank-0 bf16 parameter (a reshape to a scalar draws one) gets a 0-d input and evaluates: the bf16 rounding
    kept the shape (np.ascontiguousarray makes a 0-d array 1-d)."""
    m = Module()
    x = m.add_param("x", "bf16", [])
    m.add_return(m.add("add", x, x))
    inputs = random_inputs(m, 3)
    assert inputs["x"].shape == () and inputs["x"].dtype == np.uint16
    (out,) = evaluate(m, inputs)
    assert np.asarray(out).shape == ()
