"""The reproducer's standalone check (numpy only, no package) holds outputs to the compiler's own error bounds,
recorded per element: bit-exact where the computation is exact, the derived bound elsewhere, an overflow
accepted only where it is right either way; a reproducer written before bounds were recorded keeps its flat
tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from pytest_mlirtrace._internal import ir
from pytest_mlirtrace._internal.repro.payload import _expected_entry
from pytest_mlirtrace._internal.repro.reproducer_template import _unpack_array, compare


def _entries(module: ir.Module, seed: int, sample: bool = False, with_bounds: bool = True):
    inputs = ir.random_inputs(module, seed)
    expected, env = ir.evaluate(module, inputs, keep_all=True)
    bounds = ir.error_bounds(module, env)
    out = []
    for i, (e, shp, b) in enumerate(zip(expected, module.output_shapes(), bounds, strict=True)):
        rtol, atol = ir.tolerance(shp.dtype)
        out.append(_expected_entry(i, np.asarray(e), shp, rtol, atol, sample, b if with_bounds else None))
    return expected, out


def _one_ulp_up(x: np.ndarray, i: int) -> np.ndarray:
    y = np.array(x, copy=True)
    flat = y.reshape(-1)
    flat[i] = np.nextafter(flat[i], np.asarray(np.inf, dtype=flat.dtype))
    return y


def _convert_module() -> ir.Module:
    m = ir.Module()
    x = m.add_param("x", "f32", [4, 37])
    m.add_return(m.add("convert", x, target_type=ir.dtype("f16").type_id))
    return m


@pytest.mark.parametrize("seed", [3, 11])
def test_an_exact_op_is_checked_bit_exactly_standalone(seed):
    (want,), (entry,) = _entries(_convert_module(), seed)
    assert compare(want, entry) == ""
    bad = _one_ulp_up(want, 17)
    msg = compare(bad, entry)
    assert "1/148 elements differ" in msg and "allowed 0 there" in msg and "worst at [0, 17]" in msg
    # the flat f16 tolerance (rtol 1e-2) of a reproducer without bounds lets the same 1-ulp error through
    (_,), (flat_entry,) = _entries(_convert_module(), seed, with_bounds=False)
    assert "bound" not in flat_entry and compare(bad, flat_entry) == ""


def test_an_inexact_chain_gets_its_derived_bound_and_a_larger_error_fails():
    m = ir.Module()
    a, b = m.add_param("a", "f16", [8, 64]), m.add_param("b", "f16", [64, 5])
    m.add_return(m.add("dot", a, b))
    (want,), (entry,) = _entries(m, 7)
    bound = _unpack_array(entry["bound"])
    assert (bound > 0).all() and np.isfinite(bound).all()
    assert compare(want, entry) == ""
    assert compare(_one_ulp_up(want, 3), entry) == ""       # a dot's rounding may differ by an ulp
    far = np.array(want, copy=True)
    far.reshape(-1)[3] = np.float16(float(far.reshape(-1)[3]) + 64 * float(bound.max()) + 1.0)
    assert "1/40 elements differ" in compare(far, entry)


def test_an_overflow_is_accepted_only_where_it_is_right_either_way():
    m = ir.Module()
    x = m.add_param("x", "f16", [64])
    big = m.add("multibroadcast", m.add_literal(65000.0, "f16", lens=(1,)), out_lens=[64])
    m.add_return(m.add("mul", x, big))
    (want,), (entry,) = _entries(m, 2)
    w = np.asarray(want)
    assert compare(w, entry) == ""
    # a finite product set to inf: not an overflow the bound allows
    finite = int(np.flatnonzero(np.isfinite(w.astype(np.float32)) & (np.abs(w.astype(np.float32)) < 30000))[0])
    bad = np.array(w, copy=True)
    bad[finite] = np.float16(np.inf) * np.sign(np.float32(w[finite]))
    assert "elements differ" in compare(bad, entry)


def test_sampled_outputs_carry_their_bounds_at_the_same_positions():
    m = ir.Module()
    x = m.add_param("x", "f32", [300, 300])
    m.add_return(m.add("convert", x, target_type=ir.dtype("f16").type_id))
    (want,), (entry,) = _entries(m, 5, sample=True)
    assert entry["positions"] is not None and entry["bound"]["shape"] == entry["values"]["shape"]
    assert compare(want, entry) == ""
    pos = _unpack_array(entry["positions"])
    assert "sampled elements differ" in compare(_one_ulp_up(want, int(pos[10])), entry)
