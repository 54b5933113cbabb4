"""The CLI's side of issue 12 ("Trustworthy"): the exit-code contract on bad input, not-supported modules,
sizes checked before anything is allocated, ``--func``, ``tune`` failures with reproducers,
``--no-database`` reading and writing nothing, internal errors without a raw traceback."""
from __future__ import annotations

import json
import re
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.vocab.exit_codes import ExitCode

from ..settings import DEVICE

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "examples" / "small_dot_add.mlir"     # dot 5x4 @ 4x3 + add
SEED_LOG = ROOT / "tests" / "data" / "logs" / "seed.log"


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_TUNING_DB", str(tmp_path / "tuning.json"))
    monkeypatch.setenv("MLIRTRACE_REPRO_DIR", str(tmp_path / "reproducers"))
    for var in ("MLIRTRACE_INJECT", "MLIRTRACE_MAX_BYTES", "MLIRTRACE_DEBUG"):
        monkeypatch.delenv(var, raising=False)


def mlir(tmp_path, name: str, body: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body).lstrip())
    return str(p)


def func(name: str, t: str = "2x3xf32") -> str:
    return (f"func.func @{name}(%arg0: tensor<{t}>, %arg1: tensor<{t}>) -> tensor<{t}> {{\n"
            f"  %0 = migraphx.add(%arg0, %arg1) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>\n"
            f"  return %0 : tensor<{t}>\n}}\n")


def no_traceback(cap) -> None:
    assert "Traceback" not in cap.out + cap.err and "internal error" not in cap.err, cap.out + cap.err


# ---- bad input: not UTF-8 -------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["show", "run", "compile", "tune"])
def test_a_file_that_is_not_utf8_is_reported_at_its_first_bad_byte(tmp_path, capsys, command):
    p = tmp_path / "latin1.mlir"
    p.write_bytes(b"// ok line\nfunc.func @f(%a: tensor<4x\xff\xfe>) {}\n")
    assert main([command, str(p)]) == ExitCode.USAGE
    cap = capsys.readouterr()
    no_traceback(cap)
    assert f"{p}:2:27: not UTF-8 text: byte 0xff at offset 37" in cap.err


# ---- not supported: which op, why (exit 3) ---------------------------------------------------------------
NOT_SUPPORTED = {
    "empty": (func("empty", "0x4xf32"), r"@2 = add: empty tensor \[0, 4\]"),
    "huge": (func("huge", "50000x50000xf32"), r"x0 = @param: 2500000000 storage elements do not fit"),
    "max_between_gemms": ("""
        func.func @attn(%arg0: tensor<1x4x8xf32>, %arg1: tensor<1x8x4xf32>, %arg2: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
          %0 = migraphx.dot(%arg0, %arg1) : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
          %1 = migraphx.reduce_max(%0) {axes = [2]} : (tensor<1x4x4xf32>) -> tensor<1x4x1xf32>
          %2 = migraphx.multibroadcast(%1) {out_lens = [1, 4, 4]} : (tensor<1x4x1xf32>) -> tensor<1x4x4xf32>
          %3 = migraphx.sub(%0, %2) : (tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
          %4 = migraphx.dot(%3, %arg2) : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
          return %4 : tensor<1x4x8xf32>
        }
        """, r"@4 = reduce_max between the gemms @3 and @7: only a softmax"),  # noqa: E501 - MLIR text as written
    "three_dots": ("""
        func.func @three_dots(%arg0: tensor<4x8xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<4x8xf32>) -> tensor<4x4xf32> {
          %0 = migraphx.dot(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
          %1 = migraphx.dot(%0, %arg2) : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
          %2 = migraphx.dot(%1, %arg1) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
          return %2 : tensor<4x4xf32>
        }
        """, r"3 gemms in one module \(@3 = dot, @4 = dot, @5 = dot\)"),  # noqa: E501 - MLIR text as written
    "two_outputs_of_a_reduction": ("""
        func.func @two_outs(%arg0: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x8xf32>) {
          %0 = migraphx.reduce_sum(%arg0) {axes = [1]} : (tensor<4x8xf32>) -> tensor<4x1xf32>
          %1 = migraphx.neg(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
          return %0, %1 : tensor<4x1xf32>, tensor<4x8xf32>
        }
        """, r"module returns 2 values \(@1, @2\); a reduce kernel has one output"),
    "unknown_op": ("""
        func.func @nms(%arg0: tensor<1x6x4xf32>, %arg1: tensor<1x1x6xf32>) -> tensor<3x3xi64> {
          %0 = migraphx.nonmaxsuppression(%arg0, %arg1) : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> tensor<3x3xi64>
          return %0 : tensor<3x3xi64>
        }
        """, r"op migraphx.nonmaxsuppression at 2:3 not supported"),
}


@pytest.mark.parametrize("case", sorted(NOT_SUPPORTED))
@pytest.mark.parametrize("command", ["compile", "run", "tune"])
def test_what_the_code_generator_refuses_is_not_supported_naming_the_op(tmp_path, capsys, command, case):
    body, why = NOT_SUPPORTED[case]
    path = mlir(tmp_path, f"{case}.mlir", body)
    assert main([command, path]) == ExitCode.NOT_SUPPORTED
    cap = capsys.readouterr()
    no_traceback(cap)
    assert cap.err.startswith(f"mlirtrace: not supported: {path}"), cap.err
    assert re.search(why, cap.err), cap.err


def _log_with(tmp_path, *modules: str, bad_byte: bool = False) -> Path:
    text = "# a log with MLIR modules as MIGRAPHX_TRACE_MLIR prints them\n\n"
    text += "\n".join("module {\n" + textwrap.indent(textwrap.dedent(m).strip(), "  ") + "\n}\n" for m in modules)
    data = text.encode()
    if bad_byte:
        data = data.replace(b"# a log", b"# a \xe9 log", 1)
    p = tmp_path / "trace.log"
    p.write_bytes(data)
    return p


def test_import_trace_lists_a_module_that_is_not_supported_and_imports_the_rest(tmp_path, capsys):
    log = _log_with(tmp_path, NOT_SUPPORTED["max_between_gemms"][0], SMALL.read_text(), bad_byte=True)
    out = tmp_path / "r"
    rc = main(["import-trace", str(log), "--out", str(out), "--no-tune"])
    cap = capsys.readouterr()
    no_traceback(cap)
    assert rc == ExitCode.OK, cap.out + cap.err
    assert f"{log}:1:5: not UTF-8 text: byte 0xe9 at offset 4" in cap.err       # reported, then replaced
    report = json.loads((out / "import-report.json").read_text())
    assert [r["runnable"] for r in report] == [False, True]
    assert "reduce_max between the gemms" in report[0]["why_not"]
    assert f"not runnable: {report[0]['why_not']}" in cap.out
    assert report[1]["status"] == "ok" and Path(report[1]["reproducer"]).is_file()


def test_import_trace_lists_a_module_over_max_bytes_and_imports_the_rest(tmp_path, capsys):
    log = _log_with(tmp_path, func("wide", "1024x1024xf32"), SMALL.read_text())
    out = tmp_path / "r"
    rc = main(["import-trace", str(log), "--out", str(out), "--no-tune", "--max-bytes", "16M"])
    cap = capsys.readouterr()
    no_traceback(cap)
    assert rc == ExitCode.OK, cap.out + cap.err
    report = json.loads((out / "import-report.json").read_text())
    assert [r["runnable"] for r in report] == [False, True]
    assert report[0]["func"] == "wide" and report[0]["why_not"].startswith("too large: mlir_add: a checked run needs")
    assert f"@wide: not runnable: {report[0]['why_not']}" in cap.out
    assert report[1]["status"] == "ok" and Path(report[1]["reproducer"]).is_file()


def test_import_trace_gives_each_func_of_a_module_its_own_text(tmp_path, capsys):
    log = _log_with(tmp_path, func("a") + func("b", "4x4xf32"))
    out = tmp_path / "r"
    assert main(["import-trace", str(log), "--out", str(out), "--no-tune"]) == ExitCode.OK
    capsys.readouterr()
    report = json.loads((out / "import-report.json").read_text())
    assert [r["func"] for r in report] == ["a", "b"] and report[0]["reproducer"] != report[1]["reproducer"]
    ticket_b = Path(report[1]["reproducer"]).with_suffix(".md").read_text()
    assert "func.func @b(" in ticket_b and "func.func @a(" not in ticket_b


# ---- sizes: checked before anything is allocated ---------------------------------------------------------
BIG = """
    func.func @big(%arg0: tensor<40000x40000xf32>, %arg1: tensor<40000x40000xf32>, %arg2: tensor<40000x40000xf32>) -> tensor<40000x40000xf32> {
      %0 = migraphx.dot(%arg0, %arg1) : (tensor<40000x40000xf32>, tensor<40000x40000xf32>) -> tensor<40000x40000xf32>
      %1 = migraphx.add(%0, %arg2) : (tensor<40000x40000xf32>, tensor<40000x40000xf32>) -> tensor<40000x40000xf32>
      return %1 : tensor<40000x40000xf32>
    }
    """  # noqa: E501 - MLIR text as written


def test_compile_of_a_40000x40000_module_allocates_no_inputs(tmp_path, capsys):
    path = mlir(tmp_path, "big.mlir", BIG)
    tracemalloc.start()
    try:
        rc = main(["compile", path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = capsys.readouterr().out
    assert rc == ExitCode.OK, out
    assert "-m 40000 -n 40000 -k 40000" in out and "status:   ok" in out
    assert peak < 256 << 20, f"compile allocated {peak / (1 << 20):.0f} MiB"


def test_run_refuses_a_module_over_max_bytes_before_allocating(tmp_path, capsys, monkeypatch):
    from pytest_mlirtrace._internal import ir

    def no_inputs(*_a, **_k):
        raise AssertionError("random_inputs called for a module over the limit")

    monkeypatch.setattr(ir, "random_inputs", no_inputs)
    path = mlir(tmp_path, "big.mlir", BIG)
    assert main(["run", path]) == ExitCode.USAGE
    err = capsys.readouterr().err
    need = 3 * 40000 * 40000 * (8 + 2 * 4) + 2 * 40000 * 40000 * 8 + 2 * 40000 * 40000 * 4
    assert (f"mlirtrace: {path}: mlir_dot_add: a checked run needs about {need} bytes (107.3 GiB) of host memory "
            f"for inputs, outputs and the numpy oracle; {2 << 30} bytes (2.0 GiB) allowed") in err
    assert "--max-bytes" in err
    # the option and the environment variable set the limit; a small module passes a small limit
    assert main(["tune", path, "--max-bytes", "1G"]) == ExitCode.USAGE
    assert f"{1 << 30} bytes (1.0 GiB) allowed" in capsys.readouterr().err
    monkeypatch.setenv("MLIRTRACE_MAX_BYTES", "lots")
    assert main(["run", str(SMALL)]) == ExitCode.USAGE
    assert "MLIRTRACE_MAX_BYTES=lots: expected a size in bytes" in capsys.readouterr().err
    monkeypatch.setenv("MLIRTRACE_MAX_BYTES", "100")
    assert main(["run", str(SMALL)]) == ExitCode.USAGE
    assert "100 bytes (0.0 MiB) allowed" in capsys.readouterr().err


# ---- --func ----------------------------------------------------------------------------------------------
def test_a_file_of_several_funcs_lists_them_and_func_picks_one(tmp_path, capsys):
    path = mlir(tmp_path, "three.mlir", "module {\n" + func("a") + func("b", "4x4xf32") + func("c") + "}\n")
    for command in ("run", "compile", "tune"):
        assert main([command, path]) == ExitCode.USAGE
        assert f"mlirtrace: {path}: 3 funcs: @a, @b, @c; pick one with --func NAME" in capsys.readouterr().err
    assert main(["compile", path, "--func", "nope"]) == ExitCode.USAGE
    assert f"{path}: no func @nope; its funcs: @a, @b, @c" in capsys.readouterr().err
    assert main(["compile", path, "--func", "b"]) == ExitCode.OK
    assert "-elements 16 " in capsys.readouterr().out.replace("\t", " ")
    assert main(["run", path, "--func", "c", "--no-database"]) == ExitCode.OK
    assert "ok: matches the numpy oracle" in capsys.readouterr().out


def test_load_module_picks_the_func_and_keeps_only_its_text():
    from pytest_mlirtrace._internal.engine.session import FuncChoiceError, load_module

    text = "module {\n" + func("a") + func("b", "4x4xf32") + "}\n"
    with pytest.raises(FuncChoiceError) as e:
        load_module(text, "two.mlir")
    assert isinstance(e.value, ValueError) and e.value.names == ["a", "b"]
    module, mlir_text = load_module(text, "two.mlir", func="b")
    assert module.output_shapes()[0].lens == (4, 4)
    assert "@b(" in mlir_text and "@a(" not in mlir_text
    module, mlir_text = load_module(func("only"), "one.mlir")        # one func: no choice to make
    assert mlir_text == func("only")


# ---- tune: failures are a finding, with reproducers -------------------------------------------------------
def test_tune_with_failing_solutions_exits_1_and_writes_a_reproducer(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")      # fires for KPerBlock > k = 4
    repro = tmp_path / "repros"
    assert main(["tune", str(SMALL), "--repeats", "1", "--repro-dir", str(repro)]) == ExitCode.FAILURE
    out = capsys.readouterr().out
    rows = re.findall(r"^(\d+(?:,\d+)+)\s+(\w+)\s", out, re.M)
    failed = [s for s, status in rows if status != "ok"]
    assert failed and len(failed) < len(rows)
    assert f"{len(failed)} of {len(rows)} solutions failed" in out
    scripts = re.findall(r"^reproducer: (\S+\.py) \(new\)$", out, re.M)
    assert scripts and all(Path(s).is_file() and Path(s).parent == repro for s in scripts)
    index = json.loads((repro / "INDEX.json").read_text())["reproducers"]
    assert {e["script"] for e in index.values()} == {Path(s).name for s in scripts}
    assert all(e["first_origin"] == f"mlirtrace tune {SMALL}" for e in index.values())


def test_no_database_reads_and_writes_nothing(tmp_path, capsys):
    from pytest_mlirtrace._internal.engine import MemoryDatabase, load_module
    from pytest_mlirtrace._internal.trace import TraceSession

    db = tmp_path / "tuning.json"
    assert main(["tune", str(SMALL), "--repeats", "1", "--no-database"]) == ExitCode.OK
    capsys.readouterr()
    assert not db.exists(), "tune --no-database wrote the tuning database"
    # a stored entry that run would use ... unless --no-database
    pipe = TraceSession(DEVICE, database=MemoryDatabase()).pipeline
    low = pipe.lower_module(*load_module(SMALL.read_text(), str(SMALL)))
    pinned = "4,2,4,4,2,2,0,4"
    db.write_text(json.dumps({f"{pipe.device.spec}|{low.key}": {"solution": pinned, "time_ms": 1.0}}))
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    assert main(["run", str(SMALL)]) == ExitCode.OK
    assert f"solution: {pinned}" in capsys.readouterr().out
    assert main(["run", str(SMALL), "--no-database"]) == ExitCode.OK
    assert f"solution: {pinned}" not in capsys.readouterr().out
    assert main(["tune", str(SMALL), "--repeats", "1", "--no-database"]) == ExitCode.OK
    assert "(from tuning database)" not in capsys.readouterr().out
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


# ---- internal errors -------------------------------------------------------------------------------------
def _boom(_args):
    raise RuntimeError("something inside broke")


def test_an_internal_error_is_one_line_and_a_saved_traceback(tmp_path, capsys, monkeypatch):
    from pytest_mlirtrace._internal.cli import compile_cmd

    monkeypatch.setattr(compile_cmd, "_run", _boom)
    monkeypatch.setenv("MLIRTRACE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["compile", str(SMALL)]) == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("mlirtrace: internal error: RuntimeError: something inside broke\n"), err
    saved = Path(re.search(r"the traceback is in (\S+) ", err).group(1))
    assert saved.parent == tmp_path / "cache" / "crashes"
    assert "Traceback" in saved.read_text() and "something inside broke" in saved.read_text()
    monkeypatch.setenv("MLIRTRACE_DEBUG", "1")
    assert main(["compile", str(SMALL)]) == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert "mlirtrace: internal error: RuntimeError" in err and "Traceback (most recent call last)" in err


def test_ctrl_c_is_exit_130_without_a_traceback(capsys, monkeypatch):
    from pytest_mlirtrace._internal.cli import run_cmd

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_cmd, "_run", interrupted)
    assert main(["run", str(SMALL)]) == ExitCode.INTERRUPTED
    assert capsys.readouterr().err == "mlirtrace: interrupted\n"
