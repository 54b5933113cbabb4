"""View folding: the index expressions must address exactly what numpy's strided views address."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from pytest_mlirtrace._internal.codegen import expr as E
from pytest_mlirtrace._internal.codegen.element_dag import Builder, index_vars
from pytest_mlirtrace._internal.ir import Module


def test_seed_index_map_is_split_not_materialised():
    i1, i2 = E.var("m", 384), E.var("k", 768)
    lin = i1 * 768 + i2
    off = E.fmod(E.fdiv(lin, 768), 384) * 64 + E.fmod(E.fdiv(lin, 64), 12) * 24576 + E.fmod(lin, 64)
    assert E.to_c(off) == "64*m + 24576*(k/64) + k%64"


def test_simplifier_rules():
    c = E.var("c", 294912)
    assert str(E.fdiv(c, 768) * 768 + E.fmod(E.fdiv(c, 64), 12) * 64 + E.fmod(c, 64)) == "c"
    assert str(E.fdiv(E.fdiv(c, 64), 12)) == "c/768"
    assert str(E.fmod(E.fmod(c, 64), 8)) == "c%8"
    assert str(E.fdiv(c * 4 + 3, 8)) == "c/2"
    assert str(E.fdiv(E.var("j", 5), 8)) == "0"
    assert str(E.var("one", 1) * 7 + 3) == "3"
    # a split of a remainder folds back: 2*((c%4)/2) + c%2 == c%4 (a softmax's row index read through a
    # split-heads view of its last dim)
    assert str(E.fdiv(E.fmod(c, 4), 2) * 2 + E.fmod(c, 2)) == "c%4"
    assert str(E.fdiv(E.fmod(c, 12), 4) * 12 + E.fmod(c, 4) * 3) == "3*(c%12)"
    # C text keeps precedence: a multiplied quotient is parenthesised
    assert E.to_c(E.fdiv(c, 64) * 3) == "3*(c/64)"


def _offsets(module: Module, name: str) -> np.ndarray:
    """Folded storage offset of every element of ``name`` (a pure view chain of one param)."""
    ins = module.get(name)
    idx = index_vars("i", ins.shape.lens)
    b = Builder(module)
    node = b.dag.nodes[b.value(name, idx)]
    grids = np.meshgrid(*[np.arange(n) for n in ins.shape.lens], indexing="ij")
    env = {f"i{d}": g for d, g in enumerate(grids)}
    return np.broadcast_to(np.asarray(E.evaluate(node.offset, env)), ins.shape.lens)


def _numpy_offsets(module: Module, name: str) -> np.ndarray:
    """The same with numpy: a storage of offsets viewed through the param's strides and the views."""
    p = module.params()[0]
    store = np.arange(max(p.shape.element_space, 1), dtype=np.int64)
    env = {p.name: as_strided(store, p.shape.lens, [s * 8 for s in p.shape.strides])}
    for ins in module.instructions:
        if ins.op.startswith("@"):
            continue
        x = env[ins.inputs[0]]
        a = ins.attrs
        if ins.op == "transpose":
            env[ins.name] = x.transpose(a["permutation"])
        elif ins.op in ("reshape", "squeeze", "unsqueeze"):
            env[ins.name] = np.reshape(x, ins.shape.lens)
        elif ins.op == "contiguous":
            env[ins.name] = x
        elif ins.op == "multibroadcast":
            env[ins.name] = np.broadcast_to(x, ins.shape.lens)
        elif ins.op == "slice":
            sl = [slice(None)] * x.ndim
            for ax, s, e in zip(a["axes"], a["starts"], a["ends"], strict=False):
                sl[ax] = slice(s, e)
            env[ins.name] = x[tuple(sl)]
    return env[name]


CHAINS = [
    # (param lens, strides or None, [(op, attrs)])
    ((1, 12, 8, 4), None, [("transpose", dict(permutation=[0, 2, 1, 3])), ("contiguous", {}),
                           ("reshape", dict(dims=[0, 0, 48]))]),
    ((6, 4), None, [("transpose", dict(permutation=[1, 0])), ("reshape", dict(dims=[4, 6]))]),
    ((3, 5, 7), None, [("slice", dict(axes=[1], starts=[1], ends=[4])), ("transpose", dict(permutation=[2, 0, 1])),
                       ("reshape", dict(dims=[7, 9]))]),
    ((4, 1, 6), (6, 6, 1), [("squeeze", dict(axes=[1])), ("unsqueeze", dict(axes=[0])),
                            ("multibroadcast", dict(out_lens=[3, 4, 6])), ("reshape", dict(dims=[12, 6]))]),
    ((5, 8), (16, 2), [("transpose", dict(permutation=[1, 0])), ("reshape", dict(dims=[2, 4, 5])),
                       ("slice", dict(axes=[2], starts=[1], ends=[5]))]),
    ((2, 3, 4), None, [("reshape", dict(dims=[6, 4])), ("transpose", dict(permutation=[1, 0])),
                       ("reshape", dict(dims=[2, 12])), ("transpose", dict(permutation=[1, 0])),
                       ("reshape", dict(dims=[3, 8]))]),
]


@pytest.mark.parametrize("lens,strides,chain", CHAINS)
def test_folded_views_match_numpy(lens, strides, chain):
    m = Module()
    cur = m.add_param("x", "f32", lens, strides)
    for op, attrs in chain:
        cur = m.add(op, cur, **attrs)
    got = _offsets(m, cur)
    want = _numpy_offsets(m, cur)
    assert got.shape == want.shape
    assert np.array_equal(got, want)


def test_random_view_chains_match_numpy():
    rng = np.random.default_rng(3)
    for _trial in range(40):
        rank = int(rng.integers(2, 4))
        lens = [int(rng.integers(1, 5)) for _ in range(rank)]
        m = Module()
        cur = m.add_param("x", "f32", lens)
        for _step in range(int(rng.integers(1, 5))):
            sh = m.get(cur).shape
            choice = rng.integers(0, 4)
            if choice == 0:
                cur = m.add("transpose", cur, permutation=[int(p) for p in rng.permutation(sh.rank)])
            elif choice == 1:
                total = sh.elements
                divs = [d for d in range(1, total + 1) if total % d == 0]
                d = int(rng.choice(divs))
                cur = m.add("reshape", cur, dims=[d, total // d])
            elif choice == 2 and any(n > 1 for n in sh.lens):
                ax = int(next(i for i, n in enumerate(sh.lens) if n > 1))
                cur = m.add("slice", cur, axes=[ax], starts=[1], ends=[sh.lens[ax]])
            else:
                cur = m.add("contiguous", cur)
        assert np.array_equal(_offsets(m, cur), _numpy_offsets(m, cur)), str(m)


def test_index_vars_extent_one_vanish():
    v = index_vars("i", (1, 3))
    assert v[0].is_const and not v[1].is_const
    assert list(itertools.chain(v[1].vars())) == ["i1"]
