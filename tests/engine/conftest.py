import pytest

from pytest_mlirtrace._internal.ir import Module
from pytest_mlirtrace._internal.ir.examples import seed_module


@pytest.fixture(scope="session")
def device():
    from pytest_mlirtrace._internal.config import resolve
    from pytest_mlirtrace._internal.runtime import resolve_device

    return resolve_device(resolve().device)     # the device setting, as a front end resolves it


@pytest.fixture
def tuning_db(tmp_path):
    from pytest_mlirtrace._internal.engine import TuningDatabase

    return TuningDatabase(tmp_path / "tuning.json")


def seed_like(dt: str = "f32", heads: int = 12, seq: int = 384, hd: int = 64, n: int = 768) -> Module:
    """The seed's fused op (transpose -> reshape -> dot -> add), sizes adjustable."""
    return seed_module(dt, heads=heads, seq=seq, hd=hd, n=n)
