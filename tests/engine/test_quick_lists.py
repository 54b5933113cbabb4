"""Every quick-list solution of the seed's fused op, f32 and f16, builds, runs and matches the oracle on
this device (a spread of them in the default run, every one with -m slow), whatever CPU PoCL builds for (.ci/run
repeats the suite for a target without AVX-512)."""
from __future__ import annotations

import os

import pytest

from pytest_mlirtrace._internal.engine import Pipeline
from pytest_mlirtrace._internal.trace import load_module

from ..sweeps import SWEEP, spread, tune_part

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


@pytest.mark.parametrize("part", SWEEP)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_every_quick_list_solution_of_the_seed_is_ok(dtype, part, device, tuning_db):
    with open(os.path.join(EXAMPLES, f"seed_transpose_reshape_dot_add_{dtype}.txt"), encoding="utf-8") as f:
        module, mlir_text = load_module(f.read())
    pipe = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="")
    every, tr = tune_part(pipe, module, mlir_text, part, keep=8)
    assert len(every) >= 30
    bad = [(r.solution, r.status, r.detail[:120]) for r in tr.rows if r.status != "ok"]
    assert len(tr.rows) == len(spread(every, part, keep=8))
    assert not bad, f"{len(bad)} of {len(tr.rows)} solutions failed on {device.key_name} " \
                    f"(target {getattr(device, 'target_cpu', '?')}): {bad[:6]}"
