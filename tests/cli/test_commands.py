"""``mlirtrace compile``, ``run``, ``tune`` and ``devices`` end to end on the embedded device (kernels run
in worker processes): what they print and their exit statuses."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.cli.main import main

from ..corpus import MISSING, TRACES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = os.path.join(ROOT, "examples", "small_dot_add.mlir")     # dot 5x4 @ 4x3 + add


@pytest.fixture(autouse=True)
def own_database(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_TUNING_DB", str(tmp_path / "tuning.json"))
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)


def test_compile_prints_the_span_and_the_kernel(capsys):
    assert main(["compile", SMALL, "--solution", "4,2,4,4,2,2,0,4", "--show-kernel"]) == 0
    out = capsys.readouterr().out
    assert "module:   mlir_dot_add" in out and "solution: 4,2,4,4,2,2,0,4" in out
    assert re.search(r"problem:  pocl-cpu\t\d+\t-t f32 .*-m 5 -n 3 -k 4", out), out
    assert re.search(r"span:     [0-9a-f]{16}", out) and "status:   ok" in out
    assert "__kernel" in out and "void mlir_dot_add(" in out


def test_a_bad_solution_is_a_usage_error(capsys):
    assert main(["compile", SMALL, "--solution", "4,4,banana"]) == 2
    assert "bad solution '4,4,banana'" in capsys.readouterr().err
    assert main(["run", SMALL, "--solution", "1,2"]) == 2


def test_run_checks_against_the_oracle_and_fails_on_a_planted_bug(capsys, monkeypatch):
    assert main(["run", SMALL, "--seed", "3"]) == 0
    assert "ok: matches the numpy oracle" in capsys.readouterr().out
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")        # k = 4 < KPerBlock 8: fires
    assert main(["run", SMALL, "--solution", "4,2,8,4,2,2,0,4"]) == 1
    assert "FAILED (wrong): output 0:" in capsys.readouterr().out


def test_tune_keeps_the_fastest_and_run_uses_it(capsys):
    # the database is this test's own (own_database); --no-database would keep the result in memory only
    assert main(["tune", SMALL, "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^solution\s+status\s+time_ms\s+build_s\s+span$", out, re.M), out
    fastest = re.search(r"^fastest solution: (\S+) [0-9.]+ms$", out, re.M)
    assert fastest, out
    rows = re.findall(r"^(\d+(?:,\d+)+)\s+(\w+)\s", out, re.M)
    assert len(rows) >= 10 and all(status == "ok" for _, status in rows)
    assert main(["run", SMALL]) == 0
    assert f"solution: {fastest.group(1)}" in capsys.readouterr().out


def test_devices_lists_the_embedded_device_and_its_target(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "key=pocl-cpu" in ln)
    assert re.search(r"target=\S+", line) and re.search(r"builtin-vectors<=(128|256|512)bit", line)


def test_a_missing_file_is_a_usage_error(capsys, tmp_path):
    assert main(["run", str(tmp_path / "nope.mlir")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.skipif(not TRACES.is_dir(), reason=MISSING)
def test_import_trace_of_a_logged_convolution_writes_a_reproducer_that_passes(tmp_path, capsys):
    """The trace corpus's @mlir_convolution (MIGraphX's MLIR dump, shaped types) imports as a runnable
    reproducer keyed by rocMLIR's conv problem key, and the reproducer runs alone and passes here."""
    import glob
    import subprocess
    import sys

    log = TRACES / "005_migraphx-doc-triage-rocmlir-trace-mlir1-modules.txt"
    assert main(["import-trace", str(log), "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "@mlir_convolution: ok with solution" in out
    [script] = glob.glob(str(tmp_path / "r" / "imported-mlir_convolution-*.py"))
    ticket = open(script[:-3] + ".md", encoding="utf-8").read()
    assert "conv -F 1 -f GNC01 -I NGC01 -O NGC01 -n 1 -c 8 -H 4 -W 4 -k 2 -y 3 -x 3" in ticket
    p = subprocess.run([sys.executable, script, "-q"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.startswith("OK:"), p.stdout + p.stderr


def test_version_names_mlirtrace_and_what_it_runs_on():
    from importlib.metadata import version

    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    line = p.stdout.strip()
    assert line.startswith(f"mlirtrace {version('pytest-mlirtrace')} (")
    for dist in ("numpy", "pyopencl", "pocl-binary-distribution", "xdsl"):
        assert f"{dist} {version(dist)}" in line, line


def test_top_level_help_speaks_to_users():
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0
    assert "add_parser" not in p.stdout and "one module per subcommand" not in p.stdout
    assert "write a reproducer and a ticket for every distinct failure" in p.stdout
    assert "exit status: 0 ok / fixed, 1 a failure found or reproduced" in p.stdout
    for cmd in ("tune", "run", "fuzz", "reduce", "tuning-db", "import-trace"):
        assert f"    {cmd}" in p.stdout, cmd


def test_a_named_command_imports_only_its_own_module():
    """``mlirtrace tune ...`` builds the parser with only tune's module: fuzz's (and with it Hypothesis) is not
    imported; the other commands are still names the parser knows."""
    code = ("import sys; from pytest_mlirtrace._internal.cli.main import build_parser, _command_of; "
            "a = build_parser(_command_of(['tune', 'x.txt'])).parse_args(['tune', 'x.txt', '--no-database']); "
            "print(a.command, a.no_database, 'pytest_mlirtrace._internal.cli.fuzz_cmd' in sys.modules, "
            "'hypothesis' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["tune", "True", "False", "False"]
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "nosuch"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "invalid choice: 'nosuch'" in p.stderr and "'fuzz'" in p.stderr


def test_run_and_tune_print_json_for_scripts(capsys, monkeypatch):
    import json

    assert main(["run", SMALL, "--seed", "3", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ok"] is True and r["status"] == "ok" and r["exit"] == 0 and r["time_ms"] > 0
    assert "-m 5 -n 3 -k 4" in r["problem_key"] and re.fullmatch(r"[0-9a-f]{16}", r["span"])
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")
    assert main(["run", SMALL, "--solution", "4,2,8,4,2,2,0,4", "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert (r["ok"], r["status"], r["exit"], r["solution"]) == (False, "wrong", 1, "4,2,8,4,2,2,0,4")
    assert r["detail"].startswith("output 0:")
    monkeypatch.delenv("MLIRTRACE_INJECT")
    assert main(["tune", SMALL, "--repeats", "1", "--no-database", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["exit"] == 0 and len(t["solutions"]) >= 10 and all(s["status"] == "ok" for s in t["solutions"])
    assert t["best"]["solution"] in {s["solution"] for s in t["solutions"]}
    assert t["best"]["time_ms"] == min(s["time_ms"] for s in t["solutions"]) and t["reproducers"] == []
