"""``mlirtrace fuzz`` finds every planted fault and writes a reproducer that fails while the fault is on
and passes once it is off; a clean tree's short fuzz finds nothing. Run as subprocesses, as a user would.

Every fault runs with ``-m slow`` (the default run finds planted bugs through the fuzz in test_fuzz_cli.py). The
convolution faults (conv_pad_edge, conv_group_stride) must also come out shrunk: a convolution on the
smallest shapes that still show the fault. Fast checks (no kernel runs) that the conv faults change conv
kernels only are here too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.codegen import FAULTS
from pytest_mlirtrace._internal.ir.ops import conv_params
from pytest_mlirtrace._internal.vocab.faults import ATTENTION_FAULTS, CONV_FAULTS, PARSER_FAULTS

# (budget, extra args) per fault: the hang needs a shorter timeout to shrink within its budget
BUDGETS = {
    "wrong_transpose_stride": (60, []),
    "k_tail_off_by_one": (60, []),
    "missing_barrier": (90, []),
    "oob_write_n_edge": (90, []),
    "infinite_loop": (90, ["--timeout", "6"]),
    # measured on the 2-core PoCL machine (seed 1): found after 8-12 s, shrunk to the minimal conv by 30-35 s
    "conv_pad_edge": (90, []),
    "conv_group_stride": (90, []),
    # the value, accumulator, rounding, perf-config and parser faults (`mlirtrace fuzz --budget 120`), ending at
    # the first reproducer. The whole generator for most; the large-value and rounding faults on the kinds that
    # show them (with every kind they were found in one run of two each: BENCHMARKS.md section 4)
    "softmax_no_max": (120, ["--max-findings", "1", "--kinds", "softmax"]),
    "narrow_accumulator": (120, ["--max-findings", "1"]),
    "f2h_truncate": (120, ["--max-findings", "1", "--kinds", "pointwise"]),
    "odd_perf_config": (120, ["--max-findings", "1"]),
    "parse_transpose_inverse": (120, ["--max-findings", "1"]),
    # attention graphs only (--kinds attention): found after 4-6 s, shrunk to dot -> softmax -> dot by ~30 s
    "softmax_no_rescale": (90, ["--kinds", "attention"]),
    "attention_d_edge": (90, ["--kinds", "attention"]),
    "causal_edge": (90, ["--kinds", "attention"]),
}
WRITE_GRACE_S, COMPILE_TIMEOUT_S = 30, 60     # fuzz's defaults (--write-grace, --compile-timeout)
GEMM_OPS = {"dot", "quant_dot"}
CONV_OPS = {"convolution", "quant_convolution"}


def _env(inject: str | None) -> dict:
    env = dict(os.environ)
    env.pop("MLIRTRACE_INJECT", None)
    if inject:
        env["MLIRTRACE_INJECT"] = inject
    env["PYTHONUNBUFFERED"] = "1"
    return env


def fuzz(tmp: Path, inject: str | None, budget: float, *extra: str, seed: int = 1):
    report = tmp / "report.json"
    cmd = [sys.executable, "-m", "pytest_mlirtrace", "fuzz", "--budget", str(budget), "--seed", str(seed),
           "--repro-dir", str(tmp / "repro"), "--database", str(tmp / "db"), "--report", str(report), *extra]
    p = subprocess.run(cmd, cwd=tmp, env=_env(inject), capture_output=True, text=True,
                       timeout=budget + WRITE_GRACE_S + COMPILE_TIMEOUT_S + 120)
    data = json.loads(report.read_text()) if report.exists() else None
    return p, data


def run_repro(script: str, inject: str | None, timeout: float = 180):
    return subprocess.run([sys.executable, script, "--quiet"], env=_env(inject), capture_output=True, text=True,
                          timeout=timeout)


def check_found(tmp: Path, fault: str, *more: str, ops: set | None = ...) -> dict:
    budget, extra = BUDGETS[fault]
    # the fuzz ends at its first reproducer (shrunk and checked before it is written): the budget bounds the
    # search, and a fault found early costs no more than that
    stop = [] if "--max-findings" in (*extra, *more) else ["--max-findings", "1"]
    p, data = fuzz(tmp, fault, budget, *extra, *more, *stop)
    out = p.stdout + p.stderr
    assert data is not None, out
    assert p.returncode == 1, f"exit {p.returncode}, expected 1 (new failure found)\n{out}"
    assert data["findings"], out
    # beyond the budget: one case in flight (a hang at a first launch: the compile limit, then the run's) and
    # the write grace (reproducers run alone: fault on, fault off), and no more
    over = WRITE_GRACE_S + COMPILE_TIMEOUT_S + 10 + 15
    assert data["elapsed_s"] <= budget + over, f"ran {data['elapsed_s']}s on a {budget}s budget"
    # the first finding is the fault (gemm; a conv fault: a convolution); its reproducer fails with the fault and
    # passes without it. (A gemm fault may be found in a convolution too -- it runs on the gemm kernels -- but
    # the budget leaves room for a plain gemm finding as well: a conv is another way to fail.)
    # (a gemm fault found only in a convolution -- an implicit gemm on the same kernels -- counts: with more
    # kinds drawn per run, the budget does not always leave room for a plain dot finding as well)
    if ops is ...:
        ops = CONV_OPS if fault in CONV_FAULTS else GEMM_OPS | CONV_OPS
    gemm = [f for f in data["findings"] if ops is None or ops & set(f["ops"])]
    assert gemm, f"no finding with {sorted(ops)} for {fault}: {data['findings']}"
    f = gemm[0]
    assert f["path"].endswith(".py") and Path(f["path"]).exists()
    assert Path(f["ticket"]).exists()
    on = run_repro(f["path"], fault, timeout=120)
    assert on.returncode != 0, f"reproducer passes with {fault} on:\n{on.stdout}{on.stderr}"
    off = run_repro(f["path"], None, timeout=120)
    assert off.returncode == 0, f"reproducer fails with {fault} off:\n{off.stdout}{off.stderr}"
    # and so the fuzz, which checked that too, calls it planted
    assert "> Planted bug: it fails with the seeded fault" in Path(f["ticket"]).read_text()
    # the summary names the reproducer and the run's numbers
    assert "cases/s" in p.stdout and f["path"] in p.stdout
    assert "fuzz" in p.stderr      # progress went to stderr
    return data


@pytest.mark.slow   # the default run finds planted bugs through the fuzz in tests/fuzz/test_fuzz_cli.py
def test_fuzz_finds_wrong_transpose_stride_and_the_reproducer_fails_only_with_it(tmp_path):
    data = check_found(tmp_path, "wrong_transpose_stride", "--max-findings", "1")
    f = next(f for f in data["findings"] if "dot" in f["ops"])
    assert f["kind"] == "wrong"
    # shrunk: a transposed operand and the dot, small dims
    assert f["ops"].count("dot") == 1 and len(f["ops"]) <= 4, f


#: what each fault of the value/accumulator/rounding/config classes must be found in (an op of the finding)
CLASS_FAULTS = {"softmax_no_max": {"softmax"}, "narrow_accumulator": GEMM_OPS | CONV_OPS,
                "f2h_truncate": None, "odd_perf_config": GEMM_OPS | CONV_OPS}


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(set(FAULTS) - {"wrong_transpose_stride"} - CONV_FAULTS - ATTENTION_FAULTS
                                         - set(CLASS_FAULTS) - PARSER_FAULTS))
def test_fuzz_finds_each_planted_fault(tmp_path, fault):
    check_found(tmp_path, fault)


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(CLASS_FAULTS))
def test_fuzz_finds_each_class_of_fault(tmp_path, fault):
    """A large-value bug (softmax without its max), a narrow accumulator, a rounding-mode bug, an odd-perf-config
    bug: each found by the default generator within 120 s, its reproducer failing with the fault only."""
    check_found(tmp_path, fault, ops=CLASS_FAULTS[fault])


@pytest.mark.slow
def test_fuzz_finds_a_parser_bug_through_the_text_round_trip(tmp_path):
    budget, extra = BUDGETS["parse_transpose_inverse"]
    p, data = fuzz(tmp_path, "parse_transpose_inverse", budget, *extra)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and data and data["findings"], out
    f = data["findings"][0]
    assert f["kind"] == "internal" and "transpose" in f["ops"], f
    text = Path(f["path"]).read_text()
    assert "does not parse back" in text or "parses back to another module" in text, text[:400]
    assert "migraphx.transpose" in text
    # shrunk: the transpose and at most the op its kind needs around it
    assert len(f["ops"]) <= 4, f["ops"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(ATTENTION_FAULTS))
def test_fuzz_finds_each_attention_fault_and_shrinks_it(tmp_path, fault):
    """Found in attention graphs and shrunk to one attention: the two dots and the softmax between them."""
    data = check_found(tmp_path, fault)
    f = next(f for f in data["findings"] if f["ops"].count("dot") == 2)
    assert "softmax" in f["ops"] or {"reduce_max", "reduce_sum"} <= set(f["ops"]), f


def _the_conv(m: ir.Module):
    return next(i for i in m.instructions if i.op in ir.CONV_OPS)


def check_conv_shrunk(finding: dict, fault: str) -> None:
    """A conv fault's finding is a convolution, shrunk: batch 1, tiny channels and image, at most one op besides
    the conv, and what the fault needs (an end padding reached / two groups)."""
    m = ir.parse_module(finding["module"])
    c = _the_conv(m)
    x, w = m.get(c.inputs[0]).shape, m.get(c.inputs[1]).shape
    compute = [o for o in m.ops() if o not in ir.VIEW_OPS]
    assert len(compute) <= 2, finding["module"]
    assert x.lens[0] == 1 and all(n <= 3 for n in x.lens[2:]) and all(n <= 3 for n in w.lens[2:]), finding["module"]
    assert x.lens[1] <= 4 and w.lens[0] <= 4, finding["module"]
    begin, end, stride, dilation, group = conv_params(c, x.rank - 2)
    if fault == "conv_group_stride":
        assert group > 1, finding["module"]
    else:
        assert any(end), finding["module"]


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(CONV_FAULTS))
def test_fuzz_finds_each_conv_fault_and_shrinks_it(tmp_path, fault):
    data = check_found(tmp_path, fault, "--max-findings", "1")
    f = next(f for f in data["findings"] if CONV_OPS & set(f["ops"]))
    assert f["kind"] == "wrong"
    check_conv_shrunk(f, fault)


# ---- the conv faults change conv kernels only (no kernel runs) ------------------------------------------
def _source(module, sol, inject=None) -> str:
    src = codegen.lower(module, sol, inject=inject).source
    return "\n".join(line for line in src.splitlines() if not line.startswith("// injected faults:"))


def test_conv_faults_leave_non_conv_kernels_unchanged():
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from pytest_mlirtrace._internal.strategies import fused_graphs, solution_list

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(fused_graphs(kinds=("gemm", "pointwise", "reduce", "softmax"), max_dim=12, max_elements=1024),
           st.integers(0, 2 ** 16))
    def check(m, pick):
        sols = solution_list(codegen.problem_of(m))
        sol = sols[pick % len(sols)]
        base = _source(m, sol)
        for fault in sorted(CONV_FAULTS):
            assert _source(m, sol, fault) == base, fault

    check()


def _conv(padding, group) -> ir.Module:
    m = ir.Module()
    x = m.add_param("x", "f32", [1, 2 * group, 5, 5])
    w = m.add_param("w", "f32", [6, 2, 3, 3])
    m.add_return(m.add("convolution", x, w, padding=padding, stride=[1, 1], dilation=[1, 1], group=group,
                       padding_mode=0))
    m.verify()
    return m


@pytest.mark.parametrize("pad,group,changes", [
    ([1, 1, 1, 1], 2, {"conv_pad_edge", "conv_group_stride"}),
    ([0, 0, 0, 0], 2, {"conv_group_stride"}),
    # begin padding only: the bound test changes, but no read reaches the end (the fault cannot fire)
    ([1, 1, 0, 0], 2, {"conv_pad_edge", "conv_group_stride"}),
    ([0, 0, 1, 1], 1, {"conv_pad_edge"}),
    ([0, 0, 0, 0], 1, set()),
])
def test_conv_faults_change_the_conv_kernels_they_apply_to(pad, group, changes):
    m = _conv(pad, group)
    for sol in solution_list_for(m):
        base = _source(m, sol)
        for fault in sorted(CONV_FAULTS):
            changed = _source(m, sol, fault) != base
            assert changed == (fault in changes), (fault, pad, group, str(sol))


def solution_list_for(m):
    from pytest_mlirtrace._internal.strategies import solution_list
    sols = solution_list(codegen.problem_of(m))
    # the default, a LocalTiles=1 one and a 1x1 tile: both kernel shapes
    return [sols[0]] + [s for s in sols if s.LocalTiles][:1] + [s for s in sols if s.MPerBlock == 1][:1]


def test_every_planted_fault_has_a_test():
    assert set(FAULTS) <= set(BUDGETS)


@pytest.mark.slow   # 20-45 s: run by .ci/run's slow pass, kept out of the default ~10 min
def test_clean_tree_short_fuzz_finds_nothing(tmp_path):
    p, data = fuzz(tmp_path, None, 20)
    assert p.returncode == 0, p.stdout + p.stderr
    assert data["findings"] == [] and data["failures"] == {}, data
    assert data["cases"] > 0
    assert not (tmp_path / "repro" / "INDEX.json").exists()


@pytest.mark.slow
def test_clean_tree_longer_fuzz_finds_nothing(tmp_path):
    p, data = fuzz(tmp_path, None, 120, "--max-dim", "32", seed=7)
    assert p.returncode == 0, p.stdout + p.stderr
    assert data["findings"] == [], data


@pytest.mark.slow
def test_a_second_run_starts_from_the_database_and_reports_nothing_new(tmp_path):
    # (each run ends at its first reproducer: the second's is the replayed example, or none)
    p1, d1 = fuzz(tmp_path, "k_tail_off_by_one", 60, "--max-findings", "1")
    assert p1.returncode == 1 and d1["findings"], p1.stdout + p1.stderr
    p2, d2 = fuzz(tmp_path, "k_tail_off_by_one", 30, "--max-findings", "1")
    # the replayed example fails at once; its signature is already in the repro dir: not new
    assert d2["findings"] and d2["findings"][0]["first_found_s"] < 10, d2
    assert all(not f["new"] for f in d2["findings"] if f["signature"] == d1["findings"][0]["signature"])
