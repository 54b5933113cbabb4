"""Shapes: element type, lens (logical dims) and strides (layout), as MIGraphX has them."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .dtypes import DType
from .dtypes import dtype as _dtype


def standard_strides(lens: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Packed row-major strides; like MIGraphX a dim of length 1 keeps the stride of the dim after it."""
    strides = []
    acc = 1
    for n in reversed(list(lens)):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def layout_problem(lens, strides) -> str | None:
    """Why rocMLIR could not lay ``lens``/``strides`` out in memory, or None when it can.

    rocMLIR's rule for a ``!migraphx.shaped`` value that crosses the kernel boundary (its
    ``asMemoryLayoutTensor``): order the dims by (stride, length), outermost first; a stride-0 dim is a
    broadcast (length 1 in memory); the smallest non-zero stride must be 1; going outwards each stride
    must be at least the span of the dims inside it (stride x length of the next inner non-broadcast
    dim) and, when larger (padding), a multiple of that inner dim's stride (checked down to the first
    unit stride, as rocMLIR does).  Dims of any order
    (permuted layouts), padded rows and broadcasts are all laid out."""
    lens, strides = [int(n) for n in lens], [int(s) for s in strides]
    if any(s < 0 for s in strides):
        return f"strides {strides} has a negative stride"
    order = sorted(range(len(lens)), key=lambda i: (strides[i], lens[i]), reverse=True)
    dims = [(strides[i], 1 if strides[i] == 0 else lens[i]) for i in order]
    nonzero = [(s, n) for s, n in dims if s != 0]
    if not nonzero:
        return None
    if nonzero[-1][0] != 1:
        return (f"strides {strides}: the smallest stride is {nonzero[-1][0]}, not 1 "
                "(no in-memory layout has it)")
    for (s, _), (inner_s, inner_n) in zip(nonzero, nonzero[1:], strict=False):
        if s == 1:          # rocMLIR checks no further once it reaches the unit stride
            break
        need = inner_s * inner_n
        if s < need:
            return (f"strides {strides}: stride {s} is smaller than {need}, the span of the dims inside it "
                    f"(stride {inner_s} x length {inner_n}); dims would overlap")
        if s > need and s % inner_s:
            return (f"strides {strides}: stride {s} is not a multiple of the inner stride {inner_s} "
                    "(a padded row must hold whole inner elements)")
    return None


@dataclass(frozen=True)
class Shape:
    dtype: DType
    lens: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def of(dt: str | DType, lens, strides=None) -> Shape:
        lens = tuple(int(x) for x in lens)
        strides = standard_strides(lens) if strides is None else tuple(int(x) for x in strides)
        if len(lens) != len(strides):
            raise ValueError(f"lens {list(lens)} and strides {list(strides)} differ in rank")
        if any(n < 0 for n in lens):
            raise ValueError(f"negative dimension in lens {list(lens)}")
        return Shape(_dtype(dt), lens, strides)

    @property
    def rank(self) -> int:
        return len(self.lens)

    @property
    def elements(self) -> int:
        return prod(self.lens)

    @property
    def standard(self) -> bool:
        return self.strides == standard_strides(self.lens)

    @property
    def broadcasted(self) -> bool:
        return any(s == 0 and n > 1 for n, s in zip(self.lens, self.strides, strict=False))

    @property
    def packed(self) -> bool:
        """Every element has its own slot and there are no gaps (any order of dims)."""
        if self.broadcasted:
            return False
        dims = sorted((s, n) for n, s in zip(self.lens, self.strides, strict=False) if n > 1)
        acc = 1
        for s, n in dims:
            if s != acc:
                return False
            acc *= n
        return True

    @property
    def layout_problem(self) -> str | None:
        """Why rocMLIR cannot lay this shape out in memory (:func:`layout_problem`), or None."""
        return layout_problem(self.lens, self.strides)

    @property
    def element_space(self) -> int:
        """Number of storage slots the view spans (max offset + 1)."""
        if self.elements == 0:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.lens, self.strides, strict=False))

    def with_dtype(self, dt: str | DType) -> Shape:
        return Shape(_dtype(dt), self.lens, self.strides)

    def as_standard(self) -> Shape:
        return Shape(self.dtype, self.lens, standard_strides(self.lens))

    def __str__(self) -> str:
        return f"{self.dtype.migraphx}, {{{', '.join(map(str, self.lens))}}}, {{{', '.join(map(str, self.strides))}}}"
