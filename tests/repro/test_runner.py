"""A generated reproducer is data plus one call into the library (``pytest_mlirtrace.reproduce.run``); only
the standalone path is in the script, and it runs on its own where pytest_mlirtrace cannot be imported."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.repro import render_script
from pytest_mlirtrace._internal.repro import reproducer_template as tmpl
from pytest_mlirtrace._internal.repro.runner import all_solutions_verdict
from pytest_mlirtrace.reproduce import run

from .test_standalone import GOOD, KERNELS, payload

# without the payload lines: 409 with the per-element bounds check and the fp8/fp4 input codes (591 when the
# package path was copied into it); 412 with the variable names written once
MAX_CODE_LINES = 412
STANDALONE_IMPORTS = {"__future__", "argparse", "base64", "json", "os", "re", "signal", "subprocess", "sys", "zlib",
                      "numpy", "pyopencl"}
# the one public module a script imports: run(PAYLOAD, argv) (everything but the standalone path) and
# prepare_opencl() (the OpenCL environment fix for the pip PoCL, if present)
LIBRARY_IMPORTS = {"pytest_mlirtrace.reproduce"}


def code_lines(src: str) -> list[str]:
    """The script's lines without the payload's base64 continuation lines."""
    return [ln for ln in src.splitlines() if not re.fullmatch(r'    "[A-Za-z0-9+/=]+"', ln)]


def no_package_env(tmp_path) -> dict:
    """An environment where ``import pytest_mlirtrace`` raises ImportError (as on a machine without it)."""
    from pytest_mlirtrace._internal.runtime import ensure_opencl_env

    ensure_opencl_env(import_pyopencl=False)   # the OpenCL setup the standalone path finds in the environment
    fake = tmp_path / "nopkg" / "pytest_mlirtrace"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('pytest_mlirtrace is not installed here')\n")
    return dict(os.environ, PYTHONPATH=str(fake.parent))


def script(tmp_path, data: dict, name: str = "repro.py"):
    path = tmp_path / name
    path.write_text(render_script(data))
    return path


def run_script(path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=180, env=env)


def test_script_is_small_and_has_no_library_logic():
    src = render_script(payload("wrong", KERNELS["wrong"]))
    lines = code_lines(src)
    assert len(lines) <= MAX_CODE_LINES, len(lines)
    imported = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= STANDALONE_IMPORTS | LIBRARY_IMPORTS, imported - STANDALONE_IMPORTS - LIBRARY_IMPORTS
    text = "\n".join(lines)
    for word in ("codegen", "TraceSession", "WorkerPool", "tuning", "tune(", "oracle_tolerances", "evaluate("):
        assert word not in text, word
    assert not re.search(r"(?<![.\w])lower\(", text)      # no lowering (str.lower() is fine)
    # the one call into the library, with the payload and the command line
    assert "run(PAYLOAD, argv, standalone=run_standalone)" in text


def test_script_hands_its_payload_and_argv_to_the_library(tmp_path):
    """With pytest_mlirtrace importable, main() is one call: run(PAYLOAD, argv, standalone=...)."""
    pkg = tmp_path / "fakelib" / "pytest_mlirtrace"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "reproduce.py").write_text(
        "import base64, json, zlib\n"
        "def run(payload, argv, standalone=None):\n"
        "    data = json.loads(zlib.decompress(base64.b64decode(''.join(payload.split()))))\n"
        "    print('LIBRARY', data['signature'], argv, standalone.__name__)\n"
        "    return 7\n")
    data = payload("wrong", KERNELS["wrong"])
    out = run_script(script(tmp_path, data), "--device", "cpu", "-q",
                     env=dict(os.environ, PYTHONPATH=str(pkg.parent)))
    assert out.returncode == 7, out.stdout + out.stderr
    assert out.stdout.strip() == f"LIBRARY {data['signature']} ['--device', 'cpu', '-q'] run_standalone"


def test_without_the_package_the_script_runs_standalone(tmp_path):
    env = no_package_env(tmp_path)
    data = payload("wrong", KERNELS["wrong"])
    path = script(tmp_path, data)
    out = run_script(path, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "running: standalone path" in out.stdout and "REPRODUCED: wrong: output 0:" in out.stdout
    for piece in ("==== MLIR ====", "==== problem key ====", "==== solution ====", "device: "):
        assert piece in out.stdout, piece
    good = tmp_path / "good.cl"
    good.write_text(GOOD)
    out = run_script(path, "--kernel-file", str(good), "-q", env=env)
    assert out.returncode == 0 and out.stdout.startswith("FIXED"), out.stdout + out.stderr
    out = run_script(path, "--solution", "1,1", env=env)
    assert out.returncode == 2 and "need pytest_mlirtrace" in out.stderr
    out = run_script(path, "--help", env=env)
    assert out.returncode == 0
    for opt in ("--device", "--solution", "--all-solutions", "--show-kernel", "--standalone", "--kernel-file",
                "--timeout", "--quiet", "--json"):
        assert opt in out.stdout, opt


def test_standalone_prints_the_same_with_and_without_the_package(tmp_path):
    """--standalone through pytest_mlirtrace.reproduce.run and the script on its own: same text, same status."""
    path = script(tmp_path, payload("build_error", KERNELS["build_error"]))
    with_pkg = run_script(path, "--standalone", "--show-kernel")
    without = run_script(path, "--show-kernel", env=no_package_env(tmp_path))
    assert with_pkg.returncode == without.returncode == 1, with_pkg.stdout + without.stdout
    strip = lambda s: re.sub(r"0x[0-9a-f]+|tempfile_\w+", "X", s)   # noqa: E731 - device address, build file
    assert strip(with_pkg.stdout) == strip(without.stdout)
    assert "REPRODUCED: build_error: build failed:" in without.stdout and "undeclared_thing" in without.stdout


def test_run_in_process_without_a_script(capsys):
    """run() takes the decoded payload too; with no standalone function it uses the template's (which
    starts its child from the package's reproducer_template.py)."""
    data = payload("wrong", KERNELS["wrong"])
    assert run(data, ["--standalone", "-q"]) == 1
    assert capsys.readouterr().out.startswith("REPRODUCED: wrong: output 0:")
    assert run(dict(data, standalone=None, standalone_reason="made up"), ["--standalone", "-q"]) == 4
    assert capsys.readouterr().out.strip() == "COULD NOT RUN: no standalone data: made up"
    assert run(tmpl.encode_payload(data), ["--standalone", "--solution", "1"]) == 2
    assert "need pytest_mlirtrace" in capsys.readouterr().err


@pytest.mark.parametrize("kind, status, still, code", [
    ("wrong", "ok", [], 0), ("wrong", "failures", ["a"], 1), ("wrong", "failures", [], 6),
])
def test_all_solutions_verdict(kind, status, still, code):
    got, msg = all_solutions_verdict({"kind": kind, "solution": "a", "solutions": ["a", "b"]},
                                     {"status": status, "error": "2 of 9 solutions fail", "still_failing": still})
    assert got == code, msg


def test_a_script_written_before_the_public_module_still_runs(tmp_path):
    """Reproducers on users' disks import ``pytest_mlirtrace.repro.run`` (the deprecated alias): the same
    call, the same verdict as the public module's."""
    src = render_script(payload("wrong", KERNELS["wrong"]))
    new = "from pytest_mlirtrace.reproduce import run\n"
    assert src.count(new) == 1
    old = tmp_path / "old.py"
    old.write_text(src.replace(new, "from pytest_mlirtrace.repro import run\n"))
    out = run_script(old, "--standalone", "-q")
    assert out.returncode == 1 and out.stdout.startswith("REPRODUCED: wrong: output 0:"), out.stdout + out.stderr
    # (an import that failed would fall back to the standalone path: the package path says it ran; this
    # hand-made payload's MLIR is a stub, so the verdict there is not the point)
    out = run_script(old)
    assert "running: package path" in out.stdout, out.stdout + out.stderr


def test_the_scripts_names_are_the_packages():
    """The script spells mlirtrace's variable names itself (it runs without the package): they are
    config.environment's, and the payload's marker line is the writer's."""
    from pytest_mlirtrace._internal.config import environment
    from pytest_mlirtrace._internal.repro.writer import PAYLOAD_MARKER, TEMPLATE_PATH

    assert (tmpl.ENV_LAUNCH, tmpl.ENV_RESULT) == (environment.LAUNCH, environment.RESULT)
    assert (tmpl.LAUNCH_MARK, tmpl.RESULT_MARK) == (environment.LAUNCH, environment.RESULT + "=")
    assert TEMPLATE_PATH.read_text(encoding="utf-8").count(PAYLOAD_MARKER) == 1
    assert environment.PAYLOAD in PAYLOAD_MARKER


def test_contract_numbers_agree():
    """The reproducer runs without the package, so it keeps its own copy of the exit codes."""
    from pytest_mlirtrace._internal.vocab import ExitCode

    assert (tmpl.EXIT_FIXED, tmpl.EXIT_REPRODUCED, tmpl.EXIT_USAGE, tmpl.EXIT_NOT_SUPPORTED, tmpl.EXIT_CANNOT_RUN,
            tmpl.EXIT_NEEDS_TEST, tmpl.EXIT_DIFFERENT) == (
        ExitCode.OK, ExitCode.FAILURE, ExitCode.USAGE, ExitCode.NOT_SUPPORTED, ExitCode.ENVIRONMENT,
        ExitCode.NEEDS_TEST, ExitCode.DIFFERENT)


def test_a_child_that_never_launches_is_a_hang(tmp_path):
    """The child's alarm covers its start-up and the build too (here cut to 0.05 s)."""
    src = render_script(payload("wrong", KERNELS["wrong"]))
    marker = "SETUP_TIMEOUT_S, DEFAULT_TIMEOUT_S = 600.0, 30.0"
    assert src.count(marker) == 1
    path = tmp_path / "quick.py"
    path.write_text(src.replace(marker, "SETUP_TIMEOUT_S, DEFAULT_TIMEOUT_S = 0.05, 30.0"))
    out = run_script(path, "--standalone", "-q")
    assert out.returncode == 6, out.stdout + out.stderr      # recorded: wrong; here: hang
    assert "FAILS DIFFERENTLY: hang (recorded: wrong): no launch after 0.05 s of start-up and build" in out.stdout
