"""Checking a kernel's output on the device, against the oracle's values sent there once.

A tune checks every solution's outputs. At 4096 x 4096 that was, per solution, 64 MB read back, sent to the
parent and compared there in float64: about a second each on the H200's host, more than the kernels took
(benchmarks/bench_tune.py). So the worker runs one small kernel of its own over the output buffer, still on
the device, and reads back one flag.

The rule is the parent's (``ir.compare_bounded``) taken conservatively: an element passes when it equals the
oracle's value (both NaN counts as equal), or both are finite and ``|got - want| <= bound``, computed in
double as numpy does (the oracle's values in the output's storage type, exact; the bounds as floats rounded
toward zero, never looser). Every element that passes here passes there; an element the parent would also accept
for another reason (an overflow allowed either way, an unchecked element that came out inf) fails here, and
then the outputs are read back and the parent decides as before. So the device check only ever skips the
read-back of outputs the parent would accept.

Storage kinds without a conversion here (the 8- and 4-bit floats, u64) and devices without double precision
are not checked on the device: their outputs go back as before.

Loaded by file path in the worker (no package imports here).
"""

from __future__ import annotations

# ir dtype name -> (OpenCL storage type, element i of array P as a double); the oracle's values come in the
# output's own storage type (exact: every stored value is a double), the bounds as floats rounded down
_FLOAT = {
    "f32": ("float", "(double)P[i]"),
    "f64": ("double", "P[i]"),
    "f16": ("half", "(double)vload_half(i, P)"),
    "bf16": ("ushort", "(double)as_float(((uint)P[i]) << 16)"),
}
_INT = {
    "bool": "uchar", "u8": "uchar", "i8": "char", "u16": "ushort", "i16": "short",
    "u32": "uint", "i32": "int", "i64": "long",
}
KINDS = tuple(_FLOAT) + tuple(_INT)
_BYTES = {"double": 8, "long": 8, "float": 4, "int": 4, "uint": 4, "half": 2, "short": 2, "ushort": 2, "char": 1,
          "uchar": 1}


def itemsize(kind: str) -> int:
    """Bytes of one stored element of a ``kind`` output (and of the oracle's values for it)."""
    return _BYTES[_FLOAT[kind][0] if kind in _FLOAT else _INT[kind]]


KERNEL = "mlirtrace_check"


def source(kind: str) -> str:
    """The check kernel for outputs of ``kind``: sets ``bad[0]`` when an element of ``got[0:n]`` does not pass
    (see the module's docstring)."""
    if kind in _FLOAT:
        ctype, load = _FLOAT[kind]
        body = (f"double a = {load.replace('P', 'got')}, e = {load.replace('P', 'want')};\n"
                "        int ok = a == e || (isnan(a) && isnan(e)) || "
                "(isfinite(a) && isfinite(e) && fabs(a - e) <= b);")
    elif kind in _INT:
        ctype = _INT[kind]
        body = ("long a = (long)got[i], e = (long)want[i];\n"
                "        int ok = a == e || fabs((double)a - (double)e) <= b;")
    else:
        raise KeyError(kind)
    # half storage is read with vload_half (no cl_khr_fp16 needed): the pointer is to half, never dereferenced
    return f"""#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void {KERNEL}(__global const {ctype} *got, __global const {ctype} *want, __global const float *bound,
                       const ulong n, const int one_bound, __global volatile int *bad)
{{
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {{
        double b = (double)bound[one_bound ? 0 : i];
        {body}
        if (!ok) atomic_or(bad, 1);
    }}
}}
"""
