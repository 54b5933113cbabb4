"""Comparing a computed result with the oracle's, with tolerances per dtype."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import DType, dtype as _dtype, to_compute

# (rtol, atol per sqrt of reduction length): f16/bf16 results are rounded to
# 11/8 significant bits at the end, f32 accumulates in float32 on the device.
_TOL = {"f64": (1e-9, 1e-9), "f32": (1e-4, 2e-5), "f16": (1e-2, 2e-3), "bf16": (2e-2, 1e-2)}


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


def compare(actual: np.ndarray, expected: np.ndarray, dt: DType | str, reduction: int = 1) -> Mismatch | None:
    """None when ``actual`` matches ``expected`` within the dtype's tolerance, else what differs."""
    dt = _dtype(dt)
    a = to_compute(np.asarray(actual), dt).astype(np.float64)
    e = to_compute(np.asarray(expected), dt).astype(np.float64)
    if a.shape != e.shape:
        a = a.reshape(e.shape) if a.size == e.size else a
    if a.shape != e.shape:
        return Mismatch(max(a.size, e.size), e.size, float("inf"), float("inf"), (), float("nan"),
                        float("nan"), 0.0, 0.0)
    rtol, atol = tolerance(dt, reduction)
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
