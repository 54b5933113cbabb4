"""Print a module as MIGraphX prints it (:func:`print_module`); a module read by :mod:`.text` keeps how it was
printed (:class:`TextStyle`: its header, name prefixes, target ids, older attribute names, debug symbols, the
program's other modules) and prints back byte for byte.  Names and string attributes are printed bare, as
MIGraphX prints them, where they read back so, else quoted (:mod:`.quoting`)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .instruction import Instruction
from .quoting import quote_string
from .shape import Shape
from .text_values import RawValue, reads_back

_BARE_NAME = re.compile(r'[^\s,()\[\]{}"\\]+')


def _fmt_name(n: str) -> str:
    """An instruction or param name: bare when it has no character the line syntax uses, else quoted."""
    return n if _BARE_NAME.fullmatch(n) and n.isprintable() else quote_string(n)


_BARE_KEY = re.compile(r"[A-Za-z_][\w.:-]*")


def _fmt_key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else quote_string(k)


def _fmt_str(v: str) -> str:
    return str(v) if reads_back(v) else quote_string(str(v))


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


class Printable(Protocol):
    """What the printer reads of a :class:`~.module.Module` (the module builds on this printer, not the other
    way round)."""
    name: str | None
    target_id: bool
    instructions: list[Instruction]


def style_of(m: Printable) -> TextStyle | None:
    st = getattr(m, "text_style", None)
    return st if isinstance(st, TextStyle) else None


def _fmt_float(v: float) -> str:
    """As C++ streams a float (``%g``: 0.707107, 1e+06) when that reads back as the same value, else
    the shortest text that does."""
    g = f"{v:g}"
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


def print_module(m: Printable) -> str:
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

