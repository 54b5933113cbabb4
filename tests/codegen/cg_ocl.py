"""Runs generated kernels for codegen tests through the isolated runtime (worker processes).

Nothing here imports pyopencl: every build and launch goes to ``pytest_mlirtrace._internal.runtime``'s worker
pool, so a backend crash (a SIGSEGV in PoCL), a hang or a build error becomes a failed test, never a
dead pytest run.  The device is ``$MLIRTRACE_TEST_DEVICE`` (a runtime device spec), else the pool's
default (``$MLIRTRACE_DEVICE`` or PoCL's CPU device).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from pytest_mlirtrace._internal.vocab import Status

from ..settings import DEVICE

TIMEOUT_S = 120.0   # per phase (build, run): the machine is shared and the full-size seed is big

_CL_SCALARS = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "float": np.float32,
               "double": np.float64, "short": np.int16, "char": np.int8}


def pool():
    """The process-wide worker pool on the test device (created on first use, again if closed)."""
    from pytest_mlirtrace._internal.runtime import get_pool
    return get_pool(os.environ.get("MLIRTRACE_TEST_DEVICE") or DEVICE)


def limits():
    """The real device's limits (a runtime ``DeviceInfo``: what ``codegen.lower`` reads, vector_bits too)."""
    return pool().device


def job(spec, inputs: dict):
    """The runtime ``KernelJob`` of ``spec`` on logical ``inputs`` (outputs zeroed before each launch)."""
    from pytest_mlirtrace._internal.codegen import pack_inputs
    from pytest_mlirtrace._internal.runtime import InBuf, KernelJob, OutBuf, Scalar
    ins = iter(pack_inputs(spec, inputs))
    args = []
    for a in spec.args:
        if a.kind == "input":
            args.append(InBuf(next(ins)))
        elif a.kind == "output":
            args.append(OutBuf((max(a.elements, 1),), a.np_dtype, fill=0))
        elif a.kind == "scratch":
            args.append(OutBuf((max(a.nbytes, 1),), np.uint8, fill=0))
        elif a.kind == "scalar":
            args.append(Scalar(a.value, dtype=_CL_SCALARS.get(a.ctype, a.ctype) or None))
        else:
            raise ValueError(f"unknown kernel argument kind {a.kind!r}")
    return KernelJob(spec.source, spec.kernel_name, args, tuple(spec.global_size),
                     tuple(spec.local_size) if spec.local_size else None, spec.build_options,
                     label=f"{spec.problem.key()} solution {spec.solution}")


def run(spec, inputs: dict, repeats: int = 0):
    """Run ``spec`` on logical ``inputs``; returns (outputs, [kernel seconds per repeat]).

    A result other than ``ok`` (build_error, crash, hang, launch_error) fails the calling test."""
    from pytest_mlirtrace._internal.codegen import unpack_outputs
    j = job(spec, inputs)
    res = pool().run(j, warmup=1 if repeats else 0, repeats=max(1, repeats), timeout_s=TIMEOUT_S)
    if res.status != Status.OK:
        where = "" if j.label in res.first_line else f"{j.describe()}: "   # crash/hang errors name it already
        pytest.fail(f"{where}{res.status}: {res.first_line}", pytrace=False)
    # the pool returns the OutBufs (outputs and scratch) in argument order
    outs = [o for a, o in zip([a for a in spec.args if a.kind in ("output", "scratch")], res.outputs, strict=False)
            if a.kind == "output"]
    times = [t * 1e-3 for t in res.times_ms] if repeats else []
    return unpack_outputs(spec, outs), times


def check(module, spec, seed=0):
    """Mismatch (or None) of ``spec`` against the numpy oracle on random inputs."""
    from pytest_mlirtrace._internal.ir import compare, evaluate, random_inputs
    inputs = random_inputs(module, seed=seed)
    want = evaluate(module, inputs)
    got, _ = run(spec, inputs)
    red = max(spec.problem.k, spec.problem.reduce_len if spec.problem.kind != "pointwise" else 1, 1)
    return compare(got[0], want[0], module.get(module.returns()[0]).shape.dtype, reduction=red)
