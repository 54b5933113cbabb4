"""Sweeps: the default run checks a spread of a list (solutions, cases), ``-m slow`` (.ci/run's slow stage)
checks the whole list -- so the default suite stays within its time on 2 cores and nothing the whole sweep
catches is lost in CI.

    @pytest.mark.parametrize("part", SWEEP)
    def test_every_solution(part, ...):
        every, tr = tune_part(pipeline, module, mlir_text, part)
"""
from __future__ import annotations

import pytest

SWEEP = [pytest.param("spread", id="spread"), pytest.param("all", id="all", marks=pytest.mark.slow)]


def sweep_cases(names, in_default) -> list:
    """``(name, part)`` parameters: a spread and the whole sweep of each name in ``in_default``, the whole
    sweep only (slow) of the others."""
    out = []
    for n in names:
        if n in in_default:
            out += [pytest.param(n, "spread", id=f"{n}-spread"),
                    pytest.param(n, "all", id=f"{n}-all", marks=pytest.mark.slow)]
        else:
            out.append(pytest.param(n, "all", id=f"{n}-all", marks=pytest.mark.slow))
    return out


def spread(items, part: str, keep: int = 6) -> list:
    """``items`` whole (``part == "all"``), else ``keep`` of them: the first, the last and evenly between
    (the same ones every run)."""
    items = list(items)
    if part == "all" or len(items) <= keep:
        return items
    picked = sorted({round(i * (len(items) - 1) / (keep - 1)) for i in range(keep)})
    return [items[i] for i in picked]


def tune_part(pipe, module, mlir_text, part: str, keep: int = 6):
    """``(quick list, tune result)``: ``pipe`` tunes ``module`` on its quick list's ``part`` (a spread of ``keep``,
    or all of it), no tuning database read."""
    from pytest_mlirtrace._internal import codegen

    every = codegen.quick_list(pipe.lower_module(module, mlir_text).problem, pipe.device)
    return every, pipe.tune(module, mlir_text=mlir_text, use_database=False, solutions=spread(every, part, keep))
