"""MLIR string literals and symbol names, written so that they always parse back.

A symbol name that is a bare identifier (``[A-Za-z_][A-Za-z0-9_$.]*``) is written bare (``@mlir_dot``),
anything else as a quoted string (``@"a\\"b"``); strings are quoted with MLIR's escapes (``\\"``, ``\\\\``,
``\\n``, ``\\t``, ``\\XX``): :func:`~pytest_mlirtrace._internal.ir.quoting.quote_string`, shared with the MIGraphX text.
"""
from __future__ import annotations

import re

from pytest_mlirtrace._internal.ir import quote_string, unquote_string

BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def symbol(name: str) -> str:
    """``name`` as MLIR writes it after ``@``: bare when it is an identifier, else quoted."""
    return name if BARE_ID.fullmatch(name) else quote_string(name)


def attr_name(k: str) -> str:
    """An attribute's name in an attr-dict: bare when it is an identifier, else quoted."""
    return k if BARE_ID.fullmatch(k) else quote_string(k)


def symbol_ref(name: str) -> str:
    """``@name`` / ``@"odd name"``."""
    return "@" + symbol(name)


__all__ = ["symbol", "symbol_ref", "attr_name", "quote_string", "unquote_string", "BARE_ID"]
