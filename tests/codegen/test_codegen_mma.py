"""Tensor-core (MatrixCore=1) gemm kernels against the numpy oracle, on any OpenCL device.

The test device is PoCL's CPU, which has no tensor cores: the kernels are lowered for ``mma="emulated"``,
where the one function holding the PTX instruction is replaced by the same m16n8k16 fragment exchange done
through local memory (``codegen/mma.py``).  Everything else of the kernel (staging through local memory,
views and pointwise ops before the dot, the fragment loads, the epilogue, the edges, the planted faults) is
the text the GPU runs.  The instruction itself is checked on an NVIDIA GPU by ``-m gpu`` runs of this file
(``MLIRTRACE_TEST_DEVICE`` naming it), which lower for the device's own ``mma``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.codegen import lower, problem_of
from pytest_mlirtrace._internal.codegen.mma import EMULATED, tile_index

from . import cg_ocl as ocl
from .cg_modules import gemm, seed

pytestmark = pytest.mark.usefixtures("cl_pool")
CONV = Path(__file__).resolve().parents[1] / "data" / "conv"


def mma_limits():
    dev = ocl.limits()
    return dev if dev.mma else dataclasses.replace(dev, mma=EMULATED)


def _conv():
    from pytest_mlirtrace._internal.trace import load_module
    return load_module((CONV / "depthwise_nhwc_f16.txt").read_text(encoding="utf-8"))[0]


CASES = [
    # the seed's transpose -> reshape -> dot -> add at a small size: A read through div/mod index maps
    ("seed-views", lambda: seed("f16", heads=3, m=40, hd=16, n=48),
     ["64,64,32,32,16,4,1,2,1", "64,64,32,32,16,8,1,2,2"]),
    # M, N, K none a multiple of the tiles: clamped rows, dropped columns, a zero-filled K tail
    ("f16-tails-relu", lambda: gemm(37, 45, 50, "f16", epilogue=("relu",)),
     ["32,32,16,16,16,8,1,1,1", "32,64,32,32,32,1,1,1,2"]),
    ("bf16", lambda: gemm(33, 40, 48, "bf16"), ["32,32,16,16,8,8,1,1,1", "32,32,16,16,16,8,1,1,2"]),
    ("f16-transposed", lambda: gemm(20, 24, 40, "f16", transA=True, transB=True, epilogue=("bias", "sigmoid")),
     ["32,32,16,16,16,8,1,1,1", "32,32,32,16,16,2,1,2,2"]),
    ("f16-batched", lambda: gemm(17, 24, 32, "f16", batch=(2,), epilogue=("add", "tanh")),
     ["32,32,16,16,16,8,1,1,1"]),
    ("f16-pre-op", lambda: gemm(17, 24, 32, "f16", pre="exp"), ["32,32,16,16,16,2,1,1,1"]),
    ("conv-depthwise-f16", _conv, ["32,32,16,16,16,8,1,1,1", "32,32,16,16,16,8,1,1,2"]),
]


# the emulated instructions are slow to build: the default run takes each case's first solution, -m slow the rest
RUNS = [pytest.param(name, make, sols[:1], id=name) for name, make, sols in CASES] + \
    [pytest.param(name, make, sols[1:], id=f"{name}-more", marks=pytest.mark.slow)
     for name, make, sols in CASES if len(sols) > 1]


@pytest.mark.parametrize("name,make,solutions", RUNS)
def test_tensor_core_kernels_match_the_oracle(name, make, solutions):  # noqa: ARG001 (name: the parametrize id)
    m = make()
    for s in solutions:
        spec = lower(m, s, mma_limits())
        assert spec.solution.matrix_core
        bad = ocl.check(m, spec, seed=3)
        assert bad is None, f"{problem_of(m).key()} solution {s}: {bad}"


def test_staging_reads_whole_vectors_only_where_they_are_contiguous_and_aligned():
    sol = "64,64,32,32,16,8,1,2,1"
    # the seed's A (k/64, k%64 index map) and its B (row-major) are both read 8 halves at a time
    # (through registers, or by cp.async where the chunk is laid out in the tile as in storage)
    src = lower(seed("f16", heads=3, m=40, hd=16, n=48), sol, mma_limits()).source
    assert src.count("*(__global const ushort8 *)") + src.count("cp_async16(&") == 4   # 2 chunks each of A, B
    # k = 50 is no multiple of 8: A's rows are not aligned, element by element; B (n = 48) still is, by cp.async
    src = lower(gemm(37, 48, 50, "f16"), sol, mma_limits()).source
    assert "ushort8 sA" not in src and "ushort sA0" in src and src.count("cp_async16(&Bs") == 2
    assert "ushort8 sB" not in src


@pytest.mark.parametrize("width", [16, 32, 64, 128, 256])   # the tiles' widths in the tuning space (an odd
                                                            # number of chunks, 8 or 24, would share banks)
def test_local_tiles_keep_every_element_once_and_spread_ldmatrix_rows_over_the_banks(width):
    """A local tile's layout: every element has its own place, the 8 elements of a 16-byte chunk stay
    together (cp.async and ldmatrix move whole chunks), and the 8 rows ldmatrix reads at one chunk fall in the
    8 banks of 16 bytes."""
    def at(r, c):       # the generated C index expression is also a Python expression of ints
        return eval(tile_index(str(r), str(c), width))
    rows = 32
    assert len({at(r, c) for r in range(rows) for c in range(width)}) == rows * width
    assert all(at(r, c) % 8 == c % 8 for r in range(rows) for c in range(width))     # 16-byte aligned chunks
    assert all(at(r, c + 1) == at(r, c) + 1 for r in range(rows) for c in range(width) if c % 8 != 7)
    for r0 in range(0, rows, 8):
        for c in range(0, width, 8):
            assert len({at(r0 + i, c) * 2 // 16 % 8 for i in range(8)}) == 8, (r0, c)


def test_plain_row_major_operands_go_by_cp_async_and_match_numpy():
    """A (k fastest) and B (n fastest) loaded as they are: 16-byte cp.async copies straight into the local
    tiles, no staging registers; M, N and K tails (K's by zero-fill) against the oracle."""
    m = gemm(72, 80, 88, "f16")
    spec = lower(m, "64,64,32,32,16,8,1,2,2", mma_limits())
    src = spec.source
    assert src.count("cp_async16(&As") == 2 and src.count("cp_async16(&Bs") == 2
    assert "ushort8 sA" not in src and "ushort8 sB" not in src and "cp_async_wait();" in src
    assert ocl.check(m, spec, seed=5) is None


@pytest.mark.parametrize("fault,make", [
    ("k_tail_off_by_one", lambda: gemm(37, 45, 50, "f16")),
    ("wrong_transpose_stride", lambda: gemm(20, 24, 40, "f16", transA=True, transB=True)),
])
def test_planted_faults_in_tensor_core_kernels_are_caught(fault, make):
    m = make()
    spec = lower(m, "32,32,16,16,16,8,1,1,2", mma_limits(), inject=fault)
    assert spec.faults == (fault,)
    assert ocl.check(m, spec, seed=3) is not None


def test_a_grouped_1x1_conv_copies_its_input_as_is_and_the_planted_group_fault_reaches_it():
    """A 1x1 conv without padding reads its input (B) as a plain load: staged bit for bit, 8 halves at a time,
    through the same operand plan as the FMA kernels, so conv_group_stride (every group reads group 0) fires."""
    from ..ir.test_ir_conv import conv_module
    m, _ = conv_module([1, 32, 6, 6], [32, 16, 1, 1], "f16", group=2, padding=[0, 0, 0, 0])
    spec = lower(m, "32,32,16,16,16,8,1,1,2", mma_limits())
    assert "*(__global const ushort8 *)" in spec.source or "cp_async16(&" in spec.source
    assert ocl.check(m, spec, seed=3) is None
    bad = lower(m, "32,32,16,16,16,8,1,1,2", mma_limits(), inject="conv_group_stride")
    assert bad.faults == ("conv_group_stride",)
    assert ocl.check(m, bad, seed=3) is not None


def test_missing_barrier_drops_the_k_loop_barrier():
    """The race it plants can't show on PoCL: the emulated instruction synchronises the work-group, and PoCL
    puts a barrier at the head of a loop holding barriers.  So this checks the text only."""
    clean = lower(gemm(37, 45, 50, "f16"), "32,32,16,16,16,8,1,1,2", mma_limits()).source
    spec = lower(gemm(37, 45, 50, "f16"), "32,32,16,16,16,8,1,1,2", mma_limits(), inject="missing_barrier")
    assert spec.faults == ("missing_barrier",)
    kernel = lambda src: src[src.index("__kernel"):]     # noqa: E731 - the emulation's own barriers stay
    assert kernel(spec.source).count("barrier(") == kernel(clean).count("barrier(") - 1


def test_narrow_accumulator_is_not_planted_where_the_hardware_accumulates():
    spec = lower(gemm(37, 45, 50, "f16"), "32,32,16,16,16,8,1,1,1", mma_limits(), inject="narrow_accumulator")
    assert spec.faults == ()


@pytest.mark.slow
def test_random_gemms_on_random_tensor_core_solutions_match_the_oracle():
    """Hypothesis draws the problem (sizes from 1 on, both 16-bit types, stored transposed or not, batched,
    an epilogue) and one of the space's tensor-core solutions for it; every draw must match the oracle."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from pytest_mlirtrace._internal.codegen import space

    lim = mma_limits()

    @st.composite
    def cases(draw):
        m, n, k = (draw(st.integers(1, 72)) for _ in range(3))
        mod = gemm(m, n, k, draw(st.sampled_from(["f16", "bf16"])),
                   batch=draw(st.sampled_from([(), (2,)])), transA=draw(st.booleans()), transB=draw(st.booleans()),
                   epilogue=draw(st.sampled_from([(), ("add",), ("bias", "relu"), ("add", "tanh")])),
                   pre=draw(st.sampled_from([None, None, "neg"])))
        sols = [s for s in space(problem_of(mod), lim) if s.matrix_core and s.MPerBlock <= 32 and s.NPerBlock <= 64]
        return mod, draw(st.sampled_from(sols))

    @settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(cases())
    def check(case):
        mod, sol = case
        bad = ocl.check(mod, lower(mod, sol, lim), seed=7)
        assert bad is None, f"{problem_of(mod).key()} solution {sol}: {bad}"

    check()
