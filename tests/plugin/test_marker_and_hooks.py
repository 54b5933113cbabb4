"""``@pytest.mark.mlirtrace(...)`` (per-test defaults of the fixture's calls), the report header line, and
the ``pytest_mlirtrace_failure`` hook other plugins implement."""
from __future__ import annotations

import json

from .plugin_helpers import PLANTING_CONFTEST, REPORTS_HOOK, inner_report

pytest_plugins = ["pytester"]

_ENV = ("MLIRTRACE_TUNING_DB", "MLIRTRACE_DEVICE", "MLIRTRACE_REPRO_DIR", "MLIRTRACE_REPRO", "MLIRTRACE_TIMEOUT")


def test_marker_is_registered(pytester):
    res = pytester.runpytest("--markers")
    res.stdout.fnmatch_lines(["@pytest.mark.mlirtrace(device=None, timeout=None, max_ms=None, solution=None, "
                              "trace=None): defaults of this test's mlirtrace fixture calls*"])


def test_report_header_names_device_database_and_reproducers(pytester, monkeypatch):
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    pytester.makepyfile(test_x="def test_x(): pass")
    try:
        from importlib.metadata import version
        pocl = f" (pocl-binary-distribution {version('pocl-binary-distribution')})"
    except Exception:   # noqa: BLE001
        pocl = ""
    res = pytester.runpytest("test_x.py")
    res.stdout.fnmatch_lines([f"mlirtrace: device default (PoCL CPU){pocl}, tuning database per test, in memory, "
                              "reproducers -> reproducers"])
    res = pytester.runpytest("-v", "--mlir-device", "pocl", "--mlir-tuning-db", "db/t.json", "--mlir-no-repro",
                             "test_x.py")
    res.stdout.fnmatch_lines([f"mlirtrace: device pocl{pocl}, tuning database db/t.json, reproducers off"])
    assert not (pytester.path / "db").exists()      # the header opens nothing


BAD = '''
import pytest


@pytest.mark.mlirtrace(timeot=3)
def test_unknown(mlirtrace):
    raise RuntimeError("the body ran")


@pytest.mark.mlirtrace(max_ms="fast")
def test_wrong_type(mlirtrace):
    raise RuntimeError("the body ran")


@pytest.mark.mlirtrace("pocl")
def test_positional(mlirtrace):
    raise RuntimeError("the body ran")


@pytest.mark.mlirtrace(trace=7)
def test_bad_level(mlirtrace):
    raise RuntimeError("the body ran")


@pytest.mark.mlirtrace(timeout=5, trace=1)
def test_good_marker_no_call(mlirtrace):
    assert mlirtrace.marks == {"timeout": 5, "trace": 1}


@pytest.mark.mlirtrace(timeout=600, max_ms=None)
class TestMerged:
    @pytest.mark.mlirtrace(timeout=9, solution="2,2,4,1,1,1,0,4")
    def test_closest_wins(self, mlirtrace):
        assert mlirtrace.marks == {"timeout": 9, "solution": "2,2,4,1,1,1,0,4"}
'''


def test_a_bad_marker_argument_fails_the_test_naming_it(pytester):
    pytester.makepyfile(test_bad=BAD)
    res = pytester.runpytest("-p", "no:cacheprovider", "test_bad.py")
    res.assert_outcomes(failed=4, passed=2)
    reports = {r.nodeid.split("::")[-1]: r for r in res.reprec.getreports("pytest_runtest_logreport")
               if r.when == "call" and r.failed}
    assert reports["test_unknown"].longreprtext == ("@pytest.mark.mlirtrace: unknown argument timeot=3; known: "
                                                    "device, timeout, max_ms, solution, trace")
    assert reports["test_wrong_type"].longreprtext == ("@pytest.mark.mlirtrace(max_ms='fast'): expected a "
                                                       "positive number of milliseconds, got str")
    assert reports["test_positional"].longreprtext.startswith("@pytest.mark.mlirtrace takes keyword arguments "
                                                              "only (device, timeout, ")
    assert reports["test_bad_level"].longreprtext == ("@pytest.mark.mlirtrace(trace=7): expected a trace level "
                                                      "0-3, got int")
    assert "the body ran" not in res.stdout.str()


INNER = '''
import pytest
from mods import DOT_T


@pytest.mark.mlirtrace(max_ms=1e-9)
def test_marked_max_ms(mlirtrace):
    mlirtrace.run(DOT_T)


@pytest.mark.mlirtrace(solution="2,2,4,1,1,1,0,4")
def test_marked_solution(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)


@pytest.mark.mlirtrace(timeout=2)
def test_marked_timeout(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "infinite_loop")
    mlirtrace.run(DOT_T)


@pytest.mark.mlirtrace(timeout=600)
def test_call_timeout_wins(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "infinite_loop")
    mlirtrace.run(DOT_T, timeout_s=3)


@pytest.mark.mlirtrace(trace=1)
def test_marked_trace(mlirtrace):
    mlirtrace.run(DOT_T)
    print("END OF TRACED")
    assert False, "show the captured output"


def test_unmarked_after_trace(mlirtrace):
    mlirtrace.run(DOT_T)
    print("END OF UNTRACED")
    assert False, "show the captured output"


@pytest.mark.mlirtrace(device="pocl")
def test_marked_same_device(mlirtrace):
    assert mlirtrace.run(DOT_T).ok


@pytest.mark.mlirtrace(device="nvidia")
def test_marked_other_device(mlirtrace):
    mlirtrace.run(DOT_T)
'''


def test_marker_arguments_reach_the_calls(inner):
    inner.makepyfile(test_marked=INNER)
    inner.makeconftest(PLANTING_CONFTEST + REPORTS_HOOK)
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "test_marked.py")
    res.assert_outcomes(failed=7, passed=1)

    def section(title: str, test: str) -> str:
        return inner_report(inner, test)["sections"][title]

    # max_ms: a passing run is too slow for 1e-9 ms
    slow = inner_report(inner, "test_marked_max_ms")["longrepr"]
    assert "mlirtrace: slow: mlir_transpose_dot" in slow, slow
    # solution: the run used it; the report's key section and the ticket record it
    key = section("mlirtrace: problem key and solution", "test_marked_solution")
    assert "Solution: 2,2,4,1,1,1,0,4" in key and "Failure: wrong" in key, key
    tickets = [p.read_text() for p in (inner.path / "reproducers").glob("wrong-*.md")]
    assert len(tickets) == 1 and "2,2,4,1,1,1,0,4" in tickets[0]
    # timeout: the marked one, unless the call gives its own
    assert "Timeout: 2 s" in section("mlirtrace: problem key and solution", "test_marked_timeout")
    assert "Timeout: 3 s" in section("mlirtrace: problem key and solution", "test_call_timeout_wins")
    # trace: this test's calls print the level-1 dumps, the next test's (unmarked) do not
    traced = inner_report(inner, "test_marked_trace")["stdout"]
    assert "mlir hash:" in traced and "END OF TRACED" in traced, traced
    untraced = inner_report(inner, "test_unmarked_after_trace")["stdout"]
    assert "mlir hash:" not in untraced and "END OF UNTRACED" in untraced, untraced
    # device: the session's passes; another fails naming both
    other = inner_report(inner, "test_marked_other_device")["longrepr"]
    assert "@pytest.mark.mlirtrace(device='nvidia') names no device here" in other, other
    assert "the session's device is 0:0" in other, other
    assert "plugin/facade.py" not in other


HOOK_CONFTEST = PLANTING_CONFTEST + '''

import json


def pytest_mlirtrace_failure(record, report, written):
    with open("hook_calls.jsonl", "a") as f:
        f.write(json.dumps({"test": report.nodeid.split("::")[-1], "when": report.when, "kind": record.kind,
                            "script": None if written is None else str(written.script_path),
                            "exists": written is not None and written.script_path.exists(),
                            "sections": [t for t, _ in report.sections if t.startswith("mlirtrace: ")]}) + "\\n")
    if "raising" in report.nodeid:
        raise RuntimeError("the hook broke")
'''

HOOKED = '''
from mods import DOT_T


def test_wrong(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)


def test_same_bug_twice(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    a = mlirtrace.run(DOT_T, seed=2, check=False)
    b = mlirtrace.run(DOT_T, seed=3, check=False)
    assert a.ok and b.ok, "two wrong results of one bug"


def test_raising_hook(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=4)


def test_pass(mlirtrace):
    assert mlirtrace.run(DOT_T).ok
'''


def test_failure_hook_gets_each_distinct_failure_and_cannot_lose_the_report(inner):
    inner.makeconftest(HOOK_CONFTEST + REPORTS_HOOK)
    inner.makepyfile(test_hooked=HOOKED)
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--junitxml=junit.xml",
                                     "test_hooked.py")
    res.assert_outcomes(failed=3, passed=1)
    calls = [json.loads(ln) for ln in (inner.path / "hook_calls.jsonl").read_text().splitlines()]
    assert [c["test"] for c in calls] == ["test_wrong", "test_same_bug_twice", "test_raising_hook"], calls
    for c in calls:
        assert c["kind"] == "wrong" and c["when"] == "call" and c["exists"], c
        assert c["script"].endswith(".py") and "mlirtrace: reproducer" in c["sections"], c
    # the raising implementation: the test's report, its sections and its reproducer properties all stay
    raising = inner_report(inner, "test_raising_hook")
    hook = raising["sections"]["mlirtrace: failure hook"]
    assert "a pytest_mlirtrace_failure implementation failed on wrong-" in hook and \
        "RuntimeError: the hook broke" in hook, hook
    assert "mlirtrace: wrong: mlir_transpose_dot" in raising["longrepr"]
    junit = (inner.path / "junit.xml").read_text()
    assert junit.count('name="mlirtrace_signature"') == 3
    res.stdout.fnmatch_lines(["*= mlirtrace reproducers =*"])
