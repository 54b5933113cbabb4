"""MIGraphX module text: parse and print back byte for byte; bad text names its line; real dumps parse."""
from pathlib import Path

import numpy as np
import pytest

from pytest_mlirtrace._internal.ir import Module, TextParseError, evaluate, parse_module, print_module, random_inputs
from tests.corpus import MISSING, TRACES

DATA = Path(__file__).resolve().parents[1] / "data"


def test_seed_module_round_trips_byte_for_byte():
    text = (DATA / "seed_module.txt").read_text()
    m = parse_module(text)
    assert print_module(m) == text
    assert m.name == "mlir_main:pointwise4"
    assert [p.param for p in m.params()] == ["x1", "y0", "y1.0"]
    assert m.ops() == ["multibroadcast", "transpose", "contiguous", "reshape", "contiguous", "dot", "add"]
    assert m.get("@4").attrs == {"permutation": [0, 2, 1, 3]}
    assert m.get("@2").attrs == {"out_lens": [1, 768, 768], "out_dyn_dims": []}
    assert m.returns() == ["@9"]
    m.verify()


def test_seed_module_f32_variant_round_trips_and_evaluates():
    text = (DATA / "seed_module.txt").read_text().replace("half_type", "float_type")
    m = parse_module(text)
    assert print_module(m) == text
    out = evaluate(m, random_inputs(m, seed=1))[0]
    assert out.dtype == np.float32 and out.shape == (1, 384, 768)


def _trace_lines(name: str) -> list[str]:
    lines = (TRACES / name).read_text().splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return lines[i:]


needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=MISSING)


@needs_traces
def test_splitkv_dump_without_target_id_parses_and_prints_back():
    lines = [x for x in _trace_lines("017_rocmlir2376_migraphx-submodule-splitkv-attention-f16-f32.txt") if x]
    text = "\n".join(lines) + "\n"
    m = parse_module(text, source="017")
    assert m.target_id is False and m.name is None
    assert print_module(m) == text
    assert m.get("@3").attrs == {"axes": [3], "steps": []}
    assert m.get("@9").shape.dtype.name == "f32"
    # no @return in the excerpt: the last instruction is the result
    assert m.returns() == ["@13"]
    outs = evaluate(m, random_inputs(m, seed=2))
    assert outs[0].shape == (2, 4, 2, 1, 512)


@needs_traces
def test_broadcast_dot_add_dump_parses():
    lines = _trace_lines("022_migraphx4117_trace-mlir-submodule-then-mlir-module-dot-add.txt")
    start = lines.index("x2 = @param:x2 -> float_type, {12}, {1}")
    end = lines.index("@7 = @return(@6)", start)
    text = "\n".join(lines[start:end + 1]) + "\n"
    m = parse_module(text)
    assert print_module(m) == text
    assert m.get("@3").attrs == {"axis": 1, "out_lens": [2, 4, 12]}
    assert m.get("@3").shape.strides == (0, 12, 1)


@needs_traces
def test_a_partial_dump_names_the_undefined_input_and_its_line():
    lines = _trace_lines("022_migraphx4117_trace-mlir-submodule-then-mlir-module-dot-add.txt")
    first = "\n".join(lines[:3]) + "\n"      # starts mid-module: x2 and @4 are not there
    with pytest.raises(TextParseError, match=r"^022:1: input x2 is used before it is defined") as e:
        parse_module(first, source="022")
    assert e.value.line == 1


@needs_traces
def test_compiled_program_dump_with_check_context_parses():
    lines = _trace_lines("011_migraphx2804_resnet50-exhaustive-skipped-configs.txt")
    start = lines.index('module: "main"')
    m = parse_module("\n".join(lines[start:start + 2]) + "\n")
    assert m.instructions[0].op == "check_context::migraphx::gpu::context"
    assert m.unsupported_ops() == ["check_context::migraphx::gpu::context"]


@pytest.mark.parametrize("text,line,msg", [
    ("x = @param:x -> float_type, {2}, {1}\n@1 = relu(x) -> float_type, {2}, {1}\n@2 = add(@1,y) -> float_type, "
     "{2}, {1}\n", 3, "input y is used before it is defined"),
    ("x = @param:x -> floot_type, {2}, {1}\n", 1, "unknown type 'floot_type'"),
    ("x = @param:x -> float_type, {2}, {1}\n\n@1 = relu[a=1(x) -> float_type, {2}, {1}\n", 3,
     "expected ']' to close the attributes"),
    ("x = @param:x -> float_type, {2}, {1}\n@1 = relu(x) -> float_type, {3}, {1}\n", 2,
     "@1 = relu: printed shape float_type, {3}, {1} does not match the op's rule"),
    ("x = @param:x -> float_type, {2}, {1}\nthis is not an instruction\n", 2, "expected '<name> = <op>...'"),
    ("x = @param:x -> float_type, {2}, {1}\nx = @param:x -> float_type, {2}, {1}\n", 2, "defined twice"),
    ("x = @param:x -> float_type, {2}\n", 1, "expected '<type>, {lens}, {strides}'"),
    ("x = @param:x -> float_type, {2}, {1}\n@1 = add(x,x) -> float_type, {2}, {1} junk\n", 2,
     "lens and strides must be"),
    ("\n\n", 1, "no instructions found"),
])
def test_bad_text_gives_line_number(text, line, msg):
    with pytest.raises(TextParseError) as e:
        parse_module(text, source="bad.txt")
    assert e.value.line == line
    assert str(e.value).startswith(f"bad.txt:{line}: ")
    assert msg in str(e.value)


def test_builder_module_prints_and_parses_back():
    m = Module(name="mlir_main:pointwise7")
    x = m.add_param("x0", "f32", [2, 3])
    lit = m.add_literal(np.array([0.5, -1.25, 3.0]), "f32", [3])
    b = m.add("multibroadcast", lit, out_lens=[2, 3], out_dyn_dims=[])
    c = m.add("convert", m.add("mul", x, b), target_type=1)
    m.add_return(c)
    text = print_module(m)
    assert "mlir_main:pointwise7:@1 = @literal{0.5, -1.25, 3} -> float_type, {3}, {1}, target_id=0" in text
    assert "convert[target_type=1](mlir_main:pointwise7:@3) -> half_type" in text
    back = parse_module(text)
    assert back == m or print_module(back) == text
    assert print_module(back) == text
