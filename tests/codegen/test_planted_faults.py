"""The value, accumulator, rounding, perf-config and parser faults change only where their bug lives (no
kernel runs here; that each is found, and its reproducer fails with it only: tests/fuzz/test_fuzz_faults.py)."""
from __future__ import annotations

import pytest

from pytest_mlirtrace._internal import mlir
from pytest_mlirtrace._internal.codegen import Solution, SolutionError, default_solution, lower, problem_of

from .cg_modules import gemm, pointwise_mod, softmax_mod


def _src(m, inject=None, sol=None):
    return lower(m, sol, inject=inject)


@pytest.mark.parametrize("fault, hit, missed", [
    # softmax without its max: softmax kernels only (a gemm, a pointwise kernel unchanged)
    ("softmax_no_max", softmax_mod("f32"), [gemm(5, 7, 9), pointwise_mod("f16")]),
    # 16-bit accumulation: f16 / bf16 gemms only
    ("narrow_accumulator", gemm(5, 7, 300, dt="f16"), [gemm(5, 7, 300, dt="f32"), softmax_mod("f16")]),
    # float -> f16 rounding: every kernel that converts to f16 (here a softmax's f16 store); f32 and bf16 not
    ("f2h_truncate", softmax_mod("f16"), [gemm(5, 7, 9, dt="f32"), gemm(5, 7, 9, dt="bf16")]),
])
def test_a_fault_changes_the_kernels_it_names_and_no_other(fault, hit, missed):
    on, off = _src(hit, fault), _src(hit)
    assert on.source != off.source and fault in on.faults and not off.faults
    for m in missed:
        a, b = _src(m, fault), _src(m)
        assert a.source == b.source and fault not in a.faults, m.ops()


def test_f2h_truncate_drops_the_round_to_nearest_even_of_the_conversion_helper():
    on, off = _src(softmax_mod("f16"), "f2h_truncate").source, _src(softmax_mod("f16")).source
    assert "0xc8000fffu + ((ax >> 13) & 1u)" in off and "0xc8000fffu" not in on and "(ax + 0xc8000000u) >> 13" in on


def test_odd_perf_config_lets_a_config_past_the_tile_rules_and_only_with_the_fault():
    m = gemm(8, 24, 8)
    odd = "v2:8,12,4,2,8,4,0,1"                 # NPerBlock 12 is no multiple of NPerThread 8
    with pytest.raises(SolutionError, match=r"field 2 \(NPerBlock\) is 12, expected a multiple of NPerThread"):
        lower(m, odd)
    spec = lower(m, odd, inject="odd_perf_config")
    assert "odd_perf_config" in spec.faults
    # a config of the space: the fault is not in its kernel
    assert "odd_perf_config" not in lower(m, default_solution(problem_of(m)), inject="odd_perf_config").faults
    with pytest.raises(SolutionError, match=r"\(MPerBlock\) is 6, expected a multiple of MPerThread"):
        Solution.parse("gemm", "6,16,4,4,16,4,0,1")
    assert Solution.parse("gemm", "6,16,4,4,16,4,0,1", faults=frozenset({"odd_perf_config"})).MPerBlock == 6


TRANSPOSE = """func.func @mlir_transpose(%arg0: !migraphx.shaped<2x3x3xf32, 9x3x1>) -> !migraphx.shaped<3x3x2xf32, 6x2x1> {
  %0 = migraphx.transpose %arg0 {permutation = [1, 2, 0]} : <2x3x3xf32, 9x3x1> -> <3x3x2xf32, 6x2x1>
  return %0 : !migraphx.shaped<3x3x2xf32, 6x2x1>
}
"""  # noqa: E501 (verbatim MIGraphX / MLIR text)


def test_parse_transpose_inverse_reads_the_inverse_permutation(monkeypatch):
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    good = mlir.parse_mlir_module(TRANSPOSE)
    assert [i.attrs["permutation"] for i in good.instructions if i.op == "transpose"] == [[1, 2, 0]]
    monkeypatch.setenv("MLIRTRACE_INJECT", "parse_transpose_inverse")
    with pytest.raises(Exception, match=r"result lens \[3, 3, 2\] but the shape rule gives \[3, 2, 3\]"):
        mlir.parse_mlir_module(TRANSPOSE)
    # its own inverse (a swap): unaffected
    swap = TRANSPOSE.replace("[1, 2, 0]", "[0, 2, 1]").replace("3x3x2xf32, 6x2x1", "2x3x3xf32, 9x3x1")
    assert [i.attrs["permutation"] for i in mlir.parse_mlir_module(swap).instructions
            if i.op == "transpose"] == [[0, 2, 1]]
