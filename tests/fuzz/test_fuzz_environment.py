"""The fuzz stops at an environment failure met mid-run: it raises it (exit 4 in the CLI) and counts
nothing as a finding, however many cases were queued (once 678 worker failures became findings)."""

import pytest

from pytest_mlirtrace._internal import engine, runtime
from pytest_mlirtrace._internal.fuzz import Fuzzer, FuzzOptions


def test_an_environment_failure_mid_fuzz_stops_it_with_no_finding(tmp_path):
    calls = {"n": 0}

    class FailingPipeline(engine.Pipeline):
        def run(self, *a, **kw):
            calls["n"] += 1
            if calls["n"] > 5:      # the first cases run for real, then the workers can no longer start
                raise runtime.EnvironmentFailure("the OpenCL worker for 0:0 could not start: planted")
            return super().run(*a, **kw)

    fz = Fuzzer(FuzzOptions(budget_s=60, seed=5, repro_dir=str(tmp_path / "repros"), database=None, jobs=1,
                            kinds=("pointwise",)), pipeline=FailingPipeline)
    with pytest.raises(runtime.EnvironmentFailure, match="planted"):
        fz.run()
    assert calls["n"] == 6                      # stopped at the first one: no shrinking, no retries
    assert fz.findings == [] and not fz.stats.failures
    assert not (tmp_path / "repros").exists() or not any((tmp_path / "repros").iterdir())
