"""The driver's first-launch compile is timed apart from the launch: PoCL compiles a kernel's work-group
function when it first runs, which on a loaded machine can take longer than a hang limit meant for the
kernel itself (issue 20: a clean f16 kernel took 16 s cold and was written up as a hang)."""

import time
import uuid

import numpy as np
import pytest

from pytest_mlirtrace._internal.runtime import InBuf, KernelJob, OutBuf


def heavy_job(rng, lines=1500):
    """A kernel whose body takes PoCL a second or more to compile, and microseconds to run; fresh source
    (a unique constant) so that no kernel cache answers for it."""
    salt = uuid.uuid4().int % 1_000_003
    body = "\n".join(f"    acc = acc * {1.0 + (i % 7) * 1e-4:.6f}f + sin(acc + {i + salt}.0f);" for i in range(lines))
    src = f"""
__kernel void heavy(__global const float *a, __global float *o)
{{
    int i = get_global_id(0);
    float acc = a[i];
{body}
    o[i] = acc;
}}
"""
    a = rng.standard_normal(16).astype(np.float32)
    return KernelJob(src, "heavy", [InBuf(a), OutBuf((16,), np.float32)], (16,), (4,))


@pytest.mark.usefixtures("pocl_only")
def test_first_launch_compile_is_not_counted_against_the_run_limit(pool, rng):
    job = heavy_job(rng)
    pool.build([job])                      # the program builds; the work-group function is still to compile
    t0 = time.monotonic()
    r = pool.run(job, timeout_s=0.5, compile_timeout_s=120.0)
    took = time.monotonic() - t0
    assert r.status == "ok", r.error
    assert took > 0.5, f"the first launch took {took:.2f}s: this kernel no longer tests a slow first-launch compile"
    assert np.isfinite(r.outputs[0]).all()


@pytest.mark.usefixtures("pocl_only")
def test_without_a_compile_limit_the_first_launch_compile_counts_as_the_run(pool, rng):
    job = heavy_job(rng)
    pool.build([job])
    r = pool.run(job, timeout_s=0.3)
    assert r.status == "hang", r
    assert "while running" in r.error


def test_a_hang_after_the_first_launch_compile_is_still_a_hang_within_the_run_limit(pool):
    salt = uuid.uuid4().int % 1_000_003
    src = f"""
    __kernel void spin(volatile __global int *flag, __global int *out)
    {{
        while (flag[0] == 0) {{ }}
        out[0] = {salt};
    }}
    """
    job = KernelJob(src, "spin", [OutBuf(1, np.int32, fill=0), OutBuf(1, np.int32)], (1,))
    pool.build([job])
    t0 = time.monotonic()
    r = pool.run(job, timeout_s=2.0, compile_timeout_s=120.0)
    took = time.monotonic() - t0
    assert r.status == "hang", r
    assert "timed out after 2.0 s while running" in r.error
    assert took < 60, took
