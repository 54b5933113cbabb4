"""Under pytest-xdist the workers write the reproducers (atomically, under the index lock), the controller's
summary lists them, and a worker process that dies loses nothing already written."""
from __future__ import annotations

import json

pytest_plugins = ["pytester"]

FILE_A = '''
from mods import DOT_T


def test_wrong(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)


def test_wrong_again(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=2)


def test_slow(mlirtrace):
    mlirtrace.run(DOT_T, max_ms=1e-9)


def test_pass(mlirtrace):
    mlirtrace.run(DOT_T)
'''

FILE_B = '''
import os
import signal

import pytest

from mods import DOT_T


@pytest.fixture
def die_afterwards():
    yield
    os.kill(os.getpid(), signal.SIGKILL)      # the test process dies in teardown, after its failure was reported


def test_assertion(mlirtrace):
    mlirtrace.run(DOT_T)
    assert 0, "after a fixture call"


def test_build_error_then_die(die_afterwards, mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "build_error")
    mlirtrace.run(DOT_T)
'''


def test_xdist_workers_lose_nothing(inner):
    inner.makepyfile(test_a=FILE_A, test_b=FILE_B)
    res = inner.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--junitxml=junit.xml")
    out = res.stdout.str()
    assert "crashed while running 'test_b.py::test_build_error_then_die'" in out     # xdist saw it die
    res.stdout.fnmatch_lines(["*1 passed*"])
    for name in ("test_a.py::test_wrong ", "test_a.py::test_wrong_again ", "test_a.py::test_slow ",
                 "test_b.py::test_assertion ", "test_b.py::test_build_error_then_die "):
        assert f"FAILED {name}" in out, name
    index = json.loads((inner.path / "reproducers" / "INDEX.json").read_text())["reproducers"]
    kinds = sorted(e["kind"] for e in index.values())
    assert kinds == ["assertion", "build_error", "slow", "wrong"]
    by_kind = {e["kind"]: e for e in index.values()}
    assert by_kind["wrong"]["count"] == 2
    assert by_kind["build_error"]["first_origin"] == "test_b.py::test_build_error_then_die"
    for sig, e in index.items():
        assert (inner.path / "reproducers" / e["script"]).is_file()
        assert (inner.path / "reproducers" / e["ticket"]).is_file()
        # the controller's summary names every reproducer, written by whichever worker
        assert f"{sig}  reproducers/{sig}.py" in out, sig
    assert f"{len(index)} reproducer(s), {len(index)} new" in out
    # junitxml writes a test's properties with its teardown report, which a dead process never sends
    junit = (inner.path / "junit.xml").read_text()
    for e in index.values():
        assert (f'value="{e["signature"]}"' in junit) == (e["kind"] != "build_error"), e["signature"]
