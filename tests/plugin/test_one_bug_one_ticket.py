"""Issue 12 through the fixture: one bug gives one reproducer, whatever the number of solutions or
Hypothesis examples that hit it; a test's tuning touches no other test; 'planted' only when checked."""
from __future__ import annotations

import json

from .plugin_helpers import DOT_T_SOURCE

pytest_plugins = ["pytester"]

# a 64x48 @ 48x40 dot: 8 of its 36 quick-list solutions read stale local memory with the barrier left out
DOT64 = """\
a = @param:a -> float_type, {1, 64, 48}, {3072, 48, 1}
b = @param:b -> float_type, {1, 48, 40}, {1920, 40, 1}
@2 = dot(a,b) -> float_type, {1, 64, 40}, {2560, 40, 1}
@3 = @return(@2)
"""


def _index(pytester) -> dict:
    path = pytester.path / "reproducers" / "INDEX.json"
    return json.loads(path.read_text())["reproducers"] if path.exists() else {}


def test_a_tune_with_many_failing_solutions_writes_one_reproducer(inner):
    inner.makepyfile(test_inner=f'''
DOT64 = {DOT64!r}

def test_tune(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "missing_barrier")
    mlirtrace.tune(DOT64)
''')
    res = inner.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    index = _index(inner)
    assert len(index) == 1, list(index)
    [entry] = index.values()
    assert entry["kind"] == "wrong" and entry["count"] == 1
    # every failing solution is listed, the rest as passed, none in both
    assert len(entry["solutions"]) >= 2 and len(entry["solutions"]) + len(entry["passed"]) == 36
    assert not set(entry["solutions"]) & set(entry["passed"])
    assert entry["planted"] is True            # it passed with the fault switched off
    files = sorted(p.name for p in (inner.path / "reproducers").iterdir() if not p.name.startswith("."))
    assert len(files) == 5                     # one .py, one .md, its .mlir, INDEX.json, INDEX.md


HYPO = '''
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
''' + DOT_T_SOURCE + '''
H = settings(max_examples=8, deadline=None, database=None, derandomize=True,
             suppress_health_check=[HealthCheck.function_scoped_fixture])

@H
@given(m=st.integers(2, 9))
def test_checked(mlirtrace, monkeypatch, m):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(dot_t(m))

@H
@given(m=st.integers(2, 9))
def test_unchecked(mlirtrace, monkeypatch, m):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    res = mlirtrace.run(dot_t(m), check=False)
    assert res.ok, "wrong numbers"

@H
@given(m=st.integers(2, 9))
def test_two_ways(mlirtrace, monkeypatch, m):
    # odd sizes fail in the fixture, even ones in the test's own assertion: Hypothesis reports both
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride" if m % 2 else "")
    mlirtrace.run(dot_t(m))
    assert m % 2, "even"
'''


def test_hypothesis_writes_only_the_final_shrunk_example(inner):
    inner.makepyfile(test_inner=HYPO)
    res = inner.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(failed=3)
    index = _index(inner)
    # one occurrence per test, each of its final shrunk example: test_checked and test_unchecked hit the same
    # bug on the same module (m=2, the smallest failing size): one reproducer, count 2; the odd size of
    # test_two_ways shrinks to m=3 (its even sizes fail in the test's own assertion, not in the fixture)
    assert sum(e["count"] for e in index.values()) == 3, index
    assert len(index) == 2
    by_module = {("{1, 2, 5}" in e["symbol"] + _ticket(inner, e)): e for e in index.values()}
    small, three = by_module[True], by_module[False]
    assert small["count"] == 2 and sorted(o.split("::")[-1] for o in small["origins"]) == ["test_checked",
                                                                                          "test_unchecked"]
    assert "{1, 3, 5}" in _ticket(inner, three) and three["origins"] == ["test_inner.py::test_two_ways"]


def _ticket(pytester, entry) -> str:
    return (pytester.path / "reproducers" / entry["ticket"]).read_text()


def test_a_tune_in_one_test_does_not_change_another_tests_run(inner, tmp_path, monkeypatch):
    """Each test has its own tuning database unless one is named: test_b runs with the default solution
    whatever test_a tuned (and nothing is written); with ``--mlir-tuning-db`` the tests share it."""
    inner.makepyfile(test_inner=f'''
DOT64 = {DOT64!r}
TUNED = "8,64,8,8,32,16,0,4"        # not the default solution of DOT64

def test_a(mlirtrace):
    mlirtrace.tune(DOT64, solutions=[TUNED])
    assert mlirtrace.run(DOT64).compiled.span.solution == TUNED    # the test's own tune counts

def test_b(mlirtrace):
    assert mlirtrace.run(DOT64).compiled.span.solution != TUNED
''')
    db = tmp_path / "tuning.json"        # the conftest's MLIRTRACE_TUNING_DB
    monkeypatch.delenv("MLIRTRACE_TUNING_DB")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))   # the default database's place
    res = inner.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(passed=2)
    assert not db.exists() and not list((tmp_path / "cache").rglob("tuning.json*"))
    # named: shared (test_b now runs the tuned solution) and written
    shared = inner.runpytest("-p", "no:cacheprovider", f"--mlir-tuning-db={db}")
    shared.assert_outcomes(passed=1, failed=1)
    assert [e["solution"] for e in json.loads(db.read_text()).values()] == ["8,64,8,8,32,16,0,4"]


def test_signatures_are_stable_across_runs(inner):
    """The issue's case: an ``assert False`` after a run got another signature on the next run, because a
    tune (here in another test, first) had changed the solution run() picks."""
    inner.makepyfile(test_inner=f'''
DOT64 = {DOT64!r}

def test_a_tunes(mlirtrace):
    mlirtrace.tune(DOT64, solutions=["8,64,8,8,32,16,0,4"])

def test_b_asserts(mlirtrace):
    mlirtrace.run(DOT64)
    assert False, "the test's own check"
''')
    inner.runpytest("-p", "no:cacheprovider", "-k", "test_b").assert_outcomes(failed=1)
    inner.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, failed=1)
    [entry] = _index(inner).values()
    assert entry["kind"] == "assertion" and entry["count"] == 2
