"""One instruction of a migraphx program, and the error every rule raises (the base of ``ir``: the
shape rules in :mod:`.ops` and the :class:`~.module.Module` both build on it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .shape import Shape


class IRError(ValueError):
    """A module, instruction or attribute that breaks the rules; the message names the instruction."""


@dataclass
class Instruction:
    name: str
    op: str
    inputs: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: Shape | None = None
    # @param's parameter name, @literal's values (a numpy array of the output's lens)
    param: str | None = None
    literal: np.ndarray | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instruction):
            return NotImplemented
        same_lit = (self.literal is None and other.literal is None) or (
            self.literal is not None and other.literal is not None
            and self.literal.shape == other.literal.shape and np.array_equal(self.literal, other.literal))
        return (self.name, self.op, self.inputs, self.attrs, self.shape, self.param) == (
            other.name, other.op, other.inputs, other.attrs, other.shape, other.param) and same_lit
