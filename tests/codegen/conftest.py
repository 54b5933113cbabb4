"""Codegen tests run kernels through the isolated runtime (worker processes; PoCL CPU by default)."""
from __future__ import annotations

import pytest

from . import cg_ocl as ocl


@pytest.fixture(scope="session")
def cl_pool():
    from pytest_mlirtrace._internal.runtime import DeviceError
    try:
        return ocl.pool()
    except DeviceError as e:  # pragma: no cover - no OpenCL here
        pytest.skip(f"no OpenCL device: {e}")
