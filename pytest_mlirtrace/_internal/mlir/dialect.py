"""The migraphx dialect as xDSL IRDL definitions.

* ``!migraphx.shaped<1x5x4xf32, 20x4x1>`` -- :class:`ShapedType` (lens, strides, element
  type); ops also accept the short spelling ``<1x5x4xf32, 20x4x1>`` and builtin
  ``tensor<1x5x4xf32>`` types (the pre-2024 MIGraphX output).
* one IRDL op class per migraphx op.  Every class shares one custom ``parse`` that takes
  both assembly syntaxes rocMLIR has had::

      %3 = migraphx.dot(%2, %0) : (tensor<..>, tensor<..>) -> tensor<..>       (old)
      %1 = migraphx.softmax(%0) {axis = 2 : i64} : tensor<..> -> tensor<..>     (2023: no parentheses)
      func @main(..) {..}, "func.func"() ({..}) {sym_name = ..}                 (2022 func, generic form)
      %0 = migraphx.dot %arg0, %arg1 : <1x5x4xf32, 20x4x1>, <..> -> <..>      (new)
      %1 = migraphx.convert %0 : <..> to <..>                                  (new convert)
      %5 = migraphx.quant_dot %a scaled by %sa, %b scaled by %sb : T scaled by T, ... -> T
      %0 = migraphx.literal (dense<..> : tensor<..>) : <1xf32, 0>              (literal)

  and the generic form ``"migraphx.dot"(%a, %b) : (..) -> ..`` through xDSL itself.
* ops the IR layer has no rule for (unpack, pooling, batch_norm_inference, ...) parse as
  :class:`MIGraphXOp` subclasses made on demand by :class:`MIGraphXContext`, so a func
  using them still parses and the converter can name the op it does not support.
* an op of another dialect written in its custom syntax (``mhal.launch @f (...)``) cannot
  be parsed without its grammar; parsing it raises :class:`UnknownCustomOp`, which names
  the op and where it is.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntAttr,
    TensorType,
    UnitAttr,
    UnregisteredOp,
)
from xdsl.dialects.func import Func
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AnyOf,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_attr_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl import base as _base
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from pytest_mlirtrace._internal.ir.ops import BINARY_OPS, COMPARE_OPS, REDUCE_OPS, UNARY_OPS

from .elements import dtype_of
from .literals import dense_payload, parse_dense_payload, storage_from_values


# ------------------------------------------------------------------ the type --
@irdl_attr_definition
class ShapedType(ParametrizedAttribute, TypeAttribute):
    """``!migraphx.shaped<lens x elt, strides>``; a scalar may be written ``!migraphx.shaped<f32>``."""

    name = "migraphx.shaped"

    shape: ArrayAttr[IntAttr]
    strides: ArrayAttr[IntAttr]
    element_type: Attribute

    @staticmethod
    def get(lens: Sequence[int], strides: Sequence[int], element_type: Attribute) -> ShapedType:
        return ShapedType(ArrayAttr([IntAttr(int(n)) for n in lens]),
                          ArrayAttr([IntAttr(int(s)) for s in strides]), element_type)

    @property
    def lens(self) -> tuple[int, ...]:
        return tuple(a.data for a in self.shape.data)

    @property
    def stride_list(self) -> tuple[int, ...]:
        return tuple(a.data for a in self.strides.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr, ArrayAttr, Attribute]:
        parser.parse_punctuation("<", " to open !migraphx.shaped")
        lens, elt, strides = parse_shaped_body(parser)
        return (ArrayAttr([IntAttr(n) for n in lens]), ArrayAttr([IntAttr(s) for s in strides]), elt)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        self.print_body(printer)
        printer.print_string(">")

    def print_body(self, printer: Printer) -> None:
        lens = self.lens
        if lens:
            printer.print_string("x".join(map(str, lens)) + "x")
        printer.print_attribute(self.element_type)
        if lens:
            printer.print_string(", " + "x".join(map(str, self.stride_list)))


def parse_shaped_body(parser: AttrParser) -> tuple[list[int], Attribute, list[int]]:
    """Parse ``1x5x4xf32, 20x4x1>`` (the ``<`` already taken); returns (lens, element type, strides)."""
    pos = parser.pos
    lens = parser.parse_dimension_list()
    if any(n < 0 for n in lens):
        parser.raise_error("dynamic dimensions ('?') are not allowed in !migraphx.shaped", pos, parser.pos)
    if lens:
        parser.parse_shape_delimiter()
    elt = parser.expect(parser.parse_optional_type, "element type expected in !migraphx.shaped")
    strides: list[int] = []
    if parser.parse_optional_punctuation(",") is not None:
        spos = parser.pos
        strides = parser.parse_dimension_list()
        if not strides and lens:
            parser.raise_error("strides expected after ',' in !migraphx.shaped", spos)
    elif lens:
        parser.raise_error("',' and strides expected after the lens in !migraphx.shaped (e.g. <2x3xf32, 3x1>)")
    if len(strides) != len(lens):
        parser.raise_error(f"!migraphx.shaped has {len(lens)} lens but {len(strides)} strides", pos, parser.pos)
    parser.parse_punctuation(">", " to close !migraphx.shaped")
    return lens, elt, strides


ANY_VALUE = AnyOf((_base(ShapedType), _base(TensorType)))


# --------------------------------------------------------------- exceptions --
class UnknownCustomOp(Exception):
    """An op of a dialect we have no grammar for, written in its custom syntax."""

    def __init__(self, name: str, pos: int):
        self.name, self.pos = name, pos
        super().__init__(f"op {name!r} is written in the custom syntax of a dialect mlirtrace does not know")


# ---------------------------------------------------------- parse / print --
def _parse_value_type(parser: Parser) -> Attribute:
    """A type in op position: ``<..>`` is short for ``!migraphx.shaped<..>``."""
    if parser.parse_optional_punctuation("<") is not None:
        lens, elt, strides = parse_shaped_body(parser)
        return ShapedType.get(lens, strides, elt)
    return parser.parse_type()


def _parse_type_maybe_scaled(parser: Parser) -> tuple[Attribute, Attribute | None]:
    t = _parse_value_type(parser)
    scale = None
    if parser.parse_optional_keyword("scaled") is not None:
        parser.parse_keyword("by", " after 'scaled'")
        scale = _parse_value_type(parser)
    return t, scale


def _parse_results(parser: Parser) -> list[Attribute]:
    if parser.parse_optional_punctuation("(") is not None:
        if parser.parse_optional_punctuation(")") is not None:
            return []
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, lambda: _parse_value_type(parser))
        parser.parse_punctuation(")", " to close the result types")
        return types
    return [_parse_value_type(parser)]


class MIGraphXOp(IRDLOperation):
    """Base of every migraphx op: operands, one result, any attributes, both syntaxes."""

    name = "migraphx.unknown"
    inputs = var_operand_def(ANY_VALUE)
    outputs = var_result_def(ANY_VALUE)

    #: the names of the operands in rocMLIR's definition (documentation and arity check)
    OPERANDS: ClassVar[tuple[str, ...] | None] = None

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1]

    @classmethod
    def parse(cls, parser: Parser) -> MIGraphXOp:
        attrs: dict[str, Attribute] = {}
        scaled = False
        if parser.parse_optional_punctuation("(") is not None:
            # old syntax: (operands) attr-dict : (types) -> type
            operands = []
            if parser.parse_optional_punctuation(")") is None:
                operands = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: parser.parse_unresolved_operand())
                parser.parse_punctuation(")", " to close the operand list")
            attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation(":", " before the op's types")
            tpos = parser.pos
            in_types: list[Attribute] = []
            if parser.parse_optional_punctuation("(") is not None:
                if parser.parse_optional_punctuation(")") is None:
                    in_types = parser.parse_comma_separated_list(
                        parser.Delimiter.NONE, lambda: _parse_value_type(parser))
                    parser.parse_punctuation(")", " to close the operand types")
            elif operands:
                # 2023 MIGraphX: ``migraphx.softmax(%0) {axis = 2 : i64} : T -> T``,
                # ``migraphx.dot(%a, %b) : T, T -> T``
                in_types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: _parse_value_type(parser))
            else:
                parser.parse_punctuation("(", " to open the operand types (old syntax: (T, T) -> T)")
            parser.parse_punctuation("->", " before the result type")
            out_types = _parse_results(parser)
            values = parser.resolve_operands(operands, in_types, tpos)
        else:
            # new syntax: a, b attr-dict : T, T -> T   (convert: T to T; quant_dot: a scaled by s, ...)
            operands, scales = [], []
            if parser._current_token.text.startswith("%"):
                def one():
                    o = parser.parse_unresolved_operand()
                    s = None
                    if parser.parse_optional_keyword("scaled") is not None:
                        parser.parse_keyword("by", " after 'scaled'")
                        s = parser.parse_unresolved_operand()
                    operands.append(o)
                    scales.append(s)
                parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
            attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation(":", " before the op's types")
            tpos = parser.pos
            typed = []
            if operands:
                typed = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: _parse_type_maybe_scaled(parser))
            if parser.parse_optional_keyword("to") is None:
                parser.parse_punctuation("->", " before the result type")
            out_types = _parse_results(parser)
            if len(typed) != len(operands):
                parser.raise_error(f"{len(operands)} operands but {len(typed)} operand types", tpos, parser.pos)
            all_ops, all_types = list(operands), [t for t, _ in typed]
            for (_t, st), s in zip(typed, scales, strict=False):
                if (s is None) != (st is None):
                    parser.raise_error("'scaled by' must be given for both the operand and its type", tpos)
                if s is not None:
                    scaled = True
                    all_ops.append(s)
                    all_types.append(st)
            values = parser.resolve_operands(all_ops, all_types, tpos)
        if scaled:
            attrs["mlirtrace.scaled_by"] = UnitAttr()
        return cls.create(operands=values, result_types=out_types, attributes=attrs)

    def print(self, printer: Printer) -> None:
        def ty(t: Attribute) -> None:
            if isinstance(t, ShapedType):
                t.print_parameters(printer)
            else:
                printer.print_attribute(t)

        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        attrs = {k: v for k, v in self.attributes.items() if k != "mlirtrace.scaled_by"}
        if attrs:
            printer.print_string(" ")
            printer.print_attr_dict(attrs)
        printer.print_string(" : ")
        printer.print_list([o.type for o in self.operands], ty)
        printer.print_string(" to " if self.short_name == "convert" else " -> ")
        if len(self.results) == 1:
            ty(self.results[0].type)
        else:
            printer.print_string("(")
            printer.print_list([r.type for r in self.results], ty)
            printer.print_string(")")

    def verify_(self) -> None:
        if self.OPERANDS is not None and len(self.operands) != len(self.OPERANDS):
            raise VerifyException(f"{self.name} takes {len(self.OPERANDS)} operand(s) "
                                  f"({', '.join(self.OPERANDS)}), got {len(self.operands)}")
        if len(self.results) != 1:
            raise VerifyException(f"{self.name} has one result, got {len(self.results)}")


class LiteralOp(MIGraphXOp):
    """``migraphx.literal (dense<..> : tensor<..>) : <..>`` or old ``migraphx.literal() {value = ..} : () -> T``."""

    name = "migraphx.literal"
    value = opt_attr_def(DenseIntOrFPElementsAttr)
    OPERANDS: ClassVar[tuple[str, ...] | None] = ()

    @classmethod
    def parse(cls, parser: Parser) -> LiteralOp:
        start = parser.pos
        parser.parse_punctuation("(", " after migraphx.literal")
        if parser.parse_optional_punctuation(")") is not None:
            apos = parser.pos
            attrs = parser.parse_optional_attr_dict()
            aend = parser.pos
            parser.parse_punctuation(":", " before the literal's type")
            parser.parse_punctuation("(", " to open the (empty) operand types")
            parser.parse_punctuation(")", " literal takes no operands")
            parser.parse_punctuation("->", " before the result type")
            out = _parse_value_type(parser)
            if "value" in attrs:
                attrs["value"] = fix_hex_dense(attrs["value"], parser.lexer.input.content[apos:aend])
        else:
            apos = parser.pos
            value = parser.parse_attribute()
            aend = parser.pos
            parser.parse_punctuation(")", " to close the literal value")
            attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation(":", " before the literal's type")
            out = _parse_value_type(parser)
            attrs["value"] = fix_hex_dense(value, parser.lexer.input.content[apos:aend])
        if not isinstance(attrs.get("value"), DenseIntOrFPElementsAttr):
            parser.raise_error("migraphx.literal needs a dense<...> value", start, parser.pos)
        return cls.create(operands=[], result_types=[out], attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_attribute(self.attributes["value"])
        printer.print_string(")")
        rest = {k: v for k, v in self.attributes.items() if k != "value"}
        if rest:
            printer.print_string(" ")
            printer.print_attr_dict(rest)
        printer.print_string(" : ")
        t = self.results[0].type
        if isinstance(t, ShapedType):
            t.print_parameters(printer)
        else:
            printer.print_attribute(t)


def fix_hex_dense(attr: Attribute, text: str) -> Attribute:
    """xDSL reads ``dense<0xFC00> : tensor<1xf16>`` as the integer 64512; MLIR reads a hex float as its bits."""
    if not isinstance(attr, DenseIntOrFPElementsAttr) or "0x" not in text.lower():
        return attr
    payload = dense_payload(text)
    if payload is None:
        return attr
    dt = dtype_of(attr.get_element_type())
    if dt is None or not dt.is_float:
        return attr
    shape = tuple(attr.get_shape())
    arr = storage_from_values(parse_dense_payload(payload, dt), dt, shape)
    return DenseIntOrFPElementsAttr(attr.type, BytesAttr(arr.tobytes()))


# ------------------------------------------------------------------ the ops --
def _op(short: str, operands: tuple[str, ...] | None, attrs: tuple[str, ...] = (), doc: str = "") -> type:
    ns = {"name": f"migraphx.{short}", "OPERANDS": operands, "__doc__": doc or f"migraphx.{short}",
          "__module__": __name__, "__annotations__": {"OPERANDS": ClassVar[tuple[str, ...] | None]}}
    for a in attrs:
        ns[a] = opt_attr_def(Attribute, attr_name=a)
    cls_name = "".join(p.capitalize() for p in short.split("_")) + "Op"
    return irdl_op_definition(type(cls_name, (MIGraphXOp,), ns))


_SPECS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {
    **{op: (("inA",), ()) for op in UNARY_OPS},
    **{op: (("inA", "inB"), ()) for op in BINARY_OPS + COMPARE_OPS},
    "where": (("cond", "inA", "inB"), ()),
    "convert": (("inA",), ("target_type",)),
    "clip": (("x", "minVals", "maxVals"), ()),
    # x, scale[, zero point ("bias" in rocMLIR)]: two or three operands; the result type is the output type
    "quantizelinear": (None, ()),
    "dequantizelinear": (None, ()),
    "multibroadcast": (("input",), ("out_lens", "out_dyn_dims")),
    "broadcast": (("input",), ("axis", "out_lens")),
    "transpose": (("input",), ("permutation",)),
    "reshape": (("input",), ("dims",)),
    "slice": (("input",), ("axes", "ends", "starts")),
    "squeeze": (("input",), ("axes",)),
    "unsqueeze": (("input",), ("axes", "steps")),
    "softmax": (("input",), ("axis",)),
    **{op: (("input",), ("axes",)) for op in REDUCE_OPS},
    "dot": (("in_a", "in_b"), ("perf_config",)),
    "quant_dot": (None, ("perf_config",)),
    "convolution": (("input", "filter"), ("padding", "stride", "dilation", "group", "padding_mode")),
    "quant_convolution": (("input", "filter"), ("padding", "stride", "dilation", "group", "padding_mode")),
    # known to rocMLIR, no shape rule in the IR layer: parsed, then reported as unsupported
    "backwards_data_convolution": (None, ()),
    "unpack": (("input",), ("axis", "isUnsigned")),
    "batch_norm_inference": (None, ()),
    "pad": (("input",), ()),
    "pooling": (("input",), ()),
    "flatten": (("input",), ("axis",)),
}

OPS: dict[str, type[MIGraphXOp]] = {"literal": irdl_op_definition(LiteralOp)}
for _name, (_operands, _attrs) in _SPECS.items():
    OPS[_name] = _op(_name, _operands, _attrs)

MIGraphX = Dialect("migraphx", list(OPS.values()), [ShapedType])


def _unknown_migraphx(name: str) -> type[MIGraphXOp]:
    return _op(name.split(".", 1)[1], None)


def _opaque(name: str) -> type[Operation]:
    base = UnregisteredOp.with_name(name)

    class OpaqueOp(base):  # type: ignore[misc, valid-type]
        @classmethod
        def parse(cls, parser: Parser):
            raise UnknownCustomOp(name, parser.pos)

    return OpaqueOp


_OLD_FUNC_NAMES = frozenset({"func", "builtin.func"})


class MIGraphXContext(Context):
    """builtin + func + migraphx; any other migraphx.* op is made on demand, other dialects stay opaque."""

    def get_optional_op(self, name: str, *, dialect_stack: Sequence[str] = ()):
        if (op := self._get_known_op(name)) is not None:
            return op
        if name in _OLD_FUNC_NAMES:         # ``func @f(..)`` / ``builtin.func``: MLIR before the func dialect (2022)
            return self._get_known_op("func.func")
        if name == "std.return":            # the standard dialect's return, before func.return (2022)
            return self._get_known_op("func.return")
        if name == "migraphx.constant":     # the literal's 2022 name (``"migraphx.constant"() {value = dense<..>}``)
            return self._get_known_op("migraphx.literal")
        for dialect in reversed(dialect_stack):
            if (op := self._get_known_op(f"{dialect}.{name}")) is not None:
                return op
        # made on demand and kept apart from the known ops: a bare name seen outside its dialect once
        # (``return`` at the top level) must still resolve through the dialect stack next time
        made = self.__dict__.setdefault("_made_ops", {})
        op = made.get(name)
        if op is None:
            op = made[name] = _unknown_migraphx(name) if name.startswith("migraphx.") else _opaque(name)
        return op


def make_context() -> MIGraphXContext:
    ctx = MIGraphXContext(allow_unregistered=True)
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(MIGraphX)
    return ctx


class TrackingParser(Parser):
    """xDSL's parser, remembering where each op starts (``op_positions[id(op)]``)."""

    def __init__(self, ctx: Context, text: str, name: str = "<mlir>"):
        super().__init__(ctx, text, name)
        self.op_positions: dict[int, int] = {}
        self._keep: list[Operation] = []

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except UnknownCustomOp as e:
            if e.pos > start and not getattr(e, "placed", False):
                e.pos, e.placed = start, True
            raise
        self.op_positions.setdefault(id(op), start)
        self._keep.append(op)
        return op


__all__ = ["ShapedType", "MIGraphXOp", "LiteralOp", "OPS", "MIGraphX", "MIGraphXContext", "make_context",
           "TrackingParser", "UnknownCustomOp", "ParseError", "parse_shaped_body"]
