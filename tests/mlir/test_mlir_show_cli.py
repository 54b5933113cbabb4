"""``mlirtrace show FILE``: both notations out, ``FILE:LINE:COL: message`` and exit 2 on errors."""
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.mlir import is_mlir
from tests.corpus import MISSING, ROCMLIR

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = ROCMLIR


def run(capsys, *argv):
    rc = main(["show", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_show_migraphx_text(capsys):
    rc, out, err = run(capsys, DATA / "seed_module.txt")
    assert rc == 0 and err == ""
    assert out.startswith("// ---- migraphx\n" + (DATA / "seed_module.txt").read_text())
    assert ("// ---- mlir (tensor)\nmodule {\n"
            "  func.func @mlir_transpose_reshape_dot_add(%arg0: tensor<1x384x768xf16>") in out
    assert 'attributes {arch = "pocl-cpu", kernel = "mixr", num_cu = 1 : i64}' in out


def test_show_migraphx_text_shaped_with_arch(capsys):
    rc, out, _ = run(capsys, DATA / "seed_module.txt", "--types", "shaped", "--arch", "gfx90a:sramecc+:xnack-",
                     "--num-cu", "110", "--only", "mlir")
    assert rc == 0
    assert "migraphx" not in out.split("\n", 1)[0] or out.startswith("// ---- mlir (shaped)")
    assert "!migraphx.shaped<1x384x768xf16, 294912x768x1>" in out and "num_cu = 110 : i64" in out
    assert "@param" not in out


def test_show_mlir(capsys):
    rc, out, err = run(capsys, DATA / "seed_module.mlir")
    assert rc == 0 and err == ""
    assert f"// ==== @mlir_transpose_reshape_dot_add ({DATA / 'seed_module.mlir'}:2:3)" in out
    assert "x0 = @param:x0 -> half_type, {1, 384, 768}, {294912, 768, 1}, target_id=0" in out
    # the func keeps its own name and attributes
    assert (DATA / "seed_module.mlir").read_text() in out


def test_show_mlir_shaped_conversion(capsys):
    rc, out, _ = run(capsys, DATA / "seed_module.mlir", "--types", "shaped", "--only", "mlir")
    assert rc == 0 and "migraphx.dot %2, %0 : <1x384x768xf16, 294912x768x1>" in out


@pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)
def test_show_mlir_with_unsupported_funcs(capsys):
    path = CORPUS / "fusion__pr-e2e__attention__mixr-attention.mlir"
    rc, out, err = run(capsys, path)
    assert rc == 3                      # the contract: some of it is not supported here
    assert out.count("// ==== @mlir_attention") == 2
    assert err == f"{path}:11:3: @mlir_attention_wrapper: unsupported: op mhal.launch at 12:5 not supported " \
                  "(written in the custom syntax of a dialect mlirtrace has no grammar for)\n"
    bwd = CORPUS / "Conversion__MIGraphXToTosa__migraphx-to-tosa-bwd-failure.mlir"
    rc, out, err = run(capsys, bwd)
    assert rc == 3 and out == "" and "op migraphx.backwards_data_convolution at 13:9 not supported" in err


def test_show_errors(capsys, tmp_path):
    bad_text = tmp_path / "bad.txt"
    bad_text.write_text("x = @param:x -> float_type, {2}, {1}\n@1 = relu(x -> float_type, {2}, {1}\n")
    rc, out, err = run(capsys, bad_text)
    assert rc == 2 and out == ""
    assert err.startswith(f"{bad_text}:2:36: expected ')' to close the inputs")
    bad_mlir = tmp_path / "bad.mlir"
    bad_mlir.write_text((DATA / "seed_module.mlir").read_text().replace("migraphx.dot(%2, %0)", "migraphx.dot(%2 %0)"))
    rc, out, err = run(capsys, bad_mlir)
    assert rc == 2 and out == ""
    assert err == f"{bad_mlir}:6:26: Expected ')' to close the operand list\n"
    rc, out, err = run(capsys, tmp_path / "missing.mlir")
    assert rc == 2 and err.startswith(f"{tmp_path / 'missing.mlir'}:1:1: cannot read")


def test_detection():
    assert is_mlir((DATA / "seed_module.mlir").read_text())
    assert not is_mlir((DATA / "seed_module.txt").read_text())
    assert not is_mlir('module: "main"\n@0 = check_context::migraphx::gpu::context -> float_type, {}, {}\n')
    assert is_mlir("func.func @f() {\n  return\n}\n")
    assert is_mlir("module @m attributes {x} {\n}\n")


def test_show_prints_what_was_taken_though_odd(capsys, tmp_path):
    """A multibroadcast whose out_lens contradicts its result type is taken as rocMLIR takes it (the type), and
    show says so on stderr, with the op's place; the func is still shown (exit 0)."""
    path = tmp_path / "mo.mlir"
    path.write_text("""func.func @mo(%arg0: tensor<2x3xf32>, %arg1: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "migraphx.multibroadcast"(%arg1) {out_lens = [3, 3]} : (tensor<2x1xf32>) -> tensor<2x3xf32>
  %1 = "migraphx.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
""")
    rc, out, err = run(capsys, path, "--only", "migraphx")
    assert rc == 0 and "multibroadcast" in out
    assert err.startswith(f"{path}: @mo: note: migraphx.multibroadcast at 2:3: out_lens = [3, 3] disagrees with "
                          "the result type's lens [2, 3]")
