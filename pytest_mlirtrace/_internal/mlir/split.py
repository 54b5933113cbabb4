"""Finding the ``func.func`` ops of an MLIR text without parsing it.

Real files hold several funcs, funcs nested in ``module @x {...}``, ``func.func private``
declarations, and ops of dialects we have no grammar for (``mhal.launch``) that would
stop any parser at the first one.  So each func is cut out here and parsed on its own, its
positions shifted back into the file, so line and column numbers in messages are those of the
original file.  Every scan here is linear in the text: it jumps from one character that matters
(quote, comment, bracket) to the next with a regular expression.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_mlirtrace._internal.ir import unquote_string

from .errors import MLIRParseError, line_col


@dataclass
class FuncSpan:
    start: int          # offset of "func.func"
    end: int            # offset just past the func (its closing brace, or the end of a declaration)
    name: str
    has_body: bool
    private: bool


_ALIAS = re.compile(r"^[ \t]*[#!][\w.$-]+[ \t]*=.*$", re.M)
# a string literal (escapes as MLIR's lexer takes them, never across a line), a comment
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# at the top level: what func.func may hide in (strings, comments) and func.func itself
_TOP = re.compile(r'"|//|(?<![\w.$])(?:func\.func\b|builtin\.func\b'
                  r'|func(?=[ \t]+(?:(?:private|public|nested)[ \t]+)?@))')
# a func in MLIR's generic form: "func.func"() ({ ^bb0(...): ... }) {sym_name = "f", ...} : () -> ()
_GENERIC_FUNC = re.compile(r'"(?:func\.func|builtin\.func)"')
# Inside brackets: the characters that matter one by one (quotes, comments, brackets, '->'), after a run
# of text the bracket walk below would pass through with no effect: plain characters, '->', and whole
# bracket groups two deep with no quote or comment inside (an op's operands and types, an attribute dict,
# a type); a group the walk would see differently (a lone '<' or '>', deeper nesting) ends the run there.
_A = r'[^<>()\[\]{}"/\-]'
_P = rf'(?:{_A}|-(?!>))*+'
_ANG = rf'<{_P}>'
_SQ = rf'\[(?:{_A}|-(?!>)|{_ANG}|\[{_P}\])*+\]'
_PAR = rf'\((?:{_A}|->?|{_ANG}|\[{_P}\])*+\)'
_BR = rf'\{{(?:{_A}|->?|{_ANG}|{_SQ})*+\}}'
_RUN = rf'(?:{_A}++|->?|{_ANG}|{_SQ}|{_PAR}|{_BR})++'
_BRACKETS = re.compile(rf'{_RUN}|["/\-()\[\]{{}}<>]')
_SYMBOL = re.compile(r'@("(?:[^"\\\n]|\\.)*"|[\w.$-]+)')


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
    m = _STRING.match(text, i)
    if m is not None:
        return m.end()
    line, col = line_col(text, i)
    raise MLIRParseError("unterminated string literal", source, line, col, text)


_CLOSE = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _skip_balanced(text: str, i: int, source: str, what: str) -> int:
    """``text[i]`` opens a bracket; return the offset after its match (strings, comments, ``->`` aware)."""
    stack = [text[i]]
    j = i + 1
    n = len(text)
    search = _BRACKETS.search
    while j < n:
        m = search(text, j)
        if m is None:
            break
        j = m.start()
        c = text[j]
        if m.end() - j > 1 or c not in '"/-()[]{}<>':       # a run: nothing to see inside
            j = m.end()
            continue
        if c == '"':
            j = _skip_string(text, j, source)
            continue
        if c == "/":
            if text.startswith("//", j):
                k = text.find("\n", j)
                j = n if k < 0 else k + 1
            else:
                j += 1
            continue
        if c == "-":
            j += 2 if text.startswith("->", j) else 1
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


_STRING_OR_COMMENT = re.compile(r'"|//')


def check_strings(text: str, source: str = "<mlir>") -> None:
    """Raise for a string literal that is not closed on its line.

    Done before xDSL sees the text: its lexer's string regex backtracks exponentially on an
    unterminated string in a long line (the parse would hang instead of failing).
    """
    i, n = 0, len(text)
    search = _STRING_OR_COMMENT.search
    while True:
        m = search(text, i)
        if m is None:
            return
        q = m.start()
        if m.group() == "//":
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
        m = _TOP.search(text, i)
        if m is None:
            break
        i = m.start()
        if m.group() == '"':
            g = _GENERIC_FUNC.match(text, i)
            if g is not None:
                span = _generic_func(text, i, g.end(), source)
                out.append(span)
                i = span.end
                continue
            i = _skip_string(text, i, source)
            continue
        if m.group() == "//":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        start = i
        j = _skip_ws(text, m.end())
        private = False
        vis = _VISIBILITY.match(text, j)
        if vis:
            private = vis.group(1) == "private"
            j = _skip_ws(text, vis.end())
        nm = _SYMBOL.match(text, j)
        if not nm:
            line, col = line_col(text, j)
            if text.startswith('@"', j):
                _skip_string(text, j + 1, source)
            raise MLIRParseError("expected '@name' after func.func", source, line, col, text)
        try:
            name = symbol_name(nm.group(1))
        except ValueError as e:
            line, col = line_col(text, j + 1)
            raise MLIRParseError(str(e), source, line, col, text) from None
        j = _skip_ws(text, nm.end())
        ref = "@" + nm.group(1)             # the name as written, for messages
        if j >= n or text[j] != "(":
            line, col = line_col(text, j)
            raise MLIRParseError(f"expected '(' to open the arguments of {ref}", source, line, col, text)
        j = _skip_balanced(text, j, source, f"the arguments of {ref}")
        has_body = False
        end = j
        while True:
            k = _skip_ws(text, j)
            if text.startswith("->", k):
                k = _skip_ws(text, k + 2)
                j = _skip_balanced(text, k, source, f"the results of {ref}") if text.startswith("(", k) \
                    else _skip_type(text, k, source)
                end = j
                continue
            if _ATTRIBUTES.match(text, k):
                k = _skip_ws(text, k + len("attributes"))
                if not text.startswith("{", k):
                    line, col = line_col(text, k)
                    raise MLIRParseError(f"expected '{{' after 'attributes' of {ref}", source, line, col, text)
                j = end = _skip_balanced(text, k, source, f"the attributes of {ref}")
                continue
            if text.startswith("{", k):
                j = end = _skip_balanced(text, k, source, f"the body of {ref}")
                has_body = True
            break
        out.append(FuncSpan(start, end, name, has_body, private))
        i = end
    return out


_VISIBILITY = re.compile(r"(private|public|nested)\b")
_SYM_NAME = re.compile(r'(?<![\w.$])"?sym_name"?\s*=\s*("(?:[^"\\\n]|\\.)*")')
_SYM_PRIVATE = re.compile(r'(?<![\w.$])"?sym_visibility"?\s*=\s*"private"')
_GENERIC_TAIL = re.compile(r'\s*:\s*\(\s*\)\s*->\s*\(\s*\)')


def _generic_func(text: str, start: int, j: int, source: str) -> FuncSpan:
    """The span of a func in the generic form, its quoted op name at ``start`` (``j`` just past it):
    ``"func.func"() <{props}>? ({region})? {attrs}? : () -> ()``; its name is the ``sym_name`` attribute."""
    where = "the generic func.func"
    j = _skip_ws(text, j)
    if not text.startswith("(", j):
        line, col = line_col(text, j)
        raise MLIRParseError("expected '(' after \"func.func\" (generic form)", source, line, col, text)
    j = _skip_balanced(text, j, source, f"the operands of {where}")
    attrs, has_body = [], False
    while True:
        k = _skip_ws(text, j)
        if text.startswith("<{", k):
            j = _skip_balanced(text, k, source, f"the properties of {where}")
            attrs.append(text[k:j])
        elif text.startswith("(", k):
            j = _skip_balanced(text, k, source, f"the body of {where}")
            has_body = bool(re.search(r"[^\s(){}]", text[k:j]))
        elif text.startswith("{", k):
            j = _skip_balanced(text, k, source, f"the attributes of {where}")
            attrs.append(text[k:j])
        else:
            break
    t = _GENERIC_TAIL.match(text, j)
    end = t.end() if t else j
    found = next((m for a in attrs for m in [_SYM_NAME.search(a)] if m), None)
    if found is None:
        line, col = line_col(text, start)
        raise MLIRParseError("a func.func in the generic form without a sym_name attribute", source, line, col, text)
    private = any(_SYM_PRIVATE.search(a) for a in attrs)
    return FuncSpan(start, end, symbol_name(found.group(1)), has_body, private)
_ATTRIBUTES = re.compile(r"attributes\b")


def symbol_name(tok: str) -> str:
    """The name a symbol token stands for: ``foo`` or a quoted ``"a\\"b"`` (MLIR's escapes)."""
    return unquote_string(tok, errors="replace") if tok.startswith('"') else tok


def _blank(s: str) -> str:
    return re.sub(r"[^\n]", " ", s)


def skeleton(text: str, drop: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without the ``drop`` spans (the module around the funcs), and where its pieces lie in
    ``text``: ``[(offset in the skeleton, offset in text), ...]``.  A dropped span leaves its newlines and
    the spaces of its last line only, so the skeleton stays small and keeps every line and column."""
    out, pieces = [], []
    pos = at = 0
    for a, b in sorted(drop):
        pieces.append((at, pos))
        out.append(text[pos:a])
        at += a - pos
        nl = text.count("\n", a, b)
        if nl:
            last = b - (text.rfind("\n", a, b) + 1)
            out.append("\n" * nl)
            at += nl
            pieces.append((at, b - last))
            out.append(" " * last)
            at += last
        else:
            out.append(" " * (b - a))
            at += b - a
        pos = b
    pieces.append((at, pos))
    out.append(text[pos:])
    return "".join(out), pieces


def has_aliases(text: str) -> bool:
    """Does ``text`` define attribute or type aliases (``#map = ...``, ``!t = ...``) at the top?"""
    return _ALIAS.search(text) is not None


def aliases(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of the alias definitions of ``text``."""
    return [(m.start(), m.end()) for m in _ALIAS.finditer(text)]


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
