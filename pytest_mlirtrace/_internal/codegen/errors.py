"""Errors of the codegen layer."""
from __future__ import annotations


class LoweringError(Exception):
    """The module cannot be lowered; the message names the instruction."""


class NotSupported(LoweringError):
    """The module uses a pattern this code generator does not implement (the message names it)."""


class SolutionError(ValueError):
    """A perf-config string that does not parse; the message names the bad field and what was expected."""


class NotApplicable(Exception):
    """A well-formed solution that cannot run this problem on this device (the reason says why)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


from ..vocab.faults import FaultError  # noqa: E402  (defined with the fault names)

__all__ = ["LoweringError", "NotSupported", "SolutionError", "NotApplicable", "FaultError"]
