"""The fast path: the common form of a migraphx func parsed without xDSL.

xDSL parses a small fused func in about 3 ms (its lexer and parser are pure Python, token by
token); a 10 MB file of them would take a minute.  The funcs MIGraphX prints are regular::

    func.func @name(%arg0: T, ...) -> T attributes {arch = "..", kernel = "mixr", num_cu = 110 : i64} {
      %0 = migraphx.op %a, %b {attrs} : T, T -> T          (or the old form: migraphx.op(%a, %b) : (T, T) -> T)
      %1 = migraphx.literal(dense<..> : tensor<..>) : T    (or migraphx.literal() {value = ..} : () -> T)
      return %1 : T
    }

with ``T`` a ``tensor<..>`` or ``!migraphx.shaped<..>`` type.  :func:`parse_func` reads that form
with one regular expression per statement (types and attribute dicts, which repeat from func to
func, are read once and remembered) and builds the module the way :class:`~.parse._Converter` does.
It is strict: anything it does not know -- another op or dialect, the generic op form, an alias,
a type or attribute it cannot read exactly as xDSL would, a value used before it is defined, a
shape-rule failure -- and it returns False, and the func goes the xDSL way.  So an error, and
everything about it (its message, its line and column), always comes from the xDSL path; only
funcs that convert cleanly are taken here, and they give the same :class:`~.parse.ParsedFunc`
(``tests/mlir/test_mlir_fast_parse.py`` checks both paths against each other on every func of the
corpus and on generated modules).
"""
from __future__ import annotations

import re

import numpy as np

from pytest_mlirtrace._internal.ir import unquote_string
from pytest_mlirtrace._internal.ir.dtypes import BY_NAME, BY_TYPE_ID, DType
from pytest_mlirtrace._internal.ir.instruction import Instruction
from pytest_mlirtrace._internal.ir.module import IRError, Module
from pytest_mlirtrace._internal.ir.ops import COMPARE_OPS, RULES, infer_shape
from pytest_mlirtrace._internal.ir.shape import Shape, standard_strides

from .convert_rules import ATTR_ORDER, MLIR_ONLY_ATTRS, boundary_problem, implied_attrs, strides_ok
from .dialect import OPS
from .funcattrs import FuncAttrs
from .literals import parse_dense_payload, storage_from_values
from .types import same_dtype

# ------------------------------------------------------------- the pieces --
_ = r"(?:\s++|//[^\n]*+)*+"                                  # whitespace and comments
_VAL = r"%(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*+)"          # an SSA value
_ELT = r"[a-z][a-z0-9]*+"
_TENSOR = rf"tensor<\s*+(?:[0-9]+x)*+{_ELT}\s*+>"
_SHAPED_BODY = rf"<\s*+(?:(?:[0-9]+x)++{_ELT}\s*+,\s*+[0-9]+(?:x[0-9]+)*+|{_ELT})\s*+>"
_FULLTY = rf"(?:{_TENSOR}|!migraphx\.shaped{_SHAPED_BODY})"      # a type anywhere
_TY = rf"(?:{_TENSOR}|(?:!migraphx\.shaped)?{_SHAPED_BODY})"     # a type of an op (``<..>`` short form)
_STR = r'"(?:[^"\\\n]|\\.)*+"'
_ATTRS = rf'\{{(?:[^{{}}"/]++|{_STR})*+\}}'                      # an attribute dict (no nesting, no comments)
_SYM = rf"[A-Za-z_][A-Za-z0-9_$.]*+|{_STR}"

_HEAD = re.compile(
    rf"func\.func{_}(?:(?:private|public|nested)\b{_})?@(?:{_SYM}){_}\({_}"
    rf"(?P<args>{_VAL}{_}:{_}{_FULLTY}(?:{_},{_}{_VAL}{_}:{_}{_FULLTY})*+)?{_}\)"
    rf"(?:{_}->{_}(?P<res>{_FULLTY}|\({_}(?:{_FULLTY}(?:{_},{_}{_FULLTY})*+)?{_}\)))?"
    rf"(?:{_}attributes\b{_}(?P<attrs>{_ATTRS}))?{_}\{{", re.ASCII)
_ARG = re.compile(rf"%({_VAL[1:]}){_}:{_}({_FULLTY})", re.ASCII)
_TYPES = re.compile(_TY, re.ASCII)
_VALS = re.compile(_VAL, re.ASCII)


def _all(rx: re.Pattern, s: str | None) -> list:
    """Every match of ``rx`` in ``s``, a list the big pattern matched as a whole (a comment in it: not here)."""
    if not s:
        return []
    if "/" in s:
        raise _No
    return rx.findall(s)

_OP_START = re.compile(rf"{_}%({_VAL[1:]}){_}={_}migraphx\.([A-Za-z_][A-Za-z0-9_$.]*+){_}", re.ASCII)
# new syntax: %r = migraphx.op %a, %b {attrs} : T, T -> T   (convert: ... to T)
_NEW_REST = re.compile(
    rf"(?P<args>{_VAL}(?:{_},{_}{_VAL})*+)?{_}(?P<attrs>{_ATTRS})?{_}:{_}"
    rf"(?P<types>{_TY}(?:{_},{_}{_TY})*+)?{_}(?:->|to\b){_}(?P<out>{_TY})", re.ASCII)
# old syntax: %r = migraphx.op(%a, %b) {attrs} : (T, T) -> T
_OLD_REST = re.compile(
    rf"\({_}(?P<args>{_VAL}(?:{_},{_}{_VAL})*+)?{_}\){_}(?P<attrs>{_ATTRS})?{_}:{_}"
    rf"\({_}(?P<types>{_TY}(?:{_},{_}{_TY})*+)?{_}\){_}->{_}(?P<out>{_TY})", re.ASCII)
_DENSE = r"(?P<dense>dense<[^<>\"]*+>)"
# %r = migraphx.literal(dense<..> : tensor<..>) : T
_LIT_NEW_REST = re.compile(rf"\({_}{_DENSE}{_}:{_}(?P<dt>{_TENSOR}){_}\){_}:{_}(?P<out>{_TY})", re.ASCII)
# %r = migraphx.literal() {value = dense<..> : tensor<..>} : () -> T
_LIT_OLD_REST = re.compile(rf"\({_}\){_}\{{{_}value{_}={_}{_DENSE}{_}:{_}(?P<dt>{_TENSOR}){_}\}}{_}:{_}"
                           rf"\({_}\){_}->{_}(?P<out>{_TY})", re.ASCII)
_RETURN = re.compile(rf"{_}(?:func\.)?return\b{_}(?:(?P<args>{_VAL}(?:{_},{_}{_VAL})*+){_}:{_}"
                     rf"(?P<types>{_FULLTY}(?:{_},{_}{_FULLTY})*+))?{_}\}}", re.ASCII)
_TYPE_PARTS = re.compile(r"(tensor|!migraphx\.shaped|)<\s*((?:[0-9]+x)*)([a-z][a-z0-9]*)\s*(?:,\s*([0-9x]+)\s*)?>",
                         re.ASCII)
_VALUE_NAME = re.compile(r"[A-Za-z_$.-][\w$.-]*", re.ASCII)     # what xDSL keeps as a name hint
_NAME_SUFFIX = re.compile(r"_\d+$")

# element types as xDSL types them (``i32`` and ``si32`` are different types of the same dtype)
_ELTS: dict[str, DType] = {"f16": BY_NAME["f16"], "f32": BY_NAME["f32"], "f64": BY_NAME["f64"],
                           "bf16": BY_NAME["bf16"]}
for _w in (1, 8, 16, 32, 64):
    for _p in ("i", "si", "ui"):
        _d = BY_NAME["bool"] if _w == 1 else BY_NAME.get(f"{'u' if _p == 'ui' else 'i'}{_w}")
        if _d is not None:
            _ELTS[f"{_p}{_w}"] = _d
# range of the values xDSL takes for an integer element type (signless: either reading)
_INT_RANGE = {k: ((-(1 << (int(k[1:]) - 1)), 1 << int(k[1:])) if k[0] == "i" else
                  (-(1 << (int(k[2:]) - 1)), 1 << (int(k[2:]) - 1)) if k[0] == "s" else (0, 1 << int(k[2:])))
              for k in _ELTS if not k.startswith(("f", "bf"))}


class _No(Exception):
    """Not the common form: leave this func to xDSL."""


# ------------------------------------------------------------------ types --
class _Type:
    """A parsed value type; ``key`` is equal exactly when xDSL's types are equal."""
    __slots__ = ("key", "shape", "syntax", "elt", "lens")

    def __init__(self, key, shape, syntax, elt, lens):
        self.key, self.shape, self.syntax, self.elt, self.lens = key, shape, syntax, elt, lens


_TYPE_CACHE: dict[str, _Type | None] = {}
_CACHE_MAX = 1 << 16         # entries kept per cache (a long session parses many files)


def _type(text: str) -> _Type:
    t = _TYPE_CACHE.get(text, False)
    if t is False:
        if len(_TYPE_CACHE) >= _CACHE_MAX:
            _TYPE_CACHE.clear()
        t = _TYPE_CACHE[text] = _read_type(text)
    if t is None:
        raise _No
    return t


def _read_type(text: str) -> _Type | None:
    m = _TYPE_PARTS.fullmatch(text)
    if m is None:
        return None
    kind, dims, elt, strides = m.groups()
    dt = _ELTS.get(elt)
    if dt is None:
        return None
    lens = tuple(int(x) for x in dims.split("x")[:-1])
    if any(n == 0 for n in lens):       # '0x..' lexes as a hex number: leave such types to xDSL
        return None
    if kind == "tensor":
        if strides is not None:
            return None
        return _Type(("tensor", lens, elt), Shape(dt, lens, standard_strides(lens)), "tensor", elt, lens)
    st = tuple(int(x) for x in strides.split("x")) if strides else ()
    if (strides is not None and not re.fullmatch(r"[0-9]+(?:x[0-9]+)*", strides)) or len(st) != len(lens):
        return None
    return _Type(("shaped", lens, st, elt), Shape(dt, lens, st), "shaped", elt, lens)


# ------------------------------------------------------------- attributes --
_ATOK = re.compile(r'\s*(?:(?P<s>"(?:[^"\\\n]|\\.)*")|(?P<n>-?[0-9]+(?![0-9.eExX]))|(?P<i>[A-Za-z_][A-Za-z0-9_$.]*)'
                   r'|(?P<p>[\[\]{}=,:]))', re.ASCII)
_INT_TYPES = {"i64": (-(1 << 63), 1 << 63), "i32": (-(1 << 31), 1 << 31)}
_RESERVED = frozenset({"sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs",
                       "mlirtrace.scaled_by"})
_ATTR_CACHE: dict[str, tuple | None] = {}


def _attrs(text: str | None) -> tuple:
    """((name, python value as :func:`~.parse._py` gives it, MLIR text as xDSL prints it), ...)."""
    if text is None:
        return ()
    a = _ATTR_CACHE.get(text, False)
    if a is False:
        try:
            a = _read_attrs(text)
        except (_No, ValueError, IndexError, StopIteration):
            a = None
        if len(_ATTR_CACHE) >= _CACHE_MAX:
            _ATTR_CACHE.clear()
        _ATTR_CACHE[text] = a
    if a is None:
        raise _No
    return a


def _read_attrs(text: str) -> tuple:
    toks = []
    pos, n = 0, len(text)
    while pos < n:
        m = _ATOK.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise _No
            break
        toks.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    it = iter(toks)
    if next(it) != ("p", "{"):
        raise _No
    out = []
    seen = set()
    tok = next(it)
    if tok == ("p", "}"):
        return ()
    while True:
        kind, val = tok
        if kind == "s":
            key = unquote_string(val)
            if "\\" in val and not key.isascii():
                raise _No                # xDSL reads it as bytes, which it does not take as a name
        elif kind == "i":
            key = val
        else:
            raise _No
        if key in seen or key in _RESERVED:
            raise _No
        seen.add(key)
        tok = next(it)
        if tok == ("p", "="):
            value, text_, tok = _value(it, next(it))
            out.append((key, value, text_))
        else:
            out.append((key, True, None))        # a unit attribute
        if tok == ("p", "}"):
            break
        if tok != ("p", ","):
            raise _No
        tok = next(it)
    if next(it, None) is not None:
        raise _No
    return tuple(out)


def _value(it, tok):
    """One attribute value starting at ``tok``: (python value, xDSL's text, the token after it)."""
    kind, val = tok
    if kind == "n":
        v = int(val)
        nxt = next(it, None)
        ty = "i64"
        if nxt == ("p", ":"):
            k2, ty = next(it)
            if k2 != "i" or ty not in _INT_TYPES:
                raise _No
            nxt = next(it, None)
        lo, hi = _INT_TYPES[ty]
        if not lo <= v < hi:
            raise _No
        return v, f"{v} : {ty}", nxt
    if kind == "i" and val in ("true", "false"):
        return val == "true", val, next(it, None)
    if kind == "s":
        v = unquote_string(val)          # bytes that are not UTF-8: ValueError, xDSL's way
        return v, _xdsl_string(v), next(it, None)
    if tok == ("p", "["):
        items, texts = [], []
        tok = next(it)
        if tok != ("p", "]"):
            while True:
                v, t, tok = _value(it, tok)
                items.append(v)
                texts.append(t)
                if tok == ("p", "]"):
                    break
                if tok != ("p", ","):
                    raise _No
                tok = next(it)
        return items, "[" + ", ".join(texts) + "]", next(it, None)
    raise _No


def _xdsl_string(s: str) -> str:
    """A string attribute as xDSL prints it (``attr_text``)."""
    out = ['"']
    for b in s.encode("utf-8"):
        if b == 0x5C:
            out.append("\\\\")
        elif b < 0x20 or b > 0x7E or b == 0x22:
            out.append(f"\\{b:02X}")
        else:
            out.append(chr(b))
    out.append('"')
    return "".join(out)


def _copy(v):
    return [_copy(x) for x in v] if isinstance(v, list) else v


# --------------------------------------------------------------- literals --
_DENSE_CACHE: dict[tuple, object] = {}


def _dense_values(dense: str, vt: _Type):
    """The values of ``dense<..> : vt`` as xDSL's ``get_values`` gives them (a scalar for a splat)."""
    key = (dense, vt.elt, vt.lens)
    if key in _DENSE_CACHE:
        return _DENSE_CACHE[key]
    payload = dense[len("dense<"):-1]
    dt = vt.shape.dtype
    if dt.name == "bool":
        raise _No                            # i1 literals: leave them to xDSL
    toks = re.findall(r"0x[0-9a-fA-F]+|[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?|true|false|[^\s\[\],]+", payload)
    for t in toks:
        if dt.is_float:
            if t.startswith("0x"):
                if len(t) - 2 > 2 * dt.itemsize:
                    raise _No
            elif not re.fullmatch(r"-?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?", t):
                raise _No
        elif not re.fullmatch(r"-?[0-9]+|0x[0-9a-fA-F]+", t):
            raise _No
    if dt.name == "bf16" and toks and any(not t.startswith("0x") for t in toks):
        raise _No                            # xDSL rounds decimal bf16 its own way: leave it to xDSL
    try:
        values = parse_dense_payload(payload, dt)
    except (ValueError, StopIteration):
        raise _No from None
    if isinstance(values, list):
        if not _nested_as(values, vt.lens):
            raise _No
        flat = np.asarray(values, dtype=np.float64 if dt.is_float else np.int64).reshape(-1)
        if flat.size == 1:
            values = flat[0].item()
    else:
        flat = np.asarray([values], dtype=np.float64 if dt.is_float else np.int64)
    if dt.is_float:
        if np.isnan(flat).any():
            raise _No
        with np.errstate(all="ignore"):
            as_dt = flat.astype(dt.np)
        if (np.isinf(as_dt) & ~np.isinf(flat)).any():
            raise _No                        # a decimal too big for the type: an error in xDSL
    else:
        lo, hi = _INT_RANGE[vt.elt]
        if flat.size and (int(flat.min()) < lo or int(flat.max()) >= hi):
            raise _No
    if isinstance(values, list):
        values = flat
    if len(_DENSE_CACHE) >= 4096:
        _DENSE_CACHE.clear()
    _DENSE_CACHE[key] = values
    return values


def _nested_as(values, lens) -> bool:
    if not lens:
        return not isinstance(values, list)
    if not isinstance(values, list) or len(values) != lens[0]:
        return False
    return all(_nested_as(v, lens[1:]) for v in values)


# -------------------------------------------------------------------- the func --
def parse_func(pf, text: str, start: int, end: int, param_names: list[str] | None) -> bool:
    """Fill ``pf`` (a :class:`~.parse.ParsedFunc` with its name and place set) from ``text[start:end]``,
    a func with a body; False (``pf`` untouched) when the func is not in the common form."""
    try:
        return _parse(pf, text, start, end, param_names)
    except (_No, IRError, ValueError, TypeError, KeyError, IndexError, OverflowError, StopIteration):
        return False


def _parse(pf, text: str, start: int, end: int, param_names: list[str] | None) -> bool:
    h = _HEAD.match(text, start, end)
    if h is None:
        raise _No
    # the signature
    values: dict[str, tuple[str, _Type]] = {}           # SSA name -> (instruction name, type)
    arg_names, arg_types = [], []
    if h.group("args"):
        for name, ty in _all(_ARG, h.group("args")):
            if name in values:
                raise _No
            t = _type(ty)
            if t.syntax != "tensor" and boundary_problem(t.shape, "argument") is not None:
                raise _No                 # xDSL's path says why
            values[name] = ("", t)
            arg_names.append(name)
            arg_types.append(t)
    res = h.group("res")
    out_types = [_type(t) for t in _all(_TYPES, res)]
    if any(t.syntax != "tensor" and boundary_problem(t.shape, "result") is not None for t in out_types):
        raise _No
    fattrs = _attrs(h.group("attrs"))
    n = len(arg_names)
    if param_names is not None and len(param_names) != n:
        raise _No                         # xDSL's path raises the error
    if param_names is not None:
        pnames = list(param_names)
    else:
        width = len(str(n - 1)) if n > 1 else 1
        pnames = [f"x{i:0{width}d}" for i in range(n)]
    if len(set(pnames)) != n:
        raise _No
    # The module is built as _Converter builds it through Module.add_param / add / verify, without their
    # look-ups by name (linear each): the names here are fresh ("@k") and the inputs known; a name clash
    # (a param named "@3") goes the xDSL way, where Module.add reports it.
    m = Module(name=None)
    ins_list = m.instructions
    syntaxes = set()
    for i, t in enumerate(arg_types):
        syntaxes.add(t.syntax)
        ins_list.append(Instruction(pnames[i], "@param", param=pnames[i], shape=t.shape))
        values[arg_names[i]] = (pnames[i], t)
    shapes: dict[str, Shape] = {pnames[i]: arg_types[i].shape for i in range(n)}
    taken = set(pnames)
    perf_configs: list[str] = []
    # the body
    pos = h.end()
    while True:
        o = _OP_START.match(text, pos, end)
        if o is None:
            break
        res_name, short = o.group(1), o.group(2)
        if res_name in values:
            raise _No
        pos = o.end()
        iname = f"@{len(ins_list)}"
        if iname in taken:
            raise _No
        taken.add(iname)
        if short == "literal":
            r = _LIT_NEW_REST.match(text, pos, end) or _LIT_OLD_REST.match(text, pos, end)
            if r is None:
                raise _No
            out = _type(r.group("out"))
            syntaxes.add(out.syntax)
            vt = _type(r.group("dt"))
            if vt.syntax != "tensor" or vt.lens != out.lens:
                raise _No
            vdt, odt = vt.shape.dtype, out.shape.dtype
            if not same_dtype(vdt, odt) and not same_dtype(odt, vdt):
                raise _No
            storage = storage_from_values(_dense_values(r.group("dense"), vt), odt, out.lens)
            m.add_literal(storage, odt, out.lens, out.shape.strides, name=iname)
            shapes[iname] = ins_list[-1].shape
        else:
            if short not in RULES:
                raise _No
            cls = OPS.get(short)
            arity = cls.OPERANDS if cls is not None else None
            r = (_OLD_REST if text.startswith("(", pos) else _NEW_REST).match(text, pos, end)
            if r is None:
                raise _No
            args = _all(_VALS, r.group("args"))
            types = [_type(t) for t in _all(_TYPES, r.group("types"))]
            if len(args) != len(types) or (arity is not None and len(args) != len(arity)):
                raise _No
            inputs = []
            for a, t in zip(args, types, strict=False):
                v = values.get(a[1:])
                if v is None or v[1].key != t.key:
                    raise _No
                inputs.append(v[0])
            out = _type(r.group("out"))
            syntaxes.add(out.syntax)
            attrs = _op_attrs(short, _attrs(r.group("attrs")), perf_configs)
            if short == "multibroadcast" and attrs.get("out_lens") != list(out.lens):
                raise _No                 # the xDSL path follows the result type and keeps a note
            implied_attrs(short, attrs, len(inputs), out.shape.dtype)
            if short == "convert":
                tt = attrs.get("target_type")
                if tt is None:
                    attrs["target_type"] = out.shape.dtype.type_id
                elif (not isinstance(tt, int) or tt not in BY_TYPE_ID
                      or not same_dtype(out.shape.dtype, BY_TYPE_ID[tt])):
                    raise _No
            in_shapes = [shapes[i] for i in inputs]
            ins = Instruction(iname, short, inputs, attrs)
            ins.shape = rule = infer_shape(ins, in_shapes)
            ins_list.append(ins)
            printed = out.shape
            if printed.lens != rule.lens:
                raise _No
            if not (same_dtype(printed.dtype, rule.dtype)
                    or (short in COMPARE_OPS and in_shapes and printed.dtype == in_shapes[0].dtype)):
                raise _No
            if out.syntax == "tensor":
                ins.shape = Shape(rule.dtype, rule.lens, rule.strides)
            else:
                if not strides_ok(ins, printed, rule):
                    raise _No
                ins.shape = Shape(rule.dtype, rule.lens, printed.strides)
            shapes[iname] = ins.shape
        values[res_name] = (iname, out)
        pos = r.end()
    ret = _RETURN.match(text, pos, end)
    if ret is None or ret.end() != end:
        raise _No
    rargs = _all(_VALS, ret.group("args"))
    rtypes = [_type(t) for t in _all(_TYPES, ret.group("types"))]
    if len(rargs) != len(rtypes) or [t.key for t in rtypes] != [t.key for t in out_types]:
        raise _No
    rets = []
    for a, t in zip(rargs, rtypes, strict=False):
        v = values.get(a[1:])
        if v is None or v[1].key != t.key:
            raise _No
        rets.append(v[0])
    ins_list.append(Instruction(_fresh(taken, ins_list), "@return", rets))
    # Module.verify would re-run each rule on the same input shapes: it cannot fail here (each result
    # keeps its rule's lens and dtype)
    # all good: fill in the ParsedFunc as the xDSL path does
    pf.attrs = FuncAttrs.from_entries({k: (v, t) for k, v, t in fattrs})
    pf.arg_names = [_hint(a) or f"arg{i}" for i, a in enumerate(arg_names)]
    pf.param_names = pnames
    pf.perf_configs = perf_configs
    pf.type_syntax = None if not syntaxes else (syntaxes.pop() if len(syntaxes) == 1 else "mixed")
    pf.module = m
    return True


def _fresh(taken: set, ins_list: list) -> str:
    k = len(ins_list)
    while f"@{k}" in taken:
        k += 1
    return f"@{k}"


def _op_attrs(short: str, parsed: tuple, perf_configs: list[str]) -> dict:
    got = {k: v for k, v, _t in parsed}
    order = ATTR_ORDER.get(short, ())
    keys = [k for k in order if k in got] + sorted(k for k in got if k not in order)
    attrs = {}
    for k in keys:
        if k in MLIR_ONLY_ATTRS:
            if k == "perf_config":
                perf_configs.append(str(got[k]))
            continue
        attrs[k] = _copy(got[k])
    return attrs


def _hint(name: str) -> str | None:
    """The name hint xDSL keeps for ``%name`` (none for a number; a ``_N`` suffix dropped)."""
    if _VALUE_NAME.fullmatch(name) is None:
        return None
    m = _NAME_SUFFIX.search(name)
    return name[:m.start()] if m else name
