"""No generated input crashes the Python side: lowering succeeds or raises the documented errors."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal import codegen, ir, mlir
from pytest_mlirtrace._internal.strategies import fused_graphs, solution_list

S = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@S
@given(fused_graphs(max_dim=24), st.data())
def test_lowering_succeeds_or_raises_lowering_error(module, data):
    """Every kind, attention included (the code generator refuses it with NotSupported)."""
    try:
        problem = codegen.problem_of(module)
    except codegen.NotSupported:
        return
    sols = solution_list(problem)
    idx = data.draw(st.lists(st.integers(0, len(sols) - 1), min_size=1, max_size=3, unique=True))
    for i in idx:
        try:
            spec = codegen.lower(module, sols[i])
        except codegen.LoweringError:
            continue
        assert spec.source and spec.kernel_name
        arrays = codegen.pack_inputs(spec, ir.random_inputs(module, 0))
        assert len(arrays) == len(spec.inputs)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(fused_graphs(kinds=("attention",), max_dim=8))
def test_attention_graphs_lower_to_attention_kernels(module):
    """Every drawn attention graph (dot -> prologue [-> causal mask] -> softmax -> dot -> epilogue, or without
    the softmax: a gemm-gemm) is a two-gemm problem keyed as rocMLIR keys it, and its default solution lowers;
    a drawn causal mask is recognised as one."""
    p = codegen.problem_of(module)
    assert p.kind == "attention" and p.key_kind in ("attention", "gemm_gemm"), p.key()
    spec = codegen.lower(module)
    if p.key_kind == "attention":
        assert "-seq_len_q" in p.key() and "-head_dim_v" in p.key()
        assert "exp(mx - mn)" in spec.source       # the online softmax's rescale
        causal = any(i.op == "@literal" and i.shape.dtype.name == "i32" and i.literal.size > 1
                     and np.array_equal(i.literal.reshape(-1), np.arange(i.literal.size)) for i in module.instructions)
        if causal and p.m > 1 and p.n > 1:      # (one query, or one key: nothing is masked, not causal)
            assert "-causal true" in p.key() and "n1end = MINI(" in spec.source
    else:
        assert "-gemmO" in p.key() and "softmax" not in module.ops()


@S
@given(fused_graphs(max_dim=16))
def test_mlir_emit_and_parse_never_crash(module):
    text = mlir.emit_mlir(module)
    assert "func.func" in text
    mlir.parse_mlir_module(text).verify()
