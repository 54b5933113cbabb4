"""The device-side output check (runtime/devcheck.py) on PoCL, through the worker pool.

Each case copies a storage array into an output buffer on the device and asks the worker to check it against
the oracle's values and bounds. The verdict must be the conservative rule's, computed here independently in
numpy, and sound: whatever passes on the device passes ``ir.compare_bounded``."""

import numpy as np
import pytest

from pytest_mlirtrace._internal import ir
from pytest_mlirtrace._internal.ir.dtypes import from_compute, to_compute
from pytest_mlirtrace._internal.runtime import CHECK_KINDS, InBuf, KernelJob, OutBuf, OutCheck, Scalar, bound_f32

COPY = """
__kernel void cp(__global const {t} *x, __global {t} *y, const int n)
{{
    int i = get_global_id(0);
    if (i < n) y[i] = x[i];
}}
"""
CTYPE = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


def _values(kind, rng, n):
    dt = ir.dtype(kind)
    if dt.is_float:
        x = rng.standard_normal(n) * 3
        if kind == "f16":
            x = x.astype(np.float16).astype(np.float64)
    elif kind == "bool":
        x = rng.integers(0, 2, n)
    else:
        info = np.iinfo(dt.np)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), n)
    return from_compute(x, dt)


def _conservative_pass(got, want, bound):
    """The rule the device applies, restated in numpy: equal (NaN = NaN), or both finite and within."""
    with np.errstate(all="ignore"):
        if want.dtype.kind == "f":
            eq = (got == want) | (np.isnan(got) & np.isnan(want))
            return eq | (np.isfinite(got) & np.isfinite(want) & (np.abs(got - want) <= bound))
        return (got == want) | (np.abs(got.astype(np.float64) - want.astype(np.float64)) <= bound)


def _device_verdict(pool, kind, stored, want, bound):
    dt = ir.dtype(kind)
    n = stored.size
    job = KernelJob(COPY.format(t=CTYPE[dt.itemsize]), "cp",
                    [InBuf(stored.view(f"u{dt.itemsize}")), OutBuf((n,), stored.dtype), Scalar(np.int32(n))],
                    (n,), None)
    chk = OutCheck(0, kind, InBuf(want.reshape(-1).view(f"u{dt.itemsize}")),
                   InBuf(bound_f32(np.asarray(bound, np.float64).reshape(-1))))
    r = pool.run(job, check=[chk])
    assert r.status == "ok", r.error
    return r


@pytest.mark.parametrize("kind", CHECK_KINDS)
def test_device_check_gives_the_conservative_rules_verdict_and_is_sound(pool, rng, kind):
    dt = ir.dtype(kind)
    n = 777
    want = _values(kind, rng, n)
    got = want.copy()
    # a few elements off by some amount; their bounds just cover them, then one bound just misses
    off = rng.choice(n, 20, replace=False)
    moved = _values(kind, rng, n)
    got[off] = moved[off]
    g64, w64 = to_compute(got, dt).astype(np.float64), to_compute(want, dt).astype(np.float64)
    bound = np.zeros(n)
    diff = np.abs(g64[off] - w64[off])
    up = diff.astype(np.float32)                # the bounds travel as float32: make them float32 values
    up[up < diff] = np.nextafter(up[up < diff], np.float32(np.inf))
    bound[off] = up
    cases = {"every element within its bound": bound}
    if dt.is_float:
        special = got.copy()
        nan, inf = from_compute(np.array([np.nan, np.inf]), dt)
        special[:2] = nan          # NaN where the oracle has NaN: equal
        want_special = want.copy()
        want_special[:2] = nan
        special[2] = want_special[2] = inf
    differs = np.flatnonzero(g64 != w64)
    if differs.size:
        tight = bound.copy()
        tight[differs[0]] = np.float32(abs(g64[differs[0]] - w64[differs[0]]) / 2)
        cases["one element past its bound"] = tight
    for what, b in cases.items():
        pairs = [(got, want)] + ([(special, want_special)] if dt.is_float else [])
        for g, w in pairs:
            r = _device_verdict(pool, kind, g, w, b)
            gc = to_compute(g, dt)
            wc = to_compute(w, dt)
            expect = bool(_conservative_pass(gc.astype(wc.dtype) if dt.is_float else gc.astype(np.int64),
                                             wc if dt.is_float else wc.astype(np.int64), b).all())
            assert r.checked == [expect], (kind, what)
            if expect:      # passed on the device: not read back, and the parent's rule agrees
                assert r.outputs[0] is None
                assert ir.compare_bounded(g, w, dt, ir.Bound(b, np.zeros(n, bool))) is None, (kind, what)
            else:
                np.testing.assert_array_equal(r.outputs[0], g)


def test_one_bound_for_all_elements_and_a_nan_where_a_number_was_expected(pool, rng):
    want = rng.standard_normal(500).astype(np.float32)
    got = (want + np.float32(1e-3)).astype(np.float32)
    r = _device_verdict(pool, "f32", got, want, [2e-3])
    assert r.checked == [True] and r.outputs[0] is None
    r = _device_verdict(pool, "f32", got, want, [1e-4])
    assert r.checked == [False]
    got[123] = np.nan
    r = _device_verdict(pool, "f32", got, want, [1.0])
    assert r.checked == [False] and np.isnan(r.outputs[0][123])


def test_bounds_as_float32_are_never_looser(rng):
    b = np.concatenate([rng.random(1000) * 10.0 ** rng.integers(-40, 40, 1000), [0.0, np.inf, 1e300, 1e-300]])
    b32 = bound_f32(b)
    assert b32.dtype == np.float32
    assert (b32.astype(np.float64) <= b).all()
    # and as tight as a float32 can be: the next float32 up is past the float64
    finite = np.isfinite(b32) & (b32 < np.finfo(np.float32).max)
    assert (np.nextafter(b32[finite], np.float32(np.inf)).astype(np.float64) > b[finite]).all()
