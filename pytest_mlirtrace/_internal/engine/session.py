"""Loading a fused op from whatever text a user has: an ``ir.Module``, MIGraphX text or MLIR.

Every error here is a :class:`ValueError` that says where the input went wrong (``FILE:LINE:COL: ...``,
``FILE: ...``, or the instruction), so that a front end reports it as bad input as it is.
"""
from __future__ import annotations

from ..ir import Module, parse_module
from ..mlir import MLIRParseError, is_mlir, parse_mlir_module, symbol_ref
from ..mlir.split import find_funcs, has_aliases, only


class InputError(ValueError):
    """Input that cannot be read as a module (not UTF-8 text, ...); the message starts with its place."""


class FuncChoiceError(InputError):
    """An MLIR file with several funcs and none picked, or a picked func it does not have.

    ``names``: the funcs with a body, in file order (each once); ``wanted``: the name asked for, if any."""

    def __init__(self, source: str, names: list[str], wanted: str | None = None):
        self.source, self.names, self.wanted = source, list(names), wanted
        listed = ", ".join(symbol_ref(n) for n in self.names) or "none"
        if wanted is None:
            msg = f"{source}: {len(self.names)} funcs: {listed}; pick one with --func NAME"
        else:
            msg = f"{source}: no func {symbol_ref(wanted)}; its funcs: {listed}"
        super().__init__(msg)


def decode_source(data: bytes | bytearray, name: str = "<text>") -> str:
    """``data`` as UTF-8 text; :class:`InputError` at the first byte that is not, with its line, column and
    byte offset (``FILE:LINE:COL: not UTF-8 text: byte 0xff at offset 26 (invalid start byte)``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"{name}:{line}:{col}: not UTF-8 text: byte 0x{data[e.start]:02x} at offset "
                         f"{e.start} ({e.reason})") from None


def read_source(path: str) -> str:
    """The text of the file ``path`` (strict UTF-8, see :func:`decode_source`); OSError when it can't be read."""
    with open(path, "rb") as f:
        return decode_source(f.read(), path)


def _pick(text: str, name: str, func: str | None):
    """(the func to parse -- None: the only one, or let the parser say what is wrong --, the funcs'
    spans or None when the scan failed). A file with several funcs must name one: :class:`FuncChoiceError`."""
    try:
        spans = find_funcs(text, name)
    except MLIRParseError:
        return func, None           # malformed: the parser reports it better
    names = list(dict.fromkeys(s.name for s in spans if s.has_body))
    if func is None:
        if len(names) > 1:
            raise FuncChoiceError(name, names)
        return None, spans
    if func not in names:
        raise FuncChoiceError(name, names, func)
    return func, spans


def _func_text(text: str, spans: list, func: str) -> str:
    keep = next((s for s in spans if s.name == func and s.has_body), None)
    if keep is None:
        return text
    if not has_aliases(text):
        return text[keep.start:keep.end] + "\n"
    kept = only(text, [(keep.start, keep.end)])
    return "\n".join(ln for ln in kept.splitlines() if ln.strip()) + "\n"


def func_text(text: str, func: str, name: str = "<mlir>") -> str:
    """The MLIR of the func ``func`` of ``text`` alone, with the alias definitions it may use (what a span
    and a reproducer carry when a file holds several funcs); ``text`` itself when it has only that one."""
    spans = find_funcs(text, name)
    if sum(s.has_body for s in spans) <= 1:
        return text
    return _func_text(text, spans, func)


def load_module(source, name: str = "<text>", func: str | None = None) -> tuple[Module, str | None]:
    """A Module from IR, MIGraphX text (str, or UTF-8 bytes) or MLIR text; also the MLIR text when that is
    what was given (the picked func's alone when the file has several).

    ``func``: the func of an MLIR file to load. An MLIR file with several funcs that have a body must
    name one (:class:`FuncChoiceError` lists them) — none is taken silently. Every error is a ValueError:
    :class:`InputError` and ``mlir.MLIRParseError`` start with ``name``, ``ir.IRError`` (a MIGraphX-text
    module that breaks the rules) names the instruction."""
    if isinstance(source, Module):
        return source, None
    text = decode_source(source, name) if isinstance(source, (bytes, bytearray)) else str(source)
    if is_mlir(text):
        picked, spans = _pick(text, name, func)
        module = parse_mlir_module(text, source=name, name=picked)
        if picked is not None and spans and sum(s.has_body for s in spans) > 1:
            text = _func_text(text, spans, picked)
        return module, text
    if func is not None:
        raise InputError(f"{name}: --func {func}: this is MIGraphX module text (one module), not MLIR "
                         "with funcs to pick from")
    module = parse_module(text, source=name)
    module.verify()         # the text parser keeps what the log printed; a module that breaks the rules stops here
    return module, None
