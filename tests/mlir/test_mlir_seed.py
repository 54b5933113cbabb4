"""The seed issue's module: MIGraphX text -> MLIR exactly as MIGraphX printed it, and back.

"Equal" after the round trip (see pytest_mlirtrace._internal.mlir.equiv): the same program once
``contiguous`` is dropped and params are named by position -- ``module_difference`` is None
--, the parsed module re-emits identical MLIR, and the oracle gives bit-identical outputs
on the same random inputs.
"""
import re
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.ir import parse_module, print_module
from pytest_mlirtrace._internal.mlir import (
    emit_mlir,
    module_difference,
    normalise_mlir,
    param_names,
    parse_mlir,
    parse_mlir_module,
)

from .mlir_helpers import assert_same_outputs

DATA = Path(__file__).resolve().parents[1] / "data"
ARCH, NUM_CU = "gfx90a:sramecc+:xnack-", 110


def ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def seed_text():
    return (DATA / "seed_module.txt").read_text()


@pytest.fixture(scope="module")
def seed_mlir():
    return (DATA / "seed_module.mlir").read_text()


def variant(seed_text, seed_mlir, dtype):
    if dtype == "f16":
        return seed_text, seed_mlir
    return seed_text.replace("half_type", "float_type"), seed_mlir.replace("xf16>", "xf32>")


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_emit_equals_the_seed_mlir(seed_text, seed_mlir, dtype):
    text, mlir = variant(seed_text, seed_mlir, dtype)
    m = parse_module(text)
    assert print_module(m) == text
    emitted = emit_mlir(m, arch=ARCH, num_cu=NUM_CU)
    assert ws(emitted) == ws(mlir)
    assert emitted == mlir          # even the whitespace is MIGraphX's


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_seed_mlir_parses_back_to_the_same_module(seed_text, seed_mlir, dtype):
    text, mlir = variant(seed_text, seed_mlir, dtype)
    original = parse_module(text)
    funcs = parse_mlir(mlir, "seed_module.mlir")
    assert len(funcs) == 1
    f = funcs[0]
    assert f.ok, f.reason
    assert f.name == "mlir_transpose_reshape_dot_add"
    assert (f.attrs.arch, f.attrs.kernel, f.attrs.num_cu) == (ARCH, "mixr", NUM_CU)
    assert f.type_syntax == "tensor"
    assert f.param_names == ["x0", "x1", "x2"]
    parsed = f.module
    assert module_difference(original, parsed) is None
    assert "contiguous" not in parsed.ops()
    assert emit_mlir(parsed, arch=ARCH, num_cu=NUM_CU) == mlir
    assert_same_outputs(original, parsed, seed=5)


def test_param_names_can_be_given_back(seed_text, seed_mlir):
    original = parse_module(seed_text)
    names = param_names(original)
    assert names == ["x1", "y0", "y1.0"]
    parsed = parse_mlir_module(seed_mlir, param_names=names)
    assert [p.param for p in parsed.params()] == ["x1", "y0", "y1.0"]
    # with the names back, the module is the original without its contiguous ops
    # (instructions renumbered, params first)
    assert [i.op for i in parsed.instructions] == ["@param"] * 3 + ["multibroadcast", "transpose", "reshape", "dot",
                                                                    "add", "@return"]
    for p in original.params():
        assert parsed.get(p.param).shape == p.shape


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_shaped_syntax_round_trip_keeps_strides(seed_text, seed_mlir, dtype):
    text, _ = variant(seed_text, seed_mlir, dtype)
    original = parse_module(text)
    emitted = emit_mlir(original, arch=ARCH, num_cu=NUM_CU, type_syntax="shaped")
    t = "f16" if dtype == "f16" else "f32"
    assert (f"%1 = migraphx.transpose %arg1 {{permutation = [0, 2, 1, 3]}} : <1x12x384x64x{t}, 294912x24576x64x1> "
            f"-> <1x384x12x64x{t}, 294912x64x24576x1>") in emitted
    assert f"return %4 : !migraphx.shaped<1x384x768x{t}, 294912x768x1>" in emitted
    parsed = parse_mlir_module(emitted)
    assert module_difference(original, parsed, strides=True) is None
    assert emit_mlir(parsed, arch=ARCH, num_cu=NUM_CU, type_syntax="shaped") == emitted
    assert_same_outputs(original, parsed, seed=6)


def test_normalise_is_canonical(seed_mlir):
    messy = seed_mlir.replace("%4", "%result").replace("%3", "%mm").replace("    ", "\t  ").replace(
        "module {", "// a comment\nmodule {")
    assert normalise_mlir(messy) == normalise_mlir(seed_mlir) == seed_mlir
