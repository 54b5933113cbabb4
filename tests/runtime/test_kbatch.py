"""Kernels built several to a program (runtime/kbatch.py, WorkerPool.build_batch): the text, and real builds."""

import numpy as np
import pytest

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.engine import MemoryDatabase, Pipeline
from pytest_mlirtrace._internal.ir.examples import seed_module
from pytest_mlirtrace._internal.runtime import InBuf, KernelJob, OutBuf, Scalar, WorkerPool
from pytest_mlirtrace._internal.runtime.kbatch import alias, combine

SEED_SOLUTIONS = ["16,64,8,4,64,16,0,4", "32,32,8,8,32,16,0,4", "64,64,16,4,8,4,1,16"]


def _specs(module, sols, limits=None):
    return [codegen.lower(module, s, limits) for s in sols]


def _small_f16_module():
    m = ir.Module()
    a = m.add_param("a", "f16", [1, 24, 40])
    b = m.add_param("b", "f16", [1, 40, 16])
    m.add_return(m.add("relu", m.add("dot", a, b)))
    return m


def test_three_solutions_share_one_text_each_kernel_renamed_once():
    ks = _specs(seed_module("f32", g=1), SEED_SOLUTIONS)
    text = combine([(k.source, k.kernel_name) for k in ks])
    assert text is not None
    assert text.count("__kernel") == 3
    for i, k in enumerate(ks):
        assert text.count(f"void {alias(k.kernel_name, i)}(") == 1
    assert f"void {ks[0].kernel_name}(" not in text
    assert text.count("#define MINI") == 1
    assert "//" not in text        # comments dropped (the header names each kernel by its own name)


def test_helpers_that_repeat_are_kept_once():
    m = _small_f16_module()
    ks = _specs(m, ["16,16,8,4,4,4,0,4", "8,16,8,2,4,4,0,4"])
    assert all("h2f" in k.source for k in ks)
    helpers = [ln for ln in ks[0].source.splitlines() if ln.startswith("static inline") and "h2f" in ln]
    assert helpers
    text = combine([(k.source, k.kernel_name) for k in ks])
    for h in helpers:
        assert text.count(h) == 1, h


def test_string_literals_with_braces_do_not_split_pieces():
    """The tensor-core prelude's asm strings hold braces ({%0,%1,...}): the pieces still end where the code's do."""
    limits = codegen.DeviceLimits.nvidia_gpu()
    m = _small_f16_module()
    ks = _specs(m, ["32,32,32,16,16,8,1,2,2", "32,32,32,16,16,8,1,2,1"], limits)
    assert all("asm volatile" in k.source for k in ks)
    text = combine([(k.source, k.kernel_name) for k in ks])
    assert text is not None
    assert text.count("inline void mma_m16n8k16(") == 1
    assert text.count("inline void ldsm_x4(") == 1       # only the MatrixCore=2 one has it


@pytest.mark.parametrize("change, why", [
    (lambda s, _k: "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + s, "preprocessor lines differ"),
    (lambda s, k: s.replace(f"void {k}(", "void other_name("), "kernel name not found"),
    (lambda s, _k: s + "__kernel void second(__global int *p) { p[0] = 1; }\n", "two kernels"),
    (lambda s, _k: s + "inline int open(int x) {\n", "unbalanced braces"),
    (lambda s, _k: s + "/* never closed", "unterminated comment"),
    (lambda s, _k: s + "#define LATE 1\n", "a macro after a declaration"),
])
def test_sources_that_cannot_share_a_program_are_refused(change, why):
    ks = _specs(seed_module("f32", g=1), SEED_SOLUTIONS[:2])
    items = [(ks[0].source, ks[0].kernel_name), (change(ks[1].source, ks[1].kernel_name), ks[1].kernel_name)]
    assert combine(items) is None, why


def test_one_source_is_not_combined():
    k = _specs(seed_module("f32", g=1), SEED_SOLUTIONS[:1])[0]
    assert combine([(k.source, k.kernel_name)]) is None


# ---------------------------------------------------------------- real builds, through the worker pool

@pytest.fixture(scope="module")
def batch_pool(cpu_device):
    with WorkerPool(cpu_device, workers=1, timeout_s=60.0, build_batch=8) as p:
        yield p


def test_kernels_built_as_one_program_each_compute_what_the_oracle_says(batch_pool):
    """Three solutions of the seed op (a small head count) built together, then each run on fresh inputs."""
    m = seed_module("f32", g=1, heads=2, seq=24, hd=16, n=40)
    pipe = Pipeline(batch_pool.device, pool=batch_pool, database=MemoryDatabase())
    sols = ["8,8,8,4,4,4,0,4", "16,8,8,2,8,8,0,4", "8,16,8,8,16,16,0,4"]
    low = pipe.lower_module(m)
    jobs = [pipe._lower(low, codegen.Solution.parse("gemm", s), None).job for s in sols]
    built = batch_pool.build(jobs)
    assert [r.status for r in built] == ["ok"] * 3, [r.error for r in built]
    assert [r.batched for r in built] == [3, 3, 3]
    assert all(r.build_s > 0 and not r.cached for r in built)
    seed = int(np.random.default_rng().integers(1 << 30))
    for s in sols:
        r = pipe.run(m, solution=s, seed=seed)
        assert r.ok, (s, r.status, r.detail)
        assert r.compiled.span.solution == s


def test_prebuild_then_run_lowers_each_solution_once_and_keeps_one_module(batch_pool, monkeypatch):
    lowered = []
    real = codegen.lower
    monkeypatch.setattr(codegen, "lower", lambda m, s, *a, **k: lowered.append((id(m), str(s))) or real(m, s, *a, **k))
    pipe = Pipeline(batch_pool.device, pool=batch_pool, database=MemoryDatabase())
    sols = ["8,8,8,4,4,4,0,4", "16,8,8,2,8,8,0,4"]
    m1, m2 = (seed_module("f32", g=1, heads=2, seq=n, hd=8, n=16) for n in (16, 24))
    pipe.prebuild(m1, sols)
    for s in sols:
        assert pipe.run(m1, solution=s, seed=3).ok
    assert lowered == [(id(m1), s) for s in sols]
    assert pipe.run(m2, solution=sols[0], seed=3).ok
    assert lowered[-1] == (id(m2), sols[0])
    assert pipe._specs["module"] is m2 and len(pipe._specs["specs"]) == 1


ADD1 = """
__kernel void add{n}(__global const float *a, __global float *c, const int n) {{
  int i = get_global_id(0);
  if (i < n) c[i] = a[i] + {n}.0f;
}}
"""


def _add_job(n, rng, source=None):
    a = rng.standard_normal(256).astype(np.float32)
    return KernelJob(source or ADD1.format(n=n), f"add{n}", [InBuf(a), OutBuf((256,), np.float32),
                                                              Scalar(np.int32(256))], (256,), (64,)), a


def test_a_build_error_in_a_group_is_that_kernels_alone(batch_pool, rng):
    good, a = _add_job(1, rng)
    bad, _ = _add_job(2, rng, source=ADD1.format(n=2).replace("c[i] =", "c[i] = undefined_name +"))
    other, b = _add_job(3, rng)
    res = batch_pool.build([good, bad, other])
    assert [r.status for r in res] == ["ok", "build_error", "ok"]
    assert "undefined_name" in res[1].error or "undefined_name" in res[1].build_log
    assert res[0].batched == 1 and res[2].batched == 1        # built one by one after the program failed
    for job, x, n in ((good, a, 1), (other, b, 3)):
        r = batch_pool.run(job)
        assert r.ok, r.error
        np.testing.assert_array_equal(r.outputs[0], x + np.float32(n))


def test_a_group_whose_worker_died_is_built_again_one_by_one(batch_pool, rng, monkeypatch):
    jobs = [_add_job(n, rng)[0] for n in (11, 12, 13)]
    real = batch_pool._request
    seen = []

    def request(slot, msg, *a, **k):
        seen.append(msg["op"])
        if msg["op"] == "build_batch":
            return {"status": "crash", "signal": 11, "error": "worker killed by signal 11 (SIGSEGV)"}
        return real(slot, msg, *a, **k)
    monkeypatch.setattr(batch_pool, "_request", request)
    res = batch_pool.build(jobs)
    assert seen == ["build_batch", "build", "build", "build"]
    assert [r.status for r in res] == ["ok"] * 3 and [r.batched for r in res] == [1, 1, 1]


def test_a_group_built_ahead_whose_worker_died_is_left_for_each_run(batch_pool, rng, monkeypatch):
    """``alone_after_failure=False`` (Pipeline.prebuild): no second build now; each kernel is built alone when
    it runs, and runs right."""
    jobs = [_add_job(n, rng) for n in (21, 22)]
    real = batch_pool._request
    seen = []

    def request(slot, msg, *a, **k):
        seen.append(msg["op"])
        if msg["op"] == "build_batch":
            return {"status": "hang", "error": "timed out after 60.0 s while building 2 kernels as one program"}
        return real(slot, msg, *a, **k)
    monkeypatch.setattr(batch_pool, "_request", request)
    res = batch_pool.build([j for j, _ in jobs], alone_after_failure=False)
    assert seen == ["build_batch"]
    assert [r.status for r in res] == ["hang", "hang"] and "not alone" in res[0].error
    for (job, a), n in zip(jobs, (21, 22), strict=True):
        r = batch_pool.run(job)
        assert r.ok, r.error
        np.testing.assert_array_equal(r.outputs[0], a + np.float32(n))
    assert seen[1:] == ["run", "run"]


def test_build_batch_is_validated():
    with pytest.raises(ValueError, match="build_batch"):
        WorkerPool("pocl-cpu", build_batch=0)
