"""fused_graphs: valid modules of every kind, text and MLIR round trips, well-conditioned numerics, shrinking."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_mlirtrace._internal import codegen, ir, mlir
from pytest_mlirtrace._internal.strategies import ALL_KINDS, fused_graphs, graph_kind

FAST = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@FAST
@given(fused_graphs())
def test_generated_modules_verify_and_stay_in_bounds(m):
    m.verify()
    assert m.returns() and m.ops()
    out = m.get(m.returns()[0])
    assert out.shape.dtype.name != "bool"
    for ins in m.instructions:
        if ins.shape is not None:
            assert ins.shape.rank <= 4 + 1
    for p in m.params():
        assert all(n >= 1 for n in p.shape.lens), str(m)
        if "reshape" not in m.ops():     # a reshape after the anchor merges dims: its inputs' dims are products
            assert all(n <= 64 + 4 for n in p.shape.lens), str(m)      # slices add up to 4 to a dim
    # every instruction is used (nothing dead): the codegen and the oracle see the same program
    used = {i for ins in m.instructions for i in ins.inputs}
    for ins in m.instructions[:-1]:
        assert ins.name in used or ins.op == "@return", f"{ins.name} is dead in\n{m}"


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_each_kind_is_drawn_and_classified(kind):
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(fused_graphs(kinds=(kind,), max_dim=8))
    def check(m):
        assert graph_kind(m) == kind, str(m)
        if kind == "gemm":
            assert any(o in ("dot", "quant_dot") for o in m.ops())
        if kind == "conv":
            assert sum(o in ir.CONV_OPS for o in m.ops()) == 1
        if kind == "attention":         # attention, or (no softmax) a gemm-gemm
            assert m.ops().count("dot") == 2

    check()


@FAST
@given(fused_graphs(max_dim=8, max_elements=64))
def test_max_elements_holds_for_every_parameter(m):
    for p in m.params():
        # a slice adds at most 4 to one dim of a parameter and at most 3 to a second (a dim of 1: x5, x4)
        assert p.shape.elements <= 64 * 5 * 4


@FAST
@given(fused_graphs(kinds=("pointwise", "reduce"), ops=("add", "relu")))
def test_ops_restricts_the_pointwise_ops(m):
    # abs and tanh are the documented numeric guards (a positive divisor, a squashed f16 sum)
    allowed = {"add", "relu"} | set(ir.VIEW_OPS) | set(ir.REDUCE_OPS) | {"abs", "tanh"}
    assert set(m.ops()) <= allowed, m.ops()


def test_bad_arguments_are_refused():
    """Hypothesis' convention: InvalidArgument (not ValueError), raised at call time, naming the argument."""
    with pytest.raises(InvalidArgument, match="kinds=.*accepted: pointwise"):
        fused_graphs(kinds=("convolution",))
    with pytest.raises(InvalidArgument, match="max_rank=1"):
        fused_graphs(kinds=("conv",), max_rank=1)
    with pytest.raises(InvalidArgument, match="ops=.*accepted:"):
        fused_graphs(ops=("frobnicate",))
    with pytest.raises(InvalidArgument, match="max_rank=1"):
        fused_graphs(kinds=("gemm",), max_rank=1)


@FAST
@given(fused_graphs())
def test_migraphx_text_round_trip(m):
    text = ir.print_module(m)
    again = ir.parse_module(text)
    assert ir.print_module(again) == text


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(fused_graphs())
def test_mlir_round_trip(m):
    text = mlir.emit_mlir(m)
    back = mlir.parse_mlir_module(text)
    # the func's name is the module's (MLIR writes squeeze / unsqueeze as reshape: a parsed module names itself
    # after reshape); the rest must come back as it was printed
    assert mlir.emit_mlir(back, name=m.symbol_name()) == text


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(fused_graphs(), st.integers(0, 2 ** 16))
def test_oracle_outputs_are_finite(m, seed):
    """The conditioning rules keep log/sqrt/div/exp/pow... away from NaN/inf on the oracle's inputs."""
    for out in ir.evaluate(m, ir.random_inputs(m, seed)):
        x = np.asarray(out).astype(np.float64)
        assert np.isfinite(x).all(), str(m)


# ---- shrinking ------------------------------------------------------------------
SHRINK = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  phases=[Phase.generate, Phase.shrink])
COMPUTE_HELPERS = {"abs", "add"}     # the positivity guard add(abs(x), 1) of log/sqrt/rsqrt/recip/div/pow
VIEWS = set(ir.VIEW_OPS)


def minimal_with(op: str, **kw) -> ir.Module:
    return find(fused_graphs(**kw), lambda m: op in m.ops(), settings=SHRINK, random=random.Random(0))


def compute_ops(m: ir.Module) -> list[str]:
    return [o for o in m.ops() if o not in VIEWS]


@pytest.mark.parametrize("op", ["add", "mul", "relu", "exp", "floor", "softmax", "reduce_max", "dot", "quant_dot",
                                "sub"])
def test_a_failure_caused_by_one_op_shrinks_to_that_op(op):
    m = minimal_with(op)
    assert compute_ops(m) == [op], f"minimal example for {op}:\n{m}"
    assert set(m.ops()) <= {op} | VIEWS
    # and the dims went small: every parameter has at most 2 elements per dim
    assert all(n <= 2 for p in m.params() for n in p.shape.lens), str(m)


@pytest.mark.parametrize("op", ["log", "div"])
def test_a_guarded_op_shrinks_to_the_op_and_its_guard(op):
    m = minimal_with(op)
    ops = compute_ops(m)
    assert ops[-1] == op and set(ops) <= {op} | COMPUTE_HELPERS and len(ops) <= 3, f"{op}:\n{m}"


@pytest.mark.slow
@pytest.mark.parametrize("op", ["sub", "max", "min", "neg", "abs", "tanh", "sigmoid", "erf", "ceil", "where",
                                "convert", "reduce_sum", "reduce_mean", "reduce_min"])
def test_more_ops_shrink_to_themselves(op):
    m = minimal_with(op)
    ops = compute_ops(m)
    helpers = {"where": {"greater", "less", "equal"}}.get(op, set())
    # local minima the shrinker may stop at: the op in a gemm's epilogue, with a compare or convert of the
    # integer literals the graphs now draw; what holds is that it shrinks to a few ops around the op
    # (where: also the causal mask of an attention graph, dot -> greater/where -> softmax -> dot)
    assert op in ops and (set(ops) - {op} <= helpers or len(ops) <= 4
                          or (op == "where" and set(ops) - {op} <= helpers | {"dot", "softmax"})), f"{op}:\n{m}"


@pytest.mark.parametrize("view", ["broadcast", "slice"])
def test_a_view_shrinks_to_the_view_and_one_op(view):
    """The view and one op -- or, for a broadcast, a convolution's bias (the broadcast [channels] parameter and its
    add: the form a broadcast takes in a conv's epilogue, where the conv's rarer epilogue ops are drawn as bias adds;
    from there no single shrink step reaches a pointwise kind that still has the broadcast)."""
    m = minimal_with(view)
    ops = compute_ops(m)
    assert view in m.ops(), str(m)
    assert len(ops) == 1 or (view == "broadcast" and ops == ["convolution", "add"]), str(m)
    assert all(n <= 2 for p in m.params() for n in p.shape.lens), str(m)


def test_failing_on_a_dim_shrinks_the_dims():
    """A property that needs a gemm with k >= 5 shrinks to k == 5 and m, n == 1."""
    def needs(m):
        return any(i.op == "dot" and m.get(i.inputs[0]).shape.lens[-1] >= 5 for i in m.instructions)

    m = find(fused_graphs(kinds=("gemm",)), needs, settings=SHRINK, random=random.Random(0))
    p = codegen.problem_of(m)
    assert (p.m, p.n, p.k) == (1, 1, 5), str(m)
    assert compute_ops(m) == ["dot"]
