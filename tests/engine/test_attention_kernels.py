"""Two fused gemms (attention, gemm-gemm), a gemm fused with a reduction, multi-output modules -- through the
real pipeline (isolated workers), checked against the numpy oracle on fresh random inputs -- and the real
programs of that kind in ../shared/corpus/rocmlir."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_mlirtrace._internal import codegen, ir, mlir
from pytest_mlirtrace._internal.engine import Pipeline
from pytest_mlirtrace._internal.trace import load_module

from ..corpus import ROCMLIR
from ..sweeps import spread, sweep_cases, tune_part

DATA = Path(__file__).resolve().parents[1] / "data" / "attention"
ALL = sorted(p.name for p in DATA.glob("*.mlir"))
QUICK = ["decomposed_softmax_f16.mlir", "kv_cache_mask_f32.mlir", "gemm_two_outputs_f32.mlir",
         "causal_offset_f32.mlir"]


def _load(name: str):
    return load_module((DATA / name).read_text(encoding="utf-8"))


KINDS = {  # what each test module is, as the code generator sees it
    "causal_offset_f32.mlir": ("attention", "attention"),
    "split_kv_lse_f32.mlir": ("attention", "attention"),
    "conv_gemm_f32.mlir": ("attention", "conv_gemm"),
    "variance_two_reductions_f32.mlir": ("reduce", "reduce"),
    "decomposed_softmax_f16.mlir": ("attention", "attention"),
    "gqa_bias_f16.mlir": ("attention", "attention"),
    "kv_cache_mask_f32.mlir": ("attention", "attention"),
    "gemm_relu_bias_gemm_f16.mlir": ("attention", "gemm_gemm"),
    "dot_reduce_max_rows_f32.mlir": ("reduce", "reduce"),
    "dot_softmax_f16.mlir": ("softmax", "softmax"),
    "gemm_two_outputs_f32.mlir": ("gemm", "gemm"),
    "pointwise_two_outputs_f16.mlir": ("pointwise", "pointwise"),
}


def test_every_module_is_listed():
    assert set(ALL) == set(KINDS)


@pytest.mark.parametrize("name", ALL)
def test_kind_and_key(name):
    module, _ = _load(name)
    p = codegen.problem_of(module)
    assert (p.kind, p.key_kind) == KINDS[name]
    if p.key_kind == "attention":
        causal = "true" if name.startswith("causal") else "false"
        lse = "true" if "lse" in name else "false"
        assert f" -causal {causal} -return_lse {lse} -g " in p.key() and "-seq_len_k" in p.key()
    if p.key_kind == "conv_gemm":
        assert p.key() == ("-t f32 -f GNC01 -I NGC01 -transC false -transO false -n 2 -c 3 -H 9 -W 9 -k 8 -y 3 -x 3 "
                           "-p 1 -q 1 -u 2 -v 2 -l 1 -j 1 -g 1 -gemmO 6")
    if p.key_kind == "gemm_gemm":
        assert p.key().endswith("-m 20 -n 28 -k 12 -gemmO 36") and "-transC true" in p.key()


@pytest.mark.parametrize("name,part", sweep_cases(ALL, QUICK))
def test_every_quick_list_solution_is_ok(name, part, device, tuning_db):
    module, mlir_text = _load(name)
    pipe = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="", seed=13)
    every, tr = tune_part(pipe, module, mlir_text, part)
    assert len(every) >= 4
    bad = [(r.solution, r.status, r.detail[:160]) for r in tr.rows if r.status != "ok"]
    assert len(tr.rows) == len(spread(every, part))
    assert not bad, f"{len(bad)} of {len(tr.rows)} solutions failed: {bad[:6]}"


@pytest.mark.parametrize("name", [n for n in ALL if n not in QUICK])
def test_default_solution_matches(name, device, tuning_db):
    module, mlir_text = _load(name)
    res = Pipeline(device, database=tuning_db, inject="").run(module, mlir_text=mlir_text, seed=7)
    assert res.status == "ok", res.detail
    assert len(res.outputs) == len(module.returns())


def test_large_scores_do_not_overflow(device, tuning_db):
    """Scores far beyond exp's f32 range (inputs x 40: scores up to ~1e3): the online softmax subtracts the
    running maximum, so nothing overflows and the result still matches the oracle."""
    module, _ = _load("kv_cache_mask_f32.mlir")
    inputs = ir.random_inputs(module, 21)
    for p in module.params():
        if p.shape.dtype.is_float:
            inputs[p.param] = inputs[p.param] * 40.0
    [ref] = ir.evaluate(module, inputs)
    assert np.isfinite(ref).all() and np.abs(ref).max() > 10
    res = Pipeline(device, database=tuning_db, inject="").run(module, inputs=inputs)
    assert res.status == "ok", res.detail
    assert np.isfinite(res.outputs[0]).all()


def test_split_kv_log_sum_exp(device, tuning_db):
    """The second output of a split-KV attention is each chunk's log-sum-exp of the scores, worked out here
    with numpy from the inputs (not from the oracle), and the first the chunk's softmax-weighted values."""
    module, _ = _load("split_kv_lse_f32.mlir")
    inputs = ir.random_inputs(module, 8)
    q, k, v = (np.asarray(inputs[p.param], np.float64) for p in module.params())
    kc, vc = k.reshape(2, 2, 24, 16), v.reshape(2, 2, 24, 8)
    s = np.einsum("bcqd,bckd->bcqk", q, kc)
    lse = np.log(np.exp(s - s.max(-1, keepdims=True)).sum(-1, keepdims=True)) + s.max(-1, keepdims=True)
    o = np.einsum("bcqk,bckd->bcqd", np.exp(s - lse), vc)
    res = Pipeline(device, database=tuning_db, inject="").run(module, inputs=inputs)
    assert res.status == "ok", res.detail
    np.testing.assert_allclose(res.outputs[1], lse, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res.outputs[0], o, rtol=1e-4, atol=1e-5)


def test_the_mask_matters(device, tuning_db):
    """The kernel follows the mask it is given: the same inputs with the mask inverted give another oracle
    result, and the kernel matches each (so a kernel ignoring the mask could not pass)."""
    module, _ = _load("kv_cache_mask_f32.mlir")
    inputs = ir.random_inputs(module, 5)
    mask = next(p.param for p in module.params() if p.shape.dtype.name == "i8")
    inputs[mask] = (np.arange(inputs[mask].size).reshape(inputs[mask].shape) % 3 != 0).astype(np.int8)
    flipped = dict(inputs, **{mask: (1 - inputs[mask]).astype(np.int8)})
    outs = []
    for ins in (inputs, flipped):
        [ref] = ir.evaluate(module, ins)
        res = Pipeline(device, database=tuning_db, inject="").run(module, inputs=ins)
        assert res.status == "ok", res.detail
        np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-4, atol=1e-5)
        outs.append(ref)
    assert np.abs(outs[0] - outs[1]).max() > 1e-2


def test_causal_masks_are_recognised_by_their_values():
    """-causal true only for a mask that is exactly ``key > query + offset``: the same module with the query
    iota shifted by one more than the keys allow, or with a non-causal pattern, is not causal."""
    from pytest_mlirtrace._internal.codegen.masks import causal_offset

    module, _ = _load("causal_offset_f32.mlir")
    an = codegen.analyse(module)
    assert an.info["causal"] == 6 and causal_offset(an.dag, an.a_root, 3, 4, 10) == 6
    lit = next(i for i in module.instructions if i.op == "@literal" and i.literal.size == 4)
    lit.literal = np.array([6, 8, 7, 9], dtype=lit.literal.dtype)       # no longer one offset for all rows
    assert codegen.analyse(module).info["causal"] is None
    assert "-causal false" in codegen.problem_of(module).key()


@pytest.mark.parametrize("fault,solution,fires", [
    ("softmax_no_rescale", "16,4,4", True),
    ("attention_d_edge", "16,4,4", False),        # D = 20: DPerThread 4 divides it
    ("attention_d_edge", "16,3,1", True),         # ... 3 does not
])
def test_planted_attention_faults(fault, solution, fires, device, tuning_db):
    module, mlir_text = _load("decomposed_softmax_f16.mlir")
    res = Pipeline(device, database=tuning_db, inject=fault).run(module, mlir_text=mlir_text, solution=solution,
                                                                 seed=3)
    assert (res.status != "ok") == fires, (res.status, res.detail[:200])


@pytest.mark.parametrize("name,fires", [("causal_offset_f32.mlir", True), ("kv_cache_mask_f32.mlir", False)])
def test_planted_causal_edge(name, fires, device, tuning_db):
    """causal_edge changes only causal attention (the kv-cache module's mask is a parameter: not causal)."""
    module, mlir_text = _load(name)
    res = Pipeline(device, database=tuning_db, inject="causal_edge").run(module, mlir_text=mlir_text, seed=3)
    assert (res.status == "wrong") == fires, (res.status, res.detail[:200])


# ------------------------------------------------------------------------------------------- the corpus --
#: the corpus programs of this issue's kinds: file -> {func: (kind, key kind)}; each runs and matches
CORPUS = {
    "fusion__pr-e2e__attention__mixr-attention.mlir": {"mlir_attention": ("attention", "attention")},
    "fusion__pr-e2e__attention__mixr-attention-causal.mlir": {"mlir_attention": ("attention", "attention")},
    "fusion__pr-e2e__gemm-gemm__mixr-gemm-gemm.mlir": {"mlir_gemm_gemm": ("attention", "gemm_gemm")},
    "fusion__pr-e2e__gemm-gemm__mixr-gemm-where-gemm.mlir": {"mlir_gemm_where_gemm": ("attention", "gemm_gemm")},
    "Dialect__MIGraphX__integration__mixr-dot-add-reduce-sum.e2e.mlir": {"dot_add_reduce_sum": ("reduce", "reduce")},
    "Dialect__MIGraphX__integration__mixr-dot-add-reduce-sum-f16.e2e.mlir":
        {"dot_add_reduce_sum_f16": ("reduce", "reduce")},
    "fusion__pr-e2e__conv-gemm__mixr-conv1x1-gemm-scale-bias.mlir": {"mlir_conv_gemm": ("attention", "conv_gemm")},
    # two outputs; their multibroadcast's out_lens contradicts its result type, rocMLIR follows the type
    "fusion__e2e__migraphx-multi-output.mlir": {"test_mo": ("gemm", "gemm")},
    "fusion__e2e__multiple-outputs__migraphx-mbcast-two-outputs.mlir": {"test_mo": ("gemm", "gemm")},
    "fusion__e2e__mixr-quantizelinear__mixr-quant-quant-dot-bias-i8.mlir": {"mlir_quantizelinear_i8": ("gemm", "gemm")},
}


@pytest.mark.skipif(not ROCMLIR.is_dir(), reason="../shared/corpus is not here")
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_programs_run_and_match(name, device, tuning_db):
    funcs = [f for f in mlir.parse_mlir((ROCMLIR / name).read_text(encoding="utf-8"), name)
             if f.name in CORPUS[name] and f.ok]
    assert {f.name for f in funcs} == set(CORPUS[name])
    for f in funcs:
        p = codegen.problem_of(f.module)
        assert (p.kind, p.key_kind) == CORPUS[name][f.name]
        res = Pipeline(device, database=tuning_db, inject="").run(f.module, seed=9)
        assert res.status == "ok", f"@{f.name}: {res.detail}"
