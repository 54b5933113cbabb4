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
]

BY_NAME = {d.name: d for d in _TABLE}
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
            if d.numpy is not None and np.dtype(d.numpy) == npd and d.name != "bf16":
                return d
    raise DTypeError(f"unknown element type {name!r}; known: {', '.join(sorted(BY_NAME))}")


def all_dtypes() -> list[DType]:
    return list(_TABLE)


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bf16 bits (uint16)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


def to_compute(x: np.ndarray, dt: DType) -> np.ndarray:
    """Storage array -> float64/int64 array for the reference computation."""
    if dt.name == "bf16":
        return bf16_to_f32(x).astype(np.float64)
    if dt.is_float:
        return x.astype(np.float64)
    if dt.name == "bool":
        return x.astype(np.bool_)
    return x.astype(np.int64)


def from_compute(x: np.ndarray, dt: DType) -> np.ndarray:
    """Reference result -> storage array of dtype ``dt`` (saturating casts for ints like MIGraphX)."""
    if dt.name == "bf16":
        return f32_to_bf16(np.asarray(x, dtype=np.float32))
    if dt.name == "bool":
        return np.asarray(x).astype(np.bool_)
    if not dt.is_float:
        info = np.iinfo(dt.np)
        x = np.asarray(x)
        if x.dtype.kind == "f":
            x = np.nan_to_num(np.round(x), nan=0.0)
        return np.clip(x, info.min, info.max).astype(dt.np)
    return np.asarray(x).astype(dt.np)
