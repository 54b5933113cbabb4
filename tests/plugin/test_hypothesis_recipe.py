"""Hypothesis (issue 18): ``mlirtrace_session.for_example()`` gives ``@given`` tests a fresh recorder per
example with Hypothesis's health checks left on, and a planted fault writes one reproducer, for the
final shrunk example; what Hypothesis reported for the failing example (its report of the example and the
test's ``note()`` texts, as it attached them to the failure) is in the mlirtrace report section, with either
fixture. The tests compare the section with what Hypothesis attached, never with Hypothesis's wording."""
from __future__ import annotations

import importlib.util
import json

from .plugin_helpers import DOT_T_SOURCE, PLANTING_CONFTEST, REPORTS_HOOK, inner_report

pytest_plugins = ["pytester"]


RECIPE = DOT_T_SOURCE + '''
from hypothesis import given, note, settings, strategies as st

S = settings(max_examples=6, deadline=None, database=None, derandomize=True)   # every health check on
SEEN = []


@S
@given(m=st.integers(2, 9))
def test_fresh_recorder_per_example(mlirtrace_session, m):
    with mlirtrace_session.for_example() as mlirtrace:
        assert not mlirtrace.spans and not mlirtrace.log.events and not mlirtrace.failures
        SEEN.append(mlirtrace)
        assert mlirtrace.run(dot_t(m)).ok


def test_each_example_had_its_own():
    assert len(SEEN) >= 2 and len({id(r) for r in SEEN}) == len(SEEN)


@S
@given(m=st.integers(2, 9))
def test_planted(mlirtrace_session, m):
    note(f"drawn m={m}")
    with mlirtrace_session.for_example() as mlirtrace:
        mlirtrace.run(dot_t(m))


@S
@given(m=st.integers(2, 9))
def test_planted_two_ways(mlirtrace_session, m):
    # odd sizes fail in the fixture, even ones in the test's own assertion: Hypothesis reports both
    with mlirtrace_session.for_example() as mlirtrace:
        if m % 2:
            mlirtrace.run(dot_t(m))
        assert m % 2, "even"
'''


def _with_reports_hook(pytester) -> None:
    pytester.makeconftest(PLANTING_CONFTEST + REPORTS_HOOK)


def _seen(pytester, test: str) -> dict:
    """What the inner run kept of ``test``'s failure: the notes Hypothesis attached to it, and whether it was
    Hypothesis's failed health check (by the exception's class)."""
    rep = inner_report(pytester, test)
    assert rep["outcome"] == "failed", f"{test} did not fail"
    return {"notes": rep["notes"], "health_check": "FailedHealthCheck" in rep["exception"]}


def _index(pytester) -> dict:
    path = pytester.path / "reproducers" / "INDEX.json"
    return json.loads(path.read_text())["reproducers"] if path.exists() else {}


def _section(res, test: str, title: str) -> str:
    [rep] = [r for r in res.reprec.getreports("pytest_runtest_logreport")
             if r.when == "call" and r.nodeid.endswith("::" + test)]
    return dict(rep.sections).get(title, "")


def test_for_example_keeps_the_health_checks_and_writes_the_shrunk_example(inner, monkeypatch):
    inner.makepyfile(test_inner=RECIPE)
    _with_reports_hook(inner)
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")   # the whole run (no monkeypatch inside)
    html = importlib.util.find_spec("pytest_html") is not None
    res = inner.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "-k", "planted",
                          *(["--html=report.html", "--self-contained-html"] if html else []))
    res.assert_outcomes(failed=2)
    assert not _seen(inner, "test_planted")["health_check"]
    assert not _seen(inner, "test_planted_two_ways")["health_check"]
    index = _index(inner)
    assert len(index) == 2, list(index)
    by_test = {e["origins"][0].split("::")[-1]: e for e in index.values()}
    for test, size in (("test_planted", "{1, 2, 5}"), ("test_planted_two_ways", "{1, 3, 5}")):
        entry = by_test[test]
        assert entry["count"] == 1 and entry["kind"] == "wrong" and entry["planted"] is True, entry
        ticket = (inner.path / "reproducers" / entry["ticket"]).read_text()
        assert size in ticket, test               # the final, shrunk example (the smallest odd m: 3)
    notes = _section(res, "test_planted", "mlirtrace: Hypothesis example")
    # relayed as Hypothesis attached it to the failure: its report of the final example, then the notes
    relayed = _seen(inner, "test_planted")["notes"]
    assert relayed and notes.splitlines() == "\n".join(relayed).splitlines(), (notes, relayed)
    assert "drawn m=2" in notes.splitlines()                    # the final, shrunk example's note (m=2) ...
    assert "drawn m=" not in notes.replace("drawn m=2", "")      # ... and that example's note only
    if html:                                                     # and in the HTML report's block
        page = (inner.path / "report.html").read_text(encoding="utf-8")
        assert "&lt;summary&gt;Hypothesis example&lt;/summary&gt;" in page and "drawn m=2" in page


def test_for_example_examples_are_separate_and_pass(inner):
    inner.makepyfile(test_inner=RECIPE)
    res = inner.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "-k", "not planted")
    res.assert_outcomes(passed=2)
    assert not _index(inner)


FUNCTION_SCOPED = DOT_T_SOURCE + '''
from hypothesis import HealthCheck, given, note, settings, strategies as st


@settings(max_examples=4, deadline=None, database=None, derandomize=True)
@given(m=st.integers(2, 9))
def test_default_checks(mlirtrace, m):
    mlirtrace.run(dot_t(m))


@settings(max_examples=6, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(2, 9))
def test_notes(mlirtrace, m):
    note(f"size {m} x 5")
    res = mlirtrace.run(dot_t(m), check=False)
    note(f"after the run: ok={res.ok}")
    assert res.ok, "wrong numbers"
'''


def test_the_function_scoped_fixture_fails_the_health_check_and_shows_notes(inner, monkeypatch):
    """Why the recipe exists: ``mlirtrace`` under ``@given`` trips Hypothesis's health check; suppressed,
    the notes of the final example (those made after the unchecked call too) reach the mlirtrace section."""
    inner.makepyfile(test_inner=FUNCTION_SCOPED)
    _with_reports_hook(inner)
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    res = inner.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    res.assert_outcomes(failed=2)
    assert _seen(inner, "test_default_checks")["health_check"]
    assert not _seen(inner, "test_notes")["health_check"]
    notes = _section(res, "test_notes", "mlirtrace: Hypothesis example")
    relayed = _seen(inner, "test_notes")["notes"]
    assert relayed and notes.splitlines() == "\n".join(relayed).splitlines(), (notes, relayed)
    lines = notes.splitlines()
    # the final example's notes (m=2), in order, the one made after the unchecked call too
    assert "size 2 x 5" in lines and "size" not in notes.replace("size 2 x 5", ""), notes
    at = lines.index("size 2 x 5")
    assert lines[at + 1] == "after the run: ok=False", notes
