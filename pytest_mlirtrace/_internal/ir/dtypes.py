"""Element types of the migraphx program and their names in each notation.

One table maps a dtype between MIGraphX's text (``half_type``), MLIR (``f16``),
numpy (``float16``) and OpenCL C (storage type, compute type).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str            # our short name: f32, f16, bf16, i8, i32, ...
    migraphx: str        # MIGraphX shape type name: float_type
    type_id: int         # MIGraphX shape::type_t value (used by convert[target_type=N])
    mlir: str            # MLIR element type: f32
    numpy: type | None   # numpy storage dtype (bf16 is stored as uint16 bits)
    is_float: bool
    itemsize: int

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.numpy)


_TABLE = [
    DType("bool", "bool_type", 0, "i1", np.bool_, False, 1),
    DType("f16", "half_type", 1, "f16", np.float16, True, 2),
    DType("f32", "float_type", 2, "f32", np.float32, True, 4),
    DType("f64", "double_type", 3, "f64", np.float64, True, 8),
    DType("u8", "uint8_type", 4, "ui8", np.uint8, False, 1),
    DType("i8", "int8_type", 5, "i8", np.int8, False, 1),
    DType("u16", "uint16_type", 6, "ui16", np.uint16, False, 2),
    DType("i16", "int16_type", 7, "i16", np.int16, False, 2),
    DType("i32", "int32_type", 8, "i32", np.int32, False, 4),
    DType("i64", "int64_type", 9, "i64", np.int64, False, 8),
    DType("u32", "uint32_type", 10, "ui32", np.uint32, False, 4),
    DType("u64", "uint64_type", 11, "ui64", np.uint64, False, 8),
    DType("bf16", "bf16_type", 15, "bf16", np.uint16, True, 2),
    # narrow floats (OCP FP8 / MX formats), stored as their bits in uint8, one element per byte (the MLIR types
    # the corpus uses are unpacked: a tensor<..xf4E2M1FN> holds one fp4 value per element).  MIGraphX's own
    # names and ids for the two fp8 types; MIGraphX has no unpacked fp4 and no e8m0 type: mlirtrace's names
    # and ids (>= 100) for those two
    DType("f8E4M3FN", "fp8e4m3fn_type", 13, "f8E4M3FN", np.uint8, True, 1),
    DType("f8E5M2", "fp8e5m2_type", 14, "f8E5M2", np.uint8, True, 1),
    DType("f8E8M0FNU", "fp8e8m0fnu_type", 100, "f8E8M0FNU", np.uint8, True, 1),
    DType("f4E2M1FN", "fp4e2m1fn_type", 101, "f4E2M1FN", np.uint8, True, 1),
]

BY_NAME = {d.name: d for d in _TABLE}
#: float types held as their bits in an unsigned integer array (decode with :func:`to_compute`)
NARROW_FLOATS = ("f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN")
BITS_STORED = ("bf16",) + NARROW_FLOATS
BY_MIGRAPHX = {d.migraphx: d for d in _TABLE}
BY_MLIR = {d.mlir: d for d in _TABLE}
BY_TYPE_ID = {d.type_id: d for d in _TABLE}
# MLIR spells signless and signed integers alike for our purposes.
BY_MLIR.update({"si8": BY_NAME["i8"], "si32": BY_NAME["i32"], "si64": BY_NAME["i64"]})


class DTypeError(ValueError):
    pass


def dtype(name: str | DType) -> DType:
    """Look a dtype up by any of its names (``f16``, ``half_type``, ``float16``)."""
    if isinstance(name, DType):
        return name
    for table in (BY_NAME, BY_MIGRAPHX, BY_MLIR):
        if name in table:
            return table[name]
    try:
        npd = np.dtype(name)
    except TypeError:
        npd = None
    if npd is not None:
        for d in _TABLE:
            if d.numpy is not None and np.dtype(d.numpy) == npd and d.name not in BITS_STORED:
                return d
    raise DTypeError(f"unknown element type {name!r}; known: {', '.join(sorted(BY_NAME))}")


def all_dtypes() -> list[DType]:
    return list(_TABLE)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bf16 bits (uint16)."""
    x = np.asarray(x, dtype=np.float32)
    u = np.ascontiguousarray(x).view(np.uint32).reshape(x.shape)     # (ascontiguousarray makes a 0-d array 1-d)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


# ------------------------------------------------------------------ narrow floats --
def _minifloat_values(exp_bits: int, man_bits: int, bias: int, specials: str) -> np.ndarray:
    """float64 value of every code 0 .. 2^(1+e+m)-1 of a sign/exponent/mantissa format.

    ``specials``: "ieee" (all-ones exponent: inf / NaN), "fn" (finite, only S.1111.111 is NaN), "none"."""
    n = 1 << (1 + exp_bits + man_bits)
    out = np.empty(n, dtype=np.float64)
    for code in range(n):
        sign = -1.0 if code >> (exp_bits + man_bits) else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        if e == 0:
            v = m / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        if specials == "ieee" and e == (1 << exp_bits) - 1:
            v = np.inf if m == 0 else np.nan
        if specials == "fn" and e == (1 << exp_bits) - 1 and m == (1 << man_bits) - 1:
            v = np.nan
        out[code] = sign * v
    return out


def _e8m0_values() -> np.ndarray:
    out = np.array([2.0 ** (e - 127) for e in range(256)], dtype=np.float64)
    out[255] = np.nan
    return out


#: code -> value (float64) of each narrow float type, from the formats' definitions
NARROW_VALUES = {
    "f8E4M3FN": _minifloat_values(4, 3, 7, "fn"),       # max 448, no inf, S.1111.111 NaN
    "f8E5M2": _minifloat_values(5, 2, 15, "ieee"),       # max 57344, inf, NaN
    "f8E8M0FNU": _e8m0_values(),                          # 2^(e-127), no sign, no zero, 0xFF NaN
    "f4E2M1FN": _minifloat_values(2, 1, 1, "none"),      # +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}
}


def narrow_decode(bits: np.ndarray, name: str) -> np.ndarray:
    """Codes of narrow float type ``name`` -> float64 values (fp4: the low 4 bits of each byte)."""
    table = NARROW_VALUES[name]
    return table[np.asarray(bits).astype(np.int64) & (table.size - 1)]


def narrow_encode(x: np.ndarray, name: str) -> np.ndarray:
    """float values -> codes (uint8) of narrow float type ``name``.

    f8E8M0FNU: the exponent field of the float32 value (sign and mantissa dropped; inf / NaN -> 0xFF NaN), as
    MLIR's ``arith.truncf`` to f8E8M0FNU is expanded (``F8E8M0TruncFOpConverter``: "extract exponent bits").
    The others: round to nearest, ties to the even code; past the largest finite value (by half an ulp or more)
    f8E5M2 gives inf, f8E4M3FN NaN (it has no inf), f4E2M1FN saturates (it has neither); NaN -> NaN (f4: 0)."""
    x = np.asarray(x, dtype=np.float64)
    if name == "f8E8M0FNU":
        u = np.asarray(x, dtype=np.float32).view(np.uint32) if x.ndim else \
            np.array([x], dtype=np.float32).view(np.uint32)[0]
        return ((np.asarray(u) >> 23) & 0xFF).astype(np.uint8).reshape(x.shape)
    table = NARROW_VALUES[name]
    half = table.size // 2
    pos = table[:half]
    codes = np.array([c for c in range(half) if np.isfinite(pos[c])])
    vals = pos[codes]
    order = np.argsort(vals, kind="stable")
    codes, vals = codes[order], vals[order]
    a = np.abs(x)
    i = np.clip(np.searchsorted(vals, a), 1, len(vals) - 1)
    lo, hi = vals[i - 1], vals[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (codes[i] % 2 == 0))
    c = np.where(pick_hi, codes[i], codes[i - 1])
    top = vals[-1]
    ulp = top - vals[-2]
    # a tie with the next code up (inf for f8E5M2, NaN for f8E4M3FN) goes to the even one of the two
    over = (a >= top + ulp / 2) if name == "f8E5M2" else (a > top + ulp / 2)
    if name == "f8E5M2":
        c = np.where(over, 0x7C, c)
    elif name == "f8E4M3FN":
        c = np.where(over, 0x7F, c)
    else:
        c = np.where(a > top, codes[-1], c)
    nan_code = {"f8E5M2": 0x7F, "f8E4M3FN": 0x7F}.get(name, 0)
    c = np.where(np.isnan(a), nan_code, c)
    sign = np.signbit(x) & ~np.isnan(x)
    return (c | np.where(sign, half, 0)).astype(np.uint8).reshape(x.shape)


def narrow_random_codes(rng: np.random.Generator, name: str, size) -> np.ndarray:
    """Random valid codes of a narrow float type: any finite value (no NaN, no inf), and for f8E8M0FNU scales
    2^-8 .. 2^8 (a wider exponent overflows a float32 dot of a few hundred products)."""
    if name == "f8E8M0FNU":
        return rng.integers(127 - 8, 127 + 9, size=size).astype(np.uint8)
    table = NARROW_VALUES[name]
    ok = np.array([c for c in range(table.size) if np.isfinite(table[c])], dtype=np.uint8)
    return ok[rng.integers(0, ok.size, size=size)]


def to_compute(x: np.ndarray, dt: DType) -> np.ndarray:
    """Storage array -> float64/int64 array for the reference computation."""
    if dt.name == "bf16":
        return bf16_to_f32(x).astype(np.float64)
    if dt.name in NARROW_VALUES:
        return narrow_decode(x, dt.name)
    if dt.is_float:
        return x.astype(np.float64)
    if dt.name == "bool":
        return x.astype(np.bool_)
    return x.astype(np.int64)


def from_compute(x: np.ndarray, dt: DType) -> np.ndarray:
    """Reference result -> storage array of dtype ``dt`` (saturating casts for ints like MIGraphX)."""
    if dt.name == "bf16":
        return f32_to_bf16(np.asarray(x, dtype=np.float32))
    if dt.name in NARROW_VALUES:
        return narrow_encode(x, dt.name)
    if dt.name == "bool":
        return np.asarray(x).astype(np.bool_)
    if not dt.is_float:
        info = np.iinfo(dt.np)
        x = np.asarray(x)
        if x.dtype.kind == "f":
            x = np.nan_to_num(np.round(x), nan=0.0)
        return np.clip(x, info.min, info.max).astype(dt.np)
    return np.asarray(x).astype(dt.np)
