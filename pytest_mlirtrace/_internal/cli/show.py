"""``mlirtrace show FILE``: a module in both notations, MIGraphX text and MLIR.

The file is MIGraphX module text (``x0 = @param:x0 -> float_type, {..}, {..}``) or MLIR in
the migraphx dialect (``module { func.func ... }``); which one is detected from the text.
For MLIR every func is shown; funcs that cannot be turned into a module are reported on
stderr as ``FILE:LINE:COL: @name: unsupported|invalid: reason``; what was taken though odd (a multibroadcast's
``out_lens`` that contradicts its result type, followed as rocMLIR follows it) as ``FILE: @name: note: ...``.

What is shown parses back to the same module: a func name that is not an identifier is quoted
(``@"a\\"b"``) and strings are written with MLIR's escapes; the MIGraphX text quotes the names and
string attributes its line syntax cannot hold bare (``"in put" = @param:"in put"``).

Exit status (the contract of every command): 0 every func shown; 2 the file could not be read or
parsed (``FILE:LINE:COL: message`` on stderr), a func is invalid, or ``--func`` names none; 3 some funcs
use what mlirtrace does not support (the rest is shown), or the MIGraphX text has no MLIR form (a compiled
program's ``gpu::``/``ref::``/``hip::`` ops, literals printed as ``{ ... }``): it is shown as printed and each
reason is on stderr (``--only migraphx`` shows it with status 0).
"""
from __future__ import annotations

import argparse
import re
import sys

from ..vocab.exit_codes import ExitCode


def add_parser(subparsers, name: str = "show") -> argparse.ArgumentParser:
    p = subparsers.add_parser(name, help="print a module file as MIGraphX text and as MLIR",
                              description=__doc__.split("\n\n")[0],
                              formatter_class=argparse.RawDescriptionHelpFormatter,
                              epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("file", metavar="FILE", help="MIGraphX module text or MLIR file ('-' for stdin)")
    p.add_argument("--types", choices=("tensor", "shaped"), default=None,
                   help="MLIR type syntax: tensor<..> or !migraphx.shaped<..> "
                        "(default: the input's own for MLIR, tensor for MIGraphX text)")
    p.add_argument("--arch", default=None, help="arch attribute of the emitted func (default: the input's, "
                                                "else pocl-cpu)")
    p.add_argument("--num-cu", type=int, default=None, help="num_cu attribute (default: the input's, else 1)")
    p.add_argument("--only", choices=("migraphx", "mlir"), default=None, help="print just one of the two forms")
    p.add_argument("--func", default=None, metavar="NAME", help="show only this func of an MLIR file")
    return p


def _read(path: str) -> str:
    """The file's text; a byte that is not UTF-8 is an error at its line, column and offset (ValueError)."""
    from ..engine.session import decode_source, read_source

    if path == "-":
        return decode_source(sys.stdin.buffer.read(), "<stdin>")
    return read_source(path)


def _one_line(s: str) -> str:
    """``s`` fit for a ``//`` comment line (a file name may hold a newline)."""
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _section(title: str, body: str, out) -> None:
    out.write(f"// ---- {title}\n")
    out.write(body if body.endswith("\n") else body + "\n")


def run(args: argparse.Namespace) -> int:
    from ..mlir import is_mlir

    path = args.file
    try:
        text = _read(path)
    except OSError as e:
        print(f"{path}:1:1: cannot read: {e.strerror or e}", file=sys.stderr)
        return ExitCode.USAGE
    except ValueError as e:         # not UTF-8: FILE:LINE:COL: not UTF-8 text: byte 0xff at offset N (...)
        print(e, file=sys.stderr)
        return ExitCode.USAGE
    source = "<stdin>" if path == "-" else path
    show = _show_mlir if is_mlir(text) else _show_migraphx
    return show(args, text, source, sys.stdout, sys.stderr)


def _show_migraphx(args: argparse.Namespace, text: str, source: str, out, err) -> int:
    """MIGraphX text: the module as printed, and its MLIR (unless it cannot be MLIR)."""
    from ..ir import TextParseError, parse_module, print_module
    from ..ir.text import not_runnable
    from ..mlir import emit_mlir

    try:
        module = parse_module(text, source=source)
    except TextParseError as e:
        m = re.search(r"at column (\d+)", str(e))
        col = int(m.group(1)) if m else 1
        msg = str(e).split("\n", 1)[0]
        msg = msg[len(f"{source}:{e.line}: "):] if msg.startswith(f"{source}:{e.line}: ") else msg
        print(f"{source}:{e.line}:{col}: {msg}", file=err)
        return ExitCode.USAGE
    syntax = args.types or "tensor"
    why = not_runnable(module)
    if why:
        # a compiled program, elided literals, kept-as-text shapes: shown as printed, no MLIR of it
        if args.only != "mlir":
            _section("migraphx", print_module(module), out)
        for w in why:
            print(f"{source}: not supported as MLIR: {w}", file=err)
        return ExitCode.OK if args.only == "migraphx" else ExitCode.NOT_SUPPORTED
    try:
        mlir = emit_mlir(module, arch="pocl-cpu" if args.arch is None else args.arch,
                         num_cu=1 if args.num_cu is None else args.num_cu, type_syntax=syntax)
    except Exception as e:  # noqa: BLE001 - a module the MLIR printer cannot write (e.g. an op with no MLIR form)
        print(f"{source}:1:1: cannot write as MLIR: {e}", file=err)
        return ExitCode.USAGE
    if args.only != "mlir":
        _section("migraphx", print_module(module), out)
    if args.only != "migraphx":
        _section(f"mlir ({syntax})", mlir, out)
    return ExitCode.OK


def _show_mlir(args: argparse.Namespace, text: str, source: str, out, err) -> int:
    """MLIR text: each func (or ``--func``) as its migraphx module and its MLIR written back."""
    from ..mlir import MLIRParseError, parse_mlir, symbol_ref

    try:
        funcs = parse_mlir(text, source)
    except MLIRParseError as e:
        print(f"{e.location}: {e.msg}", file=err)
        return ExitCode.USAGE
    if not funcs:
        print(f"{source}:1:1: no func.func found", file=err)
        return ExitCode.USAGE
    if args.func is not None:
        names = ", ".join(dict.fromkeys(symbol_ref(f.name) for f in funcs))
        funcs = [f for f in funcs if f.name == args.func]
        if not funcs:
            print(f"{source}: no func {symbol_ref(args.func)}; its funcs: {names}", file=err)
            return ExitCode.USAGE
    shown, invalid = 0, 0
    for f in funcs:
        if not f.ok:
            print(f"{f.location}: {symbol_ref(f.name)}: {f.status}: {f.reason}", file=err)
            invalid += f.status == "invalid"
            continue
        _show_func(args, f, source, out, err)
        shown += 1
    if shown == len(funcs):
        return ExitCode.OK
    return ExitCode.USAGE if invalid else ExitCode.NOT_SUPPORTED


def _show_func(args: argparse.Namespace, f, source: str, out, err) -> None:
    from ..ir import print_module
    from ..mlir import FuncAttrs, emit_func, symbol_ref

    for note in f.notes:        # taken as rocMLIR takes it, though odd (e.g. out_lens against the type)
        print(f"{source}: {symbol_ref(f.name)}: note: {note}", file=err)
    syntax = args.types or ("shaped" if f.type_syntax in ("shaped", "mixed") else "tensor")
    attrs = FuncAttrs(f.attrs.arch, f.attrs.kernel, f.attrs.num_cu, f.attrs.prefix, dict(f.attrs.extra))
    if args.arch is not None:
        attrs.arch = args.arch
    if args.num_cu is not None:
        attrs.num_cu = args.num_cu
    mlir = "module {\n" + emit_func(f.module, attrs=attrs, type_syntax=syntax, name=f.name) + "}\n"
    out.write(f"// ==== {symbol_ref(f.name)} ({_one_line(f.location)})\n")
    if args.only != "mlir":
        _section("migraphx", print_module(f.module), out)
    if args.only != "migraphx":
        _section(f"mlir ({syntax})", mlir, out)
