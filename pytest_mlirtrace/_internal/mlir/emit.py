"""Module -> MLIR text in the migraphx dialect, exactly as MIGraphX prints it.

::

    module {
      func.func @mlir_transpose_reshape_dot_add(%arg0: tensor<1x384x768xf16>, ...) -> tensor<1x384x768xf16> attributes {arch = "gfx90a:sramecc+:xnack-", kernel = "mixr", num_cu = 110 : i64} {
        %0 = migraphx.multibroadcast(%arg2) {out_dyn_dims = [], out_lens = [1, 768, 768]} : (tensor<1x768x768xf16>) -> tensor<1x768x768xf16>
        ...
        return %4 : tensor<1x384x768xf16>
      }
    }

* arguments are the params in :meth:`Module.params` order (sorted by name): ``%arg0``...;
* ``contiguous`` is not printed (MLIR values are tensors; its user takes its input);
* results are numbered ``%0``, ``%1``... in instruction order;
* op attributes are printed sorted by name; list elements plain, a lone integer as
  ``1 : i64``, a bool as ``true``; ops without attributes print none;
* a func name or attribute name that is not an identifier is quoted (``@"a\\"b"``), strings are
  written with MLIR's escapes (:mod:`.strings`), so what is printed always parses back;
* ``type_syntax="tensor"``: ``migraphx.add(%a, %b) : (tensor<..>, tensor<..>) -> tensor<..>``;
  ``type_syntax="shaped"``: ``migraphx.add %a, %b : <..>, <..> -> <..>`` with strides,
  ``migraphx.convert %a : <..> to <..>``;
* ``convert`` prints no ``target_type``: the result type says it -- except a convert to
  bool, whose result is printed ``i8`` like every bool, so it keeps ``target_type = 0 : i64``;
  nor does ``quantizelinear`` print its ``out_type`` (rocMLIR's op has no attributes);
* literals: ``migraphx.literal(dense<..> : tensor<..>) : <..>`` (shaped) and
  ``migraphx.literal() {value = dense<..> : tensor<..>} : () -> tensor<..>`` (tensor);
* a scaled ``quant_dot`` (inputs a, b, scale_a, scale_b) is printed ``%a scaled by %sa, %b scaled by %sb :
  <..> scaled by <..>, <..> scaled by <..> -> <..>`` (shaped) and with its four operands in order (tensor);
* ``reshape_lazy``, ``squeeze``, ``unsqueeze`` and ``flatten`` are printed as
  ``migraphx.reshape {dims = <result lens>}`` as MIGraphX does (rocMLIR has no such ops);
  ``reshape`` keeps its own ``dims`` (``[0, 0, 768]`` in the seed's 2023 trace).
"""  # noqa: E501 (the example lines are verbatim printouts)
from __future__ import annotations

from pytest_mlirtrace._internal.ir.module import Instruction, IRError, Module
from pytest_mlirtrace._internal.ir.shape import Shape

from .funcattrs import FuncAttrs
from .literals import RawAttr, format_dense, literal_storage
from .strings import attr_name, quote_string, symbol_ref
from .types import mlir_elt, tensor_text, type_text

RESHAPE_LIKE = frozenset({"reshape_lazy", "squeeze", "unsqueeze", "flatten"})
TYPE_SYNTAXES = ("tensor", "shaped")


def _fmt_scalar_in_list(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.6e}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_scalar_in_list(x) for x in v) + "]"
    return _fmt_str(v)


def _fmt_str(v) -> str:
    if isinstance(v, RawAttr):
        return str(v)
    return quote_string(str(v))


def fmt_attr_value(v) -> str:
    """One op attribute value as MLIR prints it in an attr-dict."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v} : i64"
    if isinstance(v, float):
        return f"{v:.6e} : f32"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_scalar_in_list(x) for x in v) + "]"
    return _fmt_str(v)


def attr_dict(ins: Instruction) -> str:
    attrs = dict(ins.attrs)
    if ins.op == "convert":
        target = attrs.pop("target_type", None)
        if ins.shape is not None and ins.shape.dtype.name == "bool":
            attrs["target_type"] = 0 if target is None else target
    if ins.op == "quantizelinear":
        attrs.pop("out_type", None)        # the result type says it
    if not attrs:
        return ""
    return "{" + ", ".join(f"{attr_name(k)} = {fmt_attr_value(attrs[k])}" for k in sorted(attrs)) + "}"


def emit_func(module: Module, *, attrs: FuncAttrs | None = None, type_syntax: str = "tensor",
              name: str | None = None, indent: str = "  ") -> str:
    """The ``func.func`` (no ``module {}`` around it), every line starting with ``indent``."""
    if type_syntax not in TYPE_SYNTAXES:
        raise ValueError(f"type_syntax must be one of {TYPE_SYNTAXES}, got {type_syntax!r}")
    attrs = attrs if attrs is not None else FuncAttrs.default()
    values: dict[str, str] = {}
    shapes: dict[str, Shape] = {}
    args = []
    for i, p in enumerate(module.params()):
        values[p.name] = f"%arg{i}"
        shapes[p.name] = p.shape
        args.append(f"%arg{i}: {type_text(p.shape, type_syntax)}")
    body = _body(module, values, shapes, type_syntax)
    rets = module.returns()
    missing = [r for r in rets if r not in values]
    if missing:
        raise IRError(f"@return: {missing[0]} is not a value")
    ret_types = [type_text(shapes[r], type_syntax) for r in rets]
    if rets:
        body.append(f"return {', '.join(values[r] for r in rets)} : {', '.join(ret_types)}")
    else:
        body.append("return")
    sig = f"func.func {symbol_ref(name or module.symbol_name())}({', '.join(args)})"
    if len(ret_types) == 1:
        sig += f" -> {ret_types[0]}"
    elif ret_types:
        sig += f" -> ({', '.join(ret_types)})"
    at = attrs.text()
    if at:
        sig += f" attributes {at}"
    inner = indent + "  "
    return f"{indent}{sig} {{\n" + "".join(f"{inner}{b}\n" for b in body) + f"{indent}}}\n"


def _body(module: Module, values: dict[str, str], shapes: dict[str, Shape], type_syntax: str) -> list[str]:
    """The lines of the func's body before its ``return``. ``values`` / ``shapes``: each value's MLIR name and
    shape (the parameters' given; the instructions' are added, a ``contiguous`` taking its input's)."""
    body: list[str] = []
    counter = 0
    for ins in module.instructions:
        if ins.op == "@param":
            continue
        missing = [i for i in ins.inputs if i not in values]
        if missing:
            raise IRError(f"{ins.name} = {ins.op}: input {missing[0]} is not defined before it")
        if ins.op == "@return":
            continue
        if ins.op == "contiguous":
            values[ins.name] = values[ins.inputs[0]]
            shapes[ins.name] = shapes[ins.inputs[0]]
            continue
        if ins.shape is None:
            raise IRError(f"{ins.name} = {ins.op}: no shape to print")
        res = f"%{counter}"
        counter += 1
        values[ins.name] = res
        shapes[ins.name] = ins.shape
        if ins.op == "@literal":
            body.append(_literal_line(ins, res, type_syntax))
            continue
        if ins.op.startswith("@"):
            raise IRError(f"{ins.name} = {ins.op}: cannot be written as MLIR")
        body.append(_op_line(ins, res, values, shapes, type_syntax))
    return body


def _literal_line(ins: Instruction, res: str, type_syntax: str) -> str:
    """The line of the literal ``ins``, whose result is ``res``."""
    storage = literal_storage(ins.literal, ins.shape.dtype, ins.shape.lens)
    dense = f"{format_dense(storage, ins.shape.dtype)} : {tensor_text(ins.shape, type_syntax)}"
    if type_syntax == "shaped":
        return f"{res} = migraphx.literal({dense}) : {type_text(ins.shape, type_syntax, short=True)}"
    return f"{res} = migraphx.literal() {{value = {dense}}} : () -> {tensor_text(ins.shape)}"


def _op_line(ins: Instruction, res: str, values: dict[str, str], shapes: dict[str, Shape], type_syntax: str) -> str:
    """The line of the op ``ins``, whose result is ``res`` (``values`` / ``shapes``: its inputs')."""
    def ty(s: Shape) -> str:
        return type_text(s, type_syntax, short=True)

    shaped = type_syntax == "shaped"
    if ins.op in RESHAPE_LIKE:
        op, ad = "migraphx.reshape", "{dims = [" + ", ".join(map(str, ins.shape.lens)) + "]}"
    else:
        op, ad = "migraphx." + ins.op, attr_dict(ins)
    operands = ", ".join(values[i] for i in ins.inputs)
    in_types = ", ".join(ty(shapes[i]) for i in ins.inputs)
    if shaped and ins.op == "quant_dot" and len(ins.inputs) == 4:
        # rocMLIR's scaled form: a scaled by sa, b scaled by sb (the IR's inputs: a, b, sa, sb)
        a, b, sa, sb = ins.inputs
        operands = f"{values[a]} scaled by {values[sa]}, {values[b]} scaled by {values[sb]}"
        in_types = (f"{ty(shapes[a])} scaled by {ty(shapes[sa])}, "
                    f"{ty(shapes[b])} scaled by {ty(shapes[sb])}")
    if shaped:
        line = f"{res} = {op}" + (f" {operands}" if operands else "") + (f" {ad}" if ad else "")
        arrow = "to" if ins.op == "convert" else "->"
        line += f" : {in_types} {arrow} {ty(ins.shape)}" if in_types else f" : {arrow} {ty(ins.shape)}"
    else:
        line = f"{res} = {op}({operands})" + (f" {ad}" if ad else "") + f" : ({in_types}) -> {ty(ins.shape)}"
    return line


def emit_mlir(module: Module, *, arch: str = "pocl-cpu", num_cu: int = 1, type_syntax: str = "tensor",
              kernel: str | bool = "mixr", attrs: FuncAttrs | None = None, name: str | None = None) -> str:
    """``module { func.func @<symbol_name>(...) ... }`` for ``module`` (see the module doc).

    ``attrs`` replaces the arch / kernel / num_cu attributes (e.g. ``FuncAttrs(.., prefix="rock.")``
    for the 2026 spelling); ``name`` replaces :meth:`Module.symbol_name`.
    """
    if attrs is None:
        attrs = FuncAttrs.default(arch, num_cu, kernel)
    return "module {\n" + emit_func(module, attrs=attrs, type_syntax=type_syntax, name=name) + "}\n"


def param_names(module: Module) -> list[str]:
    """The param names in argument order (``%arg0``...): pass them to ``parse_mlir(.., param_names=)``
    to get a module with the original names back."""
    return [p.param for p in module.params()]


__all__ = ["emit_mlir", "emit_func", "fmt_attr_value", "mlir_elt", "param_names"]
