"""Records from the real pipeline: from_event (the fuzzer's way: no KernelSpec, no device, the fault
read from the kernel) re-lowers for the standalone data; the reproducer runs both paths."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.engine import RunOptions
from pytest_mlirtrace._internal.repro import FailureRecord, ReproWriter, signature

from ..settings import DEVICE

DOT_T = """\
a = @param:a -> float_type, {1, 5, 3}, {15, 3, 1}
b = @param:b -> float_type, {1, 5, 2}, {10, 2, 1}
@2 = transpose[permutation={0, 2, 1}](a) -> float_type, {1, 3, 5}, {15, 1, 3}
@3 = dot(@2,b) -> float_type, {1, 3, 2}, {6, 2, 1}
@4 = @return(@3)
"""


@pytest.fixture
def session(tmp_path, monkeypatch):
    from pytest_mlirtrace._internal.engine import TuningDatabase
    from pytest_mlirtrace._internal.runtime import DeviceError
    from pytest_mlirtrace._internal.trace import TraceConfig, TraceSession

    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    try:
        return TraceSession(DEVICE, config=TraceConfig(), inject="wrong_transpose_stride",
                            database=TuningDatabase(tmp_path / "db.json"))
    except DeviceError as e:  # pragma: no cover - machine without OpenCL
        pytest.skip(f"no OpenCL device: {e}")


def test_from_event_relowers_and_both_paths_reproduce(session, tmp_path):
    res = session.run(DOT_T, seed=3)
    assert res.status == "wrong"
    [ev] = session.log.failures
    rec = FailureRecord.from_event(ev, seed=3, origin="fuzz")
    assert rec.inject == "wrong_transpose_stride"          # read from the kernel, not the environment
    assert rec.spec is None and rec.stage == "run" and rec.kind == "wrong"
    run_rec = FailureRecord.from_run(res, origin="fuzz")
    assert signature(run_rec) == signature(rec) and run_rec.spec is res.compiled.spec
    w = ReproWriter(tmp_path / "r").write(rec)
    env_on = {"MLIRTRACE_INJECT": "wrong_transpose_stride"}
    base = {k: v for k, v in os.environ.items() if k != "MLIRTRACE_INJECT"}
    runs = [subprocess.run([sys.executable, str(w.script_path), "-q", *a], env={**base, **e}, capture_output=True,
                           text=True, timeout=240) for a, e in (([], env_on), ([], {}), (["--standalone"], {}))]
    assert [r.returncode for r in runs] == [1, 0, 1], [r.stdout + r.stderr for r in runs]
    assert "REPRODUCED: wrong" in runs[2].stdout
    ticket = w.ticket_path.read_text()
    # a fault was on, but nobody checked that it caused the failure: not labelled planted
    assert "MLIRTRACE_INJECT=wrong_transpose_stride" in ticket and "was not checked" in ticket
    assert "Planted bug" not in ticket
    # passed with the fault off (as runs[1] just showed): planted; failed with it off too: a real bug,
    # and then the fault is no part of its signature
    rec.planted = True
    w2 = ReproWriter(tmp_path / "r2").write(rec)
    assert "Planted bug" in w2.ticket_path.read_text() and w2.signature == w.signature
    rec.planted = False
    w3 = ReproWriter(tmp_path / "r3").write(rec)
    t3 = w3.ticket_path.read_text()
    assert "**a real bug**" in t3 and "Planted bug" not in t3 and w3.signature != w.signature


def test_from_run_refuses_a_passing_run_and_records_slow(session):
    res = session.run(DOT_T, seed=0, options=RunOptions(inject=""))
    assert res.ok
    with pytest.raises(ValueError):
        FailureRecord.from_run(res)
    rec = FailureRecord.from_run(res, origin="t", max_ms=1e-9)
    assert rec.kind == "slow" and rec.max_ms == 1e-9 and rec.time_ms == res.time_ms and rec.inject == ""
    assert rec.error.startswith("too slow: ")
