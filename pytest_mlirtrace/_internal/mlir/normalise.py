"""Canonical MLIR text, for signatures: two texts of the same program normalise equal.

Every func is reparsed and re-emitted: SSA values renumbered ``%arg0..`` / ``%0..`` in
order, whitespace and comments gone, attributes sorted, literal values in one spelling,
``perf_config`` annotations dropped (the solution is part of a signature on its own).
Funcs that convert to a module are re-emitted by :func:`~.emit.emit_func` with their own
name, attributes and type syntax; funcs xDSL can parse but the IR cannot hold
(convolution...) are printed by xDSL (canonical numbering too); anything else is kept
with comments removed and whitespace collapsed.
"""
from __future__ import annotations

import re
from io import StringIO

from xdsl.printer import Printer

from .emit import emit_func
from .parse import parse_mlir


def _collapse(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"\s+", " ", text).strip()


def _xdsl_canonical(func_op) -> str:
    """xDSL's text of a func with SSA names dropped (so %0, %1...) and attributes sorted by name."""
    fn = func_op.clone()
    for op in fn.walk():
        for r in op.results:
            r.name_hint = None
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    a.name_hint = None
        if op is not fn:
            op.attributes = dict(sorted(op.attributes.items()))
    out = StringIO()
    Printer(stream=out).print_op(fn)
    return out.getvalue()


def normalise_mlir(text: str, source: str = "<mlir>") -> str:
    funcs = parse_mlir(text, source)
    parts = []
    for f in funcs:
        if f.ok:
            syntax = "shaped" if f.type_syntax in ("shaped", "mixed") else "tensor"
            parts.append(emit_func(f.module, attrs=f.attrs, type_syntax=syntax, name=f.name))
        elif f.func_op is not None:
            parts.append("  " + _collapse(_xdsl_canonical(f.func_op)) + "\n")
        else:
            parts.append("  " + _collapse(f.text) + "\n")
    return "module {\n" + "".join(parts) + "}\n"
