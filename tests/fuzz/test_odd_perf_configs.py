"""Perf configs beyond the space (``FuzzOptions.odd_solutions``): drawn in every printed form, refused by a
rule that says why -- counted per rule for the summary -- or kept to be run and checked. No kernel runs."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, find, settings

from pytest_mlirtrace._internal import codegen
from pytest_mlirtrace._internal.fuzz import Fuzzer, FuzzOptions
from pytest_mlirtrace._internal.fuzz.report import summary
from pytest_mlirtrace._internal.fuzz.results import FuzzReport
from pytest_mlirtrace._internal.strategies import fused_cases
from pytest_mlirtrace._internal.strategies.solutions import ODD_FORMS, odd_perf_config

from ..codegen.cg_modules import gemm

FIND = settings(max_examples=2000, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                phases=[Phase.generate])


def _odd(case):
    sols = case[1] if isinstance(case[1], list) else [case[1]]
    return [s for s in sols if isinstance(s, str)]


def test_every_printed_form_is_drawn():
    cases = fused_cases(kinds=("gemm",), max_dim=8, max_elements=256, odd_solutions=True, max_solutions=2)
    for form in ODD_FORMS:
        c = find(cases, lambda c, form=form: any(s.startswith(form) and (form or ":" not in s) for s in _odd(c)),
                 settings=FIND)
        text = _odd(c)[0]
        assert len(text.split(":")[-1].split(",")) in (7, 8, 9), text   # a gemm config, a field more or fewer


def test_off_no_string_is_drawn():
    cases = fused_cases(kinds=("gemm", "pointwise"), max_dim=8, max_elements=256, max_solutions=2)
    try:
        find(cases, lambda c: bool(_odd(c)), settings=settings(FIND, max_examples=300))
    except Exception as e:   # hypothesis.errors.NoSuchExample
        assert type(e).__name__ == "NoSuchExample"
    else:
        raise AssertionError("an odd perf config was drawn with odd_solutions off")


def test_a_refused_config_is_counted_under_its_rule_and_a_taken_one_is_kept():
    fz = Fuzzer(FuzzOptions(database=None))
    p = codegen.problem_of(gemm(8, 24, 8))
    base = codegen.default_solution(p, fz.device).values
    bad_n = odd_perf_config("gemm", base, [(1, 7)], 2, 0)          # NPerBlock 3: no multiple of NPerThread
    short = odd_perf_config("gemm", base, [], 3, -1)               # v3: one field fewer
    fine = odd_perf_config("gemm", base, [], 4, 0)                 # v4: the default solution itself
    assert bad_n.startswith("v2:") and short.startswith("v3:") and fine.startswith("v4:")
    assert "NPerBlock" in fz.cases.refusal(p, bad_n)
    assert fz.cases.keep_applicable(p, [bad_n, short, fine]) == [fine]
    assert fz.stats.odd_drawn == 3 and fz.stats.odd_refused == {"NPerBlock": 1, "field count": 1}
    # the same problem and configs checked again (a replay, a shrink step) are not new draws
    assert fz.cases.keep_applicable(p, [bad_n, fine]) == [fine]
    assert fz.stats.odd_drawn == 3 and fz.stats.odd_refused == {"NPerBlock": 1, "field count": 1}
    line = next(x for x in summary(FuzzReport(fz.stats, []), 1).splitlines() if x.startswith("perf configs"))
    assert line.startswith("perf configs beyond the space: 3 drawn, 1 run and checked, 2 refused"), line
    # with the fault that drops the rule, the odd config goes through (to be run: a planted wrong result)
    fz2 = Fuzzer(FuzzOptions(database=None, inject="odd_perf_config"))
    assert fz2.cases.refusal(p, bad_n) is None
