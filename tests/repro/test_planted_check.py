"""The one planted check (repro.findings.passes_without_faults): what a rerun with the faults off says."""
from __future__ import annotations

from types import SimpleNamespace

from pytest_mlirtrace._internal.repro.findings import passes_without_faults
from pytest_mlirtrace._internal.repro.rerun import Refused


def _rec(max_ms=None):
    return SimpleNamespace(runner=None, max_ms=max_ms)


def _rerun(result=None, raises=None):
    def rerun(_rec, *, inject, build_options=None):  # noqa: ARG001 - the Rerun protocol
        assert inject == ""                            # the check runs with every fault off
        if raises is not None:
            raise raises
        return result
    return rerun


def test_a_solution_the_rules_refuse_without_the_fault_is_planted():
    # odd_perf_config: the solution only exists with the fault on; a tuner skips it, so it cannot fail
    assert passes_without_faults(_rec(), _rerun(raises=Refused("SolutionError: odd"))) is True


def test_a_case_that_passes_fails_or_cannot_run_without_the_fault():
    assert passes_without_faults(_rec(), _rerun(SimpleNamespace(ok=True, time_ms=1.0))) is True
    assert passes_without_faults(_rec(), _rerun(SimpleNamespace(ok=False, time_ms=None))) is False
    assert passes_without_faults(_rec(), _rerun(None)) is None
    assert passes_without_faults(_rec(), _rerun(raises=RuntimeError("no device"))) is None


def test_a_slow_case_must_also_be_in_time_without_the_fault():
    assert passes_without_faults(_rec(max_ms=2.0), _rerun(SimpleNamespace(ok=True, time_ms=3.0))) is False
    assert passes_without_faults(_rec(max_ms=2.0), _rerun(SimpleNamespace(ok=True, time_ms=1.0))) is True
