"""The numpy oracle's verdict on a kernel's outputs: its tolerances, the check on the host, and the same check
handed to the device (:class:`..runtime.OutCheck`: only the outputs that fail there come back)."""
from __future__ import annotations

import numpy as np

from .. import codegen, ir, runtime

__all__ = ["oracle_tolerances", "check_outputs", "device_checks"]


def oracle_tolerances(module: ir.Module, problem) -> list[tuple[float, float]]:
    """Per output of ``module``: the (rtol, atol) its oracle check uses (see ir.result_precisions)."""
    red = getattr(problem, "k", None) or getattr(problem, "reduce_len", None) or 1
    return [ir.tolerance(p, red) for p in ir.result_precisions(module)]


def check_outputs(module: ir.Module, spec, outputs: list, expected: list, bounds: list) -> str:
    """'' when the outputs of the kernel ``spec`` match the oracle within the error bounds of the computation
    (ir.error_bounds: bit-exact for exact ops), else what differs."""
    got = codegen.unpack_outputs(spec, outputs)
    for i, (g, e, s, b) in enumerate(zip(got, expected, module.output_shapes(), bounds, strict=False)):
        mm = ir.compare_bounded(g, e, s.dtype, b)
        if mm is not None:
            return f"output {i}: {mm}"
    return ""


def device_checks(module: ir.Module, spec, expected: list, bounds: list, cache: dict) -> list | None:
    """The OutChecks of ``spec``'s outputs against the oracle (``cache``: their arrays, made once per tune
    and output); None where an output's kind has no device check (then the outputs come back)."""
    shapes = module.output_shapes()
    checks = []
    for pos, a in enumerate(spec.outputs):
        dt = ir.dtype(shapes[a.index].dtype)
        want = np.asarray(expected[a.index])
        if dt.name not in runtime.CHECK_KINDS or a.elements != want.size or not want.size:
            return None
        if a.index not in cache:      # the oracle's values as stored, the bounds as float32 rounded down
            vals = want.reshape(-1).view(np.uint8) if want.dtype == np.bool_ else want.reshape(-1)
            b = np.asarray(bounds[a.index].abs, dtype=np.float64)
            b = b.reshape(1) if b.size == 1 else np.broadcast_to(b, want.shape).reshape(-1)
            cache[a.index] = (runtime.InBuf(vals), runtime.InBuf(runtime.bound_f32(b)))
        want_buf, bound_buf = cache[a.index]
        checks.append(runtime.OutCheck(pos, dt.name, want_buf, bound_buf))
    return checks
