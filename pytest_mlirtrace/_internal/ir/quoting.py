"""MLIR's string literals, as both text formats write them: ``quote_string`` writes a double-quoted literal with
MLIR's escapes (``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\XX`` per UTF-8 byte of any other character that is not
printable); ``unquote_string`` reads one back.  The MIGraphX text (:mod:`.text`) writes a name or string this way
where it would not read back bare; the MLIR layer uses it for every string literal."""
from __future__ import annotations

import re

_PLAIN_STR = re.compile(r'[^"\\\x00-\x1f\x7f]*')
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}


def quote_string(s: str) -> str:
    """``s`` as a double-quoted string literal with MLIR's escapes (printable non-ASCII is kept as is)."""
    if _PLAIN_STR.fullmatch(s) and s.isprintable():
        return f'"{s}"'
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("".join(f"\\{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    return '"' + "".join(out) + '"'


_UNESCAPE = {"n": b"\n", "t": b"\t", "\\": b"\\", '"': b'"'}
_HEX = frozenset("0123456789abcdefABCDEF")


def unquote_string(lit: str, errors: str = "strict") -> str:
    """The value of a double-quoted literal written by :func:`quote_string` (or by MLIR); raises ValueError on
    a bad escape, or (``errors="strict"``) on bytes that are not UTF-8."""
    if len(lit) < 2 or lit[0] != '"' or lit[-1] != '"':
        raise ValueError(f"not a quoted string: {lit!r}")
    body = lit[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        j = body.find("\\", i)
        if j < 0:
            out += body[i:].encode("utf-8", "surrogatepass")
            break
        out += body[i:j].encode("utf-8", "surrogatepass")
        c = body[j + 1:j + 2]
        if c in _UNESCAPE:
            out += _UNESCAPE[c]
            i = j + 2
        elif len(c) == 1 and c in _HEX and body[j + 2:j + 3] in _HEX and j + 2 < n:
            out.append(int(body[j + 1:j + 3], 16))
            i = j + 3
        else:
            raise ValueError(f"invalid escape sequence {body[j:j + 2]!r} in a string literal")
    return out.decode("utf-8", errors)
