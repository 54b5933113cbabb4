"""The fuzz engine's bookkeeping, with the kernels' verdicts simulated (no kernel runs: the Fuzzer is given a
pipeline that simulates them): two bugs that fail the same way (both wrong gemm results) are both reported,
each with its own signature; a way already reported is shrunk again only now and then; every record carries
the full hang limit."""
from __future__ import annotations

import threading

import pytest

from pytest_mlirtrace._internal import codegen, engine
from pytest_mlirtrace._internal.fuzz import Fuzzer, FuzzOptions
from pytest_mlirtrace._internal.repro import signature


def case_signature(rec) -> str:
    """The signature that decides whether two shrunk cases are one bug (one fuzz run: one fault setting)."""
    return signature(rec, faults=False)


def _bugs(module, problem):
    """Which planted bugs a case hits: A, a transposed operand of the dot; B, a contraction of 5 or more."""
    hit = []
    if "transpose" in module.ops():
        hit.append("A")
    if problem.kind == "gemm" and getattr(problem, "k", 0) >= 5:
        hit.append("B")
    return hit


class Simulation(dict):
    """The calls the simulated kernels saw (``n``, ``timeouts``, ``threads``) and ``pipeline``: the pipeline
    class to give the Fuzzer (its lanes, the planted check and the evidence runs all run on it)."""
    pipeline: type


@pytest.fixture
def simulated():
    calls = Simulation(n=0, timeouts=set(), threads=set())

    class SimulatedPipeline(engine.Pipeline):
        def run(self, module, *, solution=None, seed=None, mlir_text=None, **_kw):
            calls["n"] += 1
            calls["threads"].add(threading.current_thread().name)
            calls["timeouts"].add((self.timeout_s, self.build_timeout_s))
            low = self.lower_module(module, mlir_text)
            sol = engine.parse_solution(low.problem, solution) if isinstance(solution, str) else solution
            c = self._lower(low, sol, None)
            hit = _bugs(module, low.problem)
            if not hit or c.status != "ok":
                return engine.RunResult(c, c.status, detail=c.error, seed=seed or 0)
            detail = f"output 0: 3/9 elements differ (planted bug {hit[0]})"
            c.status, c.error = "wrong", detail
            return engine.RunResult(c, "wrong", detail=detail, seed=seed or 0)

        def prebuild(self, _module, _sols, mlir_text=None):     # noqa: ARG002 - Pipeline.prebuild's signature
            return None

    calls.pipeline = SimulatedPipeline
    return calls


@pytest.mark.slow   # 20-45 s: run by .ci/run's slow pass, kept out of the default ~10 min
@pytest.mark.parametrize("jobs", [1, 2])     # 2: two campaigns at once, a thread and a lane each
def test_two_bugs_of_one_way_are_both_reported(simulated, tmp_path, jobs):
    o = FuzzOptions(budget_s=45, seed=3, repro_dir=str(tmp_path / "r"), database=None, jobs=jobs, campaigns=jobs,
                    kinds=("gemm",),
                    max_dim=8, verify=False, timeout_s=7.0, compile_timeout_s=33.0, shrink_budget_s=12,
                    long_reductions=False)
    # (without long reductions: a long K is its own shrink minimum -- K = a quarter of the element cap, the other
    # dims 1 -- since turning the long flag off with every dim at 1 gives K = 1, no bug B)
    fz = Fuzzer(o, pipeline=simulated.pipeline)
    rep = fz.run()
    ways = {f.way for f in rep.findings}
    assert ways == {"wrong/gemm"}, [f.way for f in rep.findings]
    causes = {_bugs(f.module, codegen.problem_of(f.module))[0] for f in rep.findings}
    assert causes == {"A", "B"}, [(f.module.ops(), f.error) for f in rep.findings]
    sigs = [case_signature(f.record) for f in rep.findings]
    assert len(set(sigs)) == len(sigs)          # never the same bug written twice
    # shrunk: B to a plain dot (no transpose), A to a transposed operand with a short contraction
    b = next(f for f in rep.findings if "transpose" not in f.module.ops())
    assert codegen.problem_of(b.module).k == 5, b.module.ops()
    assert fz.stats.reshrinks >= 1
    # the cases ran with the full limits, and the records carry them
    # (the writer's evidence runs -- the kernel rebuilt with -cl-opt-disable -- use the record's limit too)
    assert (7.0, 33.0) in simulated["timeouts"] and {t for t, _ in simulated["timeouts"]} == {7.0}
    assert all(f.record.timeout_s == 7.0 for f in rep.findings)


@pytest.mark.slow   # 20-45 s: run by .ci/run's slow pass, kept out of the default ~10 min
def test_a_known_way_is_shrunk_again_less_and_less_often(simulated, tmp_path, monkeypatch):
    """One bug only (B): after it is written, re-shrinks of its way end at its own signature (repeats), and
    each repeat doubles the failures to wait before the next."""
    monkeypatch.setattr("tests.fuzz.test_fuzz_engine._bugs",
                        lambda _m, p: ["B"] if p.kind == "gemm" and getattr(p, "k", 0) >= 5 else [])
    o = FuzzOptions(budget_s=35, seed=4, repro_dir=str(tmp_path / "r"), database=None, jobs=1, kinds=("gemm",),
                    max_dim=8, verify=False, shrink_budget_s=10)
    fz = Fuzzer(o, pipeline=simulated.pipeline)
    rep = fz.run()
    assert len(rep.findings) == 1, [f.module.ops() for f in rep.findings]
    kw = fz.known["wrong/gemm"]
    assert fz.stats.repeats == fz.stats.reshrinks or fz.stats.reshrinks - fz.stats.repeats <= 1
    if fz.stats.repeats:
        assert kw.next_try >= 2 ** fz.stats.repeats * 3


def test_two_campaigns_at_once_each_on_its_own_thread_write_one_bug_once(simulated, tmp_path, monkeypatch):
    """Two Hypothesis campaigns run side by side, each drawing and checking its own cases; a bug both
    meet is shrunk by one of them at a time and written once."""
    monkeypatch.setattr("tests.fuzz.test_fuzz_engine._bugs",
                        lambda _m, p: ["B"] if p.kind == "gemm" and getattr(p, "k", 0) >= 5 else [])
    o = FuzzOptions(budget_s=12, seed=2, repro_dir=str(tmp_path / "r"), database=None, jobs=2, campaigns=2,
                    kinds=("gemm",),
                    max_dim=8, verify=False, shrink_budget_s=6, long_reductions=False)
    fz = Fuzzer(o, pipeline=simulated.pipeline)
    assert (fz.campaigns, fz.lanes_per_campaign) == (2, 1)
    rep = fz.run()
    assert {"fuzz-campaign-0", "fuzz-campaign-1"} <= simulated["threads"], simulated["threads"]
    assert rep.stats.campaigns >= 2
    assert len(rep.findings) == 1, [(f.module.ops(), f.error) for f in rep.findings]
    assert codegen.problem_of(rep.findings[0].module).k == 5


def test_a_parser_bug_is_found_through_the_text_round_trip(simulated, monkeypatch, tmp_path):
    """A planted parser bug (MLIR with shaped types loses a reduce's axes): every case goes through the texts,
    so the fuzz finds it, shrinks it to a reduction and writes it up, before any kernel is built."""
    from pytest_mlirtrace._internal import mlir
    from pytest_mlirtrace._internal.fuzz import engine as fe

    real = mlir.parse_mlir_module

    def buggy(text, *a, **kw):
        m = real(text, *a, **kw)
        if "!migraphx.shaped" in text:
            for ins in m.instructions:
                if ins.op.startswith("reduce_") and len(ins.attrs.get("axes", [])) > 0:
                    ins.attrs["axes"] = list(ins.attrs["axes"])[:-1] + [0]
        return m

    monkeypatch.setattr(mlir, "parse_mlir_module", buggy)
    monkeypatch.setattr("tests.fuzz.test_fuzz_engine._bugs", lambda _m, _p: [])     # the kernels are all right
    o = FuzzOptions(budget_s=25, seed=1, repro_dir=str(tmp_path / "r"), database=None, jobs=1,
                    kinds=("pointwise", "reduce"), max_dim=6, verify=False, shrink_budget_s=10, max_findings=1)
    rep = Fuzzer(o, pipeline=simulated.pipeline).run()
    assert rep.findings, "the parser bug went unnoticed"
    f = rep.findings[0]
    assert f.kind == "internal" and "MLIR (shaped types) parses back to another module" in f.error, f.error
    assert [o for o in f.module.ops() if o.startswith("reduce_")], f.module.ops()
    assert len(f.module.ops()) <= 2, f.module.ops()
    assert f.path.endswith(".txt")
    assert fe.RoundTripError.__name__ in f.error


def test_without_the_round_trip_the_in_memory_module_is_compiled(simulated, tmp_path):
    o = FuzzOptions(budget_s=5, seed=1, repro_dir=str(tmp_path / "r"), database=None, jobs=1, kinds=("pointwise",),
                    max_dim=4, verify=False, round_trip=False)
    rep = Fuzzer(o, pipeline=simulated.pipeline).run()
    assert rep.stats.cases > 0 and simulated["n"] > 0


def test_past_the_budget_and_its_write_grace_a_finding_is_written_unchecked(simulated, tmp_path, monkeypatch):
    """No reproducer is started once the budget plus its write grace is spent: the finding is written with a
    note saying it was not run alone, and nothing is called planted or not."""
    started = []
    monkeypatch.setattr("pytest_mlirtrace._internal.repro.launch.run_group_output",
                        lambda *a, **_k: started.append(a) or (0, ""))
    # (the shrink may take longer than the budget: what was found is written once the budget runs out)
    o = FuzzOptions(budget_s=4, seed=3, repro_dir=str(tmp_path / "r"), database=None, jobs=1, kinds=("gemm",),
                    max_dim=8, verify=True, write_grace_s=0.0, shrink_budget_s=100)
    rep = Fuzzer(o, pipeline=simulated.pipeline).run()
    assert rep.findings and not started
    f = rep.findings[-1]
    assert "not run alone in a fresh process" in f.note and "write grace (0 s)" in f.note
    assert f.record.planted is None


def test_an_examples_solutions_are_dealt_to_the_lanes_and_come_back_in_their_order(simulated, tmp_path):
    """Each lane gets every other solution and builds its share in one request (Pipeline.prebuild); the
    results come back in the solutions' order, each solution once per seed."""
    from pytest_mlirtrace._internal import ir

    m = ir.Module()     # no transpose, K < 5: no planted bug (every seed runs)
    m.add_return(m.add("dot", m.add_param("a", "f32", [1, 8, 4]), m.add_param("b", "f32", [1, 4, 8])))
    shares = []

    class Sharing(simulated.pipeline):
        def prebuild(self, _module, sols, mlir_text=None):     # noqa: ARG002 - Pipeline.prebuild's signature
            shares.append((id(self), [str(s) for s in sols]))

    fz = Fuzzer(FuzzOptions(budget_s=60, seed=1, repro_dir=str(tmp_path / "r"), database=None, jobs=2, verify=False,
                            campaigns=1), pipeline=Sharing)
    try:
        fz.state.start_clock()
        fz.open()
        sols = ["8,8,8,4,4,4,0,4", "16,8,8,2,8,8,0,4", "4,8,4,4,8,8,0,4"]
        out = fz.run_case(m, sols, 7)
    finally:
        fz.close()
    assert [str(s) for s, _ in out] == [s for s in sols for _ in range(2)]
    assert [r.seed for _, r in out] == [7, 8] * 3
    assert [sh for _, sh in shares] == [[sols[0], sols[2]]]      # the lane with one solution builds it as it runs


@pytest.mark.parametrize("build,jobs,asked,want", [("fast", 2, 0, 2), ("full", 2, 0, 1), ("full", 2, 2, 2),
                                                   ("fast", 1, 0, 1), ("fast", 2, 5, 2)])
def test_campaigns_default_to_one_per_lane_with_fast_builds_only(tmp_path, build, jobs, asked, want):
    fz = Fuzzer(FuzzOptions(budget_s=1, repro_dir=str(tmp_path / "r"), database=None, jobs=jobs, build=build,
                            campaigns=asked))
    try:
        assert (fz.campaigns, fz.lanes_per_campaign) == (want, jobs // want)
    finally:
        fz.close()
