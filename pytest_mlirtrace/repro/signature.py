"""What makes two failures the same bug: failure kind + normalised MLIR + the first line of the error
with the run-to-run noise (numbers, addresses, paths, the solution's own text) scrubbed out.

The solution is not part of it: the solutions that fail one module in the same way are one bug, with
one reproducer and one ticket that list every failing solution and the ones that passed."""
from __future__ import annotations

import hashlib
import re

_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.+@%-]*[A-Za-z_][\w.+@%-]*)+/?")
_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])|\b(?:nan|inf)\b", re.IGNORECASE)
_WS = re.compile(r"\s+")
_FUNC = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@\"?([\w$.\-]+)")
_COMMENT = re.compile(r"//[^\n]*")


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def normalise_error(error: str, solution: str = "") -> str:
    """The first non-empty line of ``error`` with the solution's text (``solution``), addresses, paths and
    numbers replaced by tokens."""
    line = first_line(error)
    if solution and solution.strip():
        line = line.replace(solution.strip(), "SOLUTION")
    line = _HEX.sub("ADDR", line)
    line = _PATH.sub("PATH", line)
    line = _NUM.sub("N", line)
    return _WS.sub(" ", line).strip()


def normalise_mlir_text(mlir_text: str) -> str:
    """``mlir.normalise_mlir`` when the mlir layer has it and the text parses, else the text without
    ``//`` comments and with every run of whitespace collapsed."""
    try:
        from ..mlir import normalise_mlir  # type: ignore[attr-defined]
    except ImportError:
        normalise_mlir = None
    if normalise_mlir is not None:
        try:
            return normalise_mlir(mlir_text)
        except Exception:   # noqa: BLE001 - unparsable MLIR still gets a signature
            pass
    return _WS.sub(" ", _COMMENT.sub("", mlir_text or "")).strip()


def symbol_of(mlir_text: str = "", module_text: str = "") -> str:
    """The fused function's name (``mlir_dot_add``): from the MLIR, else from the migraphx module."""
    m = _FUNC.search(_COMMENT.sub("", mlir_text or ""))
    name = m.group(1) if m else ""
    if not name and module_text:
        try:
            from ..ir import parse_module
            name = parse_module(module_text).symbol_name()
        except Exception:   # noqa: BLE001
            name = ""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
    return (name or "module")[:48]


def signature_of(kind: str, mlir_text: str, error: str, module_text: str = "", inject: str = "",
                 solution: str = "") -> str:
    """``<kind>-<symbol>-<8 hex>`` of kind + normalised MLIR (else module text) + normalised first error line
    (``solution``: only scrubbed out of it). A planted fault (``MLIRTRACE_INJECT``) counts as a different
    compiler, so it is part of the hash when there is one (real failures have none)."""
    h = hashlib.sha256()
    parts = [kind, normalise_mlir_text(mlir_text) if mlir_text else _WS.sub(" ", module_text).strip(),
             normalise_error(error, solution)]
    if inject:
        parts.append("inject=" + ",".join(sorted(x.strip() for x in inject.split(",") if x.strip())))
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return f"{kind}-{symbol_of(mlir_text, module_text)}-{h.hexdigest()[:8]}"


def signature(rec) -> str:
    """Short stable id of a :class:`FailureRecord`, e.g. ``wrong-mlir_dot_add-1a2b3c4d``: the same for
    every solution that fails the module the same way. A fault that was on but is known not to be the
    cause (``rec.planted is False``: it fails with the fault off too) is left out of it."""
    s = rec.span
    inject = rec.inject if getattr(rec, "planted", None) is not False else ""
    return signature_of(rec.kind, s.mlir_text, rec.error, s.module_text, inject, solution=s.solution)
