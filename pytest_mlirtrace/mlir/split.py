"""Finding the ``func.func`` ops of an MLIR text without parsing it.

Real files hold several funcs, funcs nested in ``module @x {...}``, ``func.func private``
declarations, and ops of dialects we have no grammar for (``mhal.launch``) that would
stop any parser at the first one.  So each func is cut out here and parsed on its own:
:func:`only` blanks everything else (keeping newlines and alias definitions), so line and
column numbers in messages are those of the original file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import MLIRParseError, line_col


@dataclass
class FuncSpan:
    start: int          # offset of "func.func"
    end: int            # offset just past the func (its closing brace, or the end of a declaration)
    name: str
    has_body: bool
    private: bool


_FUNC = re.compile(r"(?<![\w.$])func\.func\b")
_ALIAS = re.compile(r"^[ \t]*[#!][\w.$-]+[ \t]*=.*$", re.M)


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        else:
            break
    return i


def _skip_string(text: str, i: int, source: str) -> int:
    """``text[i]`` is a quote; return the offset after the closing quote."""
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            return j + 1
        if c == "\n":
            break
        j += 1
    line, col = line_col(text, i)
    raise MLIRParseError("unterminated string literal", source, line, col, text)


_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _skip_balanced(text: str, i: int, source: str, what: str) -> int:
    """``text[i]`` opens a bracket; return the offset after its match (strings, comments, ``->`` aware)."""
    stack = [text[i]]
    j = i + 1
    n = len(text)
    while j < n:
        c = text[j]
        if c == '"':
            j = _skip_string(text, j, source)
            continue
        if text.startswith("//", j):
            k = text.find("\n", j)
            j = n if k < 0 else k + 1
            continue
        if text.startswith("->", j):
            j += 2
            continue
        if c in _CLOSE and not (c == "<" and stack[-1] not in "<(["):
            # '<' only opens inside types / angle brackets, not in e.g. an affine '<=' at brace level
            stack.append(c)
        elif c in ")]}>":
            if c == ">" and stack[-1] != "<":
                j += 1
                continue
            if _CLOSE[stack[-1]] != c:
                line, col = line_col(text, j)
                raise MLIRParseError(f"unbalanced '{c}' in {what}; expected '{_CLOSE[stack[-1]]}'",
                                     source, line, col, text)
            stack.pop()
            if not stack:
                return j + 1
        j += 1
    line, col = line_col(text, i)
    raise MLIRParseError(f"'{text[i]}' opened here is never closed ({what}); expected '{_CLOSE[stack[-1]]}'",
                         source, line, col, text)


def _skip_type(text: str, i: int, source: str) -> int:
    """Skip one type such as ``!migraphx.shaped<2x3xf32, 3x1>`` or ``tensor<2xf32>``."""
    n = len(text)
    while i < n and (text[i].isalnum() or text[i] in "!._$-"):
        i += 1
    if i < n and text[i] == "<":
        i = _skip_balanced(text, i, source, "a type")
    return i


def check_strings(text: str, source: str = "<mlir>") -> None:
    """Raise for a string literal that is not closed on its line.

    Done before xDSL sees the text: its lexer's string regex backtracks exponentially on an
    unterminated string in a long line (the parse would hang instead of failing).
    """
    i, n = 0, len(text)
    while True:
        q = text.find('"', i)
        if q < 0:
            return
        c = text.rfind("//", text.rfind("\n", 0, q) + 1, q)
        if c >= 0 and text.count('"', text.rfind("\n", 0, q) + 1, c) % 2 == 0:
            # the quote is inside a comment: skip to the end of that line
            e = text.find("\n", q)
            i = n if e < 0 else e + 1
            continue
        i = _skip_string(text, q, source)


def find_funcs(text: str, source: str = "<mlir>") -> list[FuncSpan]:
    """Every ``func.func`` in ``text`` (outside comments and strings), in order."""
    out: list[FuncSpan] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = _skip_string(text, i, source)
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        m = _FUNC.match(text, i) if c == "f" else None
        if m is None:
            i += 1
            continue
        start = i
        j = _skip_ws(text, m.end())
        private = False
        vis = re.match(r"(private|public|nested)\b", text[j:])
        if vis:
            private = vis.group(1) == "private"
            j = _skip_ws(text, j + vis.end())
        nm = re.match(r"@(\"[^\"]*\"|[\w.$-]+)", text[j:])
        if not nm:
            line, col = line_col(text, j)
            raise MLIRParseError("expected '@name' after func.func", source, line, col, text)
        name = nm.group(1).strip('"')
        j = _skip_ws(text, j + nm.end())
        if j >= n or text[j] != "(":
            line, col = line_col(text, j)
            raise MLIRParseError(f"expected '(' to open the arguments of @{name}", source, line, col, text)
        j = _skip_balanced(text, j, source, f"the arguments of @{name}")
        has_body = False
        end = j
        while True:
            k = _skip_ws(text, j)
            if text.startswith("->", k):
                k = _skip_ws(text, k + 2)
                j = _skip_balanced(text, k, source, f"the results of @{name}") if text.startswith("(", k) \
                    else _skip_type(text, k, source)
                end = j
                continue
            if re.match(r"attributes\b", text[k:]):
                k = _skip_ws(text, k + len("attributes"))
                if not text.startswith("{", k):
                    line, col = line_col(text, k)
                    raise MLIRParseError(f"expected '{{' after 'attributes' of @{name}", source, line, col, text)
                j = end = _skip_balanced(text, k, source, f"the attributes of @{name}")
                continue
            if text.startswith("{", k):
                j = end = _skip_balanced(text, k, source, f"the body of @{name}")
                has_body = True
            break
        out.append(FuncSpan(start, end, name, has_body, private))
        i = end
    return out


def _blank(s: str) -> str:
    return re.sub(r"[^\n]", " ", s)


def has_aliases(text: str) -> bool:
    """Does ``text`` define attribute or type aliases (``#map = ...``, ``!t = ...``) at the top?"""
    return _ALIAS.search(text) is not None


def only(text: str, keep: list[tuple[int, int]]) -> str:
    """``text`` with everything outside ``keep`` spans and alias definitions blanked (newlines kept)."""
    spans = sorted(keep + [(m.start(), m.end()) for m in _ALIAS.finditer(text)])
    out = []
    pos = 0
    for a, b in spans:
        if a < pos:
            a = pos
        if b <= a:
            continue
        out.append(_blank(text[pos:a]))
        out.append(text[a:b])
        pos = b
    out.append(_blank(text[pos:]))
    return "".join(out)


def without(text: str, drop: list[tuple[int, int]]) -> str:
    """``text`` with the ``drop`` spans blanked (the module skeleton around the funcs)."""
    out = []
    pos = 0
    for a, b in sorted(drop):
        out.append(text[pos:a])
        out.append(_blank(text[a:b]))
        pos = b
    out.append(text[pos:])
    return "".join(out)
