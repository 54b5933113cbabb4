"""solutions / fused_cases: every drawn solution is applicable; edge cases are in the draw."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.strategies import edge_solutions, fused_cases, fused_graphs, solution_list, solutions

S = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
LIMITS = [None, codegen.DeviceLimits.pocl(), codegen.DeviceLimits.nvidia_gpu()]


@S
@given(st.data(), fused_graphs(kinds=("gemm", "conv", "pointwise", "reduce", "softmax"), max_dim=32),
       st.sampled_from(LIMITS))
def test_drawn_solutions_are_applicable(data, module, limits):
    problem = codegen.problem_of(module)
    sol = data.draw(solutions(problem, limits))
    codegen.check_applicable(problem, sol, limits)
    assert sol.kind == problem.kind


@S
@given(fused_graphs(kinds=("gemm", "conv", "pointwise", "reduce", "softmax"), max_dim=32), st.sampled_from(LIMITS))
def test_solution_list_is_default_then_edges_then_space(module, limits):
    problem = codegen.problem_of(module)
    sols = solution_list(problem, limits)
    assert sols and all(codegen.is_applicable(problem, s, limits) for s in sols)
    assert len({s.values for s in sols}) == len(sols)
    assert sols[0] == codegen.default_solution(problem, limits)
    space = {s.values for s in codegen.space(problem, limits)}
    assert space <= {s.values for s in sols}
    for e in edge_solutions(problem, limits):
        assert e in sols


def test_gemm_edge_cases():
    p = codegen.Problem("gemm", "f32", "f32", m=3, n=5, k=7)
    edges = edge_solutions(p)
    f = [s.fields for s in edges]
    assert any(x["MPerBlock"] == 1 and x["NPerBlock"] == 1 for x in f)            # smallest tile
    assert any(x["MPerBlock"] > p.m and x["NPerBlock"] > p.n for x in f)          # tiles bigger than the problem
    assert any(x["KPerBlock"] > p.k for x in f)                                   # K step longer than k
    assert any(x["LocalTiles"] == 1 and s.work_group_size() > 1 for x, s in zip(f, edges, strict=False))
    assert all(codegen.is_applicable(p, s) for s in edges)
    # on a GPU-sized device the 1024-thread group limit still holds
    for s in edge_solutions(p, codegen.DeviceLimits.nvidia_gpu()):
        assert s.work_group_size() <= 1024


def test_reduce_and_pointwise_edge_cases():
    r = codegen.Problem("reduce", "f32", "f32", elements=3, outer=3, reduce_len=5, op="reduce_sum")
    f = [s.fields for s in edge_solutions(r)]
    assert any(x["ThreadsPerGroup"] > r.reduce_len for x in f)
    assert any(x["GroupsPerBlock"] > r.outer for x in f)
    p = codegen.Problem("pointwise", "f32", "f32", elements=12, outer=3, reduce_len=4)
    f = [s.fields for s in edge_solutions(p)]
    assert any(x["BlockSize"] == 1 for x in f) and any(x["BlockSize"] >= 256 for x in f)


@S
@given(fused_cases(max_dim=16))
def test_fused_cases_are_triples_of_supported_modules(case):
    module, sol, seed = case
    problem = codegen.problem_of(module)
    codegen.check_applicable(problem, sol)
    assert 0 <= seed < 2 ** 16


@S
@given(fused_cases(max_dim=16, max_solutions=4))
def test_fused_cases_with_several_solutions(case):
    module, sols, seed = case
    assert 1 <= len(sols) <= 4 and len({s.values for s in sols}) == len(sols)
    problem = codegen.problem_of(module)
    for s in sols:
        codegen.check_applicable(problem, s)


def test_no_applicable_solution_is_nothing():
    p = codegen.Problem("gemm", "f32", "f32", m=3, n=5, k=7)
    tiny = codegen.DeviceLimits(max_work_group_size=0)
    assert solution_list(p, tiny) == []
    assert solutions(p, tiny).is_empty
