"""The driver: :func:`parse_log` reads a log line by line, hands each line to the reader of the part it
begins, then classifies the MLIR modules and links the parts."""
from __future__ import annotations

from typing import Any

from .. import mlir as _mlir
from .line_kinds import (
    ALIAS,
    BLANK,
    COMMENT,
    FRAGMENT,
    MLIR_START,
    MODULE_HDR,
    STRAY_CLOSE,
    TRACEBACK,
    ins_candidate,
    logical_lines,
    single_claims,
)
from .line_parts import close_bench, single, take_traceback
from .linking import link
from .mlir_modules import classify_mlir, take_aliases, take_fragment, take_mlir
from .module_dumps import take_dump
from .parts import LogError, OtherLine, TraceLogParts
from .read_state import Reader


def parse_log(text: str, source: str = "<log>", *, mlir_layer: Any = True) -> TraceLogParts:
    """Split a MIGraphX / rocMLIR trace log into its parts; never raises for any text.

    ``mlir_layer``: True to parse each MLIR module with :mod:`pytest_mlirtrace._internal.mlir` (else the built-in
    scanner alone classifies the MLIR), False to leave it out, or an object with ``parse_mlir``
    (and optionally ``emit_mlir``) to use instead.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        text = str(text)
    layer = _mlir_layer(mlir_layer)
    lines, n_phys = logical_lines(text)
    r = Reader(lines, TraceLogParts(source=source, n_lines=n_phys, mlir_layer=layer is not None), layer)
    return _read(r)


def _mlir_layer(want: Any) -> Any:
    if want is False or want is None:
        return None
    if want is True:
        return _mlir
    return want if hasattr(want, "parse_mlir") else None


def _read(r: Reader) -> TraceLogParts:
    """Every line to the reader of the part it begins, then the MLIR judged and the parts linked."""
    i = 0
    while i < r.n:
        try:
            i = _step(r, i)
        except Exception as e:  # a bug here must not lose the log: keep the line, note it, go on
            L = r.lines[i]
            r.parts.errors_found.append(LogError(L.no, f"internal error while reading this line: "
                                                       f"{type(e).__name__}: {e}"))
            r.parts.other.append(OtherLine(L.no, L.text, "unread"))
            i += 1
    close_bench(r)
    for stage in (classify_mlir, link):
        try:
            stage(r.parts, r.layer)
        except Exception as e:  # pragma: no cover - defensive
            r.parts.errors_found.append(LogError(0, f"internal error in {stage.__name__}: "
                                                    f"{type(e).__name__}: {e}"))
    r.parts.errors_found.sort(key=lambda e: e.line)
    return r.parts


def _step(r: Reader, i: int) -> int:
    """Read the part that begins at logical line ``i``; the index of the line after it."""
    L = r.lines[i]
    t = L.text
    if BLANK.match(t):
        r.parts.blank_lines += 1
        return i + 1
    if COMMENT.match(t):
        r.parts.other.append(OtherLine(L.no, t, "comment"))
        return i + 1
    if TRACEBACK.match(t):
        return take_traceback(r, i)
    if ALIAS.match(t):
        return take_aliases(r, i)
    if MLIR_START.match(t):
        return take_mlir(r, i, i)
    if MODULE_HDR.match(t) or ins_candidate(t):
        return take_dump(r, i)
    if STRAY_CLOSE.match(t):
        r.parts.errors_found.append(LogError(L.no, "unbalanced braces: '}' outside any MLIR module"))
        r.parts.other.append(OtherLine(L.no, t, "stray_brace"))
        return i + 1
    if FRAGMENT.match(t) and not single_claims(t):
        return take_fragment(r, i)
    single(r, i)
    return i + 1
