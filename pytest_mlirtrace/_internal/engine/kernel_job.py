"""A lowered kernel (codegen's KernelSpec) as the runtime's :class:`~pytest_mlirtrace._internal.runtime.KernelJob`: its
arguments packed from the module's inputs, outputs and scratch buffers allocated, scalars typed."""
from __future__ import annotations

import numpy as np

from .. import codegen, runtime

__all__ = ["kernel_job"]

_CL_SCALARS = {"int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "float": np.float32,
               "double": np.float64, "short": np.int16, "char": np.int8}


def kernel_job(spec, inputs: dict | None, label: str, packed: dict | None = None) -> runtime.KernelJob:
    """The job of ``spec`` on ``inputs`` (None: build only, no arguments, never launched). Solutions of one
    problem lay their inputs out alike: ``packed`` shares one storage buffer per layout between their jobs (one
    InBuf: its key, which lets a worker keep the input on the device, is computed once)."""
    local = tuple(spec.local_size) if spec.local_size else None
    if inputs is None:
        return runtime.KernelJob(spec.source, spec.kernel_name, [], tuple(spec.global_size), local,
                                 spec.build_options, label=label)
    packed = {} if packed is None else packed
    bufs = []
    for b in spec.inputs:
        key = (b.param, b.dtype, b.elements, tuple(b.lens), tuple(b.strides))
        if key not in packed:
            if b.param not in inputs:
                raise KeyError(f"no value for parameter {b.param!r}")
            packed[key] = runtime.InBuf(codegen.pack_input(b, inputs[b.param]))
        bufs.append(packed[key])
    args: list = []
    it = iter(bufs)
    for b in spec.args:
        if b.kind == "input":
            args.append(next(it))
        elif b.kind == "output":
            args.append(runtime.OutBuf((max(b.elements, 1),), b.np_dtype))
        elif b.kind == "scratch":
            args.append(runtime.OutBuf((max(b.nbytes, 1),), np.uint8, fill=0))
        elif b.kind == "scalar":
            args.append(runtime.Scalar(b.value, dtype=_CL_SCALARS.get(b.ctype, b.ctype) or None))
        else:
            raise ValueError(f"unknown kernel argument kind {b.kind!r}")
    return runtime.KernelJob(spec.source, spec.kernel_name, args, tuple(spec.global_size), local,
                             spec.build_options, label=label)
