"""``--mlir-reduce``: after the run, each new reproducer of a failing test is reduced (isolated runs, its
budget) and the reduced reproducer and ticket are written beside it; what cannot be reduced is said."""
from __future__ import annotations

import json

pytest_plugins = ["pytester"]

INNER = '''
from pytest_mlirtrace._internal import ir


def module(m=19, k=21, n=23):
    mod = ir.Module()
    a, b, c = mod.add_param("a", "f32", [m, k]), mod.add_param("b", "f32", [k, n]), mod.add_param("c", "f32", [m, n])
    r = mod.add("relu", mod.add("add", mod.add("dot", a, b), c))
    mod.add_return(mod.add("mul", r, c))
    return mod


def test_k_tail(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")
    mlirtrace.run(module(), seed=3)


def test_assertion(mlirtrace):
    mlirtrace.run(module(4, 4, 4))
    assert False, "a plain assertion after a fixture call"
'''


def test_each_new_reproducer_is_reduced_after_the_run(pytester):
    pytester.makepyfile(test_inner=INNER)
    res = pytester.runpytest_subprocess("--mlir-reduce=120", "-p", "no:randomly", "test_inner.py")
    res.assert_outcomes(failed=2)
    out = res.stdout.str()
    assert "mlirtrace reduce (120 s at most each)" in out, out
    # the planted K-tail bug: 4 ops on 19x21x23 down to the dot alone; the assertion: no run shows it again
    res.stdout.fnmatch_lines(["*reduced: 4 ops / * elements -> 1 ops / * elements, solution *",
                              "*not reduced: *a failure of kind 'assertion' cannot be reduced*"])
    index = json.loads((pytester.path / "reproducers" / "INDEX.json").read_text())["reproducers"]
    reduced = [e for e in index.values() if str(e.get("last_origin", "")).startswith("reduce ")]
    assert len(reduced) == 1, index
    ticket = (pytester.path / "reproducers" / reduced[0]["script"]).with_suffix(".md").read_text()
    assert "## Reduced" in ticket and "dropped mul" in ticket


def test_a_bad_budget_is_a_usage_error_naming_its_source(pytester, monkeypatch):
    pytester.makepyfile(test_x="def test_a(): pass")
    res = pytester.runpytest("--mlir-reduce=soon", "test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*--mlir-reduce=soon: expected a number of seconds per reproducer, or on / off*"])
    monkeypatch.setenv("MLIRTRACE_REDUCE", "-3")
    res = pytester.runpytest("test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*MLIRTRACE_REDUCE=-3: expected a number of seconds per reproducer, or on / off*"])
