"""What ``lower`` returns: the kernel source and how to bind and launch it."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..ir.dtypes import dtype as _dtype
from ..ir.reference import as_laid_out
from .problem import Problem
from .solution import Solution


@dataclass(frozen=True)
class ArgBinding:
    """One kernel argument, in order.

    kind ``input``: module parameter ``param``; allocate ``elements`` storage elements of ``dtype``
    (the parameter's ``Shape.element_space``); the kernel reads element ``sum(i_d * strides_d)``.
    kind ``output``: ``index`` into ``module.returns()``; ``elements`` = prod(lens), standard layout.
    kind ``scratch``: ``nbytes`` of device memory the kernel may use. kind ``scalar``: ``value`` of ``ctype``.
    """
    kind: str
    name: str
    dtype: str | None = None
    param: str | None = None
    index: int | None = None
    lens: tuple = ()
    strides: tuple = ()
    elements: int = 0
    nbytes: int = 0
    ctype: str = ""
    value: object = None

    @property
    def np_dtype(self) -> np.dtype:
        return _dtype(self.dtype).np


@dataclass(frozen=True)
class KernelSpec:
    source: str
    kernel_name: str
    args: list
    global_size: tuple
    local_size: tuple | None
    build_options: str
    solution: Solution
    problem: Problem
    faults: tuple = ()
    notes: tuple = field(default_factory=tuple)

    @property
    def inputs(self) -> list[ArgBinding]:
        return [a for a in self.args if a.kind == "input"]

    @property
    def outputs(self) -> list[ArgBinding]:
        return [a for a in self.args if a.kind == "output"]


def pack_input(binding: ArgBinding, logical: np.ndarray) -> np.ndarray:
    """A flat storage buffer of ``binding.elements`` elements holding ``logical`` at ``binding.strides``."""
    dt = binding.np_dtype
    x = np.asarray(logical)
    if tuple(x.shape) != tuple(binding.lens):
        raise ValueError(f"input {binding.param!r}: array of shape {list(x.shape)}, expected {list(binding.lens)}")
    x = x.astype(dt, copy=False)
    held = as_laid_out(x, binding.lens, binding.strides)
    if held is not x and not np.array_equal(held, x, equal_nan=x.dtype.kind in "fc"):
        # the kernel would read other values than the oracle computes with: refuse, never "wrong numbers"
        raise ValueError(f"input {binding.param!r}: its strides {list(binding.strides)} hold one element for "
                         "several indices (a broadcast, stride-0 dim), but the array's values differ along them; "
                         "make inputs with ir.random_inputs (or ir.reference.as_laid_out)")
    buf = np.zeros(max(binding.elements, 1), dtype=dt)
    if x.size == 0:
        return buf
    # broadcast (stride 0) dims hold one value: keep index 0 of them
    sel = tuple(0 if (s == 0 and n > 1) else slice(None) for n, s in zip(binding.lens, binding.strides, strict=False))
    lens = [n for n, s in zip(binding.lens, binding.strides, strict=False) if not (s == 0 and n > 1)]
    strides = [s for n, s in zip(binding.lens, binding.strides, strict=False) if not (s == 0 and n > 1)]
    view = as_strided(buf, shape=lens, strides=[s * dt.itemsize for s in strides], writeable=True)
    view[...] = x[sel]
    return buf


def pack_inputs(spec: KernelSpec, inputs: dict) -> list[np.ndarray]:
    """Storage buffers for every ``input`` argument of ``spec`` (in argument order)."""
    out = []
    for a in spec.inputs:
        if a.param not in inputs:
            raise KeyError(f"no value for parameter {a.param!r}")
        out.append(pack_input(a, inputs[a.param]))
    return out


def output_buffers(spec: KernelSpec) -> list[np.ndarray]:
    return [np.zeros(max(a.elements, 1), dtype=a.np_dtype) for a in spec.outputs]


def unpack_outputs(spec: KernelSpec, arrays) -> list[np.ndarray]:
    """Output buffers (argument order) -> the module's outputs as logical arrays (``returns()`` order)."""
    outs = spec.outputs
    if len(arrays) != len(outs):
        raise ValueError(f"{len(arrays)} arrays for {len(outs)} outputs")
    res: list = [None] * len(outs)
    for a, arr in zip(outs, arrays, strict=False):
        x = np.asarray(arr).reshape(-1)[: a.elements].reshape(a.lens)
        if a.dtype == "bool":
            x = x.astype(np.bool_)
        res[a.index] = x
    return res
