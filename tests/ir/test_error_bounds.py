"""Error bounds derived from the computation (ir.error_bounds / ir.compare_bounded): exact ops are held
bit-exact, inexact ones to a bound from the op chain and the reduction length that every correct
implementation meets and that typical 1-ulp bugs (a narrow accumulator, a rounding mode, an ulp lost per op)
exceed. Implementations are simulated in numpy on fresh random inputs; no device is needed."""
from __future__ import annotations

import os

import numpy as np
import pytest

from pytest_mlirtrace._internal import ir


@pytest.fixture
def rng(request):
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("rng_seed", seed))
    return np.random.default_rng(seed)


def oracle(m, inputs):
    outs, env = ir.evaluate(m, inputs, keep_all=True)
    return outs, ir.error_bounds(m, env)


def rand_inputs(m, rng, low=-1.0, high=1.0):
    return ir.random_inputs(m, int(rng.integers(1 << 30)), low, high)


# ---- exact ops: the bound is zero, and a one-ulp difference is caught -----------------------------------------
def test_views_max_min_convert_and_integer_ops_are_held_bit_exact(rng):
    m = ir.Module()
    x = m.add_param("x", "f32", [3, 8])
    y = m.add_param("y", "f32", [8, 3])
    t = m.add("transpose", y, permutation=[1, 0])
    mx = m.add("max", x, t)
    h = m.add("convert", mx, target_type=ir.dtype("f16").type_id)
    i = m.add_param("i", "i32", [3, 8])
    j = m.add("mul", m.add("add", i, i), i)
    m.add_return(h, j)
    m.verify()
    inputs = rand_inputs(m, rng)
    (h_out, j_out), (bh, bj) = oracle(m, inputs)
    assert bh.exact and bj.exact
    assert ir.compare_bounded(h_out, h_out, "f16", bh) is None
    # one f16 ulp off in one element: wrong
    bad = h_out.copy()
    bad[1, 2] = np.nextafter(bad[1, 2], np.float16(np.inf))
    mm = ir.compare_bounded(bad, h_out, "f16", bh)
    assert mm is not None and mm.count == 1 and mm.worst_index == (1, 2) and "bit-exact" in str(mm)
    badj = j_out.copy()
    badj[0, 0] += 1
    assert ir.compare_bounded(badj, j_out, "i32", bj) is not None


def test_round_toward_zero_conversion_is_caught_and_round_to_nearest_even_passes(rng):
    m = ir.Module()
    x = m.add_param("x", "f32", [64, 64])
    m.add_return(m.add("convert", x, target_type=ir.dtype("f16").type_id))
    m.verify()
    inputs = rand_inputs(m, rng)
    (want,), (b,) = oracle(m, inputs)
    x32 = inputs["x"]
    assert ir.compare_bounded(x32.astype(np.float16), want, "f16", b) is None       # numpy: RNE
    rtz = _to_f16_toward_zero(x32)
    mm = ir.compare_bounded(rtz, want, "f16", b)
    assert mm is not None and mm.count > 0.3 * want.size


def _to_f16_toward_zero(x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float16)
    over = np.abs(h.astype(np.float64)) > np.abs(x.astype(np.float64))
    return np.where(over, np.nextafter(h, np.float16(0)), h).astype(np.float16)


def test_pointwise_bound_does_not_grow_with_the_row_length(rng):
    def bound_of(n):
        m = ir.Module()
        x = m.add_param("x", "f16", [2, n])
        m.add_return(m.add("exp", x))
        m.verify()
        _, (b,) = oracle(m, rand_inputs(m, rng))
        return float(b.abs.max())
    short, long = bound_of(4), bound_of(8192)
    # exp of values in [-1, 1): at most e * (2 u16 + 6 u32) + subnormal terms, whatever the row length
    assert long <= np.e * (2 * 2.0 ** -11 + 6 * 2.0 ** -24) + 1e-6
    assert long <= 1.01 * max(short, 1e-9) or long <= np.e * 2 * 2.0 ** -10


# ---- inexact ops: correct implementations pass, 1-ulp bugs show -----------------------------------------------
def _dot_module(dt, m_, n, k):
    m = ir.Module()
    a = m.add_param("a", dt, [1, m_, k])
    b = m.add_param("b", dt, [1, k, n])
    m.add_return(m.add("dot", a, b))
    m.verify()
    return m


def _acc(a, b, acc_dt, order="forward"):
    """A dot accumulated element by element in ``acc_dt`` (what a kernel's K loop does)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    k = a.shape[-1]
    s = np.zeros(a.shape[:-1] + (b.shape[-1],), dtype=acc_dt)
    ks = range(k) if order == "forward" else range(k - 1, -1, -1)
    for i in ks:
        prod = (a[..., :, i:i + 1] * b[..., i:i + 1, :]).astype(acc_dt)
        s = (s + prod).astype(acc_dt)
    return s


def test_f16_dot_f32_accumulation_in_any_order_passes_and_an_f16_accumulator_fails(rng):
    m = _dot_module("f16", 4, 4, 512)
    inputs = rand_inputs(m, rng)
    (want,), (b,) = oracle(m, inputs)
    a, bb = inputs["a"], inputs["b"]
    for order in ("forward", "backward"):
        got = _acc(a, bb, np.float32, order).astype(np.float16)
        assert ir.compare_bounded(got, want, "f16", b) is None, order
    blocked = (a.astype(np.float32).reshape(1, 4, 8, 64).transpose(0, 2, 1, 3)
               @ bb.astype(np.float32).reshape(1, 8, 64, 4)).sum(axis=1, dtype=np.float32)
    assert ir.compare_bounded(blocked.astype(np.float16)[None] if blocked.ndim == 2 else blocked.astype(np.float16),
                              want, "f16", b) is None
    narrow = _acc(a, bb, np.float16)
    mm = ir.compare_bounded(narrow, want, "f16", b)
    assert mm is not None, "an f16 accumulator over K=512 went unnoticed"


def test_bf16_reduce_sum_with_a_narrow_accumulator_fails(rng):
    m = ir.Module()
    x = m.add_param("x", "bf16", [2, 1024])
    m.add_return(m.add("reduce_sum", x, axes=[1]))
    m.verify()
    inputs = rand_inputs(m, rng, 0.0, 1.0)
    (want,), (b,) = oracle(m, inputs)
    xs = ir.dtypes.to_compute(inputs["x"], ir.dtype("bf16"))
    ok = ir.dtypes.from_compute(np.cumsum(xs.astype(np.float32), axis=1, dtype=np.float32)[:, -1:], ir.dtype("bf16"))
    assert ir.compare_bounded(ok, want, "bf16", b) is None
    acc = np.zeros((2, 1), dtype=np.float64)
    for i in range(1024):         # partial sums rounded to bf16 at every step
        acc = ir.dtypes.to_compute(ir.dtypes.from_compute(acc + xs[:, i:i + 1], ir.dtype("bf16")), ir.dtype("bf16"))
    narrow = ir.dtypes.from_compute(acc, ir.dtype("bf16"))
    assert ir.compare_bounded(narrow, want, "bf16", b) is not None


def _chain_module(n_ops):
    m = ir.Module()
    x = m.add_param("x", "f16", [16, 64])
    y = m.add_param("y", "f16", [16, 64])
    cur = x
    for i in range(n_ops):
        cur = m.add("mul" if i % 2 else "add", cur, y)
    m.add_return(cur)
    m.verify()
    return m


def _eval_chain(x, y, n_ops, bump_ulps: int):
    """The chain in float, each op's result rounded to f16 (RNE) and then moved ``bump_ulps`` ulps up."""
    cur = x.astype(np.float32)
    y = y.astype(np.float32)
    for i in range(n_ops):
        cur = (cur * y) if i % 2 else (cur + y)
        h = cur.astype(np.float16)
        for _ in range(bump_ulps):
            h = np.nextafter(h, np.float16(np.inf))
        cur = h.astype(np.float32)
    return cur.astype(np.float16)


def test_a_chain_losing_one_ulp_per_op_fails_and_the_correct_chain_is_exact(rng):
    m = _chain_module(8)
    inputs = rand_inputs(m, rng)
    (want,), (b,) = oracle(m, inputs)
    assert b.exact          # add and mul of f16 values, rounded per op: one right answer
    assert ir.compare_bounded(_eval_chain(inputs["x"], inputs["y"], 8, 0), want, "f16", b) is None
    mm = ir.compare_bounded(_eval_chain(inputs["x"], inputs["y"], 8, 1), want, "f16", b)
    assert mm is not None and mm.count > want.size // 2


def test_an_ulp_per_op_after_an_inexact_op_shows_on_an_amplifying_chain(rng):
    """exp is inexact (the device's expf may differ from the oracle), then x * 64 - 63 * x amplifies:
    the bound follows the amplification, so a correct exp passes and one that is 1 f16 ulp high everywhere,
    through a chain of adds that each add one more, fails."""
    m = ir.Module()
    x = m.add_param("x", "f16", [32, 32])
    e = m.add("exp", x)
    cur = e
    for _ in range(6):
        cur = m.add("add", cur, e)
    m.add_return(cur)
    m.verify()
    inputs = rand_inputs(m, rng)
    (want,), (b,) = oracle(m, inputs)
    xs = inputs["x"].astype(np.float32)

    def run(bump):
        ef = np.exp(xs).astype(np.float16)
        eb = ef
        for _ in range(bump):
            eb = np.nextafter(eb, np.float16(np.inf))
        c = eb.astype(np.float32)
        for _ in range(6):
            h = (c + eb.astype(np.float32)).astype(np.float16)
            for _ in range(bump):
                h = np.nextafter(h, np.float16(np.inf))
            c = h.astype(np.float32)
        return c.astype(np.float16)
    assert ir.compare_bounded(run(0), want, "f16", b) is None
    assert ir.compare_bounded(run(1), want, "f16", b) is not None


def test_softmax_of_large_magnitudes_passes_when_computed_stably_and_fails_when_not(rng):
    m = ir.Module()
    x = m.add_param("x", "f32", [4, 256])
    m.add_return(m.add("softmax", x, axis=1))
    m.verify()
    inputs = rand_inputs(m, rng, -200.0, 200.0)
    (want,), (b,) = oracle(m, inputs)
    xs = inputs["x"].astype(np.float32)
    e = np.exp(xs - xs.max(axis=1, keepdims=True))
    assert ir.compare_bounded((e / e.sum(axis=1, keepdims=True)).astype(np.float32), want, "f32", b) is None
    with np.errstate(all="ignore"):
        naive = np.exp(xs)
        naive = (naive / naive.sum(axis=1, keepdims=True)).astype(np.float32)     # overflows: NaN
    assert ir.compare_bounded(naive, want, "f32", b) is not None


# ---- specials --------------------------------------------------------------------------------------------
def test_nan_must_stay_nan_and_inf_must_be_the_same_inf():
    m = ir.Module()
    x = m.add_param("x", "f32", [4])
    m.add_return(m.add("log", x))
    m.verify()
    inputs = {"x": np.array([-1.0, 0.0, 2.0, np.inf], dtype=np.float32)}
    (want,), (b,) = oracle(m, inputs)
    assert np.isnan(want[0]) and want[1] == -np.inf and want[3] == np.inf
    good = want.copy()
    assert ir.compare_bounded(good, want, "f32", b) is None
    for i, v in ((0, 0.0), (1, np.float32(-3.4e38)), (3, np.float32(1.0))):
        bad = want.copy()
        bad[i] = v
        assert ir.compare_bounded(bad, want, "f32", b) is not None, i


def test_a_value_at_the_overflow_edge_may_be_inf_or_the_largest_finite():
    m = ir.Module()
    x = m.add_param("x", "f16", [3])
    y = m.add_param("y", "f16", [3])
    m.add_return(m.add("mul", m.add("exp", x), y))
    m.verify()
    # exp(11.0859375) = 65248 (inexact: the device's expf may land a neighbour away); times 1.00390625 it is
    # 65503, at f16's largest finite value, so inf is right too; exp(12) overflows for sure
    inputs = {"x": np.array([11.0859375, 1.0, 12.0], dtype=np.float16),
              "y": np.array([1.00390625, 1.0, 1.0], dtype=np.float16)}
    (want,), (b,) = oracle(m, inputs)
    assert np.isinf(want[2]) and b.overflow_ok[0] and not b.overflow_ok[1]
    for edge in (np.float16(65504), np.float16(np.inf)):
        got = want.copy()
        got[0] = edge
        assert ir.compare_bounded(got, want, "f16", b) is None
    for i, v in ((0, -np.inf), (2, -np.inf), (2, 1.0)):
        got = want.copy()
        got[i] = np.float16(v)
        assert ir.compare_bounded(got, want, "f16", b) is not None, (i, v)


def test_clip_and_quantize_of_exact_inputs_are_bit_exact(rng):
    m = ir.Module()
    x = m.add_param("x", "f32", [4, 16])
    s = m.add_param("s", "f32", [4, 16])
    z = m.add_param("z", "i8", [4, 16])
    q = m.add("quantizelinear", x, s, z)
    lo = m.add_param("lo", "f32", [4, 16])
    hi = m.add_param("hi", "f32", [4, 16])
    m.add_return(q, m.add("clip", x, lo, hi))
    m.verify()
    inputs = rand_inputs(m, rng)
    (qo, co), (bq, bc) = oracle(m, inputs)
    assert bq.exact and bc.exact
    off = qo.copy()
    off[0, 0] = np.int8(off[0, 0] + 1) if off[0, 0] < 127 else np.int8(126)
    assert ir.compare_bounded(off, qo, "i8", bq) is not None


def test_a_masked_softmax_row_stays_checked(rng):
    """Scores masked to -inf (causal / padding masks through where) have probability exactly 0: the row's
    bound stays finite (was: inf - inf made it NaN, then unchecked, so a NaN row passed), and a kernel that
    drops the diagonal key (NaN for the first row) fails."""
    m = ir.Module()
    s = m.add_param("s", "f32", [4, 6])
    c = m.add_param("c", "bool", [4, 6])
    ninf = m.add_literal(np.array([-np.inf], np.float32), "f32")
    masked = m.add("where", c, m.add("multibroadcast", ninf, out_lens=[4, 6]), s)
    m.add_return(m.add("softmax", masked, axis=1))
    inputs = rand_inputs(m, rng)
    inputs["c"] = np.arange(6)[None, :] > np.arange(4)[:, None]          # causal: key > query masked
    [out], [b] = oracle(m, inputs)
    assert np.isfinite(b.abs).all() and (b.abs[inputs["c"]] < 1e-30).all()   # a masked probability: 0
    assert ir.compare_bounded(out, out, "f32", b) is None
    bad = out.copy()
    bad[0] = np.nan                                 # row 0 keeps only key 0: dropping it leaves 0/0
    assert ir.compare_bounded(bad, out, "f32", b) is not None
