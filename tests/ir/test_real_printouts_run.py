"""Real MIGraphX printouts through the CLI: the runnable ones run on the embedded device and match the numpy
oracle; compiled programs are shown as printed and refused to run with the reason (exit 3), never a traceback."""
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "migraphx"


@pytest.mark.parametrize("name", ["issue2365_numeric_params_target_id.txt", "issue4117_broadcast_dot_add.txt",
                                  "issue4117_slice_transpose_dot.txt",
                                  "pr3076_target_id_on_every_line.txt"])   # two reductions, one kernel
def test_runnable_printout_runs_and_matches_the_oracle(name, capsys, monkeypatch):
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    rc = main(["run", str(DATA / name), "--no-database"])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    assert "ok: matches the numpy oracle" in cap.out


def test_a_printout_too_large_for_the_host_limit_is_refused_before_running(capsys):
    # issue 903's add of two 1x64x568x1328 tensors: its checked run needs more than the default 2G
    rc = main(["run", str(DATA / "issue903_old_prefix_add.txt"), "--no-database"])
    cap = capsys.readouterr()
    assert rc == 2 and "allowed (raise it with --max-bytes" in cap.err and "Traceback" not in cap.err


@pytest.mark.parametrize("name,op", [("driver_run_gpu.txt", "check_context::migraphx::gpu::context"),
                                     ("driver_verify_ref_ops.txt", "ref::reshape"),
                                     ("issue903_old_prefix_ref_ops.txt", "ref::contiguous")])
def test_compiled_program_is_refused_to_run_with_the_op_named(name, op, capsys):
    rc = main(["run", str(DATA / name), "--no-database"])
    cap = capsys.readouterr()
    assert rc == 3, cap.out + cap.err
    assert cap.err.startswith("mlirtrace: not supported: ") and op in cap.err and "Traceback" not in cap.err


@pytest.mark.parametrize("name", ["driver_run_gpu.txt", "debug_symbols_compiled_gpu.txt",
                                  "driver_read_elided_literals.txt"])
def test_show_prints_a_program_without_mlir_form_as_printed_and_says_why(name, capsys):
    text = (DATA / name).read_text()
    rc = main(["show", str(DATA / name)])
    cap = capsys.readouterr()
    assert rc == 3
    assert cap.out == "// ---- migraphx\n" + text
    assert f"{DATA / name}: not supported as MLIR: " in cap.err
    assert main(["show", str(DATA / name), "--only", "migraphx"]) == 0
    assert capsys.readouterr().out == "// ---- migraphx\n" + text


def test_a_program_with_elided_literals_is_refused_with_the_reason(tmp_path, capsys):
    # a dot whose weights MIGraphX printed as {{ ... }}: running it would compute on values nobody has
    f = tmp_path / "elided.txt"
    f.write_text("x = @param:x -> float_type, {4, 16}, {16, 1}\n"
                 "@1 = @literal{ ... } -> float_type, {16, 4}, {4, 1}\n"
                 "@2 = dot(x,@1) -> float_type, {4, 4}, {4, 1}\n")
    rc = main(["run", str(f), "--no-database"])
    cap = capsys.readouterr()
    assert rc == 2 and "ok:" not in cap.out
    assert "@1 = @literal{ ... }: its values were left out of the printout" in cap.err


def test_a_program_with_a_symbolic_shape_is_refused_with_the_shape(tmp_path, capsys):
    f = tmp_path / "sym.txt"
    f.write_text("x = @param:x -> float_type, {n, 4}, {4, 1}\n@1 = relu(x) -> float_type, {n, 4}, {4, 1}\n")
    rc = main(["run", str(f), "--no-database"])
    cap = capsys.readouterr()
    assert rc == 2 and "x = @param: shape 'float_type, {n, 4}, {4, 1}' is not a tensor shape here" in cap.err
    assert main(["show", str(f), "--only", "migraphx"]) == 0
    assert capsys.readouterr().out == "// ---- migraphx\n" + f.read_text()
