"""MLIR text (migraphx dialect) -> :class:`~pytest_mlirtrace._internal.ir.Module`, with verification.

Each ``func.func`` of the text is cut out (:mod:`.split`), parsed by xDSL with the
migraphx dialect (:mod:`.dialect`), then turned into a module by running the IR's shape
rules on it.  A func comes back as a :class:`ParsedFunc` that is one of

* ``ok``: ``.module`` holds the program; every printed result type agreed with the rules;
* ``unsupported``: it uses an op or element type the IR does not have (unpack,
  pooling, ``mhal.launch``, ``f4E2M1FN``...) or is only a declaration; the reason
  names the op / type and its line:column;
* ``invalid``: well-formed MLIR whose types break the shape rules; the reason says how.

Malformed text raises :class:`~.errors.MLIRParseError` with file:line:column.

Speed: the text is scanned once for its funcs (:mod:`.split`, linear); each func in the form MIGraphX
prints is read by the fast path (:mod:`.fast_parse`, about 20x quicker than xDSL), anything else -- and any
func with an error, so that messages and positions are always xDSL's -- by xDSL, from the func's own
text with its positions shifted back into the file.  ``parse_mlir(.., name=NAME)`` parses that func only.

Parameter names: MLIR has none (``%arg0`` is a position), so params are named ``x0``,
``x1``... zero-padded to the same width (``x00``..``x11`` for 12 args) so that sorting by name
(the order of :meth:`Module.params`, hence of the emitted arguments) is the argument order.
Pass ``param_names`` (e.g. ``[p.param for p in module.params()]`` of the module the MLIR was
emitted from) to get the original names back.  Instructions are named ``@0``, ``@1``... by
position, as MIGraphX names them.

What the checks allow (they accept what MIGraphX itself emits):
* element types: ``i32`` = ``si32``; a bool result may be printed ``i8`` (MIGraphX's boolean
  at the rocMLIR boundary); a comparison may print its input type (rocMLIR style);
* strides (``!migraphx.shaped`` only), rocMLIR's rules (:func:`.convert_rules.stride_problem`): rocMLIR gives
  the strides of a value inside a func no meaning, and lays the func's arguments and results out in memory
  (``asMemoryLayoutTensor``; :func:`~pytest_mlirtrace._internal.ir.shape.layout_problem`).  So any strides it can
  lay out are taken -- permuted (a convolution writing NHWC), padded rows, broadcast views -- and kept in
  the module (the views after a value read its printed strides; the func's result types are the output
  layout); refused, with line:col: a layout no memory has (smallest stride not 1, overlapping dims, a
  padded stride that is not a multiple of the inner one), a computed value printed as a broadcast, and a
  broadcast kernel output.  reshape's strides are not checked (rocMLIR keeps broadcast strides).
* a ``multibroadcast`` whose ``out_lens`` disagrees with its printed result type follows the result type,
  as rocMLIR's lowering does; the disagreement is kept in :attr:`ParsedFunc.notes`.
* forms: MLIR of 2022 (``func @f``, ``builtin.func``, ``std.return``), the op forms of every year
  (:mod:`.dialect`) and MLIR's generic form (``"func.func"() ({..}) {sym_name = ..}``, ``<{..}>`` properties).
* ``perf_config`` op attributes are tuning annotations, not op attributes: they are kept
  in :attr:`ParsedFunc.perf_configs` and not in the module.
"""
from __future__ import annotations

import bisect
import gc
import re
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    UnregisteredOp,
)
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from pytest_mlirtrace._internal.ir.dtypes import BY_TYPE_ID
from pytest_mlirtrace._internal.ir.module import Instruction, IRError, Module
from pytest_mlirtrace._internal.ir.ops import BINARY_OPS, COMPARE_OPS, RULES
from pytest_mlirtrace._internal.ir.shape import Shape

from . import fast_parse, split
from .convert_rules import ATTR_ORDER, MLIR_ONLY_ATTRS, boundary_problem, implied_attrs, stride_problem
from .dialect import MIGraphXOp, ShapedType, TrackingParser, UnknownCustomOp, make_context
from .errors import MLIRParseError, MLIRUnsupportedError, MLIRVerifyError, line_col
from .funcattrs import FuncAttrs
from .literals import RawAttr, storage_from_values
from .strings import symbol_ref
from .types import TypeProblem, attr_text, dtype_of, same_dtype, shape_of


@dataclass
class ParsedFunc:
    name: str
    line: int
    column: int
    source: str = "<mlir>"
    attrs: FuncAttrs = field(default_factory=FuncAttrs)
    module: Module | None = None
    unsupported: str | None = None        # why the IR cannot hold it (op / type, with line:col)
    invalid: str | None = None            # why it fails verification (with line:col)
    private: bool = False
    declaration: bool = False
    type_syntax: str | None = None        # "tensor", "shaped" or "mixed"
    arg_names: list[str] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)
    perf_configs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)     # what was taken though it is odd (with line:col)
    text: str = ""                        # the func's own source text
    _func_op: FuncOp | None = field(default=None, repr=False, compare=False)
    _lazy: bool = field(default=False, repr=False, compare=False)    # read by the fast path: xDSL op on demand

    @property
    def func_op(self) -> FuncOp | None:
        """The xDSL op, when xDSL could parse it (made on first use for a func the fast path read)."""
        if self._lazy:
            self._lazy = False
            try:
                mod, _ = _xdsl_parse(self.text, self.source)
                self._func_op = next((op for op in mod.ops if isinstance(op, FuncOp)), None)
            except (ParseError, UnknownCustomOp):
                self._func_op = None
        return self._func_op

    @property
    def ok(self) -> bool:
        return self.module is not None

    @property
    def reason(self) -> str | None:
        return self.unsupported or self.invalid

    @property
    def status(self) -> str:
        return "ok" if self.ok else ("unsupported" if self.unsupported else "invalid")

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"

    def __str__(self) -> str:
        return (f"{symbol_ref(self.name)} ({self.location}): {self.status}"
                + (f": {self.reason}" if self.reason else ""))


FAST = True        # read the common form with :mod:`.fast_parse` (tests switch it off to compare both paths)
_CTX = None


def _ctx():
    global _CTX
    if _CTX is None:
        _CTX = make_context()
    return _CTX


class _Shift:
    """Where offsets of a text made of pieces of the file lie in the file: ``[(offset in the piece text,
    offset in the file), ...]``, sorted."""

    def __init__(self, pieces: list[tuple[int, int]]):
        self.at = [a for a, _ in pieces]
        self.to = [b for _, b in pieces]

    def __call__(self, pos: int) -> int:
        k = bisect.bisect_right(self.at, pos) - 1
        return self.to[max(k, 0)] + pos - self.at[max(k, 0)]


def _parse_error(e: ParseError, source: str, text: str, start: int = 0, off=0) -> MLIRParseError:
    """xDSL's error in our terms (its position moved into ``text`` by ``off``: a shift or a :class:`_Shift`);
    a few of its messages are made more precise."""
    pos, msg = (off(e.span.start) if callable(off) else e.span.start + off), e.msg.strip()
    m = re.match(r"values used but not defined: \[(%[^\],]+)", msg)
    if m:
        use = re.search(re.escape(m.group(1)) + r"(?![\w$.-])", text[start:])
        if use:
            pos = start + use.start()
        msg = f"value {m.group(1)} is used but never defined"
    elif not text[pos:].strip():
        msg = "unexpected end of input" + (": a '{' is never closed" if "block" in msg else f" ({msg})")
        pos = len(text.rstrip())          # report it where the text stops, not on the empty line after
    elif e.msg.startswith(" "):
        msg = "syntax error" + e.msg
    line, col = line_col(text, pos)
    return MLIRParseError(msg, source, line, col, text)


def _xdsl_parse(text: str, source: str) -> tuple[ModuleOp, TrackingParser]:
    p = TrackingParser(_ctx(), text, source)
    try:
        return p.parse_module(), p
    except (ParseError, UnknownCustomOp):
        raise
    except Exception as e:          # xDSL asserts on some malformed input; report it where it stopped
        pos = p.pos
        msg = str(e).split("\n")[0]
        if isinstance(e, AssertionError) and msg.startswith("Unexpected token"):
            msg = "unexpected " + p._current_token.text.__repr__()
        raise ParseError(Span(pos, pos + 1, p.lexer.input), f"cannot parse this ({msg})") from None


_SKELETON_TOKEN = re.compile(r"(?:\s+|//[^\n]*)*+(?:(module)\s*+\{|(\})|$)")


def _has_tokens(text: str) -> bool:
    """Is there anything to parse around the funcs -- other than plain ``module { }`` (no name, no
    attributes), balanced, which xDSL would take anyway (so a file of many modules is not parsed twice)?"""
    pos, depth, n = 0, 0, len(text)
    while True:
        m = _SKELETON_TOKEN.match(text, pos)
        if m is None:
            return True
        if m.group(1):
            depth += 1
        elif m.group(2):
            depth -= 1
            if depth < 0:
                return True
        else:
            return depth != 0 or m.end() != n
        pos = m.end()


def parse_mlir(text: str, source: str = "<mlir>", param_names: list[str] | None = None, *,
               name: str | None = None) -> list[ParsedFunc]:
    """Every ``func.func`` of ``text``, each parsed, converted and verified (see the module doc); with
    ``name``, only the funcs of that name (the others are found, not parsed)."""
    # The parse makes many small objects that all stay alive: the cyclic garbage collector's passes over
    # them would cost more the bigger the file (0.19 instead of 0.12 ms a func at 8000 funcs); it has
    # nothing to free here, so it waits until the end.
    was = gc.isenabled()
    gc.disable()
    try:
        return _parse_mlir(text, source, param_names, name)
    finally:
        if was:
            gc.enable()


def _parse_mlir(text: str, source: str, param_names: list[str] | None, name: str | None) -> list[ParsedFunc]:
    split.check_strings(text, source)
    try:
        spans = split.find_funcs(text, source)
    except MLIRParseError as scan_error:
        # the bracket scan knows only that something is unbalanced; xDSL usually knows what
        try:
            _xdsl_parse(text, source)
        except ParseError as e:
            raise _parse_error(e, source, text) from None
        except UnknownCustomOp:
            pass
        raise scan_error from None
    skeleton, pieces = split.skeleton(text, [(s.start, s.end) for s in spans])
    if _has_tokens(skeleton):
        try:
            _xdsl_parse(skeleton, source)
        except ParseError as e:
            raise _parse_error(e, source, text, off=_Shift(pieces)) from None
        except UnknownCustomOp as e:
            line, col = line_col(text, _Shift(pieces)(e.pos))
            raise MLIRParseError(f"{e}; expected only modules and func.func at the top level", source, line, col,
                                 text) from None
    if name is not None:
        spans = [s for s in spans if s.name == name]
    alias_defs = split.aliases(text)
    uses = _alias_uses(text, alias_defs)
    return [_parse_func(text, span, source, param_names, alias_defs, uses) for span in spans]


def _alias_uses(text: str, alias_defs: list[tuple[int, int]]) -> re.Pattern | None:
    """A pattern finding a use of any alias ``text`` defines (a func that has none can take the fast path)."""
    names = {re.match(r"\s*([#!][\w.$-]+)", text[a:b]).group(1) for a, b in alias_defs}
    if not names:
        return None
    return re.compile(r"(?<![\w.$-])(?:" + "|".join(map(re.escape, sorted(names))) + r")(?![\w.$-])")


def _func_input(text: str, span: split.FuncSpan, alias_defs: list[tuple[int, int]]) -> tuple[str, _Shift]:
    """The text xDSL parses for one func: its own text, after the alias definitions it may use (each
    piece's offsets shifted back into the file, so the parse stays linear in the file)."""
    pieces, parts, at = [], [], 0
    for a, b in [d for d in alias_defs if d[1] <= span.start] + [(span.start, span.end)] + \
            [d for d in alias_defs if d[0] >= span.end]:
        pieces.append((at, a))
        parts.append(text[a:b] + "\n")
        at += b - a + 1
    return "".join(parts), _Shift(pieces)


def _parse_func(text: str, span: split.FuncSpan, source: str, param_names: list[str] | None,
                alias_defs: list[tuple[int, int]], alias_uses: re.Pattern | None = None) -> ParsedFunc:
    line, col = line_col(text, span.start)
    pf = ParsedFunc(span.name, line, col, source, private=span.private, declaration=not span.has_body,
                    text=text[span.start:span.end])
    if FAST and span.has_body and (not alias_defs or (alias_uses is not None and not alias_uses.search(
            text, span.start, span.end))) and fast_parse.parse_func(pf, text, span.start, span.end, param_names):
        pf._lazy = True
        return pf
    one, off = _func_input(text, span, alias_defs)
    try:
        mod, parser = _xdsl_parse(one, source)
    except UnknownCustomOp as e:
        l2, c2 = line_col(text, off(e.pos))
        pf.unsupported = (f"op {e.name} at {l2}:{c2} not supported (written in the custom syntax of a dialect "
                          "mlirtrace has no grammar for)")
        return pf
    except ParseError as e:
        raise _parse_error(e, source, text, span.start, off) from None
    funcs = [op for op in mod.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        raise MLIRParseError(f"expected one func.func here, found {len(funcs)}", source, line, col, text)
    fn = funcs[0]
    pf._func_op = fn
    pf.attrs = _func_attrs(fn)
    if not span.has_body:
        pf.unsupported = "declaration only (func.func without a body)"
        return pf
    positions = {k: off(v) for k, v in parser.op_positions.items()}
    _Converter(pf, fn, positions, text, param_names).run()
    return pf


def _py(attr: Attribute):
    """An op attribute as the IR keeps it (ints, floats, strings, lists, bools)."""
    if isinstance(attr, IntegerAttr):
        v = attr.value.data
        if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
            return bool(v)
        return int(v)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, BytesAttr):            # xDSL's reading of a string with escapes and non-ASCII
        try:
            return attr.data.decode("utf-8")
        except UnicodeDecodeError:
            return RawAttr(attr_text(attr))
    if isinstance(attr, ArrayAttr):
        return [_py(a) for a in attr.data]
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    return RawAttr(attr_text(attr))


def _func_attrs(fn: FuncOp) -> FuncAttrs:
    entries = {}
    for k, v in fn.attributes.items():
        val = _py(v)
        entries[k] = (None if isinstance(val, RawAttr) else val, None if isinstance(v, UnitAttr) else attr_text(v))
    return FuncAttrs.from_entries(entries)


class _Stop(Exception):
    pass


class _Converter:
    def __init__(self, pf: ParsedFunc, fn: FuncOp, positions: dict[int, int], text: str,
                 param_names: list[str] | None):
        self.pf, self.fn, self.positions, self.text = pf, fn, positions, text
        self.param_names = param_names
        self.names: dict[int, str] = {}        # id(SSAValue) -> instruction name
        self.syntaxes: set[str] = set()
        self.m = Module(name=None)

    # ---- helpers ------------------------------------------------------------
    def where(self, op: Operation | None) -> str:
        pos = self.positions.get(id(op)) if op is not None else None
        if pos is None:
            return f"{self.pf.line}:{self.pf.column}"
        line, col = line_col(self.text, pos)
        return f"{line}:{col}"

    def unsupported(self, msg: str) -> None:
        self.pf.unsupported = msg
        raise _Stop

    def invalid(self, msg: str) -> None:
        self.pf.invalid = msg
        raise _Stop

    def shape(self, t: Attribute, what: str, op: Operation | None) -> Shape:
        try:
            s, syntax = shape_of(t)
        except TypeProblem as e:
            self.unsupported(f"{what} at {self.where(op)}: {e}")
        self.syntaxes.add(syntax)
        return s

    def arg_where(self, name: str) -> str:
        start = self.text.find("%" + name, self.text.find("(", self.positions.get(id(self.fn), 0)))
        pos = start if start >= 0 else self.positions.get(id(self.fn), 0)
        line, col = line_col(self.text, pos)
        return f"{line}:{col}"

    # ---- the walk -----------------------------------------------------------
    def run(self) -> None:
        n = len(self.fn.body.blocks.first.args) if self.fn.body.blocks.first is not None else 0
        if self.param_names is not None and len(self.param_names) != n:
            raise ValueError(f"{symbol_ref(self.pf.name)} has {n} arguments, {len(self.param_names)} param names "
                             "given")
        try:
            self._run()
        except _Stop:
            self.pf.module = None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as e:
            # something in the text the checks above did not foresee: a reason, not a crash
            self.pf.module = None
            self.pf.invalid = f"cannot convert {symbol_ref(self.pf.name)}: {type(e).__name__}: {e}"
        finally:
            s = self.syntaxes
            self.pf.type_syntax = None if not s else (s.pop() if len(s) == 1 else "mixed")

    def _problems_first(self, ops: list[Operation]) -> None:
        """Report every op the IR cannot hold at once (the reason lists them, first first)."""
        bad = []
        for op in ops:
            name = self.op_name(op)
            if isinstance(op, MIGraphXOp):
                short = op.short_name
                if short not in RULES and short != "literal":
                    bad.append(f"op {name} at {self.where(op)}")
                elif "mlirtrace.scaled_by" in op.attributes and (short != "quant_dot" or len(op.operands) != 4):
                    # both operands scaled (a, b, scale_a, scale_b) is the form the IR holds
                    bad.append(f"op {name} with 'scaled by' operands at {self.where(op)} (only a quant_dot with "
                               "both operands scaled)")
            elif isinstance(op, ReturnOp):
                continue
            elif isinstance(op, UnregisteredOp) and name == "tosa.const":
                continue
            else:
                extra = f" (calls {symbol_ref(op.callee.root_reference.data)})" if isinstance(op, CallOp) else ""
                bad.append(f"op {name}{extra} at {self.where(op)}")
        if bad:
            more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
            self.unsupported(", ".join(bad[:3]) + more + " not supported")

    @staticmethod
    def op_name(op: Operation) -> str:
        if isinstance(op, UnregisteredOp):
            return op.op_name.data
        return op.name

    def _run(self) -> None:
        fn = self.fn
        block = fn.body.blocks.first
        ops = list(block.ops)
        self._problems_first(ops)
        args = list(block.args)
        self.pf.arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(args)]
        n = len(args)
        if self.param_names is not None:
            pnames = list(self.param_names)
        else:
            width = len(str(n - 1)) if n > 1 else 1
            pnames = [f"x{i:0{width}d}" for i in range(n)]
        self.pf.param_names = pnames
        for i, a in enumerate(args):
            try:
                s, syntax = shape_of(a.type)
            except TypeProblem as e:
                self.unsupported(f"argument %{self.pf.arg_names[i]} at {self.arg_where(self.pf.arg_names[i])}: {e}")
            self.syntaxes.add(syntax)
            why = boundary_problem(s, "argument")
            if why is not None:
                self.invalid(f"argument %{self.pf.arg_names[i]} at {self.arg_where(self.pf.arg_names[i])}: {why}")
            self.m.add_param(pnames[i], s.dtype, s.lens, s.strides)
            self.names[id(a)] = pnames[i]
        returned = False
        for op in ops:
            if returned:
                self.invalid(f"{self.op_name(op)} at {self.where(op)} comes after the return")
            if isinstance(op, ReturnOp):
                self._return(op)
                returned = True
            elif isinstance(op, UnregisteredOp):
                self._tosa_const(op)
            else:
                self._migraphx(op)
        if not returned:
            self.invalid(f"{symbol_ref(self.pf.name)} has no return")
        try:
            self.m.verify()
        except IRError as e:
            self.invalid(f"verification: {e}")
        self.pf.module = self.m

    def _input(self, v) -> str:
        return self.names[id(v)]

    def _return(self, op: ReturnOp) -> None:
        outs = list(self.fn.function_type.outputs.data)
        got = [v.type for v in op.operands]
        if got != outs:
            self.invalid(f"return at {self.where(op)} returns ({', '.join(map(attr_text, got))}) but the func's "
                         f"result types are ({', '.join(map(attr_text, outs))})")
        for k, t in enumerate(outs):
            if isinstance(t, ShapedType):
                why = boundary_problem(shape_of(t)[0], "result")
                if why is not None:
                    self.invalid(f"result {k} of {symbol_ref(self.pf.name)} ({attr_text(t)}) at {self.where(op)}: "
                                 f"{why}")
        self.m.add_return(*[self._input(v) for v in op.operands])

    def _literal(self, op: Operation, value: Attribute, out: Attribute) -> None:
        where = self.where(op)
        shape = self.shape(out, f"result of {self.op_name(op)}", op)
        if not isinstance(value, DenseIntOrFPElementsAttr):
            self.unsupported(f"{self.op_name(op)} at {where}: value {attr_text(value)} is not a dense<> literal")
        vt = value.type
        if not isinstance(vt, TensorType):
            self.unsupported(f"{self.op_name(op)} at {where}: value type {attr_text(vt)} is not a tensor")
        vdt = dtype_of(vt.element_type)
        if vdt is None:
            self.unsupported(f"{self.op_name(op)} at {where}: element type {attr_text(vt.element_type)} "
                             "is not supported")
        if tuple(vt.get_shape()) != shape.lens:
            self.invalid(f"{self.op_name(op)} at {where}: value of shape {list(vt.get_shape())} for a result of "
                         f"lens {list(shape.lens)}")
        if not same_dtype(vdt, shape.dtype) and not same_dtype(shape.dtype, vdt):
            self.invalid(f"{self.op_name(op)} at {where}: value of type {vdt.mlir} for a result of "
                         f"type {shape.dtype.mlir}")
        values = value.get_values()
        storage = storage_from_values(np.asarray(values).reshape(-1) if len(values) != 1 else values[0],
                                      shape.dtype, shape.lens)
        name = self.m.add_literal(storage, shape.dtype, shape.lens, shape.strides, name=f"@{len(self.m.instructions)}")
        self.names[id(op.results[0])] = name

    def _tosa_const(self, op: UnregisteredOp) -> None:
        if "value" not in op.attributes or len(op.results) != 1 or op.operands:
            self.unsupported(f"op tosa.const at {self.where(op)}: expected no operands, one result and a value")
        self._literal(op, op.attributes["value"], op.results[0].type)

    def _migraphx(self, op: MIGraphXOp) -> None:
        where = self.where(op)
        if op.properties:           # the generic form of newer MLIR prints inherent attributes as <{..}> properties
            op.attributes.update(op.properties)
            op.properties.clear()
        try:
            op.verify()             # IRDL: operand / result / attribute constraints, then verify_()
        except VerifyException as e:
            self.invalid(f"{op.name} at {where}: {e}")
        short = op.short_name
        if short == "literal":
            self._literal(op, op.attributes.get("value"), op.results[0].type)
            return
        out = self.shape(op.results[0].type, f"result of {op.name}", op)
        in_shapes = [self.m.get(self._input(v)).shape for v in op.operands]
        attrs = {}
        order = ATTR_ORDER.get(short, ())
        keys = [k for k in order if k in op.attributes] + sorted(k for k in op.attributes if k not in order)
        for k in keys:
            if k == "mlirtrace.scaled_by":      # the parser's mark of the 'scaled by' form: the operands say it
                continue
            if k in MLIR_ONLY_ATTRS:
                v = _py(op.attributes[k])
                if k == "perf_config":
                    self.pf.perf_configs.append(str(v))
                continue
            attrs[k] = _py(op.attributes[k])
        implied_attrs(short, attrs, len(op.operands), out.dtype)
        if short == "convert":
            t = attrs.get("target_type")
            if t is None:
                attrs["target_type"] = out.dtype.type_id
            elif not isinstance(t, int) or t not in BY_TYPE_ID:
                self.invalid(f"{op.name} at {where}: unknown target_type {t!r}")
            elif not same_dtype(out.dtype, BY_TYPE_ID[t]):
                self.invalid(f"{op.name} at {where}: target_type = {t} ({BY_TYPE_ID[t].migraphx}) but the result "
                             f"type is {out.dtype.mlir}")
        inputs = [self._input(v) for v in op.operands]
        if short == "multibroadcast":
            note = follow_result_lens(attrs, in_shapes, out.lens)
            if note:
                self.pf.notes.append(f"{op.name} at {where}: {note}")
        if short in BINARY_OPS or short in COMPARE_OPS or short == "where":
            inputs = self._implicit_broadcast(inputs, out.lens)
            in_shapes = [self.m.get(i).shape for i in inputs]
        name = f"@{len(self.m.instructions)}"
        try:
            self.m.add(short, *inputs, name=name, **attrs)
        except IRError as e:
            self.invalid(f"{op.name} at {where}: {e}")
        ins = self.m.get(name)
        self._check(op, ins, out, in_shapes)
        self.names[id(op.results[0])] = name

    def _implicit_broadcast(self, inputs: list[str], lens) -> list[str]:
        """Older migraphx-dialect programs (rocMLIR's resnet50 int8 fusion test) give elementwise ops operands
        of different lens that broadcast numpy-style to the result (``1x128x1x1`` + ``1x128x28x28``), which
        rocMLIR's lowering to TOSA accepts: each such operand gets the ``multibroadcast`` MIGraphX itself
        would have written. The 2022 dialect also added a per-channel vector to an NCHW result (a convolution's
        bias: ``tensor<64xf32>`` + ``tensor<1x64x56x56xf32>``, lowered to the conv's bias): that operand gets
        MIGraphX's ``broadcast`` on axis 1. Operands that cannot broadcast are left for the op's rule to refuse."""
        out = []
        lens = tuple(lens)
        for i in inputs:
            s = self.m.get(i).shape
            if s.lens != lens and len(s.lens) <= len(lens) and all(
                    n in (1, m) for n, m in zip(s.lens, lens[len(lens) - len(s.lens):], strict=False)):
                i = self.m.add("multibroadcast", i, name=f"@{len(self.m.instructions)}", out_lens=list(lens))
            elif len(s.lens) == 1 and len(lens) >= 3 and s.lens[0] == lens[1] != lens[-1]:
                i = self.m.add("broadcast", i, name=f"@{len(self.m.instructions)}", axis=1, out_lens=list(lens))
            out.append(i)
        return out

    def _check(self, op: MIGraphXOp, ins: Instruction, printed: Shape, in_shapes: list[Shape]) -> None:
        rule = ins.shape
        where = self.where(op)
        short = op.short_name
        if printed.lens != rule.lens:
            self.invalid(f"{op.name} at {where}: result lens {list(printed.lens)} but the shape rule gives "
                         f"{list(rule.lens)}")
        ok_dtype = same_dtype(printed.dtype, rule.dtype) or (
            short in COMPARE_OPS and in_shapes and printed.dtype == in_shapes[0].dtype)
        if not ok_dtype:
            self.invalid(f"{op.name} at {where}: result type {printed.dtype.mlir} but the shape rule gives "
                         f"{rule.dtype.mlir}")
        if isinstance(op.results[0].type, TensorType):
            ins.shape = Shape(rule.dtype, rule.lens, rule.strides)
            return
        why = stride_problem(ins, printed, rule)
        if why is not None:
            self.invalid(f"{op.name} at {where}: result {why}")
        ins.shape = Shape(rule.dtype, rule.lens, printed.strides)


def follow_result_lens(attrs: dict, in_shapes: list[Shape], lens: tuple[int, ...]) -> str | None:
    """A ``multibroadcast`` whose ``out_lens`` disagrees with its printed result type: rocMLIR's lowering
    (MIGraphXToTosa) reads the result type and never ``out_lens``, so the result type is followed --
    ``attrs["out_lens"]`` becomes its lens -- when the input broadcasts to it; returns the note to keep
    (None when they agree, or when the input broadcasts to neither, for the shape rule to refuse)."""
    given = attrs.get("out_lens")
    if not isinstance(given, list) or list(given) == list(lens) or len(in_shapes) != 1:
        return None
    src = in_shapes[0].lens
    off = len(lens) - len(src)
    if off < 0 or any(n not in (1, lens[off + i]) for i, n in enumerate(src)):
        return None
    attrs["out_lens"] = list(lens)
    return (f"out_lens = {list(given)} disagrees with the result type's lens {list(lens)}; the result type is "
            "followed, as rocMLIR's lowering does")


def parse_mlir_module(text: str, source: str = "<mlir>", param_names: list[str] | None = None,
                      name: str | None = None) -> Module:
    """The module of the func ``name``, else of the only / first func that converts.

    Raises :class:`MLIRParseError` for malformed text, :class:`MLIRVerifyError` when the func
    breaks the shape rules and :class:`MLIRUnsupportedError` when no func can be converted.
    """
    funcs = parse_mlir(text, source, param_names, name=name)
    if not funcs:
        if name is not None:
            have = [symbol_ref(s.name) for s in split.find_funcs(text, source)]
            listed = f"; the funcs are: {', '.join(have)}" if have else "; there is no func.func"
            raise MLIRParseError(f"no func.func {symbol_ref(name)}{listed}", source, 1, 1, text)
        raise MLIRParseError("no func.func found", source, 1, 1, text)
    for f in funcs:
        if f.ok:
            return f.module
    first_invalid = next((f for f in funcs if f.invalid), None)
    if first_invalid is not None and len(funcs) == 1:
        f = first_invalid
        line, col = _reason_pos(f.invalid, f.line, f.column)
        raise MLIRVerifyError(f"{symbol_ref(f.name)}: {f.invalid}", source, line, col, text)
    why = "; ".join(f"{symbol_ref(f.name)}: {f.reason}" for f in funcs)
    raise MLIRUnsupportedError(f"no func can be converted to a module: {why}", source, funcs[0].line,
                               funcs[0].column, text)


def _reason_pos(reason: str, line: int, col: int) -> tuple[int, int]:
    m = re.search(r" at (\d+):(\d+)", reason)
    return (int(m.group(1)), int(m.group(2))) if m else (line, col)
