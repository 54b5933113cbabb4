"""Any applicable solution computes what the numpy oracle computes (tuning Pipeline on PoCL)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.strategies import fused_cases

S = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(pipeline, case):
    module, sol, seed = case
    codegen.check_applicable(codegen.problem_of(module), sol, pipeline.device)
    r = pipeline.run(module, solution=sol, seed=seed)
    assert r.ok, f"{r.status}: {r.detail}\nsolution {sol}, seed {seed}\n{module}"


def test_pipeline_has_no_fault_injected(pipeline):
    assert not pipeline.inject


@settings(max_examples=20, **S)
@given(case=fused_cases(max_dim=12, max_elements=1024))
def test_any_applicable_solution_matches_the_oracle(pipeline, case):
    _check(pipeline, case)


@settings(max_examples=15, **S)
@given(case=fused_cases(kinds=("gemm",), max_dim=12, max_elements=1024))
def test_any_gemm_solution_matches_the_oracle(pipeline, case):
    _check(pipeline, case)


@settings(max_examples=15, **S)
@given(case=fused_cases(kinds=("conv",), max_dim=12, max_elements=1024))
def test_any_conv_solution_matches_the_oracle(pipeline, case):
    _check(pipeline, case)


@pytest.mark.slow
@settings(max_examples=150, **S)
@given(case=fused_cases(max_dim=32, max_elements=4096))
def test_many_solutions_match_the_oracle(pipeline, case):
    _check(pipeline, case)
