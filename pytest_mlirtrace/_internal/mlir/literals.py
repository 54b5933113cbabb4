"""``dense<...>`` payloads: literal values to MLIR text and back.

Floats are written like MLIR writes them (``1.250000e-01``; more digits only when six do
not give the same value back in the element type); values that have no decimal form
(inf, nan) are written as their bit pattern in hex (``0xFC00`` is -inf in f16), which is
how MLIR reads a hex float literal.  A tensor whose elements are all the same is written
as a splat (``dense<0.000000e+00>``).
"""
from __future__ import annotations

import re

import numpy as np

from pytest_mlirtrace._internal.ir.dtypes import DType, bf16_to_f32, f32_to_bf16

_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
_FLOAT_OF_SIZE = {2: np.float16, 4: np.float32, 8: np.float64}


def literal_storage(arr: np.ndarray, dt: DType, lens) -> np.ndarray:
    """The IR keeps literal values as given; the oracle reads them as ``astype(dtype.np)`` (bf16: bits)."""
    return np.array(np.broadcast_to(np.asarray(arr), tuple(lens)).astype(dt.np))


def _to_value(x, dt: DType):
    if dt.name == "bf16":
        return float(bf16_to_f32(np.array([x], dtype=np.uint16))[0])
    if dt.is_float:
        return float(x)
    if dt.name == "bool":
        return int(bool(x))
    return int(x)


def _round_trips(text: str, value: float, dt: DType) -> bool:
    a = np.array([float(text)])
    b = np.array([value])
    if dt.name == "bf16":
        return bool(f32_to_bf16(a)[0] == f32_to_bf16(b)[0])
    return bool(a.astype(dt.np)[0] == b.astype(dt.np)[0])


def format_element(storage_elem, dt: DType) -> str:
    if not dt.is_float:
        return str(_to_value(storage_elem, dt))
    v = _to_value(storage_elem, dt)
    if not np.isfinite(v):
        if dt.name == "bf16":
            bits = int(storage_elem)
        else:
            bits = int(np.array([storage_elem], dtype=dt.np).view(_BITS[dt.itemsize])[0])
        return f"0x{bits:0{2 * dt.itemsize}X}"
    for p in range(6, 18):
        s = f"{v:.{p}e}"
        if _round_trips(s, v, dt):
            return s
    return f"{v:.17e}"


def format_dense(storage: np.ndarray, dt: DType) -> str:
    """``dense<...>`` (without the ``: tensor<..>`` type) of a storage array."""
    flat = storage.reshape(-1)
    if flat.size == 0:
        return "dense<>"
    first = flat[0]
    same = (flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)).all()
    if same or storage.ndim == 0:
        return f"dense<{format_element(first, dt)}>"

    def rec(a: np.ndarray) -> str:
        if a.ndim == 1:
            return "[" + ", ".join(format_element(x, dt) for x in a) + "]"
        return "[" + ", ".join(rec(x) for x in a) + "]"

    return f"dense<{rec(storage)}>"


# ----------------------------------------------------------------- parsing --
def dense_payload(text: str) -> str | None:
    """The text between ``dense<`` and its ``>`` in ``text``, or None."""
    i = text.find("dense<")
    if i < 0:
        return None
    j = i + len("dense<")
    depth = 1
    k = j
    while k < len(text):
        c = text[k]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return text[j:k]
        k += 1
    return None


_TOK = re.compile(r"\s*(\[|\]|,|true|false|0x[0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan)")


def parse_dense_payload(payload: str, dt: DType):
    """Nested lists (or one scalar) of values, hex floats read as bit patterns of ``dt``."""
    toks = []
    pos = 0
    s = payload.strip()
    while pos < len(s):
        m = _TOK.match(s, pos)
        if not m:
            raise ValueError(f"cannot read dense value at {s[pos:pos + 12]!r}")
        toks.append(m.group(1))
        pos = m.end()
        while pos < len(s) and s[pos].isspace():
            pos += 1

    def atom(t: str):
        if t in ("true", "false"):
            return 1 if t == "true" else 0
        if t.lower().startswith("0x"):
            bits = int(t, 16)
            if not dt.is_float:
                return bits
            if dt.name == "bf16":
                return float(bf16_to_f32(np.array([bits], dtype=np.uint16))[0])
            return float(np.array([bits], dtype=_BITS[dt.itemsize]).view(_FLOAT_OF_SIZE[dt.itemsize])[0])
        v = float(t)
        return v if dt.is_float else int(v)

    it = iter(toks)

    def value(t: str):
        if t == "[":
            out = []
            t = next(it)
            if t == "]":
                return out
            while True:
                out.append(value(t))
                t = next(it)
                if t == "]":
                    return out
                if t != ",":
                    raise ValueError(f"expected ',' or ']' in dense value, got {t!r}")
                t = next(it)
        return atom(t)

    first = next(it, None)
    if first is None:
        return []
    return value(first)


def storage_from_values(values, dt: DType, lens) -> np.ndarray:
    """Storage array of shape ``lens`` from parsed values (a splat is broadcast)."""
    arr = np.asarray(values, dtype=np.float64 if dt.is_float else np.int64)
    lens = tuple(lens)
    if arr.size == 1 and arr.shape != lens:
        arr = np.broadcast_to(arr.reshape(()), lens)
    elif arr.size != int(np.prod(lens, dtype=np.int64)):
        raise ValueError(f"dense value has {arr.size} elements, the type needs {int(np.prod(lens))}")
    arr = arr.reshape(lens)
    if dt.name == "bf16":
        return f32_to_bf16(arr.astype(np.float32))
    if dt.name == "bool":
        return arr.astype(np.bool_)
    with np.errstate(all="ignore"):
        return arr.astype(dt.np)


class RawAttr(str):
    """An op attribute kept as MLIR text (a kind of attribute the IR has no value type for)."""
