"""Real kernels on the PoCL CPU device through the worker pool."""

import os
import re
import signal
import time
import uuid

import numpy as np
import pytest

from pytest_mlirtrace._internal.runtime import (
    InBuf,
    JobResult,
    KernelJob,
    LocalMem,
    OutBuf,
    Scalar,
    WorkerPool,
    get_pool,
)

VADD = """
__kernel void vadd(__global const float *a, __global const float *b,
                   __global float *c, const int n)
{
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
"""


def vadd_job(rng, n=1000, source=VADD, label="vadd"):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    gs = ((n + 63) // 64) * 64
    job = KernelJob(source, "vadd", [InBuf(a), InBuf(b), OutBuf((n,), np.float32),
                                     Scalar(np.int32(n))], (gs,), (64,), label=label)
    return job, a, b


def assert_vadd_ok(pool, rng):
    job, a, b = vadd_job(rng, n=int(rng.integers(100, 3000)))
    r = pool.run(job)
    assert r.status == "ok", r.error
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)


def test_vadd_matches_numpy(pool, rng):
    job, a, b = vadd_job(rng)
    assert np.abs(a).sum() > 0 and np.abs(b).sum() > 0
    r = pool.run(job)
    assert r.status == "ok", r.error
    assert len(r.outputs) == 1 and r.outputs[0].dtype == np.float32
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    assert len(r.times_ms) == 1 and r.times_ms[0] > 0
    assert r.wall_s > 0 and r.worker_pid in pool.worker_pids()


def test_bench_times_positive(pool, rng):
    job, a, b = vadd_job(rng, n=1 << 16)
    r = pool.run(job, warmup=2, repeats=5)
    assert r.status == "ok", r.error
    assert len(r.times_ms) == 5
    assert all(t > 0 for t in r.times_ms)
    assert r.median_ms > 0 and r.min_ms <= r.median_ms
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)


def test_a_cutoff_stops_timing_and_the_outputs_are_still_right(pool, rng):
    """``cutoff_ms`` (a tune's "clearly slower than the best so far"): past it no more launches are made, the
    result says so, and the outputs (of the last launch) are still read back right."""
    job, a, b = vadd_job(rng, n=1 << 16)
    r = pool.run(job, warmup=1, repeats=5, cutoff_ms=1e-9)      # the warm-up and the first timed launch past it
    assert r.status == "ok" and r.cut and len(r.times_ms) == 1
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    r = pool.run(job, warmup=1, repeats=5, cutoff_ms=1e9)
    assert r.status == "ok" and not r.cut and len(r.times_ms) == 5
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)


def test_one_launch_far_past_cutoff_once_stops_timing(pool, rng):
    """``cutoff_once_ms`` (a tune's "far slower than the best so far"): one launch past it is enough, the
    warm-up's included; that launch's time is the one time given, and the outputs are still right."""
    job, a, b = vadd_job(rng, n=1 << 16)
    r = pool.run(job, warmup=1, repeats=5, cutoff_once_ms=1e-9)
    assert r.status == "ok" and r.cut and len(r.times_ms) == 1 and r.times_ms[0] > 0
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    r = pool.run(job, warmup=1, repeats=5, cutoff_ms=1e9, cutoff_once_ms=1e9)
    assert r.status == "ok" and not r.cut and len(r.times_ms) == 5


CLOBBER = """
__kernel void vadd(__global float *a, __global const float *b, __global float *c, const int n)
{
    int i = get_global_id(0);
    if (i < n) { c[i] = a[i] + b[i]; a[i] = -99.0f; }
}
"""


def _spy_requests(pool, monkeypatch):
    sent = []
    orig = pool._request

    def spy(slot, msg, *a, **k):
        sent.append(msg)
        return orig(slot, msg, *a, **k)
    monkeypatch.setattr(pool, "_request", spy)
    return sent


def test_inputs_go_to_a_worker_once_and_each_run_reads_them_pristine(pool, rng, monkeypatch):
    """A worker keeps the inputs it was sent: the next run of the same inputs there sends only their keys.
    Each run gets its own device copy, so a kernel that writes to an input (this one overwrites ``a``) can't
    change what the next run reads."""
    job, a, b = vadd_job(rng, n=3000, source=CLOBBER)
    sent = _spy_requests(pool, monkeypatch)
    for _ in range(3):
        r = pool.run(job)
        assert r.status == "ok", r.error
        np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    runs = [m for m in sent if m["op"] == "run"]
    arrays = [[x[1] for x in m["args"] if x[0] == "in"] for m in runs]
    assert all(isinstance(x, np.ndarray) for x in arrays[0])
    # later runs on the worker that built it carry no arrays
    assert all(x is None for arrs in arrays[1:] for x in arrs), [type(x) for arrs in arrays for x in arrs]
    # a new array with other contents is a new key: sent, and used
    job2 = KernelJob(CLOBBER, "vadd", [InBuf(a * 2), job.args[1], OutBuf((3000,), np.float32),
                                       Scalar(np.int32(3000))], job.global_size, job.local_size)
    r = pool.run(job2)
    assert r.status == "ok", r.error
    np.testing.assert_allclose(r.outputs[0], 2 * a + b, rtol=1e-6)
    last = [x[1] for x in sent[-1]["args"] if x[0] == "in"]
    assert isinstance(last[0], np.ndarray) and last[1] is None


def test_a_worker_that_dropped_its_inputs_is_sent_them_again(pool, rng, monkeypatch):
    job, a, b = vadd_job(rng, n=2000)
    r = pool.run(job)
    assert r.status == "ok", r.error
    slot = next(s for s in pool._slots if s.worker is not None and s.worker.pid == r.worker_pid)
    with slot.lock:      # the worker drops what it holds (forget does), the pool still thinks it holds them
        pool._request(slot, {"op": "forget", "key": "no such program"}, 30.0, "forget")
    assert slot.inputs_held()
    sent = _spy_requests(pool, monkeypatch)
    r = pool.run(job)
    assert r.status == "ok", r.error
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    runs = [m for m in sent if m["op"] == "run"]
    assert len(runs) == 2
    assert all(x[1] is None for x in runs[0]["args"] if x[0] == "in")
    assert all(isinstance(x[1], np.ndarray) for x in runs[1]["args"] if x[0] == "in")


def test_big_arrays_travel_through_shared_memory_files_that_are_removed(pool, rng, monkeypatch):
    """Arrays of SHM_MIN_BYTES or more go to the worker as files in shared memory, not down its pipe; the
    file is gone once the worker answered, and the results are the same either way."""
    job, a, b = vadd_job(rng, n=(8 << 20) // 4)         # 8 MB each
    sent = _spy_requests(pool, monkeypatch)
    pool.keep_inputs = False
    try:
        for shm in (pool.shm_min_bytes, None):
            pool.shm_min_bytes = shm
            r = pool.run(job)
            assert r.status == "ok", r.error
            np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    finally:
        pool.keep_inputs = True
    via_file, via_pipe = ([x[1] for x in m["args"] if x[0] == "in"] for m in sent if m["op"] == "run")
    assert all(isinstance(x, tuple) and x[0] == "shm" for x in via_file)
    assert not any(os.path.exists(x[1]) for x in via_file)
    assert all(isinstance(x, np.ndarray) for x in via_pipe)


def test_an_array_that_cannot_be_written_to_shared_memory_goes_down_the_pipe(pool, rng, monkeypatch):
    job, a, b = vadd_job(rng, n=(8 << 20) // 4)
    sent = _spy_requests(pool, monkeypatch)
    monkeypatch.setattr(pool._shm, "dir", os.path.join(os.devnull, "no-such-dir"))   # every write fails
    monkeypatch.setattr(pool, "keep_inputs", False)
    r = pool.run(job)
    assert r.status == "ok", r.error
    np.testing.assert_allclose(r.outputs[0], a + b, rtol=1e-6)
    assert all(isinstance(x[1], np.ndarray) for x in sent[-1]["args"] if x[0] == "in")


def test_local_memory_reduction(pool, rng):
    src = """
    __kernel void wgsum(__global const float *x, __global float *out,
                        __local float *tmp, const float scale)
    {
        int l = get_local_id(0), n = get_local_size(0);
        tmp[l] = x[get_global_id(0)];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = n / 2; s > 0; s >>= 1) {
            if (l < s) tmp[l] += tmp[l + s];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (l == 0) out[get_group_id(0)] = tmp[0] * scale;
    }
    """
    wg, groups = 64, 16
    x = rng.standard_normal(wg * groups).astype(np.float32)
    job = KernelJob(src, "wgsum", [InBuf(x), OutBuf(groups, np.float32), LocalMem(wg * 4),
                                   Scalar(np.float32(0.5))], (wg * groups,), (wg,))
    r = pool.run(job)
    assert r.status == "ok", r.error
    np.testing.assert_allclose(r.outputs[0], x.reshape(groups, wg).sum(1) * 0.5,
                               rtol=1e-4, atol=1e-5)


def test_half_storage_and_fill(pool, rng):
    # no cl_khr_fp16 on PoCL CPU: half storage through vload_half/vstore_half
    src = """
    __kernel void twice(__global const half *x, __global half *y, __global int *z)
    {
        int i = get_global_id(0);
        vstore_half(2.0f * vload_half(i, x), i, y);
        if (i % 2 == 0) z[i] = i;
    }
    """
    n = 256
    x = rng.standard_normal(n).astype(np.float16)
    job = KernelJob(src, "twice", [InBuf(x), OutBuf(n, np.float16), OutBuf(n, np.int32, fill=-7)],
                    (n,), None)
    r = pool.run(job)
    assert r.status == "ok", r.error
    np.testing.assert_array_equal(r.outputs[0], (2 * x.astype(np.float32)).astype(np.float16))
    z = r.outputs[1]
    assert (z[0::2] == np.arange(0, n, 2)).all() and (z[1::2] == -7).all()


def test_kernel_printf_does_not_break_protocol(pool):
    src = '__kernel void hello(__global int *o) { printf("hello %d\\n", 42); o[0] = 1; }'
    r = pool.run(KernelJob(src, "hello", [OutBuf(1, np.int32)], (1,)))
    assert r.status == "ok", r.error
    assert r.outputs[0][0] == 1


def test_build_error_has_log(pool, rng):
    src = "__kernel void broken(__global float *a) { a[0] = undefined_thing + ; }"
    job = KernelJob(src, "broken", [OutBuf(4, np.float32)], (1,), label="broken-solution")
    [b] = pool.build([job])
    assert b.status == "build_error"
    assert "undefined_thing" in b.build_log or "expected expression" in b.build_log
    assert b.error.startswith("build failed")
    r = pool.run(job)
    assert r.status == "build_error" and r.outputs == []
    assert "error" in r.build_log
    assert r.label == "broken-solution"
    assert_vadd_ok(pool, rng)


def test_compiler_output_goes_to_the_result_not_to_stderr(pool):
    """Builds go through pyopencl's public Program: a failed build is a build_error whose first line
    is the compiler's, its log is the full log; pyopencl adds no noise (no CompilerWarning on stderr,
    no saved source files) and no cache of its own."""
    tag = uuid.uuid4().hex[:8]
    # the tag in code too: PoCL's cache key is the preprocessed source, which has no #warning
    src = f"#warning mlirtrace_{tag}\n__kernel void w(__global int *o) {{ o[0] = 1; int t_{tag} = 0; }}\n"
    r = pool.run(KernelJob(src, "w", [OutBuf(1, np.int32)], (1,)))
    assert r.status == "ok" and r.outputs[0][0] == 1, r.error
    assert f"mlirtrace_{tag}" in r.build_log
    bad = ("__kernel void broken2(__global float *a) {\n  a[0] = 1.0f;\n"
           f"  a[1] = undefined_{tag};\n}}\n")
    [b] = pool.build([KernelJob(bad, "broken2", [OutBuf(4, np.float32)], (1,))])
    assert b.status == "build_error"
    first = b.error.splitlines()[0]
    assert first.startswith("build failed: ") and f"undefined_{tag}" in first and "error" in first
    if pool.device.key_name == "pocl-cpu":
        assert "<source>" in first              # PoCL's temp file name, made stable
    assert not re.search(r"tempfile_\w+|/tmp/", first)
    assert f"undefined_{tag}" in b.build_log and b.build_log.count("\n") >= 1
    assert "source saved as" not in b.error + b.build_log
    time.sleep(0.5)                             # the stderr drain thread reads asynchronously
    for s in pool._slots:
        if s.worker is not None:
            tail = s.worker.stderr_tail()
            assert "CompilerWarning" not in tail and "Non-empty compiler output" not in tail, tail


def test_a_kernel_the_program_lacks_is_a_build_error_however_the_program_was_built(pool, rng):
    """The same job gets the same verdict whatever ran before it (under xdist, this test may be a worker's
    first): its program built fresh, or held by a worker since an earlier job."""
    fresh = VADD + f"\n// {rng.integers(1 << 62)}: not built before\n"
    r = pool.run(KernelJob(fresh, "no_such_kernel", [], (1,)))
    assert r.status == "build_error" and "no kernel 'no_such_kernel'" in r.error and "'vadd'" in r.error, r
    assert_vadd_ok(pool, rng)                  # VADD built and held
    r = pool.run(KernelJob(VADD, "no_such_kernel", [], (1,)))
    assert r.status == "build_error" and "no kernel 'no_such_kernel'" in r.error and "'vadd'" in r.error, r


def test_launch_errors(pool, rng):
    job, a, b = vadd_job(rng, n=100)
    # PoCL (OpenCL 3.0 without non-uniform work-groups): global % local must be 0
    bad = KernelJob(job.source, "vadd", job.args, (100,), (64,))
    r = pool.run(bad)
    assert r.status == "launch_error" and "INVALID_WORK_GROUP_SIZE" in r.error
    r = pool.run(KernelJob(job.source, "vadd", job.args[:2], (64,)))
    assert r.status == "launch_error"
    assert_vadd_ok(pool, rng)


def test_out_of_bounds_write_crashes_then_pool_recovers(pool, rng):
    # a 1e12-element stride leaves every mapping: SIGSEGV in PoCL's worker thread
    src = "__kernel void oob(__global int *p) { p[get_global_id(0) * 1000000000000L] = 1; }"
    before = set(pool.worker_pids())
    r = pool.run(KernelJob(src, "oob", [OutBuf(64, np.int32)], (64,), label="oob"))
    assert r.status == "crash", r
    if pool.device.kind == "cpu":       # the worker process dies; a GPU reports a device fault instead
        assert r.signal == signal.SIGSEGV
        assert "signal 11 (SIGSEGV)" in r.error.splitlines()[0]
    assert r.outputs == []
    assert_vadd_ok(pool, rng)
    assert_vadd_ok(pool, rng)
    assert pool.stats["crashes"] >= 1
    assert set(pool.worker_pids()) != before


@pytest.mark.parametrize("past", [1, 7, 300])
def test_a_write_just_past_an_output_is_found_every_time_and_the_worker_kept(pool, rng, past):
    # writes a few elements past the end: inside the allocator's slack, no signal; the guard zone sees them
    n = int(rng.integers(50, 500))
    src = ("__kernel void over(__global float *p, const int n) "
           "{ int i = get_global_id(0); p[i] = 2.0f * i; }")
    job = KernelJob(src, "over", [OutBuf((n,), np.float32), Scalar(np.int32(n))], (n + past,), label="over")
    for _ in range(3):
        before = set(pool.worker_pids())
        r = pool.run(job)
        assert r.status == "crash", r
        assert r.signal is None
        first = r.error.splitlines()[0]
        assert "the kernel wrote past the end of output 0: the guard zone after it changed" in first, first
        # the last float written ends at byte 4*past (a last byte equal to the fill leaves up to 3 fewer)
        last = int(re.search(r"up to byte (\d+) of 4096", first).group(1))
        assert 4 * past - 3 <= last <= 4 * past, first
        assert set(pool.worker_pids()) == before        # the zone took the writes: nothing else was hit
    # the same kernel, in bounds: ok, and its output is what it wrote
    r = pool.run(KernelJob(src, "over", job.args, (n,), label="in"))
    assert r.status == "ok", r.error
    np.testing.assert_array_equal(r.outputs[0], 2.0 * np.arange(n, dtype=np.float32))


def test_infinite_loop_hangs_then_pool_recovers(pool, rng):
    # the loop reads a volatile global that nobody changes: it cannot be deleted
    src = """
    __kernel void spin(volatile __global int *flag, __global int *out)
    {
        while (flag[0] == 0) { }
        out[0] = 1;
    }
    """
    job = KernelJob(src, "spin", [OutBuf(1, np.int32, fill=0), OutBuf(1, np.int32)], (1,))
    pool.build([job])
    t0 = time.monotonic()
    r = pool.run(job, timeout_s=3.0)
    took = time.monotonic() - t0
    assert r.status == "hang", r
    assert "timed out after 3.0 s" in r.error and "worker killed" in r.error
    # it waited the timeout out, and not much longer: the kill and a worker restart, however loaded the machine
    assert 3.0 <= took + 0.05 and took < 3.0 + pool.kill_grace_s + pool.startup_timeout_s, took
    assert_vadd_ok(pool, rng)


def test_parallel_build_overlaps(pool, rng):
    # fresh sources, no PoCL kernel-cache hits: PoCL hashes the *preprocessed*
    # source, so the tag must be code, not a comment
    tag = uuid.uuid4().hex[:8]
    jobs = []
    for k in range(6):
        src = VADD.replace("int i = get_global_id(0);",
                           f"int i = get_global_id(0); int tag_{tag} = 0;")
        src = src.replace("a[i] + b[i]", f"a[i] * {k + 2}.0f + b[i]")
        job, a, b = vadd_job(rng, n=500, source=src, label=f"cfg{k}")
        jobs.append((job, a, b, k + 2))
    t0 = time.monotonic()
    results = pool.build([j for j, *_ in jobs])
    wall = time.monotonic() - t0
    assert [r.status for r in results] == ["ok"] * 6, [r.error for r in results]
    assert [r.label for r in results] == [f"cfg{k}" for k in range(6)]
    assert len({r.worker_pid for r in results}) == pool.workers
    total = sum(r.build_s for r in results)
    assert total > 0 and wall < total, (wall, total)
    # each job runs on the worker that built it: no rebuild
    for job, a, b, k in jobs:
        r = pool.run(job)
        assert r.status == "ok" and r.cached and r.build_s == 0.0
        # PoCL contracts a*k+b into an fma: compare with an absolute tolerance
        np.testing.assert_allclose(r.outputs[0], a * k + b, rtol=1e-5, atol=1e-5)
    # a second build() of the same jobs is answered from the pool's memory
    again = pool.build([j for j, *_ in jobs])
    assert all(r.cached for r in again)


def test_scalar_requires_width():
    with pytest.raises(TypeError):
        Scalar(3)
    assert Scalar(3, np.int32).value.dtype == np.int32
    with pytest.raises(TypeError):
        KernelJob(VADD, "vadd", [np.zeros(3)], (1,))


def test_job_result_median():
    assert JobResult("ok", times_ms=[3.0, 1.0, 2.0]).median_ms == 2.0
    assert np.isnan(JobResult("crash").median_ms)


def test_get_pool_reused_and_close_leaves_no_processes(cpu_device, rng):
    p1 = get_pool(cpu_device.spec, workers=1)
    assert get_pool(cpu_device.spec) is p1
    pids = p1.ping()
    assert_vadd_ok(p1, rng)
    p1.close()
    assert p1.closed
    with pytest.raises(RuntimeError):
        p1.run(vadd_job(rng)[0])
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"worker {pid} left behind"
    p2 = get_pool(cpu_device.spec, workers=1)
    assert p2 is not p1
    p2.close()


def test_pool_from_spec_string(rng):
    with WorkerPool("pocl", workers=1, timeout_s=20) as p:
        assert p.device.key_name == "pocl-cpu"
        assert_vadd_ok(p, rng)
        pids = p.worker_pids()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}")
