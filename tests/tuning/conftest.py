import pytest

from pytest_mlirtrace.ir import Module


@pytest.fixture(scope="session")
def device():
    from pytest_mlirtrace.runtime import resolve_device

    return resolve_device(None)


@pytest.fixture
def tuning_db(tmp_path):
    from pytest_mlirtrace.tuning import TuningDatabase

    return TuningDatabase(tmp_path / "tuning.json")


def seed_like(dt: str = "f32", heads: int = 12, seq: int = 384, hd: int = 64, n: int = 768) -> Module:
    """The seed's fused op (transpose -> reshape -> dot -> add), sizes adjustable."""
    k = heads * hd
    m = Module(name="mlir_main:pointwise4")
    y1 = m.add_param("y1.0", dt, [1, k, n])
    x1 = m.add_param("x1", dt, [1, seq, n])
    b = m.add("multibroadcast", y1, out_lens=[1, k, n], out_dyn_dims=[])
    y0 = m.add_param("y0", dt, [1, heads, seq, hd])
    t = m.add("transpose", y0, permutation=[0, 2, 1, 3])
    c = m.add("contiguous", t)
    r = m.add("reshape", c, dims=[0, 0, k])
    c2 = m.add("contiguous", b)
    d = m.add("dot", r, c2)
    a = m.add("add", d, x1)
    m.add_return(a)
    return m
