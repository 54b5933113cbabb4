"""End to end: failing tests that use the ``mlirtrace`` fixture leave report sections, junit properties,
one reproducer + one ticket per distinct failure; the reproducers fail while the bug is there and pass
once it is gone."""
from __future__ import annotations

import json

from .plugin_helpers import NASTY_COMMENT, repro_env, run_reproducers

pytest_plugins = ["pytester"]

INNER = '''
import pytest
from mods import DOT_K4, DOT_T, NASTY_MLIR


def test_pass(mlirtrace):
    assert mlirtrace.run(DOT_T).ok


def test_wrong(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)


def test_wrong_again(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=2)


def test_crash(mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "crash")
    mlirtrace.run(DOT_T)


def test_hang(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "infinite_loop")
    mlirtrace.run(DOT_T, timeout_s=3)


def test_build_error(mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "build_error")
    mlirtrace.run(DOT_T)


def test_slow(mlirtrace):
    mlirtrace.run(DOT_T, max_ms=1e-9)


def test_assertion(mlirtrace):
    res = mlirtrace.run(DOT_T)
    assert res.time_ms < 0, "a plain assertion after a fixture call"


def test_nasty_mlir(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(NASTY_MLIR)


def test_tune(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")
    mlirtrace.tune(DOT_K4, solutions=["1,1,4,1,1,1,0,4", "1,1,8,1,1,1,0,4"])


@pytest.mark.xfail(reason="expected failures write nothing")
def test_xfail(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=3, solution="2,2,4,1,1,1,0,4")
'''

SECTIONS = ["mlirtrace: migraphx module", "mlirtrace: MLIR", "mlirtrace: problem key and solution",
            "mlirtrace: kernel source", "mlirtrace: reproducer"]
KIND_OF = {"test_wrong": "wrong", "test_wrong_again": "wrong", "test_crash": "crash", "test_hang": "hang",
           "test_build_error": "build_error", "test_slow": "slow", "test_assertion": "assertion",
           "test_nasty_mlir": "wrong", "test_tune": "wrong"}


def test_every_failure_kind_leaves_sections_a_reproducer_and_a_ticket(inner):
    inner.makepyfile(test_inner=INNER)
    res = inner.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml", "-rA")
    res.assert_outcomes(passed=1, failed=len(KIND_OF), xfailed=1)
    reports = {r.nodeid.split("::")[-1]: r for r in res.reprec.getreports("pytest_runtest_logreport")
               if r.when == "call"}
    index = {e["signature"]: e for e in json.loads((inner.path / "reproducers" / "INDEX.json").read_text())
             ["reproducers"].values()}
    sigs = {}
    for name, kind in KIND_OF.items():
        rep = reports[name]
        titles = [t for t, _ in rep.sections]
        for want in SECTIONS:
            assert want in titles, (name, want, titles)
        sec = dict(rep.sections)
        props = dict(rep.user_properties)
        sig = props["mlirtrace_signature"]
        assert sig.startswith(kind + "-mlir_transpose_dot-"), (name, sig)
        assert props["mlirtrace_reproducer"].endswith(sig + ".py") and props["mlirtrace_ticket"].endswith(sig + ".md")
        assert sig in sec["mlirtrace: reproducer"] and "--standalone" in sec["mlirtrace: reproducer"]
        assert "-transA true" in sec["mlirtrace: problem key and solution"]
        assert "migraphx.dot" in sec["mlirtrace: MLIR"] and "dot(@2" in sec["mlirtrace: migraphx module"] \
            or name == "test_nasty_mlir"
        assert "__kernel" in sec["mlirtrace: kernel source"]
        assert index[sig]["kind"] == kind
        sigs[name] = sig
    # the benchmark table comes with a tuned test only
    assert "mlirtrace: benchmark table" in dict(reports["test_tune"].sections)
    assert "1,1,8,1,1,1,0,4" in dict(reports["test_tune"].sections)["mlirtrace: benchmark table"]
    assert "mlirtrace: benchmark table" not in dict(reports["test_wrong"].sections)
    # a passing test (and an expected failure) carries nothing
    for r in res.reprec.getreports("pytest_runtest_logreport"):
        if r.nodeid.endswith(("test_pass", "test_xfail")):
            assert not [t for t, _ in r.sections if t.startswith("mlirtrace")] and not r.user_properties
    # two identical failures: one reproducer, count 2
    assert sigs["test_wrong"] == sigs["test_wrong_again"]
    assert index[sigs["test_wrong"]]["count"] == 2
    assert {e["count"] for s, e in index.items() if s != sigs["test_wrong"]} == {1}
    assert len(index) == len(set(sigs.values())) == len(KIND_OF) - 1
    files = sorted(p.name for p in (inner.path / "reproducers").iterdir() if not p.name.startswith("."))
    # each: its reproducer, its ticket and, where it has MLIR, the .mlir file handed off to rocMLIR
    assert files == sorted([f"{s}{ext}" for s in index for ext in (".py", ".md")]
                           + [f"{s}.mlir" for s, e in index.items() if e.get("mlir")] + ["INDEX.json", "INDEX.md"])
    assert sum(bool(e.get("mlir")) for e in index.values()) >= len(index) - 1
    ticket = (inner.path / "reproducers" / f"{sigs['test_wrong']}.md").read_text()
    assert "**Occurrences:** 2 (first: test_inner.py::test_wrong; last: test_inner.py::test_wrong_again)" in ticket
    # the fault was on, and the case passed with it off: planted (checked, not assumed)
    assert "> Planted bug: it fails with the seeded fault `MLIRTRACE_INJECT=wrong_transpose_stride`" in ticket
    assert index[sigs["test_wrong"]]["planted"] is True
    # a tune whose solutions fail the same way: one reproducer, listing each failing solution and those that passed
    tuned = index[sigs["test_tune"]]
    assert (tuned["solutions"], tuned["passed"]) == (["1,1,8,1,1,1,0,4"], ["1,1,4,1,1,1,0,4"])
    tticket = (inner.path / "reproducers" / f"{sigs['test_tune']}.md").read_text()
    assert "**Failing solutions (1; the reproducer runs the first):** `1,1,8,1,1,1,0,4`" in tticket
    assert "**Solutions that passed on the same module (1):** `1,1,4,1,1,1,0,4`" in tticket
    assert all(f"`{x}`" in tticket for x in tuned["solutions"] + tuned["passed"])
    assert ticket.startswith("# [mlirtrace] wrong: mlir_transpose_dot with solution ")
    # junitxml carries the reproducer and the signature
    junit = (inner.path / "junit.xml").read_text()
    assert f'name="mlirtrace_signature" value="{sigs["test_crash"]}"' in junit
    assert 'name="mlirtrace_reproducer"' in junit
    # the terminal summary lists them
    out = res.stdout.str()
    assert "mlirtrace reproducers" in out
    res.stdout.fnmatch_lines([f"new    {sigs['test_wrong']}  reproducers/{sigs['test_wrong']}.py  (count 2: "
                              "test_inner.py::test_wrong, test_inner.py::test_wrong_again)",
                              f"{len(index)} reproducer(s), {len(index)} new, in reproducers/*"])
    # the fail message names the failure and the reproducer
    assert "mlirtrace: hang: mlir_transpose_dot with solution" in reports["test_hang"].longreprtext
    assert "signature: " + sigs["test_hang"] in reports["test_hang"].longreprtext

    # ---- the reproducers: fail while the bug is there, pass once it is gone
    d = inner.path / "reproducers"
    py = {name: d / f"{sig}.py" for name, sig in sigs.items()}
    tmp = inner.path
    jobs = [
        (py["test_wrong"], ["--quiet"], repro_env("wrong_transpose_stride")),         # seeded bug on
        (py["test_wrong"], ["--quiet"], repro_env()),                                 # off
        (py["test_wrong"], ["--standalone"], repro_env()),                            # the recorded kernel
        (py["test_wrong"], ["--quiet"], repro_env(no_package=True, tmp=tmp)),         # package absent
        (py["test_hang"], ["--quiet"], repro_env("infinite_loop")),
        (py["test_hang"], ["--quiet"], repro_env()),
        (py["test_crash"], ["--quiet", "--standalone"], repro_env()),
        (py["test_crash"], ["--quiet"], repro_env()),                  # the compiler never had this bug
        (py["test_build_error"], ["--quiet", "--standalone"], repro_env()),
        (py["test_slow"], ["--quiet"], repro_env()),
        (py["test_assertion"], ["--quiet"], repro_env()),
        (py["test_nasty_mlir"], ["--show-kernel"], repro_env("wrong_transpose_stride")),
    ]
    got = []
    for i in range(0, len(jobs), 2):      # two at a time: two cores, and the hang timeout counts builds too
        got += run_reproducers(jobs[i:i + 2])
    want = [1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 5, 1]    # 5: an assertion reproducer needs its test to judge it
    assert [g.returncode for g in got] == want, "\n\n".join(f"{g.args} -> {g.returncode}\n{g.stdout[-3000:]}"
                                                            for g in got)
    wrong_on, wrong_off, wrong_sa, wrong_nopkg, hang_on, hang_off, crash_sa, crash_pkg, build_sa, slow, \
        assertion, nasty = (g.stdout for g in got)
    assert "REPRODUCED: wrong: output 0:" in wrong_on and "FIXED" in wrong_off
    assert "running: standalone path" in wrong_sa and "REPRODUCED: wrong" in wrong_sa
    assert "==== MLIR ====" in wrong_sa and "==== problem key ====" in wrong_sa
    assert "REPRODUCED: wrong" in wrong_nopkg
    assert "REPRODUCED: hang" in hang_on and "FIXED" in hang_off
    assert "REPRODUCED: crash" in crash_sa and "signal" in crash_sa
    assert "REPRODUCED: build_error" in build_sa
    assert "REPRODUCED: slow: too slow" in slow
    assert "assertion in the test body" in assertion
    assert NASTY_COMMENT in nasty and "REPRODUCED: wrong" in nasty and "kernel source now: the same" in nasty
