"""Codegen tests run kernels in-process on the first OpenCL device (PoCL CPU by default)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import cg_ocl as ocl  # noqa: E402

ocl.ensure_env()


@pytest.fixture(scope="session")
def cl_ctx():
    try:
        import pyopencl  # noqa: F401
        return ocl.context()
    except Exception as e:  # pragma: no cover - no OpenCL here
        pytest.skip(f"no OpenCL device: {e}")
