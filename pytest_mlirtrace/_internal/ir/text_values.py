"""The values of MIGraphX's module text: attribute values (numbers, strings, lists, structs, shapes), names and
bracketed groups, read by the parser (:mod:`.text`) and by the printer (:mod:`.printer`), which writes a string
bare only where it reads back as the same string (:func:`reads_back`)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .dtypes import BY_MIGRAPHX
from .quoting import unquote_string
from .shape import Shape

STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_KEY = re.compile(r'\s*(?:[A-Za-z_][\w.:-]*|"(?:[^"\\\n]|\\.)*")=')

# Element types MIGraphX has printed that this package has no dtype for: a shape of one is kept as text.
OTHER_TYPES = frozenset({"fp8e4m3fnuz_type", "fp8e4m3fn_type", "fp8e5m2_type", "fp8e5m2fnuz_type", "fp4x2_type",
                         "tuple_type"})


class RawValue(str):
    """An attribute value or shape kept as MIGraphX printed it (a tuple or dynamic shape, an element type
    this package has no dtype for): printed back as is; a module holding one does not run here."""


def unquote_name(tok: str) -> str:
    """A name as written: bare, or quoted (:func:`quote_string`)."""
    tok = tok.strip()
    return unquote_string(tok) if tok.startswith('"') else tok


def close_bracket(s: str, i: int, base: int = 0, what: str = "") -> int:
    """Index just past the bracket that closes ``s[i]`` (``{[(`` nest, quoted strings skipped)."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == '"':
            m = STRING.match(s, j)
            if m is None:
                raise ValueError(f"unterminated string at column {base + j + 1}")
            j = m.end()
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    closer = {"[": "]", "(": ")", "{": "}"}[s[i]]
    raise ValueError(f"expected {closer!r} {what} at column {base + len(s) + 1}, found end of line")


@dataclass
class Cursor:
    s: str
    i: int = 0
    base: int = 0        # column of s[0] in the line (messages give line columns)

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def eat(self, tok: str) -> bool:
        if self.s.startswith(tok, self.i):
            self.i += len(tok)
            return True
        return False

    def until(self, stops: str) -> str:
        j = self.i
        while j < len(self.s) and self.s[j] not in stops:
            j += 1
        out, self.i = self.s[self.i:j], j
        return out

    def group(self, what: str) -> str:
        """The bracketed text at the cursor, without its brackets."""
        end = close_bracket(self.s, self.i, self.base, what)
        body, self.i = self.s[self.i + 1:end - 1], end
        return body


_FLOAT = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|-?nan")


def parse_value(tok: str):
    tok = tok.strip()
    if tok.startswith('"') and STRING.fullmatch(tok):
        return unquote_string(tok)
    if tok.startswith("{") and tok.endswith("}"):
        inner = tok[1:-1].strip()
        if not inner:
            return []
        parts = split_top(inner)
        if all(_KEY.match(p) for p in parts):
            st = _struct(parts)
            if st is not None:
                return st
        return [parse_value(p) for p in parts]
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if _FLOAT.fullmatch(tok):
        return float(tok)
    return tok


def _struct(parts: list[str]) -> dict:
    """``{a=1,b=2}`` (a value MIGraphX prints from a struct) as a dict; None when it is not one."""
    out = {}
    for p in parts:
        m = _KEY.match(p)
        key = unquote_name(p[:m.end() - 1])
        out[key] = attr_value(p[m.end():])
    return out


_SPLIT_STOP = re.compile(r'[{}\[\]()",]')


def split_top(s: str) -> list[str]:
    """``s`` cut at the commas outside brackets and quoted strings."""
    parts, depth, start, j = [], 0, 0, 0
    while True:
        m = _SPLIT_STOP.search(s, j)
        if m is None:
            break
        j, c = m.start(), m.group()
        if c == '"':
            q = STRING.match(s, j)
            j = q.end() if q else j + 1
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif depth == 0:
            parts.append(s[start:j])
            start = j + 1
        j += 1
    if start < len(s):
        parts.append(s[start:])
    return parts


def shape_value(text: str) -> Shape | RawValue | None:
    """``float_type, {256}, {1}`` as a Shape, a shape MIGraphX prints that is no tensor shape here (tuple,
    dynamic, fp8 ...) as RawValue, None when ``text`` is no shape at all."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]") and re.match(r"\[\s*\w+_type\b", t):
        return RawValue(t)
    parts = [p.strip() for p in split_top(t)]
    if not parts or not (parts[0] in BY_MIGRAPHX or parts[0] in OTHER_TYPES or parts[0] == "dynamic"):
        return None
    if parts[0] in BY_MIGRAPHX and len(parts) == 3:
        lens, strides = parse_value(parts[1]), parse_value(parts[2])
        if (isinstance(lens, list) and isinstance(strides, list) and all(type(x) is int for x in lens + strides)
                and len(lens) == len(strides)):
            try:
                return Shape.of(parts[0], lens, strides)
            except ValueError:
                pass
    if len(parts) >= 2 and all(p.startswith("{") for p in parts[1:] if p) or parts[0] == "dynamic":
        return RawValue(t)
    return None


def attr_value(text: str):
    v = text.strip()
    if "," in v and not v.startswith(("{", '"')):
        sv = shape_value(v)
        if sv is not None:
            return sv
    return parse_value(v)


def parse_attrs(body: str) -> tuple[dict, bool]:
    """``key=value,...`` -> (attributes in order, a trailing comma); a value may hold commas (a shape)."""
    pieces = split_top(body)
    comma = False
    if len(pieces) > 1 and not pieces[-1].strip():
        pieces.pop()
        comma = True
    elif body.rstrip().endswith(","):
        comma = True
    items: list[list[str]] = []
    for p in pieces:
        if _KEY.match(p) or not items:
            items.append([p])
        else:
            items[-1].append(p)          # a comma inside the value: float_type, {256}, {1}
    out = {}
    for grp in items:
        part = ",".join(grp)
        m = _KEY.match(part)
        if m is None:
            raise ValueError(f"attribute {part.strip()!r} is not key=value")
        out[unquote_name(part[:m.end() - 1])] = attr_value(part[m.end():])
    return out, comma


def reads_back(v: str) -> bool:
    """Does ``v`` written bare in ``[key=v]`` read back as the string ``v``?"""
    if not v:
        return True
    if not v.isprintable() or '"' in v or "\\" in v or v != v.strip():
        return False
    depth = 0
    for c in v:
        depth += (c in "{[(") - (c in "}])")
        if depth < 0:
            return False
    if depth:
        return False
    try:
        attrs, comma = parse_attrs("k=" + v)
    except ValueError:
        return False
    return not comma and list(attrs) == ["k"] and type(attrs["k"]) is str and attrs["k"] == v
