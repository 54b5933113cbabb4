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
from dataclasses import dataclass, field

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


_BARE_KEY = re.compile(r"[A-Za-z_][\w.:-]*")


def _fmt_key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else quote_string(k)


def _fmt_str(v: str) -> str:
    return str(v) if _reads_back(v) else quote_string(str(v))


# ------------------------------------------------------------ printer style --
# Element types MIGraphX has printed that this package has no dtype for: a shape of one is kept as text.
OTHER_TYPES = frozenset({"fp8e4m3fnuz_type", "fp8e4m3fn_type", "fp8e5m2_type", "fp8e5m2fnuz_type", "fp4x2_type",
                         "tuple_type"})
# Attribute names older MIGraphX printed, per op: {printed name: the name the shape rules read}.
OLD_ATTR_NAMES = {"broadcast": {"dims": "out_lens"}, "multibroadcast": {"output_lens": "out_lens"},
                  "transpose": {"dims": "permutation"}}
# Op namespaces of compiled programs (lowered for a target): they parse and print, they never run here.
COMPILED_PREFIXES = ("gpu::", "ref::", "hip::", "cpu::", "dnnl::", "check_context::", "fpga::")
COMPILED_OPS = frozenset({"load", "allocate", "@outline"})


class RawValue(str):
    """An attribute value or shape kept as MIGraphX printed it (a tuple or dynamic shape, an element type
    this package has no dtype for): printed back as is; a module holding one does not run here."""


@dataclass
class InsText:
    """What a printed instruction carried besides its op, attributes, inputs and shape."""
    modules: list[str] | None = None     # module inputs: ", [main:pointwise0]" after the inputs
    target_id: int | None = None         # ", target_id=N" on this line when the module does not print it on all
    symbols: str | None = None           # debug symbols: " # Convolution28, Plus30"
    shape_text: str | None = None        # the result shape kept as text (tuple, dynamic, fp8 ...)
    attrs_comma: bool = False            # the attributes end with a comma (gpu::code_object prints so)
    renamed: dict[str, str] = field(default_factory=dict)   # attribute name here -> the older name printed
    blank_before: int = 0                # blank lines printed before this line


@dataclass
class TextStyle:
    """How MIGraphX printed a module, so that :func:`print_module` prints it back the same way."""
    header: str | None = None            # the ``module: "<header>"`` line before the instructions
    param_prefix: bool = True            # the name prefix goes on @param names too (not so before 2023-05)
    blank_after: int = 0                 # blank lines after the module (the program printer leaves one)
    ins: dict[str, InsText] = field(default_factory=dict)
    others: list = field(default_factory=list)   # the program's other modules, printed after this one

    def extra(self, name: str) -> InsText | None:
        return self.ins.get(name)


def style_of(m: Module) -> TextStyle | None:
    st = getattr(m, "text_style", None)
    return st if isinstance(st, TextStyle) else None


def compiled_op(op: str) -> bool:
    """An op of a compiled (lowered) program: ``gpu::gemm``, ``ref::add``, ``hip::copy``, ``load`` ..."""
    return op.startswith(COMPILED_PREFIXES) or op in COMPILED_OPS


def not_runnable(m: Module) -> list[str]:
    """Every reason the printed module ``m`` cannot run here (empty when nothing in its text stops it);
    ops without a shape rule are :meth:`Module.unsupported_ops`, listed here too."""
    why: list[str] = []
    compiled = sorted({i.op for i in m.instructions if compiled_op(i.op)})
    if compiled:
        why.append(f"a compiled program (ops of a target: {', '.join(compiled[:6])}"
                   f"{', ...' if len(compiled) > 6 else ''}): it is printed after lowering, not a module to run")
    st = style_of(m)
    for ins in m.instructions:
        if ins.op == "@literal" and ins.literal is None:
            why.append(f"{ins.name} = @literal{{ ... }}: its values were left out of the printout")
        ex = st.extra(ins.name) if st else None
        if ex is not None and ex.shape_text is not None:
            why.append(f"{ins.name} = {ins.op}: shape {ex.shape_text!r} is not a plain tensor shape here")
        if ex is not None and ex.modules:
            why.append(f"{ins.name} = {ins.op}: takes module(s) {', '.join(ex.modules)}")
        for k, v in ins.attrs.items():
            if isinstance(v, RawValue):
                why.append(f"{ins.name} = {ins.op}: attribute {k}={v} is kept as text")
    rest = [op for op in m.unsupported_ops() if not compiled_op(op)]
    if rest:
        why.append(f"op(s) with no shape rule here: {', '.join(rest)}")
    return why


# ---------------------------------------------------------------- printing --
def _fmt_float(v: float) -> str:
    """As C++ streams a float (``%g``: 0.707107, 1e+06) when that reads back as the same value, else
    the shortest text that does."""
    g = "%g" % v
    try:
        if float(g) == v:
            return g
    except ValueError:
        pass
    r = repr(v)
    return r[:-2] if r.endswith(".0") else r


def _fmt_value(v) -> str:
    if isinstance(v, RawValue):
        return str(v)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, Shape):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(f"{_fmt_key(str(k))}={_fmt_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_fmt_value(x) for x in v) + "}"
    if isinstance(v, float):
        return _fmt_float(v)
    if isinstance(v, str):
        return _fmt_str(v)
    return str(v)


def _fmt_literal(arr: np.ndarray | None) -> str:
    if arr is None:
        return "{ ... }"
    flat = arr.reshape(-1).tolist()
    return "{" + ", ".join(_fmt_value(float(x) if isinstance(x, float) else x) for x in flat) + "}"


def print_instruction(ins: Instruction, prefix: str = "", target_id: bool = True, *, extra: InsText | None = None,
                      bare: frozenset | set = frozenset()) -> str:
    """One line; ``bare``: the names printed without ``prefix`` (parameters, as MIGraphX before 2023-05)."""
    def q(n: str) -> str:
        return _fmt_name(n if n in bare else prefix + n)

    if ins.op == "@param":
        head = f"@param:{_fmt_name(ins.param)}"
    elif ins.op == "@literal":
        head = "@literal" + _fmt_literal(ins.literal)
    else:
        head = ins.op
        if ins.attrs:
            names = extra.renamed if extra else {}
            head += "[" + ",".join(f"{_fmt_key(names.get(k, k))}={_fmt_value(v)}" for k, v in ins.attrs.items())
            head += ("," if extra and extra.attrs_comma else "") + "]"
        if ins.inputs or ins.op == "@return":
            head += "(" + ",".join(q(i) for i in ins.inputs) + ")"
    line = f"{q(ins.name)} = {head}"
    if extra and extra.modules is not None:
        line += ", [" + ", ".join(extra.modules) + "]"
    if extra and extra.shape_text is not None:
        line += f" -> {extra.shape_text}"
    elif ins.shape is not None:
        line += f" -> {ins.shape}"
    tid = extra.target_id if extra and extra.target_id is not None else (0 if target_id else None)
    if tid is not None:
        line += f", target_id={tid}"
    if extra and extra.symbols is not None:
        line += f" # {extra.symbols}"
    return line


def print_module(m: Module) -> str:
    """``m`` as MIGraphX prints it; a module read from text prints back byte for byte (its header, name
    prefixes, target ids, older attribute names, debug symbols and the program's other modules)."""
    st = style_of(m)
    out = []
    if st is not None and st.header is not None:
        out.append(f'module: "{st.header}"\n')
    prefix = f"{m.name}:" if m.name else ""
    bare = frozenset() if st is None or st.param_prefix or not prefix else frozenset(
        i.name for i in m.instructions if i.op == "@param")
    for i in m.instructions:
        ex = st.extra(i.name) if st is not None else None
        if ex is not None and ex.blank_before:
            out.append("\n" * ex.blank_before)
        out.append(print_instruction(i, prefix, m.target_id, extra=ex, bare=bare) + "\n")
    if st is not None:
        out.append("\n" * st.blank_after)
        out.extend(print_module(o) for o in st.others)
    return "".join(out)


# ----------------------------------------------------------------- parsing --
_LINE = re.compile(r'^(?P<name>"(?:[^"\\\n]|\\.)*"|\S+) = (?P<rest>.*)$')
_HEADER = re.compile(r'^\s*module:\s*(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<b>\S*))\s*$')
_KEY = re.compile(r'\s*(?:[A-Za-z_][\w.:-]*|"(?:[^"\\\n]|\\.)*")=')
_TID = re.compile(r",\s*target_id=(?P<n>\d+)\s*$")


def _name(tok: str) -> str:
    """A name as written: bare, or quoted (:func:`quote_string`)."""
    tok = tok.strip()
    return unquote_string(tok) if tok.startswith('"') else tok


def _close(s: str, i: int, base: int = 0, what: str = "") -> int:
    """Index just past the bracket that closes ``s[i]`` (``{[(`` nest, quoted strings skipped)."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == '"':
            m = _STRING.match(s, j)
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

    def until(self, stops: str) -> str:
        j = self.i
        while j < len(self.s) and self.s[j] not in stops:
            j += 1
        out, self.i = self.s[self.i:j], j
        return out

    def group(self, what: str) -> str:
        """The bracketed text at the cursor, without its brackets."""
        end = _close(self.s, self.i, self.base, what)
        body, self.i = self.s[self.i + 1:end - 1], end
        return body


_FLOAT = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|-?inf|-?nan")


def _parse_value(tok: str):
    tok = tok.strip()
    if tok.startswith('"') and _STRING.fullmatch(tok):
        return unquote_string(tok)
    if tok.startswith("{") and tok.endswith("}"):
        inner = tok[1:-1].strip()
        if not inner:
            return []
        parts = _split_top(inner)
        if all(_KEY.match(p) for p in parts):
            st = _struct(parts)
            if st is not None:
                return st
        return [_parse_value(p) for p in parts]
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
        key = _name(p[:m.end() - 1])
        out[key] = _attr_value(p[m.end():])
    return out


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


def _shape_value(text: str) -> Shape | RawValue | None:
    """``float_type, {256}, {1}`` as a Shape, a shape MIGraphX prints that is no tensor shape here (tuple,
    dynamic, fp8 ...) as RawValue, None when ``text`` is no shape at all."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]") and re.match(r"\[\s*\w+_type\b", t):
        return RawValue(t)
    parts = [p.strip() for p in _split_top(t)]
    if not parts or not (parts[0] in BY_MIGRAPHX or parts[0] in OTHER_TYPES or parts[0] == "dynamic"):
        return None
    if parts[0] in BY_MIGRAPHX and len(parts) == 3:
        lens, strides = _parse_value(parts[1]), _parse_value(parts[2])
        if (isinstance(lens, list) and isinstance(strides, list) and all(type(x) is int for x in lens + strides)
                and len(lens) == len(strides)):
            try:
                return Shape.of(parts[0], lens, strides)
            except ValueError:
                pass
    if len(parts) >= 2 and all(p.startswith("{") for p in parts[1:] if p) or parts[0] == "dynamic":
        return RawValue(t)
    return None


def _attr_value(text: str):
    v = text.strip()
    if "," in v and not v.startswith(("{", '"')):
        sv = _shape_value(v)
        if sv is not None:
            return sv
    return _parse_value(v)


def _parse_attrs(body: str) -> tuple[dict, bool]:
    """``key=value,...`` -> (attributes in order, a trailing comma); a value may hold commas (a shape)."""
    pieces = _split_top(body)
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
        out[_name(part[:m.end() - 1])] = _attr_value(part[m.end():])
    return out, comma


def _reads_back(v: str) -> bool:
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
        attrs, comma = _parse_attrs("k=" + v)
    except ValueError:
        return False
    return not comma and list(attrs) == ["k"] and type(attrs["k"]) is str and attrs["k"] == v


def _parse_shape(text: str) -> tuple[Shape | None, bool]:
    """``half_type, {1, 2}, {2, 1}, target_id=0`` -> (Shape, has target_id)."""
    parts = [p.strip() for p in _split_top(text)]
    has_tid = False
    if parts and parts[-1].startswith("target_id="):
        has_tid = True
        parts = parts[:-1]
    if not parts:
        return None, has_tid
    return _strict_shape(", ".join(parts)), has_tid


def _strict_shape(text: str) -> Shape:
    parts = [p.strip() for p in _split_top(text)]
    if len(parts) != 3:
        raise ValueError(f"expected '<type>, {{lens}}, {{strides}}', got {text.strip()!r}")
    if parts[0] not in BY_MIGRAPHX:
        raise ValueError(f"unknown type {parts[0]!r} (known: {', '.join(sorted(BY_MIGRAPHX))})")
    lens, strides = _parse_value(parts[1]), _parse_value(parts[2])
    if not isinstance(lens, list) or not isinstance(strides, list):
        raise ValueError("lens and strides must be {...} lists")
    return Shape.of(parts[0], lens, strides)


def _result_shape(text: str, ex: InsText) -> Shape | None:
    t = text.strip()
    parts = [p.strip() for p in _split_top(t)] if t else [""]
    first = parts[0]
    symbolic = (first in BY_MIGRAPHX and len(parts) == 3
                and all(p.startswith("{") and p.endswith("}") for p in parts[1:])
                and any(re.search(r"\.\.|[A-Za-z]", p) for p in parts[1:]))
    if t.startswith("[") or first in OTHER_TYPES or first == "dynamic" or symbolic:
        ex.shape_text = t              # tuple, dynamic, symbolic or fp8: kept as printed
        return None
    return _strict_shape(t)


def parse_instruction_text(line: str) -> tuple[str, Instruction, InsText]:
    """One line -> (full name, instruction with full names, what else the line carried)."""
    stripped = line.strip()
    m = _LINE.match(stripped)
    if not m:
        raise ValueError("expected '<name> = <op>...'")
    full, rest = _name(m.group("name")), m.group("rest")
    c = _Cursor(rest, base=len(line) - len(line.lstrip()) + m.start("rest"))
    ins = Instruction(full, "")
    ex = InsText()
    if c.eat("@param:"):
        q = _STRING.match(rest, c.i) if c.peek() == '"' else None
        if q is not None:
            ins.op, ins.param = "@param", unquote_string(q.group())
            c.i = q.end()
        else:
            ins.op, ins.param = "@param", c.until(" ,").strip()
    elif c.eat("@literal"):
        ins.op = "@literal"
        if c.peek() == "{":
            raw = c.group("to close the literal")
            if raw.strip() == "...":
                ins.literal = None          # MIGraphX leaves out literals of more than 10 elements
            else:
                vals = _parse_value("{" + raw + "}")
                flat = vals if isinstance(vals, list) else [vals]
                bad = [v for v in flat if not isinstance(v, (int, float))]
                if bad:
                    raise ValueError(f"literal values must be numbers, found {str(bad[0])!r}")
                ins.literal = np.array(flat)
        else:
            ins.literal = np.array([])
    else:
        ins.op = c.until("[( ,").strip()
        if not ins.op:
            raise ValueError("missing op name")
        if c.peek() == "[":
            body = c.group("to close the attributes")
            ins.attrs, ex.attrs_comma = _parse_attrs(body)
            old = OLD_ATTR_NAMES.get(ins.op.split("::")[-1], {})
            if any(k in old for k in ins.attrs):
                ins.attrs = {old.get(k, k): v for k, v in ins.attrs.items()}
                ex.renamed = {new: k for k, new in old.items()}
        if c.peek() == "(":
            body = c.group("to close the inputs")
            ins.inputs = [_name(x) for x in _split_top(body) if x.strip()]
    tail = rest[c.i:]
    mm = re.match(r"\s*,\s*\[", tail)
    if mm:
        k = _close(tail, mm.end() - 1, c.base + c.i, "to close the module inputs")
        ex.modules = [x.strip() for x in _split_top(tail[mm.end():k - 1]) if x.strip()]
        tail = tail[k:]
    h = tail.find(" # ")
    if h >= 0 or tail.rstrip().endswith(" #"):
        h = h if h >= 0 else tail.rstrip().rfind(" #")
        ex.symbols = tail[h + 3:] if h + 3 <= len(tail) else ""
        tail = tail[:h]
    tail = tail.strip()
    tm = _TID.search(tail)
    if tm:
        ex.target_id = int(tm.group("n"))
        tail = tail[:tm.start()].strip()
    if tail.startswith("->"):
        ins.shape = _result_shape(tail[2:], ex)
    elif tail:
        raise ValueError(f"unexpected text {tail!r} after the op")
    return full, ins, ex


def parse_instruction_line(line: str) -> tuple[str, Instruction, bool]:
    """Parse one line into (full name, instruction with full names, has target_id)."""
    full, ins, ex = parse_instruction_text(line)
    return full, ins, ex.target_id is not None


def _prefixes(rows) -> tuple[str, bool]:
    """(the module-name prefix ``a:b:`` of the instruction names, whether @param names carry it too)."""
    names = [r[2] for r in rows]
    if not names:
        return "", True
    cands = {n.rsplit(":", 1)[0] + ":" if ":" in n else "" for n in names}
    if len(cands) == 1 and "" not in cands:
        return cands.pop(), True
    # MIGraphX before 2023-05: main:@3 = ..., but parameters bare (x = @param:x)
    inner = [r[2] for r in rows if r[3].op != "@param"]
    if inner and all(":" in n for n in inner):
        pre = {n.rsplit(":", 1)[0] + ":" for n in inner}
        if len(pre) == 1:
            p = pre.pop()
            if all(not r[2].startswith(p) for r in rows if r[3].op == "@param"):
                return p, False
    return "", True


def _sections(text: str):
    """The text cut at ``module: "name"`` headers: [(header, header line, [(lineno, line)], blanks after)]."""
    out = []
    cur = [None, 0, [], 0]
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        hm = _HEADER.match(line)
        if hm:
            if cur[2] or cur[0] is not None:
                out.append(cur)
            name = hm.group("q") if hm.group("q") is not None else hm.group("b")
            cur = [name.replace('\\"', '"'), lineno, [], 0]
            continue
        cur[2].append((lineno, line))
    if cur[2] or cur[0] is not None:
        out.append(cur)
    for sec in out:
        lines = sec[2]
        while lines and not lines[-1][1].strip():
            lines.pop()
            sec[3] += 1
    return out


def parse_module(text: str, source: str = "<text>", verify: bool = True) -> Module:
    """Parse MIGraphX module text, as any MIGraphX since 2022 printed it: with or without ``module:``
    headers, ``target_id``, name prefixes (``main:@3`` with bare parameters, ``mlir_main:pointwise4:``),
    older attribute names, elided literals (``@literal{ ... }``), shapes as attribute values, module inputs,
    debug symbols, compiled (``gpu::``/``ref::``/``hip::``) ops. A printed program of several modules gives
    its first; the others are kept to print back (``text_style.others``)."""
    sections = _sections(text)
    mods = [_parse_section(sec, source, verify) for sec in sections if sec[2] or sec[0] is not None]
    mods = [m for m in mods if m is not None]
    if not mods:
        raise TextParseError("no instructions found", 1, source)
    first = mods[0]
    style_of(first).others = mods[1:]
    if not first.instructions:
        hdr = sections[0][1] if sections else 1
        raise TextParseError(f"module {style_of(first).header!r} has no instructions", hdr, source)
    return first


def _parse_section(sec, source: str, verify: bool) -> Module | None:
    header, hline, lines, blanks = sec
    rows = []
    blank = 0
    for lineno, line in lines:
        if not line.strip():
            blank += 1
            continue
        try:
            full, ins, ex = parse_instruction_text(line)
        except ValueError as e:
            raise TextParseError(str(e), lineno, source, line) from None
        ex.blank_before, blank = blank, 0
        rows.append((lineno, line, full, ins, ex))
    if not rows and header is None:
        return None
    prefix, pprefix = _prefixes(rows)
    all_tid = bool(rows) and all(r[4].target_id == 0 for r in rows if r[3].op != "@return") and any(
        r[3].op != "@return" for r in rows)
    st = TextStyle(header=header, param_prefix=pprefix, blank_after=blanks)
    m = Module(name=prefix[:-1] or None, target_id=all_tid)
    m.text_style = st
    bare = set() if pprefix else {r[2] for r in rows if r[3].op == "@param"}

    def strip(n: str) -> str:
        return n[len(prefix):] if prefix and n.startswith(prefix) and n not in bare else n

    for lineno, line, full, ins, ex in rows:
        ins.name = strip(full)
        ins.inputs = [strip(i) for i in ins.inputs]
        if all_tid and ex.target_id == 0:
            ex.target_id = None
        if ins.name in m:
            raise TextParseError(f"instruction {ins.name} defined twice", lineno, source, line)
        for i in ins.inputs:
            if i not in m:
                raise TextParseError(f"input {i} is used before it is defined", lineno, source, line)
        if ins.op == "@literal" and ins.shape is not None and ins.literal is not None:
            if ins.literal.size == ins.shape.elements:
                ins.literal = ins.literal.reshape(ins.shape.lens)
        m.instructions.append(ins)
        if ex != InsText():
            st.ins[ins.name] = ex
        if verify and ins.op not in ("@param", "@literal", "@return") and ins.shape is not None \
                and all(m.get(i).shape is not None for i in ins.inputs):
            try:
                m.verify_instruction(ins)
            except IRError as e:
                raise TextParseError(str(e), lineno, source, line) from None
    return m
