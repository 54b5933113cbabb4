"""mlirtrace's own PoCL kernel cache: exclusive shards, and nothing a failing job wrote is kept."""

import os
import time
import uuid

import numpy as np
import pytest

from pytest_mlirtrace._internal.config import environment
from pytest_mlirtrace._internal.runtime import InBuf, KernelJob, OutBuf, WorkerPool
from pytest_mlirtrace._internal.runtime.opencl_env import pocl_cache


def _entry(shard, name, files=("program.bc",)):
    """A fake PoCL program directory <shard>/<2 letters>/<rest>."""
    d = os.path.join(shard.path, name[:2], name[2:])
    os.makedirs(d, exist_ok=True)
    for f in files:
        with open(os.path.join(d, f), "w") as fh:
            fh.write("x")
    return d


def _tick():
    time.sleep(0.02)   # mtime resolution is ns here; a small gap keeps the windows apart anyway


def test_shards_are_exclusive_per_open_lock(tmp_path):
    a = pocl_cache.claim_shard(str(tmp_path))
    b = pocl_cache.claim_shard(str(tmp_path))
    assert a is not None and b is not None
    assert a.path != b.path
    assert {os.path.basename(a.path), os.path.basename(b.path)} == {"shard-0", "shard-1"}


def test_failed_job_loses_only_what_it_wrote(tmp_path):
    sh = pocl_cache.claim_shard(str(tmp_path))
    old = _entry(sh, "AAOLDENTRY")
    _tick()
    sh.begin("k1")
    new = _entry(sh, "BBNEWENTRY", ("program.bc", "kernel.so"))
    sh.end(ok=False)
    assert os.path.isdir(old) and not os.path.exists(new)
    assert not os.path.exists(os.path.join(sh.path, pocl_cache.JOURNAL))


def test_good_job_keeps_its_entries_and_forget_removes_them_later(tmp_path):
    sh = pocl_cache.claim_shard(str(tmp_path))
    sh.begin("good")
    g = _entry(sh, "CCGOOD")
    sh.end(ok=True)
    _tick()
    sh.begin("other")
    o = _entry(sh, "DDOTHER")
    sh.end(ok=True)
    assert os.path.isdir(g) and os.path.isdir(o)
    assert sh.forget("good") == 1          # judged wrong by the parent afterwards
    assert not os.path.exists(g) and os.path.isdir(o)
    assert sh.forget("good") == 0


def test_a_dead_workers_journal_is_recovered_by_the_next_claim(tmp_path):
    root = str(tmp_path)
    sh = pocl_cache.claim_shard(root)
    keep = _entry(sh, "EEKEEP")
    _tick()
    sh.begin("crashing")
    half = _entry(sh, "FFHALFWRITTEN")
    with open(os.path.join(sh.path, "tempfile_abc.cl"), "w") as f:
        f.write("x")
    os.close(sh._lock_fd)                  # the worker dies mid-job: its lock goes, the journal stays
    again = pocl_cache.claim_shard(root)
    assert again.path == sh.path
    assert os.path.isdir(keep) and not os.path.exists(half)
    assert not os.path.exists(os.path.join(sh.path, "tempfile_abc.cl"))
    assert not os.path.exists(os.path.join(sh.path, pocl_cache.JOURNAL))


def test_cache_root_is_keyed_by_versions_and_target(tmp_path):
    a = pocl_cache.cache_root(str(tmp_path), "3.0", "lib1", "znver3")
    b = pocl_cache.cache_root(str(tmp_path), "3.0", "lib1", "x86-64-v4")
    c = pocl_cache.cache_root(str(tmp_path), "4.0", "lib1", "znver3")
    assert len({a, b, c}) == 3
    assert "znver3" in a and "pocl3.0" in a and "mlirtrace" in os.path.basename(a)


# ---- through real workers -----------------------------------------------------------------------

NO_KERNEL = "static float twice(float x) { return 2.0f * x; }\n// %s\n"


def test_a_build_without_the_kernel_is_a_build_error_with_its_log(pool):
    src = NO_KERNEL % uuid.uuid4().hex
    job = KernelJob(src, "twice_k", [OutBuf((4,), np.float32)], (4,))
    for res in (pool.build([job])[0], pool.run(job)):
        assert res.status == "build_error", res
        assert "no kernel 'twice_k'" in res.error


SCALE = """
__kernel void scale(__global const float *a, __global float *o) {
    const int i = get_global_id(0);
    o[i] = %s * a[i];
    const int tag_%s = 0;   // code, not a comment: PoCL's cache key is the preprocessed source
}
"""


def _worker_shard(pool):
    pool.ping()
    w = pool._slots[0].worker
    return w.ready.get("kernel_cache")


@pytest.mark.usefixtures("pocl_only")
def test_workers_use_mlirtrace_s_cache_and_a_wrong_program_starts_cold_again(cpu_device):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    a = rng.standard_normal(256).astype(np.float32)
    tag = uuid.uuid4().hex
    job = KernelJob(SCALE % ("3.0f", tag), "scale", [InBuf(a), OutBuf((256,), np.float32)], (256,))
    with WorkerPool(cpu_device, workers=1) as p:
        shard = _worker_shard(p)
        assert shard and "pocl-kcache" in shard and os.path.isdir(shard)
        before = set(_programs(shard))
        r = p.run(job)
        np.testing.assert_allclose(r.outputs[0], 3.0 * a, rtol=1e-6)
        written = set(_programs(shard)) - before
        assert written, "the program was not cached in mlirtrace's shard"
        p.forget(job.key)                  # as the tuner does when it judges the numbers wrong
        assert not (set(_programs(shard)) & written)
        again = p.run(job)                 # rebuilt from source, same answer
        assert again.status == "ok" and not again.cached
        np.testing.assert_allclose(again.outputs[0], 3.0 * a, rtol=1e-6)


CRASH = """
__kernel void boom(__global const float *a, __global float *o) {
    __global volatile float *p = (__global volatile float *)0;
    p[get_global_id(0) + 1] = a[0];   // %s
    o[0] = a[0];
}
"""


def test_a_crash_is_a_crash_on_a_cold_and_on_a_warm_cache(cpu_device, tmp_path, monkeypatch):
    monkeypatch.setenv(environment.KCACHE_ROOT, str(tmp_path / "kcache"))   # no other process takes its shard
    job = KernelJob(CRASH % uuid.uuid4().hex, "boom", [InBuf(np.ones(4, np.float32)), OutBuf((4,), np.float32)], (1,))
    kinds = []
    for _ in range(2):                     # two fresh pools: the second one reads the same cache
        with WorkerPool(cpu_device, workers=1) as p:
            shard = _worker_shard(p)
            kinds.append(p.run(job).status)
            p.ping()                       # the replacement worker claims the shard and recovers it
            assert not os.path.exists(os.path.join(shard, pocl_cache.JOURNAL))
    assert kinds == ["crash", "crash"]


def _programs(shard):
    for top in os.listdir(shard):
        d = os.path.join(shard, top)
        if os.path.isdir(d):
            for s in os.listdir(d):
                yield os.path.join(d, s)
