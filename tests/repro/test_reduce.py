"""``mlirtrace reduce``: delta debugging of a reproducer's module on its failure class.

Fast tests drive :class:`Reducer` with a simulated run (a planted rule decides the verdict: no kernels); the
slow test reduces a real planted failure end to end through the CLI and runs both reproducers."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.repro.reduce import Reducer, failure_class, size_of

from ..settings import DEVICE

ERR = "output 0: 3/437 elements differ (bound 1e-06); worst at [4, 7]: got 0.0, expected 0.5"


def module(m=19, k=21, n=23):
    mod = ir.Module()
    a, b, c = mod.add_param("a", "f32", [m, k]), mod.add_param("b", "f32", [k, n]), mod.add_param("c", "f32", [m, n])
    d = mod.add("dot", a, b)
    s = mod.add("add", d, c)
    r = mod.add("relu", s)
    mod.add_return(mod.add("mul", r, c))
    return mod


def fake(rule):
    """A run whose verdict is ``rule(module, solution)``: a wrong result (same message shape) or a pass."""
    calls = []

    def run(m, sol):
        calls.append((ir.print_module(m), sol))
        bad = rule(m, sol)
        return SimpleNamespace(ok=not bad, status="wrong" if bad else "ok",
                               detail=ERR.replace("437", "9") if bad else "", compiled=SimpleNamespace(error=""))
    return run, calls


def k_tail(m, _sol):      # the bug: a dot whose K is not a multiple of 8
    p = codegen.problem_of(m) if "dot" in m.ops() else None
    return p is not None and p.k % 8 != 0


DATA = {"kind": "wrong", "error": ERR, "solution": "16,32,8,8,32,16,0,4", "signature": "wrong-x-1"}


def test_the_failure_class_ignores_numbers_names_and_the_solution():
    a = failure_class("wrong", "mlir_dot_add: " + ERR, "16,32")
    b = failure_class("wrong", "mlir_dot: " + ERR.replace("437", "2").replace("[4, 7]", "[0, 0]"), "1,1")
    assert a == b and a.startswith("wrong: F: output N")
    assert failure_class("crash", ERR) != a


def test_it_keeps_the_bug_and_drops_what_the_bug_does_not_need():
    run, calls = fake(k_tail)
    red = Reducer(DATA, run, lambda _m: "8,8,8,8,8,8,0,4").reduce(module(), DATA["solution"])
    assert red.result is not None and red.module.ops() == ["dot"]
    p = codegen.problem_of(red.module)
    assert p.k % 8 != 0 and p.k <= 3 and p.m == 1 and p.n == 1, (p.m, p.n, p.k)
    assert size_of(module()) == (4, 19 * 21 + 21 * 23 + 19 * 23) and size_of(red.module)[0] == 1
    held = [s.what for s in red.held]
    assert held[:3] == ["dropped mul (@6)", "dropped relu (@5)", "dropped add (@4)"]
    assert any(w.startswith("size 21 -> ") for w in held) and red.solution == "8,8,8,8,8,8,0,4"
    # every step said what it tried; those that did not hold say what the case showed instead
    assert all(s.detail for s in red.steps if not s.held)
    assert red.runs == len(calls)


def transposed(m=19, k=21, n=23, dt="f32"):
    """dot(transpose(a), b) + c: a view of a parameter in front of the dot."""
    mod = ir.Module()
    a, b, c = mod.add_param("a", dt, [k, m]), mod.add_param("b", dt, [k, n]), mod.add_param("c", dt, [m, n])
    mod.add_return(mod.add("add", mod.add("dot", mod.add("transpose", a, permutation=[1, 0]), b), c))
    return mod


def test_a_view_of_a_parameter_is_bypassed_and_a_float_type_narrowed_when_the_bug_stays():
    run, _ = fake(k_tail)
    red = Reducer(DATA, run, lambda _m: "8,8,8,8,8,8,0,4").reduce(transposed(), DATA["solution"])
    assert red.module.ops() == ["dot"], red.module.ops()
    held = [s.what for s in red.held]
    assert "bypassed transpose (@3): the parameter takes its shape" in held, held
    assert "type f32 -> f16" in held
    assert {prm.shape.dtype.name for prm in red.module.params()} == {"f16"}
    # the parameter took the view's shape: [m, k] read as it is
    p = codegen.problem_of(red.module)
    assert not p.transA and p.k % 8 != 0


def test_a_view_or_a_type_the_bug_needs_stays():
    def needs_both(m, _sol):      # fails only with the transpose in and f32 parameters
        return "transpose" in m.ops() and {x.shape.dtype.name for x in m.params()} == {"f32"}

    run, _ = fake(needs_both)
    red = Reducer(DATA, run, lambda _m: "8,8,8,8,8,8,0,4").reduce(transposed(), DATA["solution"])
    assert "transpose" in red.module.ops()
    assert {x.shape.dtype.name for x in red.module.params()} == {"f32"}
    tried = [s for s in red.steps if s.what.startswith(("bypassed transpose", "type f32 -> f16"))]
    assert tried and not any(s.held for s in tried) and all(s.detail == "passes" for s in tried)


def test_it_is_deterministic():
    outs = []
    for _ in range(2):
        run, calls = fake(k_tail)
        red = Reducer(DATA, run, lambda _m: "8,8,8,8,8,8,0,4").reduce(module(), DATA["solution"])
        outs.append(([s.what for s in red.steps], calls))
    assert outs[0] == outs[1]


def test_a_case_that_does_not_fail_the_recorded_way_is_left_as_it_is():
    run, _ = fake(lambda _m, _s: False)
    red = Reducer(DATA, run, lambda _m: "1").reduce(module(), DATA["solution"])
    assert red.result is None and red.steps[0].detail == "passes" and red.module.ops() == module().ops()


def test_only_failures_a_run_shows_can_be_reduced():
    with pytest.raises(ValueError, match="a failure of kind .assertion. cannot be reduced"):
        Reducer(dict(DATA, kind="assertion"), None, None)


def test_the_budget_stops_it_with_what_held():
    run, calls = fake(k_tail)
    red = Reducer(DATA, run, lambda _m: "x", budget_s=0.0).reduce(module(), DATA["solution"])
    assert red.out_of_budget and red.module.ops() == module().ops() and len(calls) == 1


@pytest.mark.slow
def test_a_planted_failure_reduces_and_its_reproducer_fails_only_with_the_fault(tmp_path):
    """The issue's acceptance: a 4-op module with odd sizes, a planted fault; reduced to <= 2 ops and small dims
    on the same failure class; the reduced reproducer fails with the fault and passes without it."""
    from pytest_mlirtrace._internal import engine, repro

    pipe = engine.Pipeline(DEVICE, inject="k_tail_off_by_one", timeout_s=30, database=engine.MemoryDatabase())
    res = pipe.run(module(), seed=3)
    assert res.status == "wrong"
    rec = repro.FailureRecord.from_run(res, origin="test", timeout_s=30, inject="k_tail_off_by_one",
                                       device_info=pipe.device)
    orig = repro.ReproWriter(tmp_path / "r").write(rec)
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "reduce", str(orig.script_path),
                        "--budget", "240"], capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stdout + p.stderr
    new = [Path(x.strip()) for x in p.stdout.splitlines() if x.strip().endswith(".py")]
    assert new and new[0] != orig.script_path, p.stdout
    data = repro.writer.read_payload(new[0])
    m = ir.parse_module(data["module_text"])
    assert len([o for o in m.ops() if o not in ir.VIEW_OPS]) <= 2, m.ops()
    assert all(d <= 3 for prm in m.params() for d in prm.shape.lens), str(m)
    assert failure_class(data["kind"], data["error"], data["solution"]) == failure_class(
        rec.kind, rec.error, rec.span.solution)
    ticket = new[0].with_suffix(".md").read_text()
    assert "## Reduced" in ticket and "dropped mul" in ticket and orig.script_path.name in ticket
    env = {k: v for k, v in __import__("os").environ.items() if k != "MLIRTRACE_INJECT"}
    on = subprocess.run([sys.executable, str(new[0]), "--quiet"], env=dict(env, MLIRTRACE_INJECT="k_tail_off_by_one"),
                        capture_output=True, text=True, timeout=120)
    off = subprocess.run([sys.executable, str(new[0]), "--quiet"], env=env, capture_output=True, text=True, timeout=120)
    assert (on.returncode, off.returncode) == (1, 0), on.stdout + off.stdout
