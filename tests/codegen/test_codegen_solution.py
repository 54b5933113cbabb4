"""Problems, solutions, applicability and the lowering API (no OpenCL needed)."""
from __future__ import annotations

import numpy as np
import pytest

from pytest_mlirtrace._internal.codegen import (
    FAULTS,
    FIELDS,
    DeviceLimits,
    FaultError,
    NotApplicable,
    NotSupported,
    Solution,
    SolutionError,
    check_applicable,
    default_solution,
    lower,
    pack_inputs,
    problem_of,
    quick_list,
    space,
    unpack_outputs,
)
from pytest_mlirtrace._internal.ir import Module, random_inputs

from .cg_modules import gemm, pointwise_mod, reduce_mod, seed, softmax_mod

_GEMM_FAULTS = ("k_tail_off_by_one", "missing_barrier", "oob_write_n_edge", "infinite_loop", "wrong_transpose_stride")

SEED_KEY = "-t f16 -out_datatype f16 -transA false -transB false -g 1 -m 384 -n 768 -k 768"
GPU = DeviceLimits.nvidia_gpu()


def test_seed_problem_key():
    p = problem_of(seed())
    assert p.key() == SEED_KEY
    assert (p.kind, p.g, p.m, p.n, p.k, p.transA, p.transB) == ("gemm", 1, 384, 768, 768, False, False)


def test_problem_keys_of_other_kinds():
    assert problem_of(gemm(5, 6, 7, "i8", epilogue=())).key() == (
        "-t i8 -out_datatype i32 -transA false -transB false -g 1 -m 5 -n 6 -k 7")
    p = problem_of(gemm(5, 6, 7, transA=True, transB=True, batch=(2, 3)))
    assert (p.transA, p.transB, p.g) == (True, True, 6)
    assert problem_of(pointwise_mod()).kind == "pointwise"
    r = problem_of(reduce_mod("reduce_max", (0, 2)))
    assert (r.kind, r.outer, r.reduce_len, r.op) == ("reduce", 37, 15, "reduce_max")
    s = problem_of(softmax_mod())
    assert (s.kind, s.outer, s.reduce_len) == ("softmax", 12, 19)


@pytest.mark.parametrize("kind,text", [("gemm", "64,64,8,16,64,8,1,1"), ("gemm", "8,32,8,8,32,16,0,4"),
                                       ("pointwise", "64,4,16"), ("reduce", "4,16,4,1"), ("softmax", "1,1,1,1")])
def test_solution_round_trip(kind, text):
    s = Solution.parse(kind, text)
    assert str(s) == text
    assert Solution.parse(kind, str(s)) == s
    assert list(s.fields) == list(FIELDS[kind])


def test_solution_fields_by_name():
    s = Solution.parse("gemm", "64,64,8,16,64,8,1,1")
    assert (s.MPerBlock, s.NPerThread, s.VectorWidth, s.LocalTiles, s.Unroll) == (64, 64, 8, 1, 1)
    assert s.work_group() == (1, 4, 1)
    assert Solution.of("gemm", **s.fields) == s
    with pytest.raises(AttributeError, match="no field 'Foo'"):
        s.Foo  # noqa: B018


@pytest.mark.parametrize("kind,text,match", [
    ("gemm", "64,64,8", r"has 3 field\(s\), expected 8 or 9: MPerBlock,NPerBlock,KPerBlock"),
    ("gemm", "64,64,8,16,64,8,1,1,0,0", r"has 10 field\(s\), expected 8 or 9"),
    ("gemm", "64,64,8,16,64,8,1,1,3", r"field 9 \(MatrixCore\) is 3, expected 0 \(FMA\), 1 or 2"),
    ("gemm", "128,128,32,64,8,8,1,2,2", r"field 5 \(NPerThread\) is 8, expected a multiple of 16 with MatrixCore=2"),
    ("gemm", "128,128,32,64,32,8,0,2,1", r"field 7 \(LocalTiles\) is 0, expected 1 with MatrixCore=1"),
    ("gemm", "128,128,32,24,32,8,1,2,1", r"field 4 \(MPerThread\) is 24, expected a multiple of 16"),
    ("gemm", "128,128,32,64,12,4,1,2,1", r"field 5 \(NPerThread\) is 12, expected a multiple of 8"),
    ("gemm", "128,128,24,64,32,8,1,1,1", r"field 3 \(KPerBlock\) is 24, expected a multiple of 16"),
    ("gemm", "128,128,32,64,32,16,1,2,1", r"field 6 \(VectorWidth\) is 16, expected 1, 2, 4 or 8"),
    ("gemm", "128,128,64,64,32,8,1,3,1", r"field 8 \(Unroll\) is 3, expected a divisor of KPerBlock/16 \(4\)"),
    ("gemm", "96,128,32,64,32,8,1,2,1", r"field 1 \(MPerBlock\) is 96, expected a multiple of MPerThread \(64\)"),
    ("gemm", "64,64,x,16,64,8,1,1", r"field 3 \(KPerBlock\) is 'x', expected a positive integer"),
    ("gemm", "64,64,8,16,64,8,2,1", r"field 7 \(LocalTiles\) is 2, expected 0 .* or 1"),
    ("gemm", "64,64,8,16,64,3,1,1", r"field 6 \(VectorWidth\) is 3, expected one of 1, 2, 4, 8, 16"),
    ("gemm", "64,64,8,24,64,8,1,1", r"field 1 \(MPerBlock\) is 64, expected a multiple of MPerThread \(24\)"),
    ("gemm", "64,64,8,16,64,8,1,3", r"field 8 \(Unroll\) is 3, expected a divisor of KPerBlock"),
    ("gemm", "0,64,8,16,64,8,1,1", r"field 1 \(MPerBlock\) is 0, expected a positive integer"),
    ("reduce", "4,3,4,1", r"field 2 \(ThreadsPerGroup\) is 3, expected a power of two"),
    ("conv", "1", r"unknown solution kind 'conv'"),
])
def test_bad_solution_strings(kind, text, match):
    with pytest.raises(SolutionError, match=match):
        Solution.parse(kind, text)


def test_not_applicable_reasons():
    p = problem_of(seed())
    small = DeviceLimits(max_work_group_size=256, local_mem_size=16384, compute_units=8, kind="gpu")
    with pytest.raises(NotApplicable, match="work-group of 1024 work-items .* exceeds the device maximum 256"):
        check_applicable(p, Solution.parse("gemm", "128,128,8,4,4,4,1,8"), small)
    with pytest.raises(NotApplicable, match="needs 33280 bytes of local memory, the device has 16384"):
        check_applicable(p, Solution.parse("gemm", "128,128,32,8,8,4,1,8"), small)
    with pytest.raises(NotApplicable, match="exceeds 256 accumulators"):
        check_applicable(p, Solution.parse("gemm", "32,64,8,32,64,16,0,4"))
    with pytest.raises(NotApplicable, match="VectorWidth 16 is wider than n = 3"):
        check_applicable(problem_of(gemm(5, 3, 7)), Solution.parse("gemm", "8,32,8,8,32,16,0,4"))
    with pytest.raises(NotApplicable, match="pointwise solution does not apply to a gemm problem"):
        check_applicable(p, Solution.parse("pointwise", "64,1,4"))
    with pytest.raises(NotApplicable, match="wider than the reduction"):
        check_applicable(problem_of(softmax_mod(lens=(4, 3))), Solution.parse("softmax", "1,1,4,1"))
    with pytest.raises(NotApplicable):
        lower(gemm(5, 3, 7), "8,32,8,8,32,16,0,4")


def test_spaces_and_quick_lists():
    p = problem_of(seed())
    full = space(p)
    assert 200 <= len(full) <= 2000
    for lim in (None, GPU):
        q = quick_list(p, lim)
        assert 30 <= len(q) <= 40 + 10 * (lim is GPU), len(q)     # + the tensor-core solutions
        for s in q:
            check_applicable(p, s, lim)
    assert any(not s.LocalTiles for s in quick_list(p)) and any(s.LocalTiles for s in quick_list(p, GPU))
    assert default_solution(p).LocalTiles == 0 and default_solution(p, GPU).LocalTiles == 1
    # tiny and odd problems still get applicable solutions
    for mod in (gemm(1, 1, 1), gemm(3, 17, 5, "i8", epilogue=()), pointwise_mod(), reduce_mod(),
                softmax_mod(lens=(2, 3))):
        pr = problem_of(mod)
        assert quick_list(pr), pr.key()
        check_applicable(pr, default_solution(pr))
        check_applicable(pr, default_solution(pr, GPU), GPU)
        assert space(pr)


def test_lowering_is_deterministic_and_documented():
    m = seed()
    a = lower(m, "8,32,8,8,32,16,0,4")
    b = lower(seed(), "8,32,8,8,32,16,0,4")
    assert a.source == b.source
    head = a.source.splitlines()[:6]
    assert any("mlir_transpose_reshape_dot_add" in h for h in head)
    assert any(SEED_KEY in h for h in head)
    assert any("solution: 8,32,8,8,32,16,0,4" in h for h in head)
    assert a.kernel_name == "mlir_transpose_reshape_dot_add"
    assert lower(m, "12,16,8,12,16,16,0,4").source != a.source
    kinds = [(x.kind, x.param, x.dtype, x.elements) for x in a.args]
    assert kinds == [("input", "x1", "f16", 294912), ("input", "y0", "f16", 294912),
                     ("input", "y1.0", "f16", 589824), ("output", None, "f16", 294912)]
    assert a.global_size == (24, 48, 1) and a.local_size == (1, 1, 1)
    assert "cl_khr_fp16" not in a.source and "vload_half" not in a.source


def test_pack_and_unpack_follow_strides():
    m = Module()
    x = m.add_param("x", "f32", [2, 3], [1, 4])       # column-major with a gap
    y = m.add_param("y", "f32", [3], [0])             # broadcast storage of 1 element
    b = m.add("multibroadcast", y, out_lens=[2, 3])
    m.add_return(m.add("add", x, b))
    spec = lower(m, "1,1,1")
    inp = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.full(3, 5, np.float32)}
    px, py = pack_inputs(spec, inp)
    assert px.size == 1 + 1 * 1 + 2 * 4 == spec.inputs[0].elements
    assert list(px[[0, 1, 4, 5, 8, 9]]) == [0, 3, 1, 4, 2, 5]
    assert py.size == 1 and py[0] == 5
    out = unpack_outputs(spec, [np.arange(6, dtype=np.float32)])
    assert out[0].shape == (2, 3)


def test_unsupported_patterns_name_the_instruction():
    m = Module()
    q = m.add_param("q", "f32", [4, 8])
    k = m.add_param("k", "f32", [8, 4])
    v = m.add_param("v", "f32", [4, 8])
    s = m.add("dot", q, k)
    r = m.add("multibroadcast", m.add("reduce_sum", s, axes=[1]), out_lens=[4, 4])
    m.add_return(m.add("dot", m.add("div", s, r), v))
    with pytest.raises(NotSupported, match=r"@4 = reduce_sum between the gemms @3 and @7: only a softmax"):
        lower(m)
    m2 = Module()
    a = m2.add_param("a", "f32", [4, 3])
    m2.add_return(m2.add("reduce_sum", a, axes=[1]), m2.add("neg", a))
    with pytest.raises(NotSupported, match="returns 2 values .*a reduce kernel has one output"):
        problem_of(m2)
    m3 = Module()
    a = m3.add_param("a", "f32", [4, 4])
    r = m3.add("reduce_sum", a, axes=[1])
    m3.add_return(m3.add("reduce_max", r, axes=[0]))
    with pytest.raises(NotSupported, match="more than one reduction"):
        lower(m3)
    m4 = Module()
    a = m4.add_param("a", "f32", [4, 4])
    b = m4.add_param("b", "f32", [4, 4])
    d = m4.add("dot", a, b)
    m4.add_return(m4.add("multibroadcast", m4.add("reduce_sum", d, axes=[1]), out_lens=[4, 4]))
    # a gemm + reduction broadcast back: the reduction kernel with the dot inline (tests/engine: it matches)
    assert lower(m4).problem.kind == "reduce" and "for (int kd_" in lower(m4).source
    m5 = Module()
    a = m5.add_param("a", "f32", [4, 4])
    m5.add_return(m5.add("add", m5.add("dot", a, a), m5.add("transpose", m5.add("dot", a, a),
                                                            permutation=[1, 0])))
    with pytest.raises(NotSupported, match="two independent gemms in one module"):
        lower(m5)


def test_faults_registry():
    assert set(FAULTS) >= {"k_tail_off_by_one", "missing_barrier", "oob_write_n_edge", "infinite_loop",
                           "wrong_transpose_stride", "conv_pad_edge", "conv_group_stride", "softmax_no_rescale",
                           "attention_d_edge", "causal_edge"}
    with pytest.raises(FaultError, match="unknown fault.*'nope'"):
        lower(seed(), "8,32,8,8,32,16,0,4", inject="nope")
    m = gemm(17, 19, 23)
    base = lower(m, "4,16,8,4,16,16,0,4").source
    # the conv and attention faults change those kernels only (tests/fuzz/test_fuzz_faults.py,
    # tests/engine/test_attention_kernels.py)
    for f in sorted(f for f in _GEMM_FAULTS if f in FAULTS):
        assert lower(m, "4,16,8,4,16,16,0,4", inject=f).source != base
    assert lower(m, "4,16,8,4,16,16,0,4", inject="").source == base
    assert lower(m, "4,16,8,4,16,16,0,4", inject=None).source == base


def test_random_inputs_round_trip_through_pack():
    m = seed("f32", heads=2, m=5, hd=3, n=4)
    spec = lower(m, default_solution(problem_of(m)))
    bufs = pack_inputs(spec, random_inputs(m))
    assert [b.size for b in bufs] == [a.elements for a in spec.inputs]


def test_vector_accesses_go_through_one_base_pointer():
    """Lanes are addressed as (p + (base))[l]: LLVM (PoCL) only merges such loads into one vector load."""
    from pytest_mlirtrace._internal.codegen import expr as E
    from pytest_mlirtrace._internal.codegen.kernel import lanes_of
    n = E.var("n", 768)
    affine = lanes_of(E.var("m", 4) * 768 + n, lambda ln: ({"n": E.var("c", 768) + ln}, {"c": "c0"}), 4)
    assert [affine.at("p", ln) for ln in range(2)] == ["(p + (c0 + 768*m))[0]", "(p + (c0 + 768*m))[1]"]
    split = lanes_of(E.fdiv(n, 2) + E.fmod(n, 2) * 5, lambda ln: ({"n": E.var("c", 768) + ln}, {"c": "c0"}), 2)
    assert isinstance(split, list) and len(split) == 2
    src = lower(gemm(64, 64, 64), "8,32,8,8,32,16,0,4").source
    assert "(p1 + (b1_0 + 64*k))[15]" in src
    # 16-wide float accumulators pass through an inline helper so clang keeps 512-bit registers, on a device
    # with 512-bit vectors (DEFAULT_LIMITS says 128 bits: LLVM splits them there anyway, no helper)
    avx512 = DeviceLimits(vector_bits=512)
    assert "keep16(" in lower(gemm(64, 64, 64), "8,32,8,8,32,16,0,4", avx512).source
    assert "keep16(" not in lower(gemm(64, 64, 64), "8,16,8,8,16,8,0,4", avx512).source


# ---------------------------------------------------------------- tensor cores (MatrixCore=1) --
MMA = "128,128,32,64,32,8,1,2,1"


def test_matrix_core_field_is_optional_and_printed_only_when_set():
    old = Solution.parse("gemm", "128,128,8,16,8,4,1,8")
    assert old.MatrixCore == 0 and not old.matrix_core
    assert str(old) == "128,128,8,16,8,4,1,8"                           # older configs read and print the same
    assert Solution.parse("gemm", "128,128,8,16,8,4,1,8,0") == old
    assert Solution("gemm", (128, 128, 8, 16, 8, 4, 1, 8)) == old
    assert Solution.of("gemm", MPerBlock=128, NPerBlock=128, KPerBlock=8, MPerThread=16, NPerThread=8,
                       VectorWidth=4, LocalTiles=1, Unroll=8) == old
    s = Solution.parse("gemm", MMA)
    assert s.matrix_core and str(s) == MMA and Solution.parse("gemm", str(s)) == s
    assert s.work_group() == (256, 1, 1)                                # 2 x 4 warps of 64 x 32
    assert s.local_bytes() == 4 * (128 * 40 + 32 * 136)                # two buffers each
    assert "MPerWarp=64, NPerWarp=32" in s.describe()


def test_matrix_core_solutions_apply_only_with_mma_and_16_bit_operands():
    import dataclasses
    s = Solution.parse("gemm", MMA)
    f16, f32 = problem_of(seed()), problem_of(seed("f32"))
    check_applicable(f16, s, GPU)
    check_applicable(problem_of(gemm(64, 64, 64, "bf16")), s, GPU)
    with pytest.raises(NotApplicable, match="needs NVIDIA mma.sync of sm_80 or later; the device has none"):
        check_applicable(f16, s)                                        # PoCL
    with pytest.raises(NotApplicable, match="the device has sm_75"):
        check_applicable(f16, s, dataclasses.replace(GPU, mma="sm_75"))
    with pytest.raises(NotApplicable, match="takes f16 or bf16 operands, not f32"):
        check_applicable(f32, s, GPU)
    with pytest.raises(NotApplicable, match="not i8 \\(quantized\\)"):
        check_applicable(problem_of(gemm(64, 64, 64, "i8", epilogue=())), s, GPU)
    with pytest.raises(NotApplicable, match="256 accumulators per work-item"):
        check_applicable(f16, Solution.parse("gemm", "128,128,32,128,64,8,1,2,1"), GPU)
    # the lists: tensor-core solutions lead a GPU's list where they apply, and nowhere else
    assert all(x.matrix_core for x in quick_list(f16, GPU)[:10])
    assert default_solution(f16, GPU).matrix_core
    for p, lim in ((f16, None), (f32, GPU), (f16, dataclasses.replace(GPU, mma=""))):
        assert not any(x.matrix_core for x in quick_list(p, lim) + space(p, lim))
        assert not default_solution(p, lim).matrix_core


def test_the_inline_ptx_is_in_one_module_and_only_in_tensor_core_kernels():
    from pathlib import Path

    import pytest_mlirtrace
    root = Path(pytest_mlirtrace.__file__).parent
    holders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "asm volatile" in p.read_text())
    assert holders == ["_internal/codegen/mma.py"]
    src = lower(seed(), MMA, GPU).source
    assert src.count("asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 1
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in lower(gemm(64, 64, 64, "bf16"), MMA, GPU).source
    for sol in quick_list(problem_of(seed()), GPU):
        assert ("asm" in lower(seed(), sol, GPU).source) == sol.matrix_core
