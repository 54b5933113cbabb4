"""Loading a fused op from whatever text a user has: an ``ir.Module``, MIGraphX text or MLIR."""
from __future__ import annotations

from ..ir import Module, parse_module
from ..mlir import is_mlir, parse_mlir_module


def load_module(source, name: str = "<text>") -> tuple[Module, str | None]:
    """A Module from IR, MIGraphX text or MLIR text; also the MLIR text when that is what was given."""
    if isinstance(source, Module):
        return source, None
    text = str(source)
    if is_mlir(text):
        return parse_mlir_module(text, source=name), text
    return parse_module(text, source=name), None
