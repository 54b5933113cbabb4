"""A light, forgiving look at MLIR text found in a log.

This is no parser (that is the ``mlir`` layer's job): it reads what a log's MLIR shows even when the
text is cut off or lowered past the migraphx dialect -- function names, argument and result types,
op names with their operand types, element types, dialects -- so that a log can be classified and
linked without the ``mlir`` layer, and so that what we cannot run is named with a reason.
Both type syntaxes are read: ``tensor<1x384x768xf16>`` and ``!migraphx.shaped<1x384x768xf16, 294912x768x1>``
(and the short ``<1x5x4xf32, 20x4x1>`` form inside op signatures), plus ``memref<>``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_OPEN, _CLOSE = "([{<", ")]}>"


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets and quotes (``->`` does not close an angle bracket)."""
    parts, depth, cur, i, q = [], 0, [], 0, False
    while i < len(s):
        c = s[i]
        if q:
            cur.append(c)
            if c == "\\" and i + 1 < len(s):
                cur.append(s[i + 1])
                i += 1
            elif c == '"':
                q = False
        elif c == '"':
            q = True
            cur.append(c)
        elif c == "-" and s.startswith("->", i):
            if depth == 0 and sep == "->":
                parts.append("".join(cur))
                cur = []
            else:
                cur.append("->")
            i += 2
            continue
        elif c in _OPEN:
            depth += 1
            cur.append(c)
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
            cur.append(c)
        elif depth == 0 and sep != "->" and s.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def unquoted(s: str, start: int = 0):
    """``(index, char)`` of each character of ``s`` from ``start`` outside double-quoted strings (escapes honoured)."""
    q, i, n = False, start, len(s)
    while i < n:
        c = s[i]
        if q:
            if c == "\\":
                i += 1
            elif c == '"':
                q = False
        elif c == '"':
            q = True
        else:
            yield i, c
        i += 1


def _last_top_colon(s: str) -> int:
    """Index of the last ``:`` outside brackets and quotes that separates an op from its type."""
    depth, last, skip = 0, -1, -1
    for i, c in unquoted(s):
        if i <= skip:
            continue
        if c == "-" and s.startswith("->", i):
            skip = i + 1
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == ":" and depth == 0 and (i + 1 >= len(s) or s[i + 1] in " \t"):
            last = i
    return last


# ------------------------------------------------------------------- types --
@dataclass(frozen=True)
class TypeInfo:
    kind: str                         # "tensor", "shaped", "memref", "vector", "scalar", "unknown"
    dtype: str | None = None          # MLIR element type: f16, f32, i8, f8E4M3FNUZ, ...
    lens: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "dtype": self.dtype, "lens": None if self.lens is None else list(self.lens),
                "strides": None if self.strides is None else list(self.strides), "text": self.text}


_DIMS = re.compile(r"^(?P<dims>(?:(?:\d+|\?)x)*)(?P<elt>[A-Za-z_][\w.]*)$")
_SCALAR = re.compile(r"^(?:[su]?i\d+|u?i\d+|bf16|f\d+\w*|tf32|index|none)$")


def _dims(text: str) -> tuple[tuple[int, ...], str] | None:
    m = _DIMS.match(text.strip())
    if not m:
        return None
    dims = [d for d in m.group("dims").split("x") if d]
    if any(d == "?" for d in dims):
        return None
    return tuple(int(d) for d in dims), m.group("elt")


def parse_type(t: str) -> TypeInfo:
    t = t.strip()
    kind = None
    body = None
    for prefix, k in (("!migraphx.shaped<", "shaped"), ("tensor<", "tensor"), ("memref<", "memref"),
                      ("vector<", "vector"), ("<", "shaped")):
        if t.startswith(prefix):
            kind, body = k, t[len(prefix):]
            break
    if kind is None:
        return TypeInfo("scalar", t, (), (), t) if _SCALAR.match(t) else TypeInfo("unknown", None, None, None, t)
    if body.endswith(">"):
        body = body[:-1]
    parts = split_top(body, ",")
    d = _dims(parts[0])
    if d is None:
        return TypeInfo(kind, None, None, None, t)
    lens, elt = d
    strides = None
    if kind == "shaped" and len(parts) > 1:
        s = parts[1].strip()
        if lens == ():
            strides = ()
        elif re.fullmatch(r"\d+(x\d+)*", s):
            strides = tuple(int(x) for x in s.split("x"))
    return TypeInfo(kind, elt, lens, strides, t)


def _types(text: str) -> list[TypeInfo]:
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    if not text.strip():
        return []
    return [parse_type(p) for p in split_top(text, ",") if p.strip()]


# --------------------------------------------------------------------- ops --
@dataclass
class OpScan:
    name: str                         # "migraphx.dot", "rock.conv", "func.return"
    line: int                         # 1-based line inside the MLIR text
    operands: list[TypeInfo] = field(default_factory=list)
    results: list[TypeInfo] = field(default_factory=list)
    complete: bool = True             # False when the line is cut before its type signature

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0] if "." in self.name else ""

    @property
    def short(self) -> str:
        return self.name.split(".", 1)[1] if self.name.startswith("migraphx.") else self.name


@dataclass
class FuncScan:
    name: str
    line: int
    args: list[TypeInfo] = field(default_factory=list)
    results: list[TypeInfo] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    ops: list[OpScan] = field(default_factory=list)
    signature_complete: bool = True

    def migraphx_ops(self) -> list[str]:
        return [o.short for o in self.ops if o.dialect == "migraphx"]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "line": self.line, "args": [a.to_dict() for a in self.args],
                "results": [r.to_dict() for r in self.results], "attrs": dict(self.attrs),
                "ops": [o.name for o in self.ops], "signature_complete": self.signature_complete}


@dataclass
class MLIRScan:
    funcs: list[FuncScan] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)        # "#map", "#transform_map1"
    dialects: set[str] = field(default_factory=set)         # of the ops
    dtypes: set[str] = field(default_factory=set)           # every element type seen
    type_kinds: set[str] = field(default_factory=set)       # tensor / shaped / memref ...
    mentions_rock: bool = False

    @property
    def syntax(self) -> str:
        k = self.type_kinds & {"tensor", "shaped", "memref"}
        if not k:
            return "unknown"
        return "+".join(sorted(k))


_RESULT_OP = re.compile(r'^\s*%[\w.$#-]+(?::\d+)?(?:\s*,\s*%[\w.$#-]+(?::\d+)?)*\s*=\s*'
                        r'(?P<op>"[A-Za-z_][\w$.]*"|[A-Za-z_][\w$]*\.[\w.$]+)(?P<rest>.*)$')
_STMT_OP = re.compile(r'^\s*(?P<op>"[A-Za-z_][\w$.]*"|[A-Za-z_][\w$]*\.[\w.$]+|return)(?P<rest>(?:\s|\(|$).*)$')
_FUNC = re.compile(r'(?:func\.func|builtin\.func|(?<![\w.$"])func(?=\s+(?:(?:private|public|nested)\s+)?@))'
                   r'\s+(?:(?:private|public|nested)\s+)?@(?P<name>"[^"]*"|[\w.$-]+)')
# MLIR's generic form:
#   "func.func"() ({ ^bb0(%arg0: T, ..): .. }) {function_type = (T, ..) -> R, sym_name = "f"} : () -> ()
_GENERIC_FUNC = re.compile(r'"(?:func\.func|builtin\.func)"\s*\(')
_SYM_NAME = re.compile(r'(?<![\w.$])"?sym_name"?\s*=\s*"(?P<name>[^"]*)"')
_FUNCTION_TYPE = re.compile(r'(?<![\w.$])"?function_type"?\s*=\s*\(')
_ALIAS = re.compile(r"^\s*(?P<name>#[\w.$-]+)\s*=")


def _match_close(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one at ``i`` (or -1 when the text ends first)."""
    depth = 0
    for j, c in unquoted(s, i):
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _scan_generic_func(text: str, start: int, stop: int, line: int) -> FuncScan:
    """A func in the generic form: its name and types come from its attributes (after the body, so the
    text up to the next func, ``stop``, is searched); a log that cuts it before them keeps the name only."""
    part = text[start:stop]
    nm = _SYM_NAME.search(part)
    f = FuncScan(name=nm.group("name") if nm else "", line=line)
    ft = _FUNCTION_TYPE.search(part)
    if ft is None:
        f.signature_complete = False
        return f
    i = ft.end() - 1
    j = _match_close(part, i, "(", ")")
    if j < 0:
        f.signature_complete = False
        return f
    f.args = [parse_type(a.strip()) for a in split_top(part[i + 1:j], ",") if a.strip()]
    r = re.match(r"\s*->\s*", part[j + 1:])
    if r:
        rest = part[j + 1 + r.end():]
        if rest.startswith("("):
            k = _match_close(rest, 0, "(", ")")
            res = rest[1:k] if k >= 0 else rest[1:]
        else:
            res = split_top(re.split(r"[}\n]", rest, maxsplit=1)[0], ",")[0]
        f.results = [parse_type(x.strip()) for x in split_top(res, ",") if x.strip()]
    return f


def _scan_func(text: str, start: int, line: int) -> FuncScan:
    m = _FUNC.match(text, start)
    f = FuncScan(name=m.group("name").strip('"'), line=line)
    i = m.end()
    while i < len(text) and text[i] in " \t\n":
        i += 1
    if i >= len(text) or text[i] != "(":
        f.signature_complete = False
        return f
    j = _match_close(text, i, "(", ")")
    args_text = text[i + 1:] if j < 0 else text[i + 1:j]
    for a in split_top(args_text, ","):
        a = a.strip()
        if not a:
            continue
        if ":" in a and a.startswith("%"):
            a = a.split(":", 1)[1]
        a = re.sub(r"\s*\{.*$", "", a.strip(), flags=re.S)      # argument attributes
        f.args.append(parse_type(a))
    if j < 0:
        f.signature_complete = False
        return f
    rest = text[j + 1:]
    # results: after "->", up to " attributes" or the body's "{"
    mm = re.match(r"\s*->\s*", rest)
    if mm:
        r = rest[mm.end():]
        if r.startswith("("):
            k = _match_close(r, 0, "(", ")")
            res_text, r = (r[1:k], r[k + 1:]) if k >= 0 else (r[1:], "")
        else:
            cut = re.search(r"\s+attributes\b|\s*\{|\n", r)
            res_text, r = (r[:cut.start()], r[cut.start():]) if cut else (r, "")
        f.results = [parse_type(x) for x in split_top(res_text, ",") if x.strip()]
        rest = r
    am = re.match(r"\s*attributes\s*\{", rest)
    if am:
        k = _match_close(rest, am.end() - 1, "{", "}")
        body = rest[am.end():k if k >= 0 else len(rest)]
        for part in split_top(body, ","):
            if "=" in part:
                key, v = part.split("=", 1)
                f.attrs[key.strip()] = v.strip()
        if k < 0:
            f.signature_complete = False
    elif not re.match(r"\s*\{", rest):
        # neither a body nor attributes follow: the text stops (or is cut) inside the signature
        f.signature_complete = False
    return f


def _scan_op(op: str, rest: str, line: int) -> OpScan:
    o = OpScan(name=op.strip('"'), line=line)
    c = _last_top_colon(rest)
    if c < 0:
        o.complete = False
        return o
    sig = rest[c + 1:]
    sig = re.sub(r"\s+loc\(.*$", "", sig)
    halves = split_top(sig, "->")
    o.operands = _types(halves[0])
    if len(halves) > 1:
        o.results = _types(halves[1])
    # a type whose ">" is missing: the line was cut
    if sig.count("<") > sig.count(">") - sig.count("->"):
        o.complete = False
    return o


def scan_mlir(text: str) -> MLIRScan:
    """Read what ``text`` shows; never raises for any input."""
    sc = MLIRScan()
    try:
        _scan_into(sc, text)
    except Exception:  # pragma: no cover - the scanner is best effort by design
        pass
    return sc


def _scan_into(sc: MLIRScan, text: str) -> None:
    sc.mentions_rock = bool(re.search(r"#rock[<.]|\brock\.(?!arch\b|kernel\b|num_cu\b|num_chiplets\b)\w+",
                                      text))
    # functions (their signatures may span lines)
    line_starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(i + 1)

    def line_of(pos: int) -> int:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    starts = sorted([(m.start(), "custom") for m in _FUNC.finditer(text)]
                    + [(m.start(), "generic") for m in _GENERIC_FUNC.finditer(text)])
    funcs = []
    for k, (at, form) in enumerate(starts):
        stop = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        f = _scan_func(text, at, line_of(at)) if form == "custom" else \
            _scan_generic_func(text, at, stop, line_of(at))
        funcs.append((at, f))
    sc.funcs = [f for _, f in funcs]
    func_lines = [f.line for f in sc.funcs]
    for f in sc.funcs:
        for t in f.args + f.results:
            _note_type(sc, t)
    for no, raw in enumerate(text.split("\n"), 1):
        line = raw
        am = _ALIAS.match(line)
        if am:
            sc.aliases.append(am.group("name"))
            continue
        s = line.lstrip()
        if s.startswith(("func.func", "module", "//", "builtin.func", '"func.func"', '"builtin.module"',
                         '"builtin.func"', "})")) or _FUNC.match(s):
            continue
        m = _RESULT_OP.match(line) or _STMT_OP.match(line)
        if not m:
            continue
        op = m.group("op")
        if op in ("return",):
            op = "func.return"
        o = _scan_op(op, m.group("rest"), no)
        owner = None
        for f, fl in zip(sc.funcs, func_lines, strict=True):
            if fl <= no:
                owner = f
        if owner is not None:
            owner.ops.append(o)
        sc.dialects.add(o.dialect)
        for t in o.operands + o.results:
            _note_type(sc, t)


def _note_type(sc: MLIRScan, t: TypeInfo) -> None:
    if t.kind != "unknown":
        sc.type_kinds.add(t.kind)
    if t.dtype and t.kind != "scalar":
        sc.dtypes.add(t.dtype)
    elif t.kind == "scalar" and t.dtype and t.dtype not in ("index", "none"):
        sc.dtypes.add(t.dtype)
