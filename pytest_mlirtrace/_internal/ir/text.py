"""MIGraphX's module text format: print exactly as MIGraphX prints, parse it back.

A line looks like::

    mlir_main:pointwise4:@4 = transpose[permutation={0, 2, 1, 3}](mlir_main:pointwise4:y0) -> half_type, {1, 384, 12, 64}, {294912, 64, 24576, 1}, target_id=0

Module name prefix (``mlir_main:pointwise4:``) and ``target_id`` are kept on the
:class:`Module`, so print(parse(text)) gives the text back byte for byte.

Names and string attributes are printed bare, as MIGraphX prints them, when they read back so; any
other (a space, a comma, a bracket, a quote, a newline, a string that reads as a number...) is printed
quoted with MLIR's escapes (``"in put" = @param:"in put"``, ``[tag="a, b"]``), so every module parses back.
"""  # noqa: E501 (the example lines are verbatim printouts)
from __future__ import annotations

import re

import numpy as np

from .dtypes import BY_MIGRAPHX
from .module import Instruction, IRError, Module
from .ops import compiled_op
from .printer import InsText, TextStyle, style_of
from .quoting import unquote_string
from .shape import Shape
from .text_values import (
    OTHER_TYPES,
    STRING,
    Cursor,
    RawValue,
    close_bracket,
    parse_attrs,
    parse_value,
    split_top,
    unquote_name,
)


class TextParseError(IRError):
    def __init__(self, msg: str, line: int, source: str = "<text>", text: str = ""):
        self.line, self.source, self.text = line, source, text
        super().__init__(f"{source}:{line}: {msg}" + (f"\n    {text}" if text else ""))


# Attribute names older MIGraphX printed, per op: {printed name: the name the shape rules read}.
OLD_ATTR_NAMES = {"broadcast": {"dims": "out_lens"}, "multibroadcast": {"output_lens": "out_lens"},
                  "transpose": {"dims": "permutation"}}


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


_LINE = re.compile(r'^(?P<name>"(?:[^"\\\n]|\\.)*"|\S+) = (?P<rest>.*)$')
_HEADER = re.compile(r'^\s*module:\s*(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<b>\S*))\s*$')
_TID = re.compile(r",\s*target_id=(?P<n>\d+)\s*$")


def _strict_shape(text: str) -> Shape:
    parts = [p.strip() for p in split_top(text)]
    if len(parts) != 3:
        raise ValueError(f"expected '<type>, {{lens}}, {{strides}}', got {text.strip()!r}")
    if parts[0] not in BY_MIGRAPHX:
        raise ValueError(f"unknown type {parts[0]!r} (known: {', '.join(sorted(BY_MIGRAPHX))})")
    lens, strides = parse_value(parts[1]), parse_value(parts[2])
    if not isinstance(lens, list) or not isinstance(strides, list):
        raise ValueError("lens and strides must be {...} lists")
    return Shape.of(parts[0], lens, strides)


def _result_shape(text: str, ex: InsText) -> Shape | None:
    t = text.strip()
    parts = [p.strip() for p in split_top(t)] if t else [""]
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
    full, rest = unquote_name(m.group("name")), m.group("rest")
    c = Cursor(rest, base=len(line) - len(line.lstrip()) + m.start("rest"))
    ins = Instruction(full, "")
    ex = InsText()
    if c.eat("@param:"):
        q = STRING.match(rest, c.i) if c.peek() == '"' else None
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
                vals = parse_value("{" + raw + "}")
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
            ins.attrs, ex.attrs_comma = parse_attrs(body)
            old = OLD_ATTR_NAMES.get(ins.op.split("::")[-1], {})
            if any(k in old for k in ins.attrs):
                ins.attrs = {old.get(k, k): v for k, v in ins.attrs.items()}
                ex.renamed = {new: k for k, new in old.items()}
        if c.peek() == "(":
            body = c.group("to close the inputs")
            ins.inputs = [unquote_name(x) for x in split_top(body) if x.strip()]
    tail = rest[c.i:]
    mm = re.match(r"\s*,\s*\[", tail)
    if mm:
        k = close_bracket(tail, mm.end() - 1, c.base + c.i, "to close the module inputs")
        ex.modules = [x.strip() for x in split_top(tail[mm.end():k - 1]) if x.strip()]
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


__all__ = ["TextParseError", "parse_module", "parse_instruction_text", "parse_instruction_line", "not_runnable",
           "OLD_ATTR_NAMES"]
