"""Hypothesis over the tensor-core code generators (``codegen/mma.py``, ``codegen/attention_mma.py``) on any
OpenCL device: random f16/bf16 gemm, convolution and attention modules from ``strategies.fused_graphs`` (views,
epilogues, masks, odd sizes), each with a tensor-core solution drawn from its space, lowered for the emulated
instructions (``mma="emulated"``: everything but the PTX functions is the GPU's text) and run by the engine's
pipeline (isolated workers), which checks it against the numpy oracle on fresh random inputs.  Slow: the emulated
instructions meet in local memory, a barrier per fragment exchange.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.codegen.mma import EMULATED
from pytest_mlirtrace._internal.engine import MemoryDatabase, Pipeline
from pytest_mlirtrace._internal.strategies import fused_graphs
from pytest_mlirtrace._internal.vocab import Status

from . import cg_ocl as ocl

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("cl_pool")]


def emulated_limits():
    dev = ocl.limits()
    return dev if dev.mma else dataclasses.replace(dev, mma=EMULATED)


@st.composite
def tensor_core_cases(draw, kinds):
    """(module, tensor-core solution, seed): a module of ``kinds`` whose problem has tensor-core solutions."""
    lim = emulated_limits()
    module = draw(fused_graphs(kinds=kinds, dtypes=("f16", "bf16"), max_dim=48, max_elements=1 << 12,
                               quant=False))
    try:
        problem = codegen.problem_of(module)
    except codegen.NotSupported:
        problem = None
    sols = [s for s in codegen.space(problem, lim) if s.matrix_core] if problem is not None else []
    if not sols:
        # tensor cores do not apply (f32 accumulation chain, a refused layout): another module
        from hypothesis import reject
        reject()
    sol = draw(st.sampled_from(sols))
    return module, sol, draw(st.integers(0, 2 ** 16))


# the same draws on every run (as the other Hypothesis tests of this suite: CI must not depend on luck)
SETTINGS = settings(max_examples=20, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _check(module, sol, seed):
    """The engine's own run and check (the oracle's error bounds of the computation, as every run has them)
    on the test device seen as one with the emulated instructions."""
    try:
        codegen.lower(module, sol, emulated_limits())
    except codegen.NotApplicable:
        return          # refused at lowering with a reason (an operand layout the tiles cannot stage)
    res = Pipeline(emulated_limits(), database=MemoryDatabase(), inject="").run(module, solution=str(sol), seed=seed)
    assert res.status == Status.OK, f"{codegen.problem_of(module).key()} solution {sol}: {res.detail}\n{module}"


@SETTINGS
@given(tensor_core_cases(("gemm", "conv")))
def test_tensor_core_gemms_match_the_oracle(case):
    _check(*case)


@SETTINGS
@given(tensor_core_cases(("attention",)))
def test_tensor_core_attention_matches_the_oracle(case):
    _check(*case)
