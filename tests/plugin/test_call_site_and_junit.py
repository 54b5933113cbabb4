"""A failing fixture call names the test's line that made it (a test that calls run() three times says
which), and the JUnit XML carries the MLIR, the module, the problem key and solution, and that line."""
from __future__ import annotations

import xml.etree.ElementTree as ET

pytest_plugins = ["pytester"]

INNER = '''
from pytest_mlirtrace._internal import ir


def dot(m, k, n):
    mod = ir.Module()
    a, b = mod.add_param("a", "f32", [m, k]), mod.add_param("b", "f32", [k, n])
    mod.add_return(mod.add("dot", a, b))
    return mod


def helper(mlirtrace, mod):
    return mlirtrace.run(mod, solution="4,2,8,4,2,2,0,4")


def test_three_calls(mlirtrace, monkeypatch):
    mlirtrace.run(dot(5, 16, 3))
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")
    helper(mlirtrace, dot(5, 4, 3))   # THE FAILING CALL
    mlirtrace.run(dot(5, 16, 3))
'''


def test_the_failing_call_is_named_and_junit_carries_the_program(pytester):
    pytester.makepyfile(test_inner=INNER)
    res = pytester.runpytest_subprocess("-p", "no:randomly", "--junitxml=junit.xml", "test_inner.py")
    res.assert_outcomes(failed=1)
    line = INNER.strip("\n").splitlines().index("    helper(mlirtrace, dot(5, 4, 3))   # THE FAILING CALL") + 1
    via = INNER.strip("\n").splitlines().index('    return mlirtrace.run(mod, solution="4,2,8,4,2,2,0,4")') + 1
    site = (f"test_inner.py:{line}: helper(mlirtrace, dot(5, 4, 3))   # THE FAILING CALL "
            f'(via test_inner.py:{via}: return mlirtrace.run(mod, solution="4,2,8,4,2,2,0,4"))')
    res.stdout.fnmatch_lines([f"*called at {site}", f"Called at: {site}"])
    case = ET.parse(pytester.path / "junit.xml").getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["mlirtrace_call"] == site
    assert "func.func @mlir_dot(" in props["mlirtrace_mlir"] and "\n" in props["mlirtrace_mlir"]
    assert "migraphx.dot" in props["mlirtrace_mlir"]
    assert "dot(" in props["mlirtrace_module"] and "@return" in props["mlirtrace_module"]
    assert props["mlirtrace_problem"].endswith("\t4,2,8,4,2,2,0,4") and "-m 5 -n 3 -k 4" in props["mlirtrace_problem"]
