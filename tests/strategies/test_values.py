"""Value profiles and long reductions (issue 20): the main input scaled by literals (large magnitudes for
softmax, exp and reductions; dtype limits and subnormals with ``extreme``), long reductions at low cost, and
the pipeline's bounded oracle check still calling every correct kernel right on them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import InvalidArgument

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.strategies import fused_cases, fused_graphs
from pytest_mlirtrace._internal.strategies.graph_builder import VALUES

S = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _literals(m):
    return [float(np.asarray(i.literal).ravel()[0]) for i in m.instructions if i.op == "@literal"]


def test_unit_values_draw_what_they_drew_before():
    """Without a profile or long reductions no extra draw is made: the same plans (and databases) as before."""
    plans = fused_graphs(kinds=("softmax", "gemm"), max_dim=8, max_elements=512, _plans_only=True)

    @settings(max_examples=40, derandomize=True, **S)
    @given(plans)
    def check(p):
        assert p.scale == 0 and p.long == 0

    check()


def test_wide_values_reach_large_magnitudes_in_softmax_and_reductions():
    seen = []

    @settings(max_examples=120, derandomize=True, **S)
    @given(fused_graphs(kinds=("softmax", "reduce"), max_dim=8, max_elements=512, values="wide"))
    def check(m):
        outs, env = ir.evaluate(m, ir.random_inputs(m, 3), keep_all=True)
        ir.error_bounds(m, env)            # defined for every drawn module
        big = max((float(np.nanmax(np.abs(np.where(np.isfinite(v), v, 0)))) for k, v in env.items()
                   if np.asarray(v).dtype.kind == "f"), default=0.0)
        seen.append(big)

    check()
    assert max(seen) >= 100, max(seen)


def test_extreme_values_reach_the_dtype_limits_and_subnormals():
    """Searched for, not hoped for among one run's derandomized draws (which change with what the process has
    imported: Hypothesis mixes constants of the loaded modules into its draws)."""
    graphs = fused_graphs(kinds=("pointwise", "softmax"), dtypes=("f16",), max_dim=6, max_elements=256,
                          values="extreme")
    search = settings(max_examples=2000, phases=[Phase.generate], **S)
    big = find(graphs, lambda m: any(abs(x) >= 30000 for x in _literals(m)), settings=search)   # half of f16's max
    assert max(abs(x) for x in _literals(big)) <= 65504, str(big)                                # still finite
    find(graphs, lambda m: any(0 < abs(x) < 2.0 ** -14 for x in _literals(m)), settings=search)  # an f16 subnormal


def test_long_reductions_are_long_with_small_other_dims():
    ks, lens = [], []

    @settings(max_examples=150, derandomize=True, **S)
    @given(fused_graphs(kinds=("gemm", "reduce"), max_dim=8, max_elements=2048, long_reductions=True))
    def check(m):
        p = codegen.problem_of(m)
        if p.kind == "gemm":
            ks.append((p.k, p.m, p.n))
        else:
            lens.append(p.reduce_len)

    check()
    assert max(k for k, _, _ in ks) >= 512
    assert all(m <= 4 and n <= 4 for k, m, n in ks if k >= 512)
    assert max(lens) >= 512


def test_unknown_value_profile_is_refused():
    with pytest.raises(InvalidArgument, match="value profile"):
        fused_graphs(values="huge")
    assert VALUES == ("unit", "wide", "extreme")


@settings(max_examples=12, **S)
@given(case=fused_cases(max_dim=10, max_elements=2048, values="extreme", long_reductions=True))
def test_correct_kernels_pass_the_bounded_check_on_extreme_values(pipeline, case):
    module, sol, seed = case
    r = pipeline.run(module, solution=sol, seed=seed)
    assert r.ok, f"{r.status}: {r.detail}\nsolution {sol}, seed {seed}\n{module}"


GRAPHS_WITH_LAYOUTS = dict(kinds=("pointwise", "reduce", "softmax"), max_dim=6, max_elements=256)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["standard", "permuted", "padded", "broadcast"])
def test_parameters_come_with_each_layout(layout):
    """Each parameter layout can be drawn (found by search, whatever the run's random draws; slow: it shrinks)."""
    from hypothesis import find

    from pytest_mlirtrace._internal.fuzz.coverage import layout_of
    m = find(fused_graphs(**GRAPHS_WITH_LAYOUTS), lambda m: any(layout_of(p.shape) == layout for p in m.params()),
             settings=settings(max_examples=5000, database=None, suppress_health_check=list(HealthCheck)))
    assert any(layout_of(p.shape) == layout for p in m.params())


def test_broadcast_parameters_get_inputs_their_layout_can_hold():
    @settings(max_examples=300, derandomize=True, **S)
    @given(fused_graphs(**GRAPHS_WITH_LAYOUTS))
    def check(m):
        inputs = ir.random_inputs(m, 5)
        for p in m.params():     # a broadcast (stride-0) dim holds one value: the inputs say so
            s = p.shape
            for d, (n, st) in enumerate(zip(s.lens, s.strides, strict=False)):
                if st == 0 and n > 1:
                    v = np.asarray(inputs[p.param])
                    assert (np.take(v, [0], axis=d) == v).all()

    check()


@settings(max_examples=10, **S)
@given(case=fused_cases(kinds=("pointwise", "reduce", "softmax", "gemm"), dtypes=("bf16", "f16"), max_dim=8,
                        max_elements=512, values="wide"))
def test_correct_kernels_pass_on_bf16_and_strided_parameters(pipeline, case):
    module, sol, seed = case
    r = pipeline.run(module, solution=sol, seed=seed)
    assert r.ok, f"{r.status}: {r.detail}\nsolution {sol}, seed {seed}\n{module}"


GRAPHS_WITH_VIEWS = dict(kinds=("pointwise", "reduce", "gemm"), max_dim=6, max_elements=256)


def _features(m) -> set:
    seen = set()
    for i in m.instructions:
        if i.op == "slice":
            if len(i.attrs["axes"]) > 1:
                seen.add("slice: two axes")
            if min(i.attrs["axes"]) < 0 and min(i.attrs["starts"]) < 0:
                seen.add("slice: negative")
        elif i.op in ("squeeze", "unsqueeze"):
            seen.add(i.op)
        elif i.op == "convert" and not i.shape.dtype.is_float and m.get(i.inputs[0]).shape.dtype.is_float:
            seen.add("float -> int")
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("feature", ["slice: two axes", "slice: negative", "unsqueeze", "float -> int"])
def test_views_and_converts_beyond_the_plain_ones_are_drawn(feature):
    """Multi-axis and negative slices, squeeze / unsqueeze, float -> int converts (an integer chain after): each
    can be drawn (found by search, whatever the run's random draws; slow: it shrinks)."""
    from hypothesis import find

    m = find(fused_graphs(**GRAPHS_WITH_VIEWS), lambda m: feature in _features(m),
             settings=settings(max_examples=5000, database=None, suppress_health_check=list(HealthCheck)))
    assert feature in _features(m)


def test_error_bounds_are_defined_for_the_drawn_views_and_converts():
    @settings(max_examples=200, derandomize=True, **S)
    @given(fused_graphs(**GRAPHS_WITH_VIEWS))
    def check(m):
        outs, env = ir.evaluate(m, ir.random_inputs(m, 1), keep_all=True)
        ir.error_bounds(m, env)

    check()


def test_a_float_to_int_convert_of_exact_values_is_held_bit_exact():
    m = ir.Module()
    x = m.add_param("x", "f32", [64])
    lit = m.add("multibroadcast", m.add_literal(40.0, "f32", lens=(1,)), out_lens=[64])
    c = m.add("convert", m.add("mul", x, lit), target_type=ir.dtype("i32").type_id)
    m.add_return(m.add("add", c, c))
    m.verify()
    inputs = ir.random_inputs(m, 7)
    (want,), env = ir.evaluate(m, inputs, keep_all=True)
    (b,) = ir.error_bounds(m, env)
    # x * 40 in f32 may be inexact (the mul's rounding / a fused multiply-add): the truncation may flip by one
    assert b.abs.max() <= 4.0
    assert ir.compare_bounded(want, want, "i32", b) is None
    off = want.copy()
    off[3] += 8
    assert ir.compare_bounded(off, want, "i32", b) is not None
