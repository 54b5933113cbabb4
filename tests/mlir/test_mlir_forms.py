"""Every MLIR form rocMLIR and MIGraphX have printed since 2022 parses to the same module.

* 2022: ``func @main(..)`` (before the func dialect), ``migraphx.op(%a, %b) {attrs} : (T, T) -> T``;
* 2023: the attribute dict right after the operands with unparenthesised types
  (``migraphx.softmax(%0){axis = 2 : i64} : T -> T``, ``migraphx.dot(%a, %b) : T, T -> T``);
* 2024-: ``migraphx.dot %a, %b : <..>, <..> -> <..>`` with ``!migraphx.shaped`` types;
* MLIR's generic form (``"func.func"() ({...}) {sym_name = ..}``, newer ``<{..}>`` properties, xDSL's quoted
  attribute names), which MLIR prints in error messages and which MIGraphX exceptions carry.
The real files are in tests/data/mlir (test_mlir_gathered.py); the texts here are the same program written in
each form, so one module must come out of all of them.
"""
from __future__ import annotations

import pytest

from pytest_mlirtrace._internal.ir import evaluate, random_inputs
from pytest_mlirtrace._internal.logs.mlir_scan import scan_mlir
from pytest_mlirtrace._internal.mlir import MLIRParseError, is_mlir, module_difference, parse_mlir

T_A, T_B, T_C = "tensor<1x5x4xf32>", "tensor<1x4x3xf32>", "tensor<1x5x3xf32>"

FORMS = {
    "2022-func": f"""module {{
  func @main(%arg0: {T_A}, %arg1: {T_B}) -> {T_C} attributes {{kernel = "mixr"}} {{
    %0 = migraphx.dot(%arg0, %arg1) : ({T_A}, {T_B}) -> {T_C}
    %1 = migraphx.softmax(%0) {{axis = 2 : i64}} : ({T_C}) -> {T_C}
    return %1 : {T_C}
  }}
}}
""",
    "2022-builtin-func-generic-ops": f"""module {{
  builtin.func @main(%arg0: {T_A}, %arg1: {T_B}) -> {T_C} attributes {{kernel = "mixr"}} {{
    %0 = "migraphx.dot"(%arg0, %arg1) : ({T_A}, {T_B}) -> {T_C}
    %1 = "migraphx.softmax"(%0) {{axis = 2 : i64}} : ({T_C}) -> {T_C}
    std.return %1 : {T_C}
  }}
}}
""",
    "2023-attrs-after-operands": f"""module {{
  func.func @main(%arg0: {T_A}, %arg1: {T_B}) -> {T_C} attributes {{kernel = "mixr"}} {{
    %0 = migraphx.dot(%arg0, %arg1) : {T_A}, {T_B} -> {T_C}
    %1 = migraphx.softmax(%0){{axis = 2 : i64}} : {T_C} -> {T_C}
    return %1 : {T_C}
  }}
}}
""",
    "2024-shaped": """module {
  func.func @main(%arg0: !migraphx.shaped<1x5x4xf32, 20x4x1>, %arg1: !migraphx.shaped<1x4x3xf32, 12x3x1>) -> !migraphx.shaped<1x5x3xf32, 15x3x1> attributes {kernel = "mixr"} {
    %0 = migraphx.dot %arg0, %arg1 : <1x5x4xf32, 20x4x1>, <1x4x3xf32, 12x3x1> -> <1x5x3xf32, 15x3x1>
    %1 = migraphx.softmax %0 {axis = 2 : i64} : <1x5x3xf32, 15x3x1> -> <1x5x3xf32, 15x3x1>
    return %1 : !migraphx.shaped<1x5x3xf32, 15x3x1>
  }
}
""",  # noqa: E501 (verbatim MIGraphX / MLIR text)
    "generic": f""""builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%arg0: {T_A}, %arg1: {T_B}):
    %0 = "migraphx.dot"(%arg0, %arg1) : ({T_A}, {T_B}) -> {T_C}
    %1 = "migraphx.softmax"(%0) {{axis = 2 : i64}} : ({T_C}) -> {T_C}
    "func.return"(%1) : ({T_C}) -> ()
  }}) {{function_type = ({T_A}, {T_B}) -> {T_C}, kernel = "mixr", sym_name = "main"}} : () -> ()
}}) : () -> ()
""",
    "generic-properties": f""""builtin.module"() ({{
  "func.func"() <{{function_type = ({T_A}, {T_B}) -> {T_C}, sym_name = "main"}}> ({{
  ^bb0(%arg0: {T_A}, %arg1: {T_B}):
    %0 = "migraphx.dot"(%arg0, %arg1) : ({T_A}, {T_B}) -> {T_C}
    %1 = "migraphx.softmax"(%0) <{{axis = 2 : i64}}> : ({T_C}) -> {T_C}
    "func.return"(%1) : ({T_C}) -> ()
  }}) {{kernel = "mixr"}} : () -> ()
}}) : () -> ()
""",
    "generic-xdsl-quoted-names": f""""builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%arg0 : {T_A}, %arg1 : {T_B}):
    %0 = "migraphx.dot"(%arg0, %arg1) : ({T_A}, {T_B}) -> {T_C}
    %1 = "migraphx.softmax"(%0) {{"axis" = 2 : i64}} : ({T_C}) -> {T_C}
    "func.return"(%1) : ({T_C}) -> ()
  }}) {{"sym_name" = "main", "function_type" = ({T_A}, {T_B}) -> {T_C}, "kernel" = "mixr"}} : () -> ()
}}) : () -> ()
""",
}


def _one(name: str):
    funcs = parse_mlir(FORMS[name], f"{name}.mlir")
    assert len(funcs) == 1, [f.name for f in funcs]
    return funcs[0]


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_form_gives_the_same_module(name):
    f = _one(name)
    assert f.ok, f.reason
    assert f.name == "main"
    assert f.attrs.kernel == "mixr"
    ref = _one("2024-shaped").module
    assert module_difference(ref, f.module) is None
    assert f.module.ops() == ["dot", "softmax"]
    outs = evaluate(f.module, random_inputs(f.module, seed=1))
    assert outs[0].shape == (1, 5, 3)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_form_is_recognised_as_mlir_and_scanned(name):
    text = FORMS[name]
    assert is_mlir(text)
    sc = scan_mlir(text)
    assert [f.name for f in sc.funcs] == ["main"]
    f = sc.funcs[0]
    assert [a.lens for a in f.args] == [(1, 5, 4), (1, 4, 3)] \
        or [list(a.lens) for a in f.args] == [[1, 5, 4], [1, 4, 3]]
    assert f.migraphx_ops() == ["dot", "softmax"]


def test_generic_private_func_and_declaration():
    text = ('"builtin.module"() ({\n'
            '  "func.func"() ({\n  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "decl", '
            'sym_visibility = "private"} : () -> ()\n'
            '}) : () -> ()\n')
    [f] = parse_mlir(text, "d.mlir")
    assert f.name == "decl" and f.private and f.declaration
    assert f.unsupported == "declaration only (func.func without a body)"


def test_generic_func_without_a_name_is_a_parse_error_with_position():
    text = '"builtin.module"() ({\n  "func.func"() ({\n  }) {function_type = () -> ()} : () -> ()\n}) : () -> ()\n'
    with pytest.raises(MLIRParseError) as e:
        parse_mlir(text, "n.mlir")
    assert (e.value.line, e.value.column) == (2, 3)
    assert "without a sym_name" in e.value.msg


def test_2022_func_keeps_positions_and_reports_unknown_ops():
    text = FORMS["2022-func"].replace("migraphx.softmax", "migraphx.logsoftmax")
    [f] = parse_mlir(text, "old.mlir")
    assert f.unsupported == "op migraphx.logsoftmax at 4:5 not supported"
    assert (f.line, f.column) == (2, 3)


def test_a_malformed_2023_op_names_where_and_what():
    text = FORMS["2023-attrs-after-operands"].replace(f"{{axis = 2 : i64}} : {T_C} -> {T_C}",
                                                      f"{{axis = 2 : i64}} : {T_C} {T_C}")
    with pytest.raises(MLIRParseError) as e:
        parse_mlir(text, "bad.mlir")
    assert e.value.line == 4 and "->" in e.value.msg


def test_generic_and_2022_mlir_in_a_log_are_found_named_and_runnable():
    """MLIR printed inside a MIGraphX exception in the generic form, and a 2022 ``func @main`` module, are
    MLIR modules of the log (logs.parse_log), scanned (logs.mlir_scan) and parsed (mlir layer)."""
    from pytest_mlirtrace._internal.logs import parse_log

    generic = ("terminate called after throwing an instance of 'migraphx::version_1::exception'\n"
               "  what():  /src/AMDMIGraphX/src/targets/gpu/mlir.cpp:700: run_high_level_pipeline: "
               "Invalid MLIR created:\n" + FORMS["generic"] + "Aborted (core dumped)\n")
    for text in (generic, FORMS["2022-func"]):
        p = parse_log(text)
        assert [(m.name, m.complete, m.runnable) for m in p.mlir_modules] == [("main", True, True)], \
            [(m.name, m.why_not) for m in p.mlir_modules]


SHAPED = {T_A: "!migraphx.shaped<1x5x4xf32, 20x4x1>", T_B: "!migraphx.shaped<1x4x3xf32, 12x3x1>",
          T_C: "!migraphx.shaped<1x5x3xf32, 15x3x1>"}


@pytest.mark.parametrize("name", sorted(n for n in FORMS if n != "2024-shaped"))
def test_every_form_takes_both_type_syntaxes(name):
    """The same forms with ``!migraphx.shaped`` types (as printed in the switch-over, and in MLIR's generic
    form of today's modules) give the same module, strides included."""
    text = FORMS[name]
    for t, s in SHAPED.items():
        text = text.replace(t, s)
    [f] = parse_mlir(text, f"{name}-shaped.mlir")
    assert f.ok, f.reason
    assert f.type_syntax == "shaped"
    assert module_difference(_one("2024-shaped").module, f.module, strides=True) is None
