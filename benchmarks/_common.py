"""Shared helpers of the benchmark scripts: modules, numpy timing, environment report."""
from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np

from pytest_mlirtrace._internal.config import resolve
from pytest_mlirtrace._internal.ir import Module
from pytest_mlirtrace._internal.ir.examples import seed_module as _seed

#: the device setting (MLIRTRACE_DEVICE, as the CLI resolves it; None: PoCL's CPU device)
DEVICE = resolve().device


def seed_module(dt="f32", g=1, heads=12, seq=384, hd=64, n=768) -> Module:
    """The seed's fused op transpose -> reshape -> dot -> add (g batches)."""
    return _seed(dt, g=g, heads=heads, seq=seq, hd=hd, n=n)


def square_module(dt="f32", g=1, m_=1024, n=1024, k=1024) -> Module:
    """dot + add with a transposed A: the same fused pattern at a square size."""
    m = Module()
    a = m.add_param("a", dt, [g, k, m_])
    b = m.add_param("b", dt, [g, k, n])
    c = m.add_param("c", dt, [g, m_, n])
    at = m.add("transpose", a, permutation=[0, 2, 1])
    m.add_return(m.add("add", m.add("dot", at, b), c))
    return m


def numpy_ms(fn, repeats=7, warmup=2) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def torch_ms(fn, repeats=20, warmup=3) -> float:
    """Median CUDA-event time of ``fn`` in milliseconds (torch with CUDA)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info

        infos = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} threads={i.get('num_threads')}"
                 for i in threadpool_info() if i.get("user_api") == "blas"]
        return "; ".join(infos) or "unknown"
    except ImportError:
        return "threadpoolctl not installed"


def env_report(device) -> str:
    keys = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")
    env = ", ".join(f"{k}={os.environ[k]}" for k in keys if k in os.environ) or "no BLAS overrides"
    return (f"machine: {platform.machine()} {os.cpu_count()} cpus; numpy {np.__version__}; blas: {blas_info()}; "
            f"{env}\ndevice: {device.name} [{device.platform}] key={device.key_name}")
