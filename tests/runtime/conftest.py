"""Fixtures for the runtime layer tests: one shared worker pool per session."""

import os

import pytest

from pytest_mlirtrace._internal.runtime import DeviceError, WorkerPool, resolve_device


@pytest.fixture(scope="session")
def cpu_device():
    try:
        return resolve_device(os.environ.get("MLIRTRACE_TEST_DEVICE", "pocl-cpu"))
    except DeviceError as e:  # pragma: no cover - machine without PoCL
        pytest.skip(f"no PoCL CPU device: {e}")


def is_pocl(device) -> bool:
    return device.key_name == "pocl-cpu"


@pytest.fixture
def pocl_only(cpu_device):
    """For a test of PoCL's own behaviour (its devices' names, its compile at a kernel's first launch, its
    kernel cache): skipped where ``MLIRTRACE_TEST_DEVICE`` names another device."""
    if not is_pocl(cpu_device):
        pytest.skip(f"checks PoCL's own behaviour; the test device is {cpu_device.key_name}")


@pytest.fixture(scope="session")
def pool(cpu_device):
    with WorkerPool(cpu_device, workers=2, timeout_s=30.0) as p:
        yield p


@pytest.fixture
def rng(request):
    """Fresh random inputs every run; the seed is in the test report."""
    import numpy as np
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("rng_seed", seed))
    return np.random.default_rng(seed)
