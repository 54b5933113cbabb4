"""The data a reproducer script carries: texts, the recorded failure, and what the standalone path
needs (kernel argument layout, how to rebuild the inputs, the oracle's outputs).

The standalone layout is checked when it is written: the template's own input generator and packing
must give byte for byte what ``ir.random_inputs`` + ``codegen.pack_inputs`` give, and the template's
unpacking must read output buffers as ``codegen.unpack_outputs`` does. Where the inputs differ they
are embedded as codegen packed them (small problems only); where the outputs differ the standalone
path is left out, and the payload says why.
"""
from __future__ import annotations

import importlib.metadata
import platform

import numpy as np

from .. import codegen, ir, runtime
from ..engine import oracle_tolerances, parse_problem_key, parse_solution
from . import reproducer_template as tmpl
from .evidence import assess
from .record import FailureRecord
from .rerun import module_of
from .signature import first_line

FULL_EXPECTED_BYTES = 1 << 20      # oracle outputs up to 1 MiB are embedded whole, larger ones sampled
SAMPLE_POSITIONS = 4096            # per output, deterministic (seeded) sample of positions
MAX_PACKED_INPUT_BYTES = 8 << 20   # fallback: embed packed inputs up to this size


def versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in ("pytest-mlirtrace", "numpy", "pyopencl", "pocl-binary-distribution", "xdsl", "pytest"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def device_key(rec: FailureRecord) -> str:
    """The device's key name (``pocl-cpu``, ``nvidia-h200``): the problem key's arch field."""
    try:
        arch = parse_problem_key(rec.span.problem_key).get("arch", "")
    except Exception:   # noqa: BLE001
        arch = ""
    return arch or getattr(rec.device_info, "key_name", "") or rec.span.device


def device_description(rec: FailureRecord) -> str:
    d = rec.device_info
    if d is not None and getattr(d, "name", None):
        extra = ", ".join(x for x in (getattr(d, "platform", ""), getattr(d, "driver_version", "")) if x)
        return f"{d.name} ({extra}) [{getattr(d, 'key_name', '')} {getattr(d, 'spec', '')}]".strip()
    return f"{device_key(rec)} [{rec.span.device}]"


def build_payload(rec: FailureRecord, sig: str) -> dict:
    s = rec.span
    data = {
        "format": 1, "signature": sig, "kind": rec.kind, "stage": rec.stage, "error": rec.error,
        "error_first_line": first_line(rec.error), "origin": rec.origin, "seed": int(rec.seed),
        "inject": rec.inject, "module_text": s.module_text, "mlir_text": s.mlir_text,
        "problem_key": s.problem_key, "solution": s.solution, "kernel_source": s.kernel_source,
        "kernel_name": s.kernel_name, "device": s.device, "device_key": device_key(rec),
        "device_description": device_description(rec), "span_hash": s.hash, "time_ms": rec.time_ms,
        "max_ms": rec.max_ms, "timeout_s": rec.timeout_s, "build_log": rec.build_log,
        "mismatch": rec.mismatch, "bench_table": rec.bench_table, "versions": versions(),
        "planted": rec.planted, "solutions": [s.solution], "passed": [p for p in rec.passed if p != s.solution],
    }
    try:
        data["standalone"], data["standalone_reason"] = standalone_data(rec)
    except Exception as e:   # noqa: BLE001 - the package path still works without it
        data["standalone"], data["standalone_reason"] = None, f"{type(e).__name__}: {e}"
    data["suspect"] = assess(rec).to_dict()
    return data


# ------------------------------------------------------------------------------- standalone ---
def _spec_of(rec: FailureRecord, module):
    """The KernelSpec of the recorded kernel: the one recorded, else lowered again (same solution, fault)."""
    if rec.spec is not None and getattr(rec.spec, "source", None) == rec.span.kernel_source:
        return rec.spec, ""
    dev = rec.device_info if rec.device_info is not None else runtime.resolve_device(rec.span.device)
    sol = parse_solution(codegen.problem_of(module), rec.span.solution, rec.inject or None)
    spec = codegen.lower(module, sol, dev, inject=rec.inject or None)
    if spec.source != rec.span.kernel_source:
        return None, "lowering the MLIR again does not give the recorded kernel"
    return spec, ""


_CTYPES = {"char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "uint": "u4", "long": "i8",
           "ulong": "u8", "float": "f4", "double": "f8", "half": "f2"}


def _scalar(b) -> dict:
    ct = (getattr(b, "ctype", "") or "").replace("unsigned ", "u").strip()
    v = b.value
    dt = np.dtype(_CTYPES[ct]) if ct in _CTYPES else np.asarray(v).dtype
    return {"kind": "scalar", "dtype": dt.str, "value": np.asarray(v).astype(dt).item()}


def kernel_layout(spec) -> list[dict]:
    """Each kernel argument of ``spec`` (codegen's ArgBinding) as data: what pack_inputs and
    unpack_outputs do with it (kind, storage dtype, lens, strides, element count)."""
    args = []
    for b in spec.args:
        if b.kind == "input":
            args.append({"kind": "input", "param": b.param, "dtype": b.dtype, "storage_dtype": b.np_dtype.str,
                         "lens": [int(x) for x in b.lens], "strides": [int(x) for x in b.strides],
                         "element_space": int(b.elements)})
        elif b.kind == "output":
            args.append({"kind": "output", "index": int(b.index), "dtype": b.dtype, "storage_dtype": b.np_dtype.str,
                         "lens": [int(x) for x in b.lens], "element_space": int(b.elements)})
        elif b.kind == "scratch":
            args.append({"kind": "scratch", "nbytes": int(b.nbytes)})
        elif b.kind == "scalar":
            args.append(_scalar(b))
        elif b.kind == "local":
            args.append({"kind": "local", "nbytes": int(b.nbytes)})
        else:
            raise ValueError(f"unknown kernel argument kind {b.kind!r}")
    return args


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _bound_f32(b: np.ndarray) -> np.ndarray:
    """A bound in float32 (half the bytes), rounded up so that it never allows less than the compiler's."""
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(over="ignore"):
        b32 = b.astype(np.float32)
    return np.where(b32.astype(np.float64) < b, np.nextafter(b32, np.float32(np.inf)), b32)


def _expected_entry(i: int, arr: np.ndarray, shape, rtol: float, atol: float, sample: bool, bound=None) -> dict:
    """One output as the reproducer checks it: the oracle's values and (``bound``: an ``ir.Bound``) the error bound
    of each element and where an overflow is right either way, as the compiler's check uses them; ``rtol`` and
    ``atol`` stay for a reader without bounds."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    entry = {"index": i, "dtype": shape.dtype.name, "lens": list(shape.lens), "rtol": rtol, "atol": atol,
             "positions": None}
    b = o = None
    if bound is not None:
        b = np.broadcast_to(bound.abs, np.shape(arr)).reshape(-1)
        o = np.broadcast_to(bound.overflow_ok, np.shape(arr)).reshape(-1)
    if sample and flat.size > SAMPLE_POSITIONS:
        rng = np.random.default_rng(1234 + i)
        pos = np.sort(rng.choice(flat.size, size=SAMPLE_POSITIONS, replace=False)).astype(np.int64)
        entry["positions"] = tmpl._pack_array(pos)
        flat = flat[pos]
        b, o = (None, None) if b is None else (b[pos], o[pos])
    entry["values"] = tmpl._pack_array(flat)
    if b is not None:
        entry["bound"] = tmpl._pack_array(_bound_f32(b))
        entry["overflow_ok"] = tmpl._pack_array(np.asarray(o, dtype=np.bool_))
    return entry


def standalone_data(rec: FailureRecord) -> tuple[dict | None, str]:
    """What the numpy + pyopencl path needs, or (None, why not)."""
    if not rec.span.kernel_source.strip():
        return None, f"no kernel was produced ({rec.kind} before code generation)"
    module = module_of(rec)
    spec, why = _spec_of(rec, module)
    if spec is None:
        return None, why
    layout = kernel_layout(spec)
    params = [{"param": p.param, "dtype": p.shape.dtype.name, "storage_dtype": p.shape.dtype.np.str,
               "is_float": p.shape.dtype.is_float, "lens": list(p.shape.lens)} for p in module.params()]
    inputs = ir.random_inputs(module, rec.seed)
    expected, env = ir.evaluate(module, inputs, keep_all=True)
    bounds = ir.error_bounds(module, env)
    notes = []

    # inputs: the template's generator + packing must give what ir.random_inputs + codegen.pack_inputs give
    ref = codegen.pack_inputs(spec, inputs)
    mine_values = tmpl.random_inputs(params, rec.seed)
    mine = [tmpl.pack_input(mine_values[a["param"]], a) for a in layout if a["kind"] == "input"]
    inputs_packed = None
    if len(ref) != len(mine) or not all(_same(r, m) for r, m in zip(ref, mine, strict=True)):
        if sum(np.asarray(r).nbytes for r in ref) > MAX_PACKED_INPUT_BYTES:
            return None, "the input layout could not be described as data and the inputs are too big to embed"
        inputs_packed = [tmpl._pack_array(r) for r in ref]
        notes.append("inputs embedded as codegen packed them")

    # outputs: the template's unpacking must read what codegen.unpack_outputs reads
    outs = [a for a in layout if a["kind"] == "output"]
    # distinct small values (they must survive the storage dtype, f16 and i8 included)
    bufs = [(np.arange(a["element_space"]) % 127).astype(np.dtype(a["storage_dtype"])) for a in outs]
    ref_out = codegen.unpack_outputs(spec, bufs)
    for a, buf in zip(outs, bufs, strict=True):
        if not _same(tmpl.unpack_output(buf, a), ref_out[a["index"]]):
            return None, "the output layout could not be described as data"

    tols = oracle_tolerances(module, codegen.problem_of(module))
    sample = sum(np.asarray(e).nbytes for e in expected) > FULL_EXPECTED_BYTES
    exp = []
    for i, (e, shp, (rtol, atol), bnd) in enumerate(zip(expected, module.output_shapes(), tols, bounds, strict=False)):
        exp.append(_expected_entry(i, np.asarray(e), shp, rtol, atol, sample, bnd))
    return {"args": layout, "params": params, "inputs_packed": inputs_packed, "expected": exp,
            "build_options": getattr(spec, "build_options", "") or "",
            "global_size": [int(x) for x in spec.global_size],
            "local_size": [int(x) for x in spec.local_size] if getattr(spec, "local_size", None) else None,
            "notes": notes}, ""
