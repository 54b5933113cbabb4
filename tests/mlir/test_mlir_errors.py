"""Malformed MLIR: MLIRParseError with file:line:column and what was expected; broken rules: MLIRVerifyError."""
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.mlir import (
    MLIRParseError,
    MLIRUnsupportedError,
    MLIRVerifyError,
    parse_mlir,
    parse_mlir_module,
)

SEED = (Path(__file__).resolve().parents[1] / "data" / "seed_module.mlir").read_text()
# other funcs before the faulty one: each func is parsed on its own, its positions shifted back (the small
# prefix), and a big file's lines are indexed once (the 200-func prefix, over 64 KiB)
_DOT = (Path(__file__).resolve().parents[2] / "examples" / "small_dot_add.mlir").read_text().split("\n", 1)[1]
ONE_BEFORE = _DOT + "\n"
MANY_BEFORE = "".join(_DOT.replace("@mlir_dot_add", f"@mlir_dot_add_{i}") + "\n" for i in range(200))


def where(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    i = text.index(needle) + offset
    line = text.count("\n", 0, i) + 1
    return line, i - (text.rfind("\n", 0, i) + 1) + 1


CASES = [
    ("missing ')'", SEED.replace("migraphx.dot(%2, %0)", "migraphx.dot(%2, %0"),
     "%0 : (tensor", 3, "Expected ')' to close the operand list"),
    ("unknown element type", SEED.replace("-> tensor<1x768x768xf16>\n", "-> tensor<1x768x768xq16>\n", 1),
     "xq16>", 1, "Expected shape type"),
    ("undefined value", SEED.replace("migraphx.add(%3, %arg0)", "migraphx.add(%9, %arg0)"),
     "%9, %arg0", 0, "value %9 is used but never defined"),
    ("operand type differs from its definition",
     SEED.replace("migraphx.add(%3, %arg0) : (tensor<1x384x768xf16>",
                  "migraphx.add(%3, %arg0) : (tensor<1x384x768xf32>"),
     "%3, %arg0) : (tensor<1x384x768xf32>", 0, "operand is used with type tensor<1x384x768xf32>"),
    ("shaped type without strides",
     "func.func @f(%a: !migraphx.shaped<2x3xf32>) -> !migraphx.shaped<2x3xf32, 3x1> {\n"
     "  return %a : !migraphx.shaped<2x3xf32, 3x1>\n}\n",
     ">) ->", 0, "',' and strides expected after the lens in !migraphx.shaped"),
    ("shaped type with too few strides",
     "func.func @f(%a: !migraphx.shaped<2x3xf32, 3>) -> !migraphx.shaped<2x3xf32, 3x1> {\n"
     "  return %a : !migraphx.shaped<2x3xf32, 3x1>\n}\n",
     "2x3xf32, 3>", 0, "!migraphx.shaped has 2 lens but 1 strides"),
    ("new syntax without '->'",
     "func.func @f(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
     "  %0 = migraphx.relu %a : <2xf32, 1> <2xf32, 1>\n  return %0 : !migraphx.shaped<2xf32, 1>\n}\n",
     "<2xf32, 1>\n", 0, "Expected '->' before the result type"),
    ("operand / type count",
     "func.func @f(%a: !migraphx.shaped<2xf32, 1>) -> !migraphx.shaped<2xf32, 1> {\n"
     "  %0 = migraphx.add %a, %a : <2xf32, 1> -> <2xf32, 1>\n  return %0 : !migraphx.shaped<2xf32, 1>\n}\n",
     "<2xf32, 1> -> <2xf32, 1>\n", 0, "2 operands but 1 operand types"),
    ("unclosed module", SEED.rstrip().rstrip("}"), None, 0, "unexpected end of input: a '{' is never closed"),
    ("cut off mid-line", SEED[:SEED.index("%2 = ") + 5], None, 0, "unexpected end of input"),
    ("garbage at top level", SEED + "\nhello world\n", "hello", 0, "op 'hello' is written in the custom syntax"),
    ("unterminated string", SEED.replace('arch = "gfx90a', 'arch = "gfx90a\n'), 'gfx90a', -1,
     "unterminated string literal"),
    ("undefined value in a later func", ONE_BEFORE + SEED.replace("migraphx.add(%3, %arg0)", "migraphx.add(%9, %arg0)"),
     "%9, %arg0", 0, "value %9 is used but never defined"),
    ("missing ')' after 200 funcs", MANY_BEFORE + SEED.replace("migraphx.dot(%2, %0)", "migraphx.dot(%2, %0"),
     "%0 : (tensor", 3, "Expected ')' to close the operand list"),
    ("operand type after 200 funcs", MANY_BEFORE + SEED.replace(
        "migraphx.add(%3, %arg0) : (tensor<1x384x768xf16>", "migraphx.add(%3, %arg0) : (tensor<1x384x768xf32>"),
     "%3, %arg0) : (tensor<1x384x768xf32>", 0, "operand is used with type tensor<1x384x768xf32>"),
]


@pytest.mark.parametrize("name,text,needle,offset,msg", CASES, ids=[c[0] for c in CASES])
def test_malformed_mlir_has_line_and_column(name, text, needle, offset, msg):  # noqa: ARG001 (name: the parametrize id)
    with pytest.raises(MLIRParseError) as e:
        parse_mlir(text, "bad.mlir")
    err = e.value
    assert type(err) is MLIRParseError
    if needle is None:
        stripped = text.rstrip()
        want = (stripped.count("\n") + 1, len(stripped) - stripped.rfind("\n"))
    else:
        want = where(text, needle, offset)
    assert (err.line, err.column) == want, str(err)
    assert msg in err.msg
    assert str(err).startswith(f"bad.mlir:{err.line}:{err.column}: ")
    if err.source_line:
        assert "^" in str(err)          # the line is shown with a caret


def test_verify_error_names_op_and_place():
    bad = SEED.replace("{dims = [0, 0, 768]} : (tensor<1x384x12x64xf16>) -> tensor<1x384x768xf16>",
                       "{dims = [0, 0, 768]} : (tensor<1x384x12x64xf16>) -> tensor<1x768x384xf16>")
    bad = bad.replace("migraphx.dot(%2, %0) : (tensor<1x384x768xf16>", "migraphx.dot(%2, %0) : (tensor<1x768x384xf16>")
    f = parse_mlir(bad, "bad.mlir")[0]
    assert f.status == "invalid"
    assert f.invalid == ("migraphx.reshape at 5:5: result lens [1, 768, 384] but the shape rule gives "
                         "[1, 384, 768]")
    with pytest.raises(MLIRVerifyError) as e:
        parse_mlir_module(bad, "bad.mlir")
    assert (e.value.line, e.value.column) == (5, 5)
    assert str(e.value).startswith("bad.mlir:5:5: @mlir_transpose_reshape_dot_add: migraphx.reshape at 5:5")


@pytest.mark.parametrize("change,msg", [
    (("migraphx.transpose(%arg1) {permutation = [0, 2, 1, 3]}", "migraphx.transpose(%arg1) {permutation = [0, 2, 1]}"),
     "migraphx.transpose at 4:5: @4 = transpose: permutation [0, 2, 1] is not a permutation of 4 dims"),
    (("migraphx.add(%3, %arg0)", "migraphx.sub(%3, %arg0)"), None),
    (("%4 = migraphx.add(%3, %arg0) : (tensor<1x384x768xf16>, tensor<1x384x768xf16>) -> tensor<1x384x768xf16>",
      "%4 = migraphx.add(%3) : (tensor<1x384x768xf16>) -> tensor<1x384x768xf16>"),
     "migraphx.add at 7:5: migraphx.add takes 2 operand(s) (inA, inB), got 1"),
    (("-> tensor<1x384x768xf16>\n    return %4 : tensor<1x384x768xf16>",
      "-> tensor<1x384x768xf32>\n    return %4 : tensor<1x384x768xf32>"),
     "migraphx.add at 7:5: result type f32 but the shape rule gives f16"),
    (("return %4 : tensor<1x384x768xf16>", "return %3 : tensor<1x384x768xf16>\n    %9 = migraphx.relu(%4) : "
                                            "(tensor<1x384x768xf16>) -> tensor<1x384x768xf16>"),
     "migraphx.relu at 9:5 comes after the return"),
])
def test_shape_rule_violations(change, msg):
    text = SEED.replace(*change)
    if "xf32>\n    return" in text:
        text = text.replace(") -> tensor<1x384x768xf16> attributes", ") -> tensor<1x384x768xf32> attributes")
    assert text != SEED
    f = parse_mlir(text, "x.mlir")[0]
    if msg is None:
        assert f.ok
    else:
        assert f.invalid == msg


def test_result_type_differs_from_signature():
    text = SEED.replace("-> tensor<1x384x768xf16> attributes", "-> tensor<1x384x768xf32> attributes")
    f = parse_mlir(text)[0]
    assert f.invalid == ("return at 8:5 returns (tensor<1x384x768xf16>) but the func's result types are "
                         "(tensor<1x384x768xf32>)")


def test_shaped_strides_are_checked_for_views():
    """rocMLIR's rules (tests/mlir/test_mlir_stride_rules.py has one test per rule): any layout it can lay out
    in memory is taken, whatever the shape rule would give; a layout no memory has is refused."""
    text = ("func.func @f(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<3x2xf32, 1x7> {\n"
            "  %0 = migraphx.transpose %a {permutation = [1, 0]} : <2x3xf32, 3x1> -> <3x2xf32, 1x7>\n"
            "  return %0 : !migraphx.shaped<3x2xf32, 1x7>\n}\n")
    assert parse_mlir(text)[0].ok                                  # padded rows: a layout rocMLIR writes
    bad = text.replace("1x7", "2x4")
    assert parse_mlir(bad)[0].invalid == ("migraphx.transpose at 2:3: result strides [2, 4]: the smallest stride is "
                                          "2, not 1 (no in-memory layout has it)")
    std = text.replace("1x7", "2x1")                               # rocMLIR's own tests give views a standard
    assert parse_mlir(std)[0].ok                                   # layout: accepted
    relu = ("func.func @g(%a: !migraphx.shaped<2x3xf32, 3x1>) -> !migraphx.shaped<2x3xf32, 0x1> {\n"
            "  %0 = migraphx.relu %a : <2x3xf32, 3x1> -> <2x3xf32, 0x1>\n"
            "  return %0 : !migraphx.shaped<2x3xf32, 0x1>\n}\n")
    assert parse_mlir(relu)[0].invalid == ("migraphx.relu at 2:3: result strides [0, 1] make a broadcast (a 0 stride "
                                           "on a dim longer than 1), which a computed value cannot be")


def test_parse_mlir_module_needs_a_convertible_func():
    text = ("func.func @c(%a: tensor<1x1x3x3xf32>, %b: tensor<1x1x1x1xf32>) -> tensor<1x1x3x3xf32> {\n"
            "  %0 = migraphx.pooling(%a) {padding = [0, 0, 0, 0], stride = [1, 1]} : "
            "(tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>\n"
            "  return %0 : tensor<1x1x3x3xf32>\n}\n"
            "func.func private @decl(%a: tensor<2xf32>) -> tensor<2xf32>\n")
    fs = parse_mlir(text, "c.mlir")
    assert [f.status for f in fs] == ["unsupported", "unsupported"]
    assert fs[0].unsupported == "op migraphx.pooling at 2:3 not supported"
    assert fs[1].declaration and fs[1].private and fs[1].unsupported.startswith("declaration only")
    with pytest.raises(MLIRUnsupportedError, match=r"^c.mlir:1:1: no func can be converted to a module: "
                                                   r"@c: op migraphx.pooling at 2:3 not supported; @decl"):
        parse_mlir_module(text, "c.mlir")
    with pytest.raises(MLIRParseError, match="no func.func found"):
        parse_mlir_module("module {\n}\n")
    assert parse_mlir("module {\n}\n") == []


def test_a_later_func_reports_its_own_places():
    """Positions of ops found while converting a func, and of an op in a dialect we have no grammar for,
    are those of the whole file when the func is not the first."""
    bad = SEED.replace("{dims = [0, 0, 768]} : (tensor<1x384x12x64xf16>) -> tensor<1x384x768xf16>",
                       "{dims = [0, 0, 768]} : (tensor<1x384x12x64xf16>) -> tensor<1x768x384xf16>")
    bad = bad.replace("migraphx.dot(%2, %0) : (tensor<1x384x768xf16>", "migraphx.dot(%2, %0) : (tensor<1x768x384xf16>")
    shift = ONE_BEFORE.count("\n")
    f = parse_mlir(ONE_BEFORE + bad, "bad.mlir")[1]
    assert f.invalid.startswith(f"migraphx.reshape at {5 + shift}:5: result lens [1, 768, 384]")
    odd = ONE_BEFORE + SEED.replace("migraphx.add(%3, %arg0)", "foo.bar(%3, %arg0)")
    g = parse_mlir(odd, "odd.mlir")[1]
    line, col = where(odd, "%4 = foo.bar", 0)        # an op is placed where its statement starts
    assert g.unsupported.startswith(f"op foo.bar at {line}:{col} not supported"), g.unsupported


def test_elementwise_operands_broadcast_implicitly_as_older_rocmlir_programs_write_them():
    """rocMLIR's resnet50 int8 fusion test adds a 1x128x1x1 bias to a 1x128x28x28 result without a
    multibroadcast (its TOSA lowering broadcasts): the converter writes the multibroadcast MIGraphX would."""
    from pytest_mlirtrace._internal.mlir import parse_mlir_module

    text = """func.func @test(%arg0: tensor<1x4x1x1xi32>, %arg1: tensor<1x4x3x3xi32>) -> tensor<1x4x3x3xi32> {
  %0 = migraphx.add(%arg1, %arg0) : (tensor<1x4x3x3xi32>, tensor<1x4x1x1xi32>) -> tensor<1x4x3x3xi32>
  return %0 : tensor<1x4x3x3xi32>
}
"""
    m = parse_mlir_module(text)
    ops = [i.op for i in m.instructions if not i.op.startswith("@")]
    assert ops == ["multibroadcast", "add"]
    bc = next(i for i in m.instructions if i.op == "multibroadcast")
    assert list(bc.shape.lens) == [1, 4, 3, 3] and list(bc.shape.strides)[1:] == [1, 0, 0]
    # lens that cannot broadcast are still refused by the op's rule
    bad = text.replace("1x4x1x1xi32", "1x3x1x1xi32")
    with pytest.raises(Exception, match="differ in lens|broadcast"):
        parse_mlir_module(bad)
