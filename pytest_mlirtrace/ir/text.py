"""MIGraphX's module text format: print exactly as MIGraphX prints, parse it back.

A line looks like::

    mlir_main:pointwise4:@4 = transpose[permutation={0, 2, 1, 3}](mlir_main:pointwise4:y0) -> half_type, {1, 384, 12, 64}, {294912, 64, 24576, 1}, target_id=0

Module name prefix (``mlir_main:pointwise4:``) and ``target_id`` are kept on the
:class:`Module`, so print(parse(text)) gives the text back byte for byte.

Names and string attributes are printed bare, as MIGraphX prints them, when they read back so; any
other (a space, a comma, a bracket, a quote, a newline, a string that reads as a number...) is printed
quoted with MLIR's escapes (``"in put" = @param:"in put"``, ``[tag="a, b"]``), so every module parses back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .dtypes import BY_MIGRAPHX
from .module import Instruction, IRError, Module
from .shape import Shape


class TextParseError(IRError):
    def __init__(self, msg: str, line: int, source: str = "<text>", text: str = ""):
        self.line, self.source, self.text = line, source, text
        super().__init__(f"{source}:{line}: {msg}" + (f"\n    {text}" if text else ""))


# ----------------------------------------------------------------- strings --
# A string is written bare where that reads back as the same string (what MIGraphX prints), else quoted
# with MLIR's escapes: ``\"``, ``\\``, ``\n``, ``\t`` and ``\XX`` (hex, per UTF-8 byte) for any other
# character that is not printable. The MLIR layer uses the same quoting for its string literals.
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


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_BARE_NAME = re.compile(r'[^\s,()\[\]{}"\\]+')


def _fmt_name(n: str) -> str:
    """An instruction or param name: bare when it has no character the line syntax uses, else quoted."""
    return n if _BARE_NAME.fullmatch(n) and n.isprintable() else quote_string(n)


def _reads_back(v: str) -> bool:
    """Does ``v`` written bare in ``[key=v]`` read back as the string ``v``?"""
    if not v or not v.isprintable() or '"' in v or "\\" in v or v != v.strip():
        return False
    depth = 0
    for c in v:
        depth += (c in "{[(") - (c in "}])")
        if depth < 0:
            return False
    if depth:
        return False
    try:
        return _Cursor(v + "]").until("]") == v and _split_top(v) == [v] and _parse_value(v) == v
    except ValueError:
        return False


def _fmt_key(k: str) -> str:
    return k if "=" not in k and _reads_back(k) else quote_string(k)


def _fmt_str(v: str) -> str:
    return str(v) if _reads_back(v) else quote_string(str(v))


# ---------------------------------------------------------------- printing --
def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_fmt_value(x) for x in v) + "}"
    if isinstance(v, float):
        r = repr(v)
        return r[:-2] if r.endswith(".0") else r
    if isinstance(v, str):
        return _fmt_str(v)
    return str(v)


def _fmt_literal(arr: np.ndarray) -> str:
    flat = arr.reshape(-1).tolist()
    return "{" + ", ".join(_fmt_value(float(x) if isinstance(x, float) else x) for x in flat) + "}"


def print_instruction(ins: Instruction, prefix: str = "", target_id: bool = True) -> str:
    def q(n: str) -> str:
        return _fmt_name(prefix + n)

    if ins.op == "@param":
        head = f"@param:{_fmt_name(ins.param)}"
    elif ins.op == "@literal":
        head = "@literal" + _fmt_literal(ins.literal)
    else:
        head = ins.op
        if ins.attrs:
            head += "[" + ",".join(f"{_fmt_key(k)}={_fmt_value(v)}" for k, v in ins.attrs.items()) + "]"
        if ins.inputs or ins.op == "@return":
            head += "(" + ",".join(q(i) for i in ins.inputs) + ")"
    line = f"{q(ins.name)} = {head}"
    if ins.shape is not None:
        line += f" -> {ins.shape}"
    if target_id:
        line += ", target_id=0"
    return line


def print_module(m: Module) -> str:
    prefix = f"{m.name}:" if m.name else ""
    return "".join(print_instruction(i, prefix, m.target_id) + "\n" for i in m.instructions)


# ----------------------------------------------------------------- parsing --
_LINE = re.compile(r'^(?P<name>"(?:[^"\\\n]|\\.)*"|\S+) = (?P<rest>.*)$')


def _name(tok: str) -> str:
    """A name as written: bare, or quoted (:func:`quote_string`)."""
    tok = tok.strip()
    return unquote_string(tok) if tok.startswith('"') else tok


@dataclass
class _Cursor:
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

    def expect(self, tok: str, what: str) -> None:
        if not self.eat(tok):
            raise ValueError(f"expected {tok!r} {what} at column {self.base + self.i + 1}, "
                             f"found {self.s[self.i:self.i + 12]!r}")

    def until(self, stops: str) -> str:
        j = self.i
        depth = 0
        while j < len(self.s):
            c = self.s[j]
            if c == '"':
                m = _STRING.match(self.s, j)
                if m is None:
                    raise ValueError(f"unterminated string at column {self.base + j + 1}")
                j = m.end()
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif depth == 0 and c in stops:
                break
            j += 1
        out, self.i = self.s[self.i:j], j
        return out


def _parse_value(tok: str):
    tok = tok.strip()
    if tok.startswith('"') and _STRING.fullmatch(tok):
        return unquote_string(tok)
    if tok.startswith("{") and tok.endswith("}"):
        inner = tok[1:-1].strip()
        if not inner:
            return []
        return [_parse_value(p) for p in _split_top(inner)]
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if re.fullmatch(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|nan", tok):
        return float(tok)
    return tok


_SPLIT_STOP = re.compile(r'[{}\[\]()",]')


def _split_top(s: str) -> list[str]:
    """``s`` cut at the commas outside brackets and quoted strings."""
    parts, depth, start, j = [], 0, 0, 0
    while True:
        m = _SPLIT_STOP.search(s, j)
        if m is None:
            break
        j, c = m.start(), m.group()
        if c == '"':
            q = _STRING.match(s, j)
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


def _parse_shape(text: str) -> tuple[Shape | None, bool]:
    """``half_type, {1, 2}, {2, 1}, target_id=0`` -> (Shape, has target_id)."""
    parts = [p.strip() for p in _split_top(text)]
    has_tid = False
    if parts and parts[-1].startswith("target_id="):
        has_tid = True
        parts = parts[:-1]
    if not parts:
        return None, has_tid
    if len(parts) != 3:
        raise ValueError(f"expected '<type>, {{lens}}, {{strides}}', got {text.strip()!r}")
    if parts[0] not in BY_MIGRAPHX:
        raise ValueError(f"unknown type {parts[0]!r} (known: {', '.join(sorted(BY_MIGRAPHX))})")
    lens, strides = _parse_value(parts[1]), _parse_value(parts[2])
    if not isinstance(lens, list) or not isinstance(strides, list):
        raise ValueError("lens and strides must be {...} lists")
    return Shape.of(parts[0], lens, strides), has_tid


def parse_instruction_line(line: str) -> tuple[str, Instruction, bool]:
    """Parse one line into (full name, instruction with full names, has target_id)."""
    stripped = line.strip()
    m = _LINE.match(stripped)
    if not m:
        raise ValueError("expected '<name> = <op>...'")
    full, rest = _name(m.group("name")), m.group("rest")
    c = _Cursor(rest, base=len(line) - len(line.lstrip()) + m.start("rest"))
    ins = Instruction(full, "")
    if c.eat("@param:"):
        q = _STRING.match(rest, c.i) if c.peek() == '"' else None
        if q is not None:
            ins.op, ins.param = "@param", unquote_string(q.group())
            c.i = q.end()
        else:
            ins.op, ins.param = "@param", c.until(" ,").strip()
    elif c.eat("@literal"):
        ins.op = "@literal"
        raw = c.until(" ,-") if c.peek() == "{" else ""
        ins.literal = np.array(_parse_value(raw) if raw else [])
    else:
        ins.op = c.until("[( ,").strip()
        if not ins.op:
            raise ValueError("missing op name")
        if c.eat("["):
            body = c.until("]")
            c.expect("]", "to close the attributes")
            for part in _split_top(body):
                q = _STRING.match(part.strip())
                eq = part.find("=", part.index('"') + len(q.group())) if q else part.find("=")
                if eq < 0:
                    raise ValueError(f"attribute {part!r} is not key=value")
                ins.attrs[_name(part[:eq])] = _parse_value(part[eq + 1:])
        if c.eat("("):
            body = c.until(")")
            c.expect(")", "to close the inputs")
            ins.inputs = [_name(x) for x in _split_top(body) if x.strip()]
    tail = rest[c.i:].strip()
    has_tid = False
    if tail.startswith("->"):
        ins.shape, has_tid = _parse_shape(tail[2:])
    elif tail.startswith(","):
        _, has_tid = _parse_shape(tail[1:])
    elif tail:
        raise ValueError(f"unexpected text {tail!r} after the op")
    return full, ins, has_tid


def _common_prefix(names: list[str]) -> str:
    """The module-name prefix (``a:b:``) shared by every instruction name, if any."""
    if not names or not all(":" in n for n in names):
        return ""
    cands = [n.rsplit(":", 1)[0] + ":" for n in names]
    first = cands[0]
    return first if all(c == first for c in cands) else ""


def parse_module(text: str, source: str = "<text>", verify: bool = True) -> Module:
    """Parse MIGraphX module text (one instruction a line; blank lines and ``module:`` headers skipped)."""
    rows = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or re.match(r'^\s*module:\s*"?[^"]*"?\s*$', line):
            continue
        try:
            full, ins, tid = parse_instruction_line(line)
        except ValueError as e:
            raise TextParseError(str(e), lineno, source, line) from None
        rows.append((lineno, line, full, ins, tid))
    if not rows:
        raise TextParseError("no instructions found", 1, source)
    prefix = _common_prefix([r[2] for r in rows])
    m = Module(name=prefix[:-1] or None, target_id=all(r[4] for r in rows))

    def strip(n: str) -> str:
        return n[len(prefix):] if prefix and n.startswith(prefix) else n

    for lineno, line, full, ins, _ in rows:
        ins.name = strip(full)
        ins.inputs = [strip(i) for i in ins.inputs]
        if ins.name in m:
            raise TextParseError(f"instruction {ins.name} defined twice", lineno, source, line)
        for i in ins.inputs:
            if i not in m:
                raise TextParseError(f"input {i} is used before it is defined", lineno, source, line)
        if ins.op == "@literal" and ins.shape is not None and ins.literal is not None:
            if ins.literal.size == ins.shape.elements:
                ins.literal = ins.literal.reshape(ins.shape.lens)
        m.instructions.append(ins)
        if verify and ins.op not in ("@param", "@literal", "@return"):
            try:
                m.verify_instruction(ins)
            except IRError as e:
                raise TextParseError(str(e), lineno, source, line) from None
    return m
