"""MIGraphX text as MIGraphX printed it, 2022 to now: real printouts (tests/data/migraphx, sources in
tests/data/SOURCES.tsv) parse, verify and print back byte for byte; each printer form is checked for what it
means (header, prefixes, older attribute names, elided literals, shapes as values, debug symbols, compiled ops)."""
import csv
from pathlib import Path

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import (
    IRError,
    Shape,
    TextParseError,
    evaluate,
    parse_module,
    print_module,
    random_inputs,
)
from pytest_mlirtrace._internal.ir.printer import style_of
from pytest_mlirtrace._internal.ir.text import not_runnable
from pytest_mlirtrace._internal.ir.text_values import RawValue

DATA = Path(__file__).resolve().parents[1] / "data"
PROGRAMS = sorted(p.name for p in (DATA / "migraphx").glob("*.txt"))

# What each gathered printout is, read off the text by hand: (compiled program, elided literals, runs here).
EXPECTED = {
    "debug_symbols_compiled_gpu.txt": (True, 0, False),
    "debug_symbols_parsed.txt": (False, 4, False),
    "driver_compile_fp16_gpu.txt": (True, 0, False),
    "driver_read_elided_literals.txt": (False, 3, False),
    "driver_run_gpu.txt": (True, 0, False),
    "driver_verify_gpu.txt": (True, 0, False),
    "driver_verify_ref_ops.txt": (True, 3, False),
    "issue2365_numeric_params_target_id.txt": (False, 0, True),
    "issue4117_broadcast_dot_add.txt": (False, 0, True),
    "issue4117_slice_transpose_dot.txt": (False, 0, True),
    "issue903_old_prefix_add.txt": (False, 0, True),
    "issue903_old_prefix_ref_ops.txt": (True, 0, False),
    "pr3076_target_id_on_every_line.txt": (False, 0, True),
    "pr4158_resnet50_compiled_head.txt": (True, 0, False),
    "tf2_resnet50_frozen_graph_read.txt": (False, 320, False),
    "rocm_sdk_builder12_resnet50_compiled_target_id.txt": (True, 0, False),
}


def test_every_gathered_printout_has_an_expectation_and_a_source():
    assert sorted(EXPECTED) == PROGRAMS
    with open(DATA / "SOURCES.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert list(rows[0]) == ["file", "kind", "source", "note"]
    sourced = {r["file"] for r in rows if r["source"].strip()}
    missing = [f"migraphx/{p}" for p in PROGRAMS if f"migraphx/{p}" not in sourced]
    own = {"bench3_crash.log", "seed.log", "traceback_no_valid_tuned.log"}     # written for the tests, not gathered
    missing += [f"logs/{p.name}" for p in (DATA / "logs").glob("*.log")
                if p.name not in own and f"logs/{p.name}" not in sourced]
    assert not missing


@pytest.mark.parametrize("name", PROGRAMS)
def test_real_printout_parses_verifies_and_prints_back_byte_for_byte(name):
    text = (DATA / "migraphx" / name).read_text()
    m = parse_module(text, source=name)
    compiled, elided, runs = EXPECTED[name]
    if elided and not compiled:     # literal values left out: no program to verify or run
        with pytest.raises(IRError, match=r"@literal\{ \.\.\. \}: its values were left out of the printout"):
            m.verify()
    else:
        m.verify()
    assert print_module(m) == text
    assert sum(i.op == "@literal" and i.literal is None for i in m.instructions) == elided
    why = not_runnable(m)
    assert (not why) == runs, why
    assert any("a compiled program" in w for w in why) == compiled
    # no numpy type name leaks into what is said about it
    assert not any("np." in w or "str_" in w for w in why)


def test_header_and_blank_line_after_the_module_are_kept():
    m = parse_module((DATA / "migraphx" / "issue2365_numeric_params_target_id.txt").read_text())
    st = style_of(m)
    assert st.header == "main" and st.blank_after == 1 and m.name is None and m.target_id
    # numeric parameter names are names, and sort as MIGraphX orders the fused function's arguments
    assert [p.param for p in m.params()] == ["1", "2"]
    assert m.get("@3").inputs == ["@2", "2"] and m.get("@3").shape.lens == (2, 3, 2, 4)


def test_old_printer_prefixes_every_instruction_but_not_the_parameters():
    text = (DATA / "migraphx" / "issue903_old_prefix_add.txt").read_text()
    m = parse_module(text)
    assert m.name == "main" and not style_of(m).param_prefix
    assert [i.name for i in m.instructions] == ["1", "0", "@0"]
    assert m.get("@0").inputs == ["0", "1"]
    # renaming the module renames what the printer prefixes, parameters stay bare
    m.name = "m2"
    assert "m2:@0 = add(0,1)" in print_module(m) and "\n0 = @param:0" in print_module(m)


def test_older_attribute_names_are_read_as_todays_and_printed_as_they_were():
    m = parse_module((DATA / "migraphx" / "driver_read_elided_literals.txt").read_text())
    b = m.get("@9")
    assert b.op == "broadcast" and b.attrs == {"axis": 1, "out_lens": [1, 128]}
    assert b.shape.strides == (0, 1)
    assert "@9 = broadcast[axis=1,dims={1, 128}](@8)" in print_module(m)
    g = parse_module((DATA / "migraphx" / "driver_run_gpu.txt").read_text())
    assert g.get("@9").attrs == {"out_lens": [1, 128]}
    assert "multibroadcast[output_lens={1, 128}](@6)" in print_module(g)


def test_transpose_with_its_older_dims_attribute():
    m = parse_module((DATA / "migraphx" / "tf2_resnet50_frozen_graph_read.txt").read_text())
    t = m.get("@323")
    assert t.attrs == {"permutation": [0, 2, 3, 1]} and t.shape.strides == (150528, 224, 1, 50176)
    assert "@323 = transpose[dims={0, 2, 3, 1}](x)" in print_module(m)
    assert style_of(m).blank_after == 2
    assert any("unknown:AddV2" in w for w in not_runnable(m))


def test_elided_literal_has_no_values_and_says_so():
    m = parse_module((DATA / "migraphx" / "driver_read_elided_literals.txt").read_text())
    assert m.get("@1").literal is None and m.get("@1").shape.lens == (128, 10)
    assert m.get("@4").literal.tolist() == [-1, 784]
    assert m.get("@0").literal.shape == (10,) and m.get("@0").literal[1] == pytest.approx(-0.0839988)
    why = not_runnable(m)
    assert "@1 = @literal{ ... }: its values were left out of the printout" in why


def test_shapes_as_attribute_values_trailing_comma_and_debug_symbols():
    m = parse_module((DATA / "migraphx" / "debug_symbols_compiled_gpu.txt").read_text())
    alloc = m.get("@1")
    assert alloc.attrs == {"shape": Shape.of("i8", [31360], [1]), "id": "main:scratch"}
    co = m.get("@15")
    assert co.attrs == {"code_object": 6184, "symbol_name": "mlir_convolution_add_relu", "global": 1792,
                        "local": 256, "output_arg": 3}
    st = style_of(m)
    assert st.ins["@15"].attrs_comma and st.ins["@15"].symbols == "Convolution110, Plus112, ReLU114"
    assert m.get("@19").inputs == ["@17", "@3", "@2", "main:#output_0"]
    assert m.get("main:#output_0").param == "main:#output_0"
    assert st.ins["@20"].symbols == "@output_0:Plus214_Output_0" and m.returns() == ["@19"]


def test_reference_evaluates_a_real_module_with_numeric_parameters():
    m = parse_module((DATA / "migraphx" / "issue2365_numeric_params_target_id.txt").read_text())
    ins = random_inputs(m, seed=3)
    out = evaluate(m, ins)[0]
    a = np.broadcast_to(ins["1"], (2, 3, 2, 3))
    np.testing.assert_allclose(out, np.matmul(a, ins["2"]), rtol=1e-5)


# ---- printer forms no gathered file shows alone, written as the printer (src/module.cpp) writes them --
PROGRAM = (
    'module: "main"\n'
    "x = @param:x -> float_type, {4}, {1}\n"
    "@1 = pointwise(x), [main:pointwise0] -> float_type, {4}, {1}\n"
    "@2 = @return(@1)\n"
    "\n"
    'module: "main:pointwise0"\n'
    "main:pointwise0:x0 = @param:x0 -> float_type, {4}, {1}\n"
    "main:pointwise0:@1 = relu(main:pointwise0:x0) -> float_type, {4}, {1}\n"
    "main:pointwise0:@2 = @return(main:pointwise0:@1)\n"
    "\n"
)


def test_a_program_of_several_modules_keeps_them_all():
    m = parse_module(PROGRAM)
    assert print_module(m) == PROGRAM
    st = style_of(m)
    assert st.ins["@1"].modules == ["main:pointwise0"] and len(st.others) == 1
    sub = st.others[0]
    assert sub.name == "main:pointwise0" and sub.ops() == ["relu"] and not not_runnable(sub)
    assert any("takes module(s) main:pointwise0" in w for w in not_runnable(m))


@pytest.mark.parametrize("line,kept", [
    ("@1 = get_tuple_elem[index=0](x) -> [float_type, {4}, {1}, int64_type, {4}, {1}]", "[float_type"),
    ("@1 = relu(x) -> fp8e4m3fnuz_type, {4}, {1}", "fp8e4m3fnuz_type"),
    ("@1 = relu(x) -> dynamic, float_type, {[1..4]}", "dynamic, float_type"),
])
def test_shapes_that_are_no_tensor_here_are_kept_as_text(line, kept):
    text = "x = @param:x -> float_type, {4}, {1}\n" + line + "\n"
    m = parse_module(text)
    assert print_module(m) == text and m.get("@1").shape is None
    assert any(kept in w for w in not_runnable(m))


def test_target_ids_other_than_zero_and_floats_as_cpp_prints_them():
    text = ("x = @param:x -> float_type, {2}, {1}\n"
            "@1 = clip[min=1e-06,max=1e+06](x) -> float_type, {2}, {1}, target_id=1\n"
            "@2 = @literal{0.707107, 1e+06} -> float_type, {2}, {1}\n")
    m = parse_module(text, verify=False)
    assert print_module(m) == text
    assert m.get("@1").attrs == {"min": 1e-06, "max": 1e6} and style_of(m).ins["@1"].target_id == 1
    assert m.get("@2").literal.tolist() == [0.707107, 1e6]


@pytest.mark.parametrize("text,line,msg", [
    ("x = @param:x -> float_type, {2}, {1}\n@1 = @literal{a, b} -> float_type, {2}, {1}\n", 2,
     "literal values must be numbers, found 'a'"),
    ("x = @param:x -> float_type, {2}, {1}\n@1 = pointwise(x), [m0 -> float_type, {2}, {1}\n", 2,
     "expected ']' to close the module inputs"),
    ('module: "main"\n\n', 1, "module 'main' has no instructions"),
])
def test_bad_printer_forms_name_their_line(text, line, msg):
    with pytest.raises(TextParseError) as e:
        parse_module(text, source="bad.txt")
    assert e.value.line == line and msg in str(e.value)


def test_a_string_that_reads_as_a_shape_or_has_a_comma_is_quoted():
    from pytest_mlirtrace._internal.ir import Module

    m = Module()
    x = m.add_param("x", "f32", [2])
    m.instructions.append(type(m.get(x))("@1", "relu", [x], {"tag": "float_type, {2}, {1}", "op": "dot[a=1]"},
                                         m.get(x).shape))
    text = print_module(m)
    assert '[tag="float_type, {2}, {1}",op=dot[a=1]]' in text
    back = parse_module(text)
    assert back.get("@1").attrs == {"tag": "float_type, {2}, {1}", "op": "dot[a=1]"}
    assert not isinstance(back.get("@1").attrs["tag"], RawValue)
