"""Function arguments with zero (broadcast), padded and permuted strides run and match the numpy oracle.

A ``!migraphx.shaped`` argument is a buffer laid out at its strides: along a stride-0 dim every index
reads the one stored element.  The inputs (``ir.random_inputs``) hold exactly what that layout can hold,
``codegen.pack_input`` lays them out, the kernel loads them at the strides, and every quick-list solution
is checked against the oracle on fresh random inputs, in isolated workers (nothing runs OpenCL here).
"""
from __future__ import annotations

import numpy as np
import pytest

from pytest_mlirtrace._internal import codegen, ir
from pytest_mlirtrace._internal.mlir import parse_mlir_module
from pytest_mlirtrace._internal.vocab import Status

from ..settings import DEVICE
from ..sweeps import SWEEP, tune_part

DOT = """func.func @mlir_dot(%a: !migraphx.shaped<4x16x8xDT, 128x8x1>, %w: !migraphx.shaped<4x8x32xDT, WS>) \
-> !migraphx.shaped<4x16x32xDT, 512x32x1> attributes {kernel = "mixr"} {
  %0 = migraphx.dot %a, %w : <4x16x8xDT, 128x8x1>, <4x8x32xDT, WS> -> <4x16x32xDT, 512x32x1>
  return %0 : !migraphx.shaped<4x16x32xDT, 512x32x1>
}
"""
ADD = """func.func @mlir_add(%a: !migraphx.shaped<4x8x32xDT, 256x32x1>, %b: !migraphx.shaped<4x8x32xDT, WS>) \
-> !migraphx.shaped<4x8x32xDT, 256x32x1> attributes {kernel = "mixr"} {
  %0 = migraphx.add %a, %b : <4x8x32xDT, 256x32x1>, <4x8x32xDT, WS> -> <4x8x32xDT, 256x32x1>
  %1 = migraphx.mul %0, %b : <4x8x32xDT, 256x32x1>, <4x8x32xDT, WS> -> <4x8x32xDT, 256x32x1>
  return %1 : !migraphx.shaped<4x8x32xDT, 256x32x1>
}
"""
STRIDES = {"zero": "0x32x1", "zero_middle": "256x0x1", "padded": "320x40x1", "permuted": "256x1x8",
           "contiguous": "256x32x1"}


@pytest.fixture(scope="module")
def device():
    from pytest_mlirtrace._internal.runtime import resolve_device

    return resolve_device(DEVICE)


@pytest.fixture
def tuning_db(tmp_path):
    from pytest_mlirtrace._internal.engine import TuningDatabase

    return TuningDatabase(tmp_path / "tuning.json")


def _module(template: str, strides: str, dt: str = "f16"):
    text = template.replace("WS", strides).replace("DT", dt)
    return parse_mlir_module(text, "strides.mlir"), text


def test_random_inputs_hold_what_the_layout_holds():
    m, _ = _module(DOT, STRIDES["zero"])
    w = ir.random_inputs(m, seed=4)["x1"]
    assert w.shape == (4, 8, 32)
    assert all(np.array_equal(w[i], w[0]) for i in range(4))     # one stored value along the stride-0 dim
    assert not np.array_equal(w[0, 0], w[0, 1])                  # the other dims stay random
    p, _ = _module(DOT, STRIDES["padded"])
    assert len(np.unique(ir.random_inputs(p, seed=4)["x1"])) > 500


def test_packing_refuses_values_its_layout_cannot_hold():
    binding = codegen.ArgBinding("input", "w", dtype="f16", param="x1", lens=(4, 8, 32), strides=(0, 32, 1),
                                 elements=256)
    varying = np.random.default_rng(0).uniform(-1, 1, (4, 8, 32))
    with pytest.raises(ValueError, match="differ along them"):
        codegen.pack_input(binding, varying)
    held = ir.reference.as_laid_out(varying.astype(np.float16), (4, 8, 32), (0, 32, 1))
    buf = codegen.pack_input(binding, held)
    assert np.array_equal(buf.reshape(8, 32), held[0])


@pytest.mark.parametrize("part", SWEEP)
@pytest.mark.parametrize("kind", ["zero", "zero_middle", "padded", "permuted", "contiguous"])
def test_dot_with_strided_weight_matches_the_oracle_with_every_solution(kind, part, device, tuning_db):
    from pytest_mlirtrace._internal.engine import Pipeline

    module, text = _module(DOT, STRIDES[kind])
    pipe = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="", seed=23)
    _every, tr = tune_part(pipe, module, text, part)
    bad = [(r.solution, r.status, r.detail[:160]) for r in tr.rows if r.status != Status.OK]
    assert tr.rows and not bad, f"{len(bad)} of {len(tr.rows)} solutions failed: {bad[:4]}"


@pytest.mark.parametrize("kind", ["zero", "padded", "permuted"])
@pytest.mark.parametrize("dt", ["f32", "f16"])
def test_pointwise_with_strided_argument_matches_the_oracle(kind, dt, device, tuning_db):
    from pytest_mlirtrace._internal.engine import Pipeline

    module, text = _module(ADD, STRIDES[kind], dt)
    inputs = ir.random_inputs(module, 31)
    [ref] = ir.evaluate(module, inputs)
    res = Pipeline(device, database=tuning_db, inject="").run(module, mlir_text=text, inputs=inputs)
    assert res.status == Status.OK, res.detail
    tol = dict(f32=1e-5, f16=2e-3)[dt]
    np.testing.assert_allclose(np.asarray(res.outputs[0], np.float64), np.asarray(ref, np.float64),
                               rtol=tol, atol=tol)
