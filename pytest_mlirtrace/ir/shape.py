"""Shapes: element type, lens (logical dims) and strides (layout), as MIGraphX has them."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from .dtypes import DType, dtype as _dtype


def standard_strides(lens: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Packed row-major strides; like MIGraphX a dim of length 1 keeps the stride of the dim after it."""
    strides = []
    acc = 1
    for n in reversed(list(lens)):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Shape:
    dtype: DType
    lens: tuple[int, ...]
    strides: tuple[int, ...]

    @staticmethod
    def of(dt: str | DType, lens, strides=None) -> "Shape":
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
        return any(s == 0 and n > 1 for n, s in zip(self.lens, self.strides))

    @property
    def packed(self) -> bool:
        """Every element has its own slot and there are no gaps (any order of dims)."""
        if self.broadcasted:
            return False
        dims = sorted((s, n) for n, s in zip(self.lens, self.strides) if n > 1)
        acc = 1
        for s, n in dims:
            if s != acc:
                return False
            acc *= n
        return True

    @property
    def element_space(self) -> int:
        """Number of storage slots the view spans (max offset + 1)."""
        if self.elements == 0:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.lens, self.strides))

    def with_dtype(self, dt: str | DType) -> "Shape":
        return Shape(_dtype(dt), self.lens, self.strides)

    def as_standard(self) -> "Shape":
        return Shape(self.dtype, self.lens, standard_strides(self.lens))

    def __str__(self) -> str:
        return f"{self.dtype.migraphx}, {{{', '.join(map(str, self.lens))}}}, {{{', '.join(map(str, self.strides))}}}"
