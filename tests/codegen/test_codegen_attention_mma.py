"""Attention and gemm-gemm on tensor cores (attention solutions with MatrixCore=1) against the numpy oracle.

As in ``test_codegen_mma.py``: on PoCL the kernels are lowered for ``mma="emulated"`` (the PTX functions --
mma.sync, ldmatrix, shfl.sync -- replaced by the same exchanges through local memory; everything else is the
text the GPU runs), on an NVIDIA test device (``MLIRTRACE_TEST_DEVICE``) for its own instructions.  The
modules are the real-shaped ones of ``tests/data/attention`` (f32 ones read as f16 or bf16: tensor cores
take 16-bit operands) on fresh random inputs.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pytest_mlirtrace._internal import mlir
from pytest_mlirtrace._internal.codegen import NotApplicable, Solution, lower, problem_of, quick_list, space
from pytest_mlirtrace._internal.codegen.mma import EMULATED
from pytest_mlirtrace._internal.codegen.solution import DeviceLimits, attention_mma_local_bytes, check_applicable
from pytest_mlirtrace._internal.ir import compare, evaluate, random_inputs
from pytest_mlirtrace._internal.trace import load_module

from ..corpus import ROCMLIR
from . import cg_ocl as ocl

pytestmark = pytest.mark.usefixtures("cl_pool")
DATA = Path(__file__).resolve().parents[1] / "data" / "attention"
MLIR = Path(__file__).resolve().parents[1] / "data" / "mlir"


def mma_limits():
    dev = ocl.limits()
    return dev if dev.mma else dataclasses.replace(dev, mma=EMULATED)


def module(name: str, dtype: str | None = None, old: str = "f32"):
    text = (DATA / name).read_text(encoding="utf-8")
    if dtype:       # and f32's -inf literal, as the new type's bits
        text = text.replace(old, dtype).replace("0xFF800000", {"f16": "0xFC00", "bf16": "0xFF80"}[dtype])
    return load_module(text)[0]


def real(path: Path, func: str):
    """A function of a real rocMLIR test program (``tests/data/mlir`` or the shared corpus)."""
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    return next(f.module for f in mlir.parse_mlir(path.read_text(encoding="utf-8"), path.name) if f.name == func)


def check_all(m, spec, seed: int):
    """The mismatch of any output (or None), each against the oracle with its own dtype's tolerance."""
    inputs = random_inputs(m, seed=seed)
    want = evaluate(m, inputs)
    got, _ = ocl.run(spec, inputs)
    for j, (g, w) in enumerate(zip(got, want, strict=False)):
        bad = compare(g, w, m.get(m.returns()[j]).shape.dtype, reduction=max(spec.problem.k, spec.problem.n))
        if bad is not None:
            return f"output {j}: {bad}"
    return None


CASES = [
    # grouped-query heads broadcast through views, a scale and an additive bias: 24 keys, 1 or 2 steps
    # (the emulated instructions are slow to build: the default run takes one solution of the bigger cases,
    # -m slow every one)
    ("gqa-bias-f16", lambda: module("gqa_bias_f16.mlir"), ["16,16,1,1"]),
    pytest.param("gqa-bias-f16-two-steps", lambda: module("gqa_bias_f16.mlir"), ["16,32,2,1"],
                 marks=pytest.mark.slow),
    ("gqa-bias-bf16", lambda: module("gqa_bias_f16.mlir", "bf16", old="f16"), ["16,16,1,1"]),
    # MIGraphX's written-out softmax (reduce_max, sub, exp, reduce_sum, div)
    pytest.param("decomposed-softmax-f16", lambda: module("decomposed_softmax_f16.mlir"), ["16,16,1,1", "32,64,1,1"],
                 marks=pytest.mark.slow),
    # gemm-gemm with relu and a bias between: K = 12 and D = 36 are no multiples of 16 (zero-filled tiles)
    ("gemm-gemm-f16", lambda: module("gemm_relu_bias_gemm_f16.mlir"), ["16,16,1,1"]),
    pytest.param("gemm-gemm-f16-two-steps", lambda: module("gemm_relu_bias_gemm_f16.mlir"), ["32,32,2,1"],
                 marks=pytest.mark.slow),
    # a causal mask from index literals, the rows ending at their diagonal
    ("causal-f16", lambda: module("causal_offset_f32.mlir", "f16"), ["16,16,1,1"]),
    # KV cache: a slice of the cache, an i8 mask through where, heads transposed back
    pytest.param("kv-cache-mask-f16", lambda: module("kv_cache_mask_f32.mlir", "f16"), ["16,16,1,1", "16,32,1,1"],
                 marks=pytest.mark.slow),
    # split-KV: the chunk's log-sum-exp as a second output
    ("split-kv-lse-f16", lambda: module("split_kv_lse_f32.mlir", "f16"), ["16,16,1,1"]),
    # real rocMLIR programs: causal decoding (32 heads, 2 queries, 64 keys, head dim 128) ...
    # (slow, and alone: the emulated instructions take a minute on these sizes, two with another test beside)
    pytest.param("rocmlir-mixr-attention-causal", lambda: real(
        ROCMLIR / "fusion__pr-e2e__attention__mixr-attention-causal.mlir", "mlir_attention"), ["16,32,1,1"],
        marks=[pytest.mark.slow, pytest.mark.alone]),
    # ... and BERT-base attention (12 heads, 384 queries and keys, head dim 64): on a device with tensor
    # cores only (MLIRTRACE_TEST_DEVICE); emulated on PoCL it ran past the 120 s timeout on 2 cores
    pytest.param("rocmlir-mixr-attention-2023", lambda: real(
        MLIR / "rocmlir__fusion__mixr-attention__2023-mhal-softmax-attr-after-operands.mlir", "mlir_attention"),
        ["64,64,2,1"], marks=[pytest.mark.slow, pytest.mark.gpu]),
]


@pytest.mark.parametrize("name,make,solutions", CASES,
                         ids=[c.values[0] if hasattr(c, "values") else c[0] for c in CASES])
def test_tensor_core_attention_matches_the_oracle(request, name, make, solutions):
    if request.node.get_closest_marker("gpu") and not ocl.limits().mma:
        pytest.skip(f"{name}: needs a device with tensor cores (MLIRTRACE_TEST_DEVICE); emulated it is too slow")
    m = make()
    for s in solutions:
        spec = lower(m, s, mma_limits())
        assert spec.solution.matrix_core and "mma_m16n8k16(" in spec.source
        bad = check_all(m, spec, seed=5)
        assert bad is None, f"{problem_of(m).key()} solution {s}: {bad}"


def test_many_key_steps_with_growing_maxima():
    """96 keys in 6 steps of 16, the scores growing along the keys (inputs scaled so that they reach ~100):
    each step's maximum is new, so every step rescales the accumulators and sums -- and the planted fault
    that skips the rescale is caught."""
    m = load_module(_attention_text(1, 40, 96, 32, 24, "f16"))[0]
    inputs = random_inputs(m, seed=9)
    q, k, v = (p.param for p in m.params())
    inputs[q] = np.abs(inputs[q]).astype(np.float16) + np.float16(0.5)
    ramp = np.linspace(0.0, 3.0, 96, dtype=np.float32)[None, None, :]
    inputs[k] = (np.abs(inputs[k]) * ramp + ramp).astype(np.float16)
    want = evaluate(m, inputs)[0]
    good = lower(m, "32,16,1,1", mma_limits())
    got, _ = ocl.run(good, inputs)
    assert compare(got[0], want, np.float16, reduction=96) is None
    bad = lower(m, "32,16,1,1", mma_limits(), inject="softmax_no_rescale")
    assert bad.faults == ("softmax_no_rescale",)
    got, _ = ocl.run(bad, inputs)
    assert compare(got[0], want, np.float16, reduction=96) is not None


def _attention_text(g, m, n1, k, d, dt):
    return (f"func.func @mlir_attn(%q: !migraphx.shaped<{g}x{m}x{k}x{dt}, {m * k}x{k}x1>, "
            f"%k: !migraphx.shaped<{g}x{k}x{n1}x{dt}, {k * n1}x{n1}x1>, "
            f"%v: !migraphx.shaped<{g}x{n1}x{d}x{dt}, {n1 * d}x{d}x1>) -> !migraphx.shaped<{g}x{m}x{d}x{dt}, "
            f"{m * d}x{d}x1> {{\n"
            f"  %0 = migraphx.dot %q, %k : <{g}x{m}x{k}x{dt}, {m * k}x{k}x1>, <{g}x{k}x{n1}x{dt}, {k * n1}x{n1}x1> "
            f"-> <{g}x{m}x{n1}x{dt}, {m * n1}x{n1}x1>\n"
            f"  %1 = migraphx.softmax %0 {{axis = 2 : i64}} : <{g}x{m}x{n1}x{dt}, {m * n1}x{n1}x1> -> "
            f"<{g}x{m}x{n1}x{dt}, {m * n1}x{n1}x1>\n"
            f"  %2 = migraphx.dot %1, %v : <{g}x{m}x{n1}x{dt}, {m * n1}x{n1}x1>, <{g}x{n1}x{d}x{dt}, {n1 * d}x{d}x1> "
            f"-> <{g}x{m}x{d}x{dt}, {m * d}x{d}x1>\n"
            f"  return %2 : !migraphx.shaped<{g}x{m}x{d}x{dt}, {m * d}x{d}x1>\n}}\n")


def test_causal_edge_fault_is_caught():
    m = module("causal_offset_f32.mlir", "f16")
    inputs = random_inputs(m, seed=4)
    want = evaluate(m, inputs)[0]
    spec = lower(m, "16,16,1,1", mma_limits(), inject="causal_edge")
    assert spec.faults == ("causal_edge",)
    got, _ = ocl.run(spec, inputs)
    assert compare(got[0], want, np.float16, reduction=16) is not None


# --------------------------------------------------------------------------- solutions, applicability --
GPU = DeviceLimits.nvidia_gpu()


def test_matrix_core_field_is_optional_and_validated():
    old = Solution.parse("attention", "16,64,8")
    assert old.MatrixCore == 0 and not old.matrix_core and str(old) == "16,64,8"
    s = Solution.parse("attention", "64,32,2,1")
    assert s.matrix_core and str(s) == "64,32,2,1" and s.work_group() == (128, 1, 1)
    assert "KeysPerBlock=32" in s.describe()
    for text, why in (("24,32,1,1", r"RowsPerBlock\) is 24, expected a multiple of 16"),
                      ("16,24,1,1", r"DPerThread\) is 24, expected KeysPerBlock"),
                      ("16,32,4,1", r"Unroll\) is 4, expected 1 or 2 with MatrixCore=1"),
                      ("16,32,1,2", r"MatrixCore\) is 2, expected 0 \(FMA\) or 1")):
        with pytest.raises(Exception, match=why):
            Solution.parse("attention", text)


def test_tensor_core_attention_applies_only_with_mma_and_16_bit_operands():
    f16 = problem_of(module("gqa_bias_f16.mlir"))
    f32 = problem_of(module("causal_offset_f32.mlir"))
    s = Solution.parse("attention", "16,16,1,1")
    check_applicable(f16, s, GPU)
    for p, lim, why in ((f16, DeviceLimits.pocl(), "needs NVIDIA mma.sync"), (f32, GPU, "not f32")):
        with pytest.raises(NotApplicable, match=why):
            check_applicable(p, s, lim)
        assert not any(x.matrix_core for x in quick_list(p, lim) + space(p, lim))
    quick = quick_list(f16, GPU)        # 16 rows, 24 keys: the tensor-core solutions that fit, first
    assert [str(x) for x in quick if x.matrix_core] == ["16,32,1,1", "16,16,1,1"]
    assert quick[0].matrix_core and quick[1].matrix_core and not quick[2].matrix_core
    # head dims 32: two of each step's tiles, 16 rows of 32 + 8 halves for K and V each
    assert attention_mma_local_bytes(f16, s) == 2 * 2 * 16 * (40 + 40)


def test_plain_operands_go_by_cp_async_and_the_others_are_computed():
    """Q, K and V that are plain f16 loads with 8 consecutive aligned halves along the head dim are copied 16
    bytes at a time (Q once, K and V for the first step and then one step ahead, into the other buffer);
    the gemm-gemm's (head dims 12 and 36: no multiple of 8) are computed element by element."""
    lim = dataclasses.replace(GPU, mma=EMULATED)
    src = lower(module("gqa_bias_f16.mlir"), "16,16,1,1", lim).source
    assert src.count("cp_async16(&smem") == 5 and "? f2h" not in src and "cur ^= 1" in src
    src = lower(module("gemm_relu_bias_gemm_f16.mlir"), "16,16,1,1", lim).source
    assert "cp_async16" not in src and src.count("? f2h") == 3 and "cur ^= 1" not in src


def test_the_emulated_text_is_the_gpu_text_but_for_the_instructions():
    m = module("gqa_bias_f16.mlir")
    gpu = lower(m, "16,16,1,1", GPU).source
    emu = lower(m, "16,16,1,1", dataclasses.replace(GPU, mma=EMULATED)).source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in gpu and "shfl.sync.bfly" in gpu
    assert "ldmatrix.sync.aligned.m8n8.x4.trans" in gpu and "asm" not in emu
    body = gpu[gpu.index("__kernel"):]
    assert body.replace(", emu + warp * 384, lane", "") == body     # no emulation arguments on the GPU
