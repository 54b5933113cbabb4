"""Quantized programs through the real pipeline (isolated workers, oracle check on fresh random inputs): rocMLIR's
quantizelinear -> quant_dot test program and the 2023 MIGraphX trace's quant_convolution -> dequantizelinear ->
quantizelinear module tune clean with every quick-list solution."""
from __future__ import annotations

import pytest

from pytest_mlirtrace._internal.engine import Pipeline
from pytest_mlirtrace._internal.mlir import parse_mlir
from pytest_mlirtrace._internal.trace import load_module

from ..corpus import ROCMLIR, TRACES


def _tune_all_ok(module, mlir_text, device, tuning_db):
    tr = Pipeline(device, database=tuning_db, warmup=0, repeats=1, inject="", seed=13).tune(
        module, mlir_text=mlir_text, use_database=False)
    bad = [(r.solution, r.status, r.detail[:160]) for r in tr.rows if r.status != "ok"]
    assert tr.rows and not bad, f"{len(bad)} of {len(tr.rows)} solutions failed: {bad[:6]}"


@pytest.mark.skipif(not ROCMLIR.is_dir(), reason="no corpus")
def test_corpus_quantizelinear_quant_dot_tunes_clean(device, tuning_db):
    text = (ROCMLIR / "fusion__e2e__mixr-quantizelinear__mixr-quant-quant-dot-bias-i8.mlir").read_text()
    module, mlir_text = load_module(text, "mixr-quant-quant-dot-bias-i8.mlir")
    assert module.ops() == ["quantizelinear", "quant_dot"]
    _tune_all_ok(module, mlir_text, device, tuning_db)


@pytest.mark.skipif(not TRACES.is_dir(), reason="no traces")
def test_trace_quant_conv_dequantize_quantize_tunes_clean(device, tuning_db):
    lines = (TRACES / "020_migraphx-test-gpu-mlir-2023-08-old-tensor-int8.txt").read_text().splitlines()
    text = "\n".join(x for x in lines if not x.startswith("#"))
    f = next(f for f in parse_mlir(text) if f.name == "mlir_quant_convolution_dequantizelinear_quantizelinear")
    assert f.ok, f.reason
    assert f.module.ops() == ["quant_convolution", "dequantizelinear", "quantizelinear"]
    _tune_all_ok(f.module, None, device, tuning_db)
