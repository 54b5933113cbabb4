"""The graph forms of issue 20 (``fused_graphs(forms=...)``, all drawn by default): views after a dot, a convolution,
a reduction or a softmax; bool converts; multi-output modules; literals other than 1; two reductions in one module;
softmax inputs past exp's overflow; f32 -> f16 converts. Each is drawn, lowers, matches the oracle through the
isolated runtime (the tuning Pipeline on PoCL), shrinks away when a failure does not need it, and shows in the
fuzz's coverage report. Also: bad arguments of the public strategies raise InvalidArgument at call time, and
``fused_graphs()`` draws only what runs."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.fuzz.coverage import Coverage, forms_of
from pytest_mlirtrace._internal.strategies import edge_solutions, fused_cases, fused_graphs, solution_list, solutions
from pytest_mlirtrace._internal.strategies.graph_builder import FORMS

S = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)
SMALL = dict(dtypes=("f32", "f16", "bf16"), max_dim=8, max_elements=512, values="wide", long_reductions=True)

# form -> (the kinds it applies to, does a module have it: forms_of's labels)
FORM_CASES = {
    "view": (("gemm", "conv", "reduce", "softmax"),
             lambda fs: any(" after " in f and not f.startswith("multibroadcast") for f in fs)),
    "bool": (("pointwise", "gemm", "reduce", "softmax", "conv"), lambda fs: any("bool" in f for f in fs)),
    "multi_output": (("pointwise", "gemm", "conv"), lambda fs: "outputs 2" in fs),
    "literal": (("pointwise", "gemm", "reduce", "softmax"), lambda fs: bool({"literal scalar", "literal tensor"} & fs)),
    "reductions": (("reduce",), lambda fs: "reductions 2" in fs),
    "softmax_overflow": (("softmax",), lambda fs: "softmax |x| >= 88" in fs),
    "f16_convert": (("pointwise", "gemm", "reduce", "softmax"), lambda fs: "f32->f16 convert" in fs),
}


def _with(form: str, **kw):
    kinds, has = FORM_CASES[form]
    args = dict(SMALL, kinds=kinds, forms=(form,))
    args.update(kw)
    if form == "literal":       # the value profile's own scale is a literal too: without it, the form's
        args["values"] = "unit"
    return fused_graphs(**args).filter(lambda m: has(forms_of(m)))


def _run(pipeline, module, sol, seed):
    codegen.check_applicable(codegen.problem_of(module), sol, pipeline.device)
    r = pipeline.run(module, solution=sol, seed=seed)
    assert r.ok, f"{r.status}: {r.detail}\nsolution {sol}, seed {seed}\n{module}"


@pytest.mark.parametrize("form", FORMS)
def test_each_form_is_drawn_and_lowers(form):
    @settings(max_examples=12, **S)
    @given(_with(form))
    def check(m):
        p = codegen.problem_of(m)
        spec = codegen.lower(m)
        assert spec.source
        outs, env = ir.evaluate(m, ir.random_inputs(m, 0), keep_all=True)
        assert len(ir.error_bounds(m, env)) == len(m.returns()) == len(outs)
        if form == "multi_output":
            assert p.kind in ("gemm", "pointwise")

    check()


@pytest.mark.parametrize("form", FORMS)
def test_each_form_matches_the_oracle(pipeline, form):
    @settings(max_examples=4, **S)
    @given(_with(form), st.data(), st.integers(0, 2 ** 16 - 1))
    def check(m, data, seed):
        sols = solution_list(codegen.problem_of(m), pipeline.device)
        _run(pipeline, m, sols[data.draw(st.integers(0, len(sols) - 1))], seed)

    check()


@pytest.mark.slow
@settings(max_examples=120, **S)
@given(fused_cases(**SMALL))
def test_many_cases_with_every_form_match_the_oracle(pipeline, case):
    _run(pipeline, *case)


def _module(build):
    m = ir.Module()
    outs = build(m)
    m.add_return(*outs)
    m.verify()
    return m


def _dot(m, batch=(2,), M=4, N=6, K=5):
    return m.add("dot", m.add_param("a", "f32", list(batch) + [M, K]), m.add_param("w", "f32", list(batch) + [K, N]))


HAND = {
    # dot -> reshape (split the columns in heads) -> transpose (heads before rows) -> relu
    "split heads after a dot": lambda m: [m.add("relu", m.add("transpose", m.add("reshape", _dot(m), dims=[2, 4, 2, 3]),
                                                              permutation=[0, 2, 1, 3]))],
    "squeeze after a dot": lambda m: [m.add("neg", m.add("squeeze", _dot(m, batch=(1,)), axes=[0]))],
    # reduce -> squeeze -> add a parameter of the squeezed shape
    "squeeze after a reduction": lambda m: [m.add("add", m.add("squeeze", m.add("reduce_sum", m.add_param(
        "x", "f32", [4, 6]), axes=[1]), axes=[1]), m.add_param("p", "f32", [4]))],
    # the comparison's bool converted to f32 and multiplied in; float -> bool (0.5 -> true) converted back
    "bool converts": lambda m: [m.add("mul", m.add("convert", m.add("greater", m.add_param("p", "f32", [4, 6]),
                                                                    m.add_param("q", "f32", [4, 6])), target_type=2),
                                      m.add("convert", m.add("convert", m.add("relu", m.add_param("x", "f32", [4, 6])),
                                                             target_type=0), target_type=2))],
    # softmax over a middle axis, its last dim split in heads moved before the softmax axis (found by CI's
    # fused_graphs draw: the row index read back through the view did not simplify to the reduction's)
    "split heads after a middle-axis softmax": lambda m: [m.add("transpose", m.add("reshape", m.add(
        "softmax", m.add_param("x", "f32", [2, 3, 4]), axis=1), dims=[2, 3, 2, 2]), permutation=[0, 2, 1, 3])],
    # a gemm returning its result and an intermediate of the epilogue
    "two outputs": lambda m: (lambda r: [m.add("add", r, m.add_param("p", "f32", [2, 4, 6])), r])(
        m.add("relu", _dot(m))),
    # a variance as mean(x^2) - mean(x)^2: two reductions sharing one kernel
    "two reductions": lambda m: (lambda x: (lambda r1: [m.add("sub", m.add("reduce_mean", m.add("mul", x, x),
                                                                           axes=[1]),
                                                              m.add("mul", r1, r1))])(
        m.add("reduce_mean", x, axes=[1])))(m.add_param("x", "f32", [4, 6])),
}


@pytest.mark.parametrize("what", sorted(HAND))
def test_the_forms_by_hand_match_the_oracle(pipeline, what):
    m = _module(HAND[what])
    r = pipeline.run(m, seed=1)
    assert r.ok, f"{r.status}: {r.detail}\n{m}"


def test_what_the_code_generator_refuses_is_not_drawn():
    """A reduction of another's result (layernorm's mean((x - mean(x))^2)) and a slice after a dot are refused
    (NotSupported), so the forms draw neither: two reductions side by side, views the kernels take."""
    def layernorm(m):
        x = m.add_param("x", "f32", [4, 6])
        d = m.add("sub", x, m.add("multibroadcast", m.add("reduce_mean", x, axes=[1]), out_lens=[4, 6]))
        return [m.add("reduce_mean", m.add("mul", d, d), axes=[1])]

    for build in (layernorm, lambda m: [m.add("relu", m.add("slice", _dot(m), axes=[2], starts=[1], ends=[4]))]):
        with pytest.raises(codegen.NotSupported):
            codegen.problem_of(_module(build))


@pytest.mark.parametrize("kind", ["softmax", "reduce"])
def test_every_view_after_a_reduction_is_taken_by_the_code_generator(kind):
    """Every view form after a softmax or a reduction, over every axis of small shapes (sizes 1, 2, 4 in every
    position, ranks 2 to 4): the code generator takes the module (CI drew a split-heads view after a middle-axis
    softmax that it refused)."""
    import itertools

    from pytest_mlirtrace._internal.strategies.graph_builder import Plan
    from pytest_mlirtrace._internal.strategies.graphs import build_module
    refused = []
    for rank in (2, 3, 4):
        for dims in itertools.product((1, 2, 4), repeat=rank):
            for ax in range(rank):
                axes = tuple(i == ax for i in range(rank)) + (False,) * (4 - rank)
                for view in (1, 2, 3, 4):
                    p = Plan(kind=kind, dtype="f32", rank=rank, dims=dims + (1,) * (8 - rank),
                             inputs=((0, 0, 0, 0),) * 4, core=0, axes=axes, prologue=(), epilogue=(), view=view)
                    m = build_module(p)
                    try:
                        codegen.problem_of(m)
                    except codegen.NotSupported as e:
                        refused.append(f"{dims} axis {ax} view {view}: {e}")
    assert not refused, "\n".join(refused[:5])


@settings(max_examples=150, **S)
@given(fused_graphs())
def test_fused_graphs_draws_only_what_runs(m):
    """The defaults (every kind, attention included, every form): each module has a problem and its default
    solution lowers -- nothing drawn is refused unless asked for."""
    codegen.lower(m, codegen.default_solution(codegen.problem_of(m)))


SHRINK = settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck), database=None,
                  phases=[Phase.generate, Phase.shrink])


def test_a_failure_that_needs_no_form_shrinks_them_away():
    m = find(fused_graphs(kinds=("gemm", "reduce", "softmax")), lambda m: "dot" in m.ops() and len(m.params()) >= 2,
             settings=SHRINK, random=random.Random(0))
    assert forms_of(m) == set() and len(m.returns()) == 1, str(m)


@pytest.mark.parametrize("label", ["outputs 2", "reductions 2", "transpose after dot"])
def test_a_failure_that_needs_a_form_keeps_only_it(label):
    kinds = {"outputs 2": ("pointwise", "gemm"), "reductions 2": ("reduce",), "transpose after dot": ("gemm",)}[label]
    m = find(fused_graphs(kinds=kinds), lambda m: label in forms_of(m), settings=SHRINK, random=random.Random(0))
    assert forms_of(m) == {label}, f"{forms_of(m)}\n{m}"
    assert all(n <= 2 for p in m.params() for n in p.shape.lens), str(m)


def test_no_forms_draws_no_form_fields():
    @settings(max_examples=60, **S)
    @given(fused_graphs(forms=(), values="wide", _plans_only=True))
    def check(p):
        assert (p.view, p.boolean, p.multi, p.literal, p.reduce2, p.big, p.half) == (0,) * 7

    check()


def test_coverage_reports_the_forms():
    cov = Coverage()
    for what in sorted(HAND):
        m = _module(HAND[what])
        cov.add(m, codegen.problem_of(m))
    assert cov.forms["reshape after dot"] == 1 and cov.forms["squeeze after dot"] == 1
    assert cov.forms["squeeze after reduce"] == 1 and cov.forms["outputs 2"] == 1 and cov.forms["reductions 2"] == 1
    assert cov.forms["convert bool->f32"] == 1 and cov.forms["convert f32->bool"] == 1
    text = "\n".join(cov.lines())
    assert "forms: " in text and "outputs 2 1" in text
    assert cov.to_dict()["forms"]["reductions 2"] == 1


def test_bad_strategy_arguments_raise_invalid_argument_at_call_time():
    problem = codegen.problem_of(_module(lambda m: [_dot(m)]))
    bad = [
        (lambda: fused_graphs(kinds=()), "kinds="),
        (lambda: fused_graphs(values="huge"), "values='huge'.*accepted: unit, wide, extreme"),
        (lambda: fused_graphs(max_dim=0), "max_dim=0"),
        (lambda: fused_graphs(max_elements=-1), "max_elements=-1"),
        (lambda: fused_graphs(max_epilogue=-1), "max_epilogue=-1"),
        (lambda: fused_graphs(dtypes=("f17",)), "dtypes="),
        (lambda: fused_graphs(forms=("nope",)), "forms=.*accepted: view, bool"),
        (lambda: fused_graphs(kind_weights={"gemm": -1}), "kind_weights="),
        (lambda: fused_graphs(views="yes"), "views='yes'"),
        (lambda: fused_cases(max_solutions=0), "max_solutions=0"),
        (lambda: fused_cases(kinds=("nope",)), "kinds="),
        (lambda: fused_cases(odd_solutions=None), "odd_solutions=None"),
        (lambda: solutions("gemm"), "problem='gemm'"),
        (lambda: solutions(problem, limits=3), "limits=3"),
        (lambda: solution_list(None), "problem=None"),
        (lambda: solution_list(problem, edge_cases="no"), "edge_cases='no'"),
        (lambda: edge_solutions(3), "problem=3"),
    ]
    for call, match in bad:
        with pytest.raises(InvalidArgument, match=match):
            call()                                  # raised here, before anything is drawn
    assert not issubclass(InvalidArgument, ValueError)


def test_bf16_literals_hold_their_values(pipeline):
    """A bf16 literal holds bits (the IR's convention, as parsed MLIR has them): the graphs' literals of -1, 3 and
    the guard's 1 in bf16 mean those values to the oracle and the kernel alike (they were read as bits: NaN, ~0)."""
    from pytest_mlirtrace._internal.strategies.graph_builder import GraphBuilder, Val

    b = GraphBuilder(ops=("add", "max"), max_rank=2, max_elements=64)
    x = b.input("bf16", (4,))
    for c in (-1.0, 3.0, 1.0):
        x = b.binary("max", x, Val(b.literal(c, "bf16", (4,)), "bf16", (4,), mag=abs(c)))
    m = b.finish(x)
    out = ir.evaluate(m, ir.random_inputs(m, 0))[0]
    assert (ir.dtypes.bf16_to_f32(out) == 3.0).all()
    r = pipeline.run(m, seed=0)
    assert r.ok, f"{r.status}: {r.detail}\n{m}"
