"""fused_graphs' convolutions: valid shapes, every feature drawn (spatial ranks, groups, strides, paddings,
dilations, layouts, epilogues, dtypes), shrinking toward a 1x1 conv on a 1x1 image, and their solutions."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal import codegen, ir, mlir
from pytest_mlirtrace._internal.ir.ops import conv_params
from pytest_mlirtrace._internal.strategies import fused_cases, fused_graphs, graph_kind, solution_list, solutions
from pytest_mlirtrace._internal.strategies.graph_builder import Plan
from pytest_mlirtrace._internal.strategies.graphs import build_module

S = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
SHRINK = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  phases=[Phase.generate, Phase.shrink])
CONVS = fused_graphs(kinds=("conv",), max_dim=16, max_elements=4096)
VIEWS = set(ir.VIEW_OPS)


def the_conv(m: ir.Module):
    return next(i for i in m.instructions if i.op in ir.CONV_OPS)


def features(m: ir.Module) -> set[str]:
    """What a conv module exercises, in the words of issue 13."""
    c = the_conv(m)
    x, w = m.get(c.inputs[0]), m.get(c.inputs[1])
    sp = x.shape.rank - 2
    begin, end, stride, dilation, group = conv_params(c, sp)
    out = {f"{sp}d", c.op, x.shape.dtype.name}
    if group > 1:
        out.add("depthwise" if w.shape.lens[1] == 1 and group == x.shape.lens[1] else "grouped")
    if any(s > 1 for s in stride):
        out.add("strided")
    if any(d > 1 for d in dilation):
        out.add("dilated")
    pad = c.attrs.get("padding", [])
    if any(begin + end):
        out.add("pad_symmetric" if len(pad) == sp else ("pad_asymmetric" if begin != end else "pad_begin_end"))
    for v in (x, w):
        if v.op == "transpose":
            out.add("nhwc_transpose")
        elif v.op == "@param" and not v.shape.standard:
            out.add("nhwc_strides")
    ops = m.ops()
    after = [i for i in m.instructions[m.instructions.index(c) + 1:] if not i.op.startswith("@")]
    names = {i.op for i in after}
    if any(i.op == "broadcast" and m.get(i.inputs[0]).op == "@param" and m.get(i.inputs[0]).shape.rank == 1
           for i in after):
        out.add("bias")
    for op in ("relu", "mul", "sigmoid"):
        if op in names:
            out.add(op)
    if "max" in names and "min" in names:
        out.add("clip")
    # a second input of the output's shape (laid out as the output) combined with the result
    if any(i.op in ir.BINARY_OPS + ("where",) and any(m.get(a).op == "@param" and m.get(a).shape.lens == i.shape.lens
                                                      for a in i.inputs) for i in after):
        out.add("residual")
    if any(i.op == "transpose" for i in after):
        out.add("nhwc_out")
    if "convert" in ops:
        out.add("convert")
    return out


@S
@given(CONVS)
def test_conv_modules_are_valid_and_lower(m):
    m.verify()
    assert graph_kind(m) == "conv"
    c = the_conv(m)
    sp = m.get(c.inputs[0]).shape.rank - 2
    assert 1 <= sp <= 3
    assert all(n >= 1 for n in c.shape.lens[2:])           # output spatial >= 1
    assert c.attrs["padding_mode"] == 0 and len(c.attrs["stride"]) == len(c.attrs["dilation"]) == sp
    assert len(c.attrs["padding"]) in (sp, 2 * sp)
    if c.op == "quant_convolution":
        assert m.get(c.inputs[0]).shape.dtype.name == "i8" and c.shape.dtype.name == "i32"
    # small: the fuzz does ~10 cases/s (an image may grow past the limit only to fit its dilated kernel)
    for ins in m.instructions:
        if ins.shape is not None:
            assert ins.shape.elements <= 4096 * 2, str(m)
    # nothing dead
    used = {i for ins in m.instructions for i in ins.inputs}
    assert all(ins.name in used for ins in m.instructions[:-1]), str(m)
    p = codegen.problem_of(m)
    assert p.kind == "gemm" and p.key_kind == "conv" and p.op == c.op and p.conv
    assert p.g == c.attrs["group"]


@S
@given(CONVS)
def test_conv_modules_round_trip_as_text_and_mlir(m):
    text = ir.print_module(m)
    assert ir.print_module(ir.parse_module(text)) == text
    mt = mlir.emit_mlir(m)
    # (MLIR writes a squeeze / unsqueeze after the convolution as a reshape: a parsed module names itself after it)
    assert mlir.emit_mlir(mlir.parse_mlir_module(mt), name=m.symbol_name()) == mt


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(CONVS, st.integers(0, 2 ** 16))
def test_conv_oracle_outputs_are_finite(m, seed):
    for out in ir.evaluate(m, ir.random_inputs(m, seed)):
        assert np.isfinite(np.asarray(out).astype(np.float64)).all(), str(m)


ALL_FEATURES = {"1d", "2d", "3d", "convolution", "quant_convolution", "f32", "f16", "i8", "grouped", "depthwise",
                "strided", "dilated", "pad_symmetric", "pad_begin_end", "pad_asymmetric", "nhwc_strides",
                "nhwc_transpose", "nhwc_out", "bias", "relu", "mul", "clip", "sigmoid", "residual"}


def test_every_feature_is_drawn():
    seen: set[str] = set()
    counts: dict[int, int] = {}

    @settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None,
              derandomize=True)
    @given(CONVS)
    def draw(m):
        f = features(m)
        seen.update(f)
        sp = next(int(x[0]) for x in f if x in ("1d", "2d", "3d"))
        counts[sp] = counts.get(sp, 0) + 1

    draw()
    assert ALL_FEATURES <= seen, ALL_FEATURES - seen
    # 2-D mostly, some 1-D and 3-D
    assert counts[2] > counts[1] and counts[2] > counts[3], counts


def _is_minimal_conv(m: ir.Module) -> bool:
    c = the_conv(m)
    x, w = m.get(c.inputs[0]), m.get(c.inputs[1])
    return (m.ops() == ["convolution"] and list(x.shape.lens) == [1, 1, 1, 1] and list(w.shape.lens) == [1, 1, 1, 1]
            and x.shape.standard and w.shape.standard and c.attrs["group"] == 1
            and set(c.attrs["padding"]) == {0} and set(c.attrs["stride"]) == {1} and set(c.attrs["dilation"]) == {1}
            and x.shape.dtype.name == "f32")


def test_the_minimal_conv_is_1x1_on_a_1x1_image():
    m = find(CONVS, lambda _m: True, settings=SHRINK, random=random.Random(0))
    assert _is_minimal_conv(m), str(m)
    # and so is a failure that needs any convolution, from the strategy of every kind
    m = find(fused_graphs(), lambda m: "convolution" in m.ops(), settings=SHRINK, random=random.Random(0))
    assert _is_minimal_conv(m), str(m)


def test_the_plan_of_zeros_is_the_minimal_conv():
    """The simplest value of every draw means the simplest conv (what Hypothesis shrinks toward)."""
    from pytest_mlirtrace._internal.strategies.conv_graphs import CONV_FIELDS
    p = Plan("conv", "f32", 1, (1,) * 8, ((0, 0, 0, 0),) * 4, 0, (False,) * 4, (), (),
             tuple(lo for _, lo, _ in CONV_FIELDS))
    assert _is_minimal_conv(build_module(p))
    # a plan built by hand without conv draws (older callers) still makes a valid conv
    m = build_module(Plan("conv", "f16", 3, (5, 7, 3, 9, 2, 4, 6, 8), ((1, 2, 3, 4),) * 4, 3, (True,) * 4, (), ()))
    m.verify()
    assert graph_kind(m) == "conv"


def _minimal_with(pred, strategy=CONVS) -> ir.Module:
    return find(strategy, pred, settings=SHRINK, random=random.Random(0))


@pytest.mark.parametrize("feature", ["grouped", "depthwise", "strided", "dilated", "pad_asymmetric", "nhwc_strides",
                                     "nhwc_transpose", "bias", "relu", "clip", "residual", "quant_convolution",
                                     "1d", "3d"])
def test_a_failure_needing_one_feature_shrinks_to_that_feature(feature):
    # (float only but for quant_convolution: an epilogue op of an i8 conv is drawn as another step than the same
    # op of a float one -- the integer ops are fewer --, a local minimum the shrinker may stop at, as for quant_dot)
    strategy = CONVS if feature == "quant_convolution" else \
        fused_graphs(kinds=("conv",), max_dim=16, max_elements=4096, quant=False)
    m = _minimal_with(lambda m: feature in features(m), strategy)
    f = features(m)
    # the feature, and what it implies, on the smallest shapes
    implied = {"nhwc_transpose": {"nhwc_out"}, "quant_convolution": {"i8"}, "depthwise": set(),
               "pad_asymmetric": set()}.get(feature, set())
    base = {"2d", "convolution", "f32"}
    if feature in ("1d", "3d"):
        base = {"convolution", "f32"}
    if feature == "quant_convolution":
        base = {"2d"}
    assert f - base - implied == {feature}, (f, str(m))
    # (grouped, not depthwise, needs 2 channels per group: 4 input channels)
    for p in m.params():
        assert all(n <= 4 for n in p.shape.lens), str(m)


def test_a_grouped_failure_shrinks_to_two_groups_of_one_channel():
    m = _minimal_with(lambda m: the_conv(m).attrs["group"] > 1)
    c = the_conv(m)
    assert c.attrs["group"] == 2 and m.ops() == ["convolution"], str(m)
    assert list(m.get(c.inputs[0]).shape.lens) == [1, 2, 1, 1] and list(m.get(c.inputs[1]).shape.lens) == [2, 1, 1, 1]


def test_a_padding_edge_failure_shrinks_to_one_end_pad():
    def reads_past_the_end(m):
        c = the_conv(m)
        x, w = m.get(c.inputs[0]).shape, m.get(c.inputs[1]).shape
        sp = x.rank - 2
        b, _e, s, d, _g = conv_params(c, sp)
        return any((c.shape.lens[2 + i] - 1) * s[i] + (w.lens[2 + i] - 1) * d[i] - b[i] >= x.lens[2 + i]
                   for i in range(sp))

    m = _minimal_with(reads_past_the_end)
    c = the_conv(m)
    assert m.ops() == ["convolution"], str(m)
    assert all(n == 1 for n in m.get(c.inputs[0]).shape.lens) and all(n == 1 for n in m.get(c.inputs[1]).shape.lens)
    assert sum(c.attrs["padding"]) == 1, str(m)


@S
@given(st.data(), CONVS, st.sampled_from([None, codegen.DeviceLimits.pocl(), codegen.DeviceLimits.nvidia_gpu()]))
def test_conv_solutions_are_gemm_solutions_and_applicable(data, m, limits):
    problem = codegen.problem_of(m)
    sols = solution_list(problem, limits)
    assert sols and sols[0] == codegen.default_solution(problem, limits)
    sol = data.draw(solutions(problem, limits))
    assert sol.kind == "gemm"
    codegen.check_applicable(problem, sol, limits)
    codegen.lower(m, sol, limits)          # lowers (no kernel is run here)


@S
@given(fused_cases(kinds=("conv",), max_dim=16, max_elements=4096, max_solutions=4))
def test_fused_cases_draw_convs(case):
    module, sols, seed = case
    assert graph_kind(module) == "conv" and 1 <= len(sols) <= 4
    problem = codegen.problem_of(module)
    for s in sols:
        codegen.check_applicable(problem, s)


def test_conv_epilogue_follows_the_ops_allowed():
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(fused_graphs(kinds=("conv",), ops=("add", "relu"), max_dim=8))
    def check(m):
        c = the_conv(m)
        after = {i.op for i in m.instructions[m.instructions.index(c) + 1:] if not i.op.startswith("@")}
        assert after <= {"add", "relu"} | VIEWS, m.ops()

    check()
