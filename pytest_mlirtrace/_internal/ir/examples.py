"""Modules worth having at hand: the seed issue's fused op."""
from __future__ import annotations

from .module import Module


def seed_module(dt: str = "f16", g: int = 1, heads: int = 12, seq: int = 384, hd: int = 64,
                n: int | None = None) -> Module:
    """The seed's ``mlir_main:pointwise4``: transpose -> reshape -> dot -> add, as MIGraphX built it.

    With the defaults it prints exactly the 11 lines of the seed's dump; ``g``, ``heads``, ``seq``, ``hd``
    and ``n`` resize it (k = heads * hd).
    """
    k = heads * hd
    n = k if n is None else n
    m = Module(name="mlir_main:pointwise4")
    y1 = m.add_param("y1.0", dt, [g, k, n])
    x1 = m.add_param("x1", dt, [g, seq, n])
    b = m.add("multibroadcast", y1, out_lens=[g, k, n], out_dyn_dims=[])
    y0 = m.add_param("y0", dt, [g, heads, seq, hd])
    t = m.add("transpose", y0, permutation=[0, 2, 1, 3])
    r = m.add("reshape", m.add("contiguous", t), dims=[0, 0, k])
    d = m.add("dot", r, m.add("contiguous", b))
    m.add_return(m.add("add", d, x1))
    return m
