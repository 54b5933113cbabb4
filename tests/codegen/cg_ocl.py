"""In-process OpenCL runner for codegen tests and benchmarks (the runtime layer isolates; this does not)."""
from __future__ import annotations

import os

import numpy as np


def ensure_env() -> None:
    from pytest_mlirtrace.runtime.pocl_fix import ensure_opencl_env

    ensure_opencl_env()


_CTX = None


def context():
    """(context, queue) on the first OpenCL device (PoCL CPU by default), with profiling."""
    global _CTX
    if _CTX is None:
        ensure_env()
        import pyopencl as cl
        dev = None
        want = os.environ.get("MLIRTRACE_TEST_DEVICE", "")
        for p in cl.get_platforms():
            for d in p.get_devices():
                if dev is None or (want and want.lower() in (p.name + d.name).lower()):
                    dev = d
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        _CTX = (ctx, q, dev)
    return _CTX


def limits():
    from pytest_mlirtrace.codegen import DeviceLimits
    import pyopencl as cl
    ctx, q, d = context()
    kind = "gpu" if d.type & cl.device_type.GPU else "cpu"
    return DeviceLimits(d.max_work_group_size, d.local_mem_size, d.max_compute_units, kind, d.name)


def build(spec):
    import pyopencl as cl
    ctx, q, d = context()
    return cl.Program(ctx, spec.source).build(options=spec.build_options)


def run(spec, inputs: dict, program=None, repeats: int = 0):
    """Run ``spec`` on logical ``inputs``; returns (outputs, [kernel seconds per repeat])."""
    import pyopencl as cl
    from pytest_mlirtrace.codegen import output_buffers, pack_inputs, unpack_outputs
    ctx, q, d = context()
    prg = program or build(spec)
    kern = getattr(prg, spec.kernel_name)
    mf = cl.mem_flags
    ins = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in pack_inputs(spec, inputs)]
    outs_h = output_buffers(spec)
    outs = [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for a in outs_h]
    bufs = {a.name: b for a, b in zip(spec.inputs, ins)}
    bufs.update({a.name: b for a, b in zip(spec.outputs, outs)})
    args = [bufs[a.name] for a in spec.args]
    times = []
    for r in range(max(1, repeats + (1 if repeats else 0))):
        ev = kern(q, spec.global_size, spec.local_size, *args)
        ev.wait()
        if repeats and r > 0:
            times.append((ev.profile.end - ev.profile.start) * 1e-9)
    for h, b in zip(outs_h, outs):
        cl.enqueue_copy(q, h, b)
    q.finish()
    return unpack_outputs(spec, outs_h), times


def check(module, spec, seed=0, program=None):
    """Mismatch (or None) of ``spec`` against the numpy oracle on random inputs."""
    from pytest_mlirtrace.ir import compare, evaluate, random_inputs
    inputs = random_inputs(module, seed=seed)
    want = evaluate(module, inputs)
    got, _ = run(spec, inputs, program)
    red = max(spec.problem.k, spec.problem.reduce_len if spec.problem.kind != "pointwise" else 1, 1)
    return compare(got[0], want[0], module.get(module.returns()[0]).shape.dtype, reduction=red)
