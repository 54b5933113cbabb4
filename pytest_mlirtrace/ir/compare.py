"""Comparing a computed result with the oracle's, with tolerances per dtype."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import DType, dtype as _dtype, to_compute

# (rtol, atol per sqrt of reduction length): f16/bf16 results are rounded to
# 11/8 significant bits at the end, f32 accumulates in float32 on the device.
_TOL = {"f64": (1e-9, 1e-9), "f32": (1e-4, 2e-5), "f16": (1e-2, 2e-3), "bf16": (2e-2, 1e-2)}


# significant bits of each float dtype: the fewer, the looser the tolerance
_BITS = {"bf16": 8, "f16": 11, "f32": 24, "f64": 53}


def result_precisions(module) -> list[DType]:
    """Per output of ``module``: the dtype whose tolerance its values deserve.

    That is the coarsest float dtype any computed instruction on the way to the output rounds
    to: a ``dot`` in f16 that is converted to f32 carries f16's error (the device's f32
    accumulation and the oracle's float64 one may round to neighbouring f16 values), so an f32
    tolerance would call a correct kernel wrong. Integer and bool outputs keep their own dtype.
    """
    out = []
    for name in module.returns():
        own = _dtype(module.get(name).shape.dtype)
        if not own.is_float:
            out.append(own)
            continue
        coarsest, seen, todo = own, set(), [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            ins = module.get(n)
            if ins.op in ("@param", "@literal"):
                continue
            d = _dtype(ins.shape.dtype)
            if d.is_float and _BITS.get(d.name, 24) < _BITS.get(coarsest.name, 24):
                coarsest = d
            todo.extend(ins.inputs)
        out.append(coarsest)
    return out


def tolerance(dt: DType | str, reduction: int = 1) -> tuple[float, float]:
    dt = _dtype(dt)
    if not dt.is_float:
        return 0.0, 0.0
    rtol, atol = _TOL.get(dt.name, (1e-4, 1e-5))
    scale = max(1.0, float(reduction) ** 0.5)
    return rtol, atol * scale


@dataclass
class Mismatch:
    count: int
    total: int
    max_abs: float
    max_rel: float
    worst_index: tuple
    got: float
    want: float
    rtol: float
    atol: float

    def __str__(self) -> str:
        return (f"{self.count}/{self.total} elements differ (rtol={self.rtol:g}, atol={self.atol:g}); "
                f"worst at {list(self.worst_index)}: got {self.got!r}, expected {self.want!r} "
                f"(abs {self.max_abs:.3g}, rel {self.max_rel:.3g})")


def compare(actual: np.ndarray, expected: np.ndarray, dt: DType | str, reduction: int = 1,
            tolerances: tuple[float, float] | None = None) -> Mismatch | None:
    """None when ``actual`` matches ``expected`` within tolerance, else what differs.

    ``dt`` is the arrays' storage dtype; the tolerance is ``dt``'s for ``reduction`` unless
    ``tolerances`` gives (rtol, atol), e.g. from :func:`result_precisions`."""
    dt = _dtype(dt)
    a = to_compute(np.asarray(actual), dt).astype(np.float64)
    e = to_compute(np.asarray(expected), dt).astype(np.float64)
    if a.shape != e.shape:
        a = a.reshape(e.shape) if a.size == e.size else a
    if a.shape != e.shape:
        return Mismatch(max(a.size, e.size), e.size, float("inf"), float("inf"), (), float("nan"),
                        float("nan"), 0.0, 0.0)
    rtol, atol = tolerance(dt, reduction) if tolerances is None else tolerances
    with np.errstate(all="ignore"):
        diff = np.abs(a - e)
        bad = ~((diff <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e)) | (a == e))
    n = int(bad.sum())
    if n == 0:
        return None
    with np.errstate(all="ignore"):
        score = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -1.0)
    idx = np.unravel_index(int(np.argmax(score)), e.shape) if e.ndim else ()
    worst = float(diff[idx]) if e.ndim else float(diff)
    want = float(e[idx]) if e.ndim else float(e)
    got = float(a[idx]) if e.ndim else float(a)
    return Mismatch(n, int(e.size), worst, worst / max(abs(want), 1e-30), tuple(int(i) for i in idx),
                    got, want, rtol, atol)
