"""Shared fixtures of the strategy properties: one pipeline (and its worker pool) for the session."""
from __future__ import annotations

import pytest

from ..settings import DEVICE


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory):
    from pytest_mlirtrace._internal import engine, runtime

    try:
        device = runtime.resolve_device(DEVICE)
    except Exception as e:  # pragma: no cover - no OpenCL here
        pytest.skip(f"no OpenCL device: {e}")
    db = engine.TuningDatabase(tmp_path_factory.mktemp("tuning") / "tuning.json")
    return engine.Pipeline(device, database=db, timeout_s=60.0, inject="")
