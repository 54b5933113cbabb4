"""Splitting real MIGraphX / rocMLIR trace logs into their parts (``mlirtrace import-trace LOG``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal.ir.shape import Shape
from pytest_mlirtrace._internal.logs import LogError, TraceLogParts, parse_log, parse_perf_config, parse_problem_key
from tests.corpus import ROCMLIR, TRACES

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
SEED = DATA / "seed.log"
CORPUS = TRACES


def _layer_available() -> bool:
    try:
        from pytest_mlirtrace._internal.mlir import parse_mlir  # noqa: F401
    except Exception:
        return False
    return True


LAYERS = [False] + ([True] if _layer_available() else [])


def seed_text() -> str:
    return SEED.read_text()


# ------------------------------------------------------------------ the seed --
@pytest.mark.parametrize("layer", LAYERS, ids=lambda v: "mlir-layer" if v else "scanner")
def test_seed_log_splits_into_dump_mlir_and_benchmark_linked_together(layer):
    p = parse_log(seed_text(), "seed.log", mlir_layer=layer)
    assert isinstance(p, TraceLogParts)
    assert p.n_lines == 29
    assert p.errors_found == [] and p.errors == []

    assert len(p.module_dumps) == 1
    d = p.module_dumps[0]
    assert (d.start_line, d.end_line) == (6, 16)
    assert d.n_instructions == 11 and d.name == "mlir_main:pointwise4" and d.prefix == "mlir_main:pointwise4"
    assert d.module is not None and d.module.target_id and d.parse_error is None and not d.malformed
    assert d.ops[:4] == ["@param", "@param", "multibroadcast", "@param"] and d.ops[-1] == "@return"
    assert d.text.splitlines()[0].startswith("mlir_main:pointwise4:y1.0 = @param:y1.0")

    assert len(p.mlir_modules) == 1
    m = p.mlir_modules[0]
    assert m.name == "mlir_transpose_reshape_dot_add" and m.func_names == [m.name]
    assert (m.start_line, m.end_line) == (20, 29) and m.complete and not m.bare_func
    assert m.kind == "migraphx" and m.syntax == "tensor"
    assert m.runnable and m.why_not is None and m.unsupported == []
    assert m.checked_by == ("mlir" if layer else "scanner")
    assert m.attrs == {"arch": "gfx90a:sramecc+:xnack-", "kernel": "mixr", "num_cu": "110"}
    assert m.arch == "gfx90a:sramecc+:xnack-" and m.num_cu == 110
    assert {"kind": "gemm", "t": "f16", "m": 384, "k": 768, "n": 768, "g": 1} in m.problems
    if layer:
        assert m.parsed and m.modules and m.parse_error is None

    assert len(p.benchmarks) == 1
    b = p.benchmarks[0]
    assert (b.start_line, b.end_line, b.header_line, b.fastest_line) == (1, 2, 1, 2)
    assert b.op == "gpu::mlir_op" and b.n_configs == 36 and b.problem is None and b.solutions == []
    assert b.fastest.raw == "64,64,8,16,64,8,1,1" and b.fastest.version == 1
    assert b.fastest.values == [64, 64, 8, 16, 64, 8, 1, 1] and b.complete

    assert [(o.line, o.kind) for o in p.other] == [(4, "comment"), (18, "comment")]
    assert p.blank_lines == 4

    ln = p.links[0]
    assert (ln.mlir, ln.module, ln.module_reason) == (0, 0, "structural match")
    assert (ln.bench, ln.bench_reason) == (0, "adjacent")
    assert ln.module_score == (3, 3)


def test_seed_summary_and_json():
    p = parse_log(seed_text(), "seed.log", mlir_layer=False)
    s = p.summary()
    assert "1 module dumps, 1 MLIR modules, 1 benchmark blocks" in s
    assert "@mlir_transpose_reshape_dot_add" in s and "module dump 0 (structural match)" in s
    assert "fastest 64,64,8,16,64,8,1,1" in s
    j = json.loads(p.to_json())
    assert j["counts"]["module_dumps"] == 1 and j["counts"]["mlir_modules"] == 1
    assert j["links"]["0"]["module_reason"] == "structural match"
    assert j["benchmarks"][0]["fastest"]["raw"] == "64,64,8,16,64,8,1,1"
    assert "mlir_main:pointwise4:@10 = @return" in j["module_dumps"][0]["module_text"]
    assert j["mlir_modules"][0]["funcs"][0]["name"] == "mlir_transpose_reshape_dot_add"


# -------------------------------------------------------------- the corpus --
def _corpus(prefix: str) -> Path:
    if not CORPUS.is_dir():
        pytest.skip("shared corpus of real traces not present")
    hits = sorted(CORPUS.glob(prefix + "_*.txt"))
    if not hits:
        pytest.skip(f"corpus log {prefix} not present")
    return hits[0]


def _check_003(p):
    assert len(p.benchmarks) == 1 and not p.mlir_modules and not p.module_dumps and not p.errors
    b = p.benchmarks[0]
    assert (b.op, b.n_configs, b.header_line, b.problem_line) == ("gpu::mlir_op", 20, 12, 13)
    k = b.problem
    assert (k.arch, k.num_cu, k.chiplets, k.dtype, k.g, k.m, k.n, k.k) == (
        "gfx908:sramecc+:xnack-", 120, None, "f16", 1, 1, 2304, 768)
    assert k.kind == "gemm" and k.fields["transA"] == "false"
    assert len(b.solutions) == 11 and len(b.timed) == 11 and not b.no_binary and not b.pending
    assert all(s.config.version == 2 and s.config.n_fields == 9 for s in b.solutions)
    assert b.solutions[0].config.raw == "v2:16,64,8,16,16,8,1,1,1" and b.solutions[0].time_ms == 0.0710401
    assert (b.solutions[0].line, b.solutions[0].result_line) == (14, 15)
    assert b.fastest is None and not b.complete          # the excerpt stops mid-list
    assert b.best.config.raw == "v2:64,128,2,64,64,8,1,1,1" and b.best.time_ms == 0.0586641
    assert p.other_kinds() == {"comment": 8, "driver": 3}


def _check_005(p, layer):  # noqa: ARG001 - every check of this table is called as check(p[, layer])
    assert [m.name for m in p.mlir_modules] == ["mlir_convolution", "mlir_dot_add"]
    assert [(m.start_line, m.end_line) for m in p.mlir_modules] == [(9, 14), (15, 21)]
    conv, dot = p.mlir_modules
    assert all(m.syntax == "shaped" and m.complete for m in p.mlir_modules)
    assert conv.runnable and dot.runnable            # convolutions lower (as implicit gemms)
    assert conv.attrs["enable_splitk_for_tuning"] == "true"
    assert not p.errors_found and p.links[0].module is None and p.links[0].bench is None


def _check_007(p):
    assert [e.kind for e in p.errors] == ["invalid_mlir", "crash"]
    e = p.errors[0]
    assert (e.line, e.end_line, e.origin) == (13, 15, "terminate")
    assert e.exception_type == "migraphx::version_2_11_0::exception"
    assert (e.location, e.function, e.detail) == ("mlir.cpp:771", "run_high_level_pipeline", "Disjointed yx or hw!")
    assert e.mlir_op == "rock.conv" and e.context[0][0] == 15
    assert p.errors[1].line == 17 and p.errors[1].message == "Aborted (core dumped)"
    assert not p.mlir_modules and not p.errors_found
    assert p.other_kinds() == {"comment": 8, "prompt": 1, "driver": 3}


def _check_009(p):
    assert len(p.errors) == 7 and [e.line for e in p.errors] == list(range(7, 14))
    assert {(e.kind, e.origin, e.op, e.location, e.function) for e in p.errors} == {
        ("backend_failed", "exception_in", "gpu::mlir_op", "mlir.cpp:754", "run_backend_pipeline")}
    assert p.errors[0].detail == "'linalg.generic' op is infusible with non-`Set` store method"
    assert p.errors[1].detail == "The provided perf config is not valid"
    assert sum("totalLDSSize" in e.detail for e in p.errors) == 5
    assert not p.benchmarks and not p.errors_found


def _check_011(p):
    assert len(p.benchmarks) == 17
    assert [b.start_line for b in p.benchmarks] == list(range(11, 28))
    assert all(b.skipped == 13 and b.op == "gpu::mlir_op" and not b.solutions for b in p.benchmarks)
    assert len(p.module_dumps) == 1
    d = p.module_dumps[0]
    assert (d.name, d.header_line, d.start_line, d.end_line, d.n_instructions) == ("main", 29, 29, 30, 1)
    assert d.ops == ["check_context::migraphx::gpu::context"] and not d.runnable
    assert any("check_context" in u for u in d.unsupported)
    assert p.other_kinds() == {"comment": 7, "driver": 3, "rocblas": 1} and not p.errors_found


def _check_013(p):
    assert len(p.mlir_modules) == 2
    conv, low = p.mlir_modules
    assert (conv.start_line, conv.end_line, conv.syntax, conv.complete) == (8, 13, "tensor", True)
    assert conv.runnable
    assert (low.start_line, low.end_line, low.complete, low.kind) == (15, 20, False, "rock")
    assert low.text.startswith("#map = affine_map")            # the aliases belong to it
    assert "rock dialect (lowered) MLIR" in low.unsupported and low.why_not.startswith("truncated MLIR")
    assert low.name == "mlir_convolution" and low.scan.aliases[:2] == ["#map", "#transform_map"]
    assert [(e.line, "not closed" in e.message) for e in p.errors_found] == [(15, True)]


def _check_015(p):
    assert len(p.mlir_modules) == 1 and len(p.kernel_timings) == 1
    m, t = p.mlir_modules[0], p.kernel_timings[0]
    assert (t.line, t.name, t.time_ms) == (8, "mlir_dot_add_reshape_transpose_b1_m1500_k896_n1152", 0.0557827)
    assert m.name == t.name and m.runnable and m.syntax == "shaped" and (m.start_line, m.end_line) == (10, 19)
    assert m.attrs == {"arch": "", "kernel": "mixr", "num_cu": "0"}
    assert {"kind": "gemm", "t": "f16", "m": 1500, "k": 896, "n": 1152, "g": 1} in m.problems
    assert p.links[0].timings == [0] and not p.errors_found


def _check_017(p):
    assert len(p.module_dumps) == 1 and not p.mlir_modules
    d = p.module_dumps[0]
    assert (d.start_line, d.end_line, d.n_instructions, d.name, d.prefix) == (9, 22, 14, None, None)
    assert d.ops[3:] == ["unsqueeze", "multibroadcast", "reshape", "transpose", "reshape", "dot", "convert",
                         "reduce_max", "multibroadcast", "sub", "exp"]
    assert not d.module.target_id and d.runnable and not p.errors_found


def _check_020(p):
    names = ["mlir_convolution", "mlir_convolution_add_relu", "mlir_quant_dot_add", "mlir_dot_add",
             "mlir_quant_convolution_dequantizelinear_quantizelinear", "mlir_dot_convert", "mlir_dot_where"]
    assert [m.name for m in p.mlir_modules] == names
    assert all(m.syntax == "tensor" and m.complete for m in p.mlir_modules)
    # quantizelinear / dequantizelinear have shape rules (ir.ops): every module of this log runs
    assert [m.runnable for m in p.mlir_modules] == [True] * 7
    assert p.mlir_modules[4].why_not is None
    assert p.mlir_modules[0].start_line == 10 and p.mlir_modules[-1].end_line == 59 and not p.errors_found


def _check_022(p):
    assert [(d.start_line, d.end_line, d.n_instructions) for d in p.module_dumps] == [(10, 12, 3), (14, 21, 8)]
    assert [e.line for e in p.errors_found] == [10, 23]
    assert "x2" in p.errors_found[0].message and "@4" in p.errors_found[0].message
    m = p.mlir_modules[0]
    assert m.name == "mlir_broadcast_dot_add" and not m.complete and not m.runnable
    assert (m.start_line, m.end_line) == (23, 28)
    assert [o.short for o in m.funcs[0].ops] == ["broadcast", "dot", "multibroadcast", "add"]
    assert (p.links[0].module, p.links[0].module_reason) == (1, "structural match")


def _check_024(p):
    assert len(p.code_objects) == 1 and not p.mlir_modules and not p.module_dumps and not p.errors
    co = p.code_objects[0]
    assert (co.start_line, co.end_line, co.n_bytes) == (9, 10, 507)
    assert co.kernel_names == ["mlir_broadcast_dot_add"]
    assert "amdgpu.max_num_vgpr" in co.strings and "_DYNAMIC" in "".join(co.strings)
    assert p.other_kinds() == {"comment": 8} and not p.errors_found


def _check_026(p):
    assert len(p.errors) == 1
    e = p.errors[0]
    assert (e.kind, e.line, e.op, e.location, e.function) == (
        "no_solutions", 12, "gpu::mlir_op", "compile_ops.cpp:154", "add_compiles")
    k = e.problem
    assert (k.arch, k.num_cu, k.kind) == ("gfx1030", 40, "attention")
    assert k.fields["seq_len_q"] == "4096" and k.fields["head_dim_v"] == "64" and k.fields["causal"] == "false"
    assert any(c[1] == "MLIR Fused Kernel:" for c in e.context)
    m = p.mlir_modules[0]
    assert (m.start_line, m.complete) == (12, False) and m.name.startswith("mlir_slice_reshape_transpose")
    assert m.name.endswith("_div_convert_dot") and m.funcs[0].args[0].lens == (2, 4096, 2304)
    assert [e.line for e in p.errors_found] == [12]
    assert (p.links[0].error, p.links[0].error_reason) == (0, "adjacent")
    assert p.other_kinds() == {"comment": 9, "text": 1}


def _check_028(p):
    assert len(p.errors) == 1
    e = p.errors[0]
    assert (e.kind, e.line, e.location, e.function) == ("no_valid_tuned", 15, "compile_ops.cpp:371", "benchmark")
    k = e.problem
    assert (k.arch, k.num_cu, k.chiplets, k.separator, k.dtype, k.m, k.n, k.k) == (
        "gfx90a:sramecc+:xnack-", 104, 1, "tab", "f32", 4096, 320, 320)
    m = p.mlir_modules[0]
    assert m.start_line == 15 and not m.complete and m.text.startswith("module {\n  func.func @mlir_reshape_dot_add")
    assert [a.lens for a in m.funcs[0].args[:3]] == [(1, 64, 64, 320), (1, 320, 320), (1, 4096, 320)]
    assert [e.line for e in p.errors_found] == [15]
    assert p.links[0].error == 0
    kinds = p.other_kinds()
    assert kinds == {"comment": 8, "html": 7}
    assert sum("PASSED" in o.text for o in p.other) == 6


CORPUS_CHECKS = {
    "003": _check_003, "005": _check_005, "007": _check_007, "009": _check_009, "011": _check_011,
    "013": _check_013, "015": _check_015, "017": _check_017, "020": _check_020, "022": _check_022,
    "024": _check_024, "026": _check_026, "028": _check_028,
}


@pytest.mark.parametrize("layer", LAYERS, ids=lambda v: "mlir-layer" if v else "scanner")
@pytest.mark.parametrize("prefix", sorted(CORPUS_CHECKS))
def test_corpus_log_imports(prefix, layer):
    path = _corpus(prefix)
    text = path.read_text()
    p = parse_log(text, path.name, mlir_layer=layer)
    assert p.n_lines == len(text.splitlines())
    check = CORPUS_CHECKS[prefix]
    check(p, layer) if prefix == "005" else check(p)
    p.summary()
    json.loads(p.to_json())
    # every line number points into the file
    for e in p.errors_found:
        assert 1 <= e.line <= p.n_lines


def test_every_corpus_log_is_checked():
    if not CORPUS.is_dir():
        pytest.skip("shared corpus of real traces not present")
    prefixes = {f.name.split("_", 1)[0] for f in CORPUS.glob("*.txt")}
    assert prefixes <= set(CORPUS_CHECKS), f"unchecked corpus logs: {sorted(prefixes - set(CORPUS_CHECKS))}"


def test_rocmlir_test_programs_embedded_in_a_log_split_cleanly():
    if not ROCMLIR.is_dir():
        pytest.skip("shared rocMLIR corpus not present")
    for f in sorted(ROCMLIR.glob("*.mlir")):
        text = f.read_text()
        p = parse_log("warning: before\n" + text.rstrip("\n") + "\nFastest solution: v2:1,2,3,4,5,6,7,8,9\n", f.name,
                      mlir_layer=False)
        assert p.errors_found == [], (f.name, p.errors_found)
        assert p.mlir_modules and all(m.complete and not m.interleaved for m in p.mlir_modules), f.name
        assert p.benchmarks[-1].fastest.version == 2


# ------------------------------------------------------------- synthetic --
def test_benchmarking_level3_crash_names_the_solution_that_was_running():
    p = parse_log((DATA / "bench3_crash.log").read_text(), "bench3_crash.log", mlir_layer=False)
    assert not p.errors_found
    assert [d.name for d in p.module_dumps] == ["mlir_main:pointwise4", "main"]
    b = p.benchmarks[0]
    assert b.n_configs == 4 and b.problem.chiplets == 1 and b.problem.num_cu == 304
    assert [s.status for s in b.solutions] == ["timed", "no_binary", "pending"]
    assert all(s.config.version == 3 and s.config.n_fields == 10 for s in b.solutions)
    assert b.solutions[0].time_ms == 0.0712 and b.solutions[0].result_line == 45      # after the program dump
    assert [e.kind for e in p.errors] == ["gpu_fault", "crash"]
    assert {(e.bench, e.solution) for e in p.errors} == {(0, "v3:128,128,8,32,32,8,1,1,2,1")}
    m = p.mlir_modules[0]
    assert m.attrs["rock.arch"] == "gfx942:sramecc+:xnack-" and m.arch == "gfx942:sramecc+:xnack-"
    assert m.num_cu == 304 and m.runnable and m.syntax == "shaped"
    ln = p.links[0]
    assert (ln.module, ln.module_reason, ln.bench, ln.bench_reason) == (0, "structural match", 0, "structural match")
    assert ln.code_objects == [0] and p.code_objects[0].kernel_names == ["mlir_transpose_reshape_dot_add"]
    assert "stopped at solution v3:128,128,8,32,32,8,1,1,2,1" in p.summary()


def test_python_traceback_with_no_valid_tuned_links_error_mlir_and_module():
    p = parse_log((DATA / "traceback_no_valid_tuned.log").read_text(), "tb.log", mlir_layer=False)
    assert len(p.errors) == 1
    e = p.errors[0]
    assert (e.kind, e.origin, e.line, e.end_line, e.exception_type) == ("no_valid_tuned", "traceback", 4, 9,
                                                                        "RuntimeError")
    assert (e.problem.m, e.problem.n, e.problem.k, e.problem.num_cu) == (384, 768, 768, 110)
    assert len(p.mlir_modules) == 1 and len(p.module_dumps) == 1 and not p.errors_found
    ln = p.links[0]
    assert (ln.module, ln.module_reason, ln.error, ln.error_reason) == (0, "structural match", 0, "structural match")
    assert p.other_kinds()["shape"] == 3


def test_bare_func_rock_lowered_and_interleaved_lines():
    log = "\n".join([
        "func.func @mlir_dot(%arg0: tensor<1x5x4xf32>, %arg1: tensor<1x4x3xf32>) -> tensor<1x5x3xf32> {",
        "  %0 = migraphx.dot(%arg0, %arg1) : (tensor<1x5x4xf32>, tensor<1x4x3xf32>) -> tensor<1x5x3xf32>",
        "MIGraphX Warning: this line came from stderr in the middle",
        "  return %0 : tensor<1x5x3xf32>",
        "}",
        "module {",
        "  func.func @mlir_gemm(%arg0: memref<16x16xf8E4M3FNUZ>, %arg1: memref<16x16xf8E4M3FNUZ>) attributes {kernel} {",  # noqa: E501 - a log line as written
        '    rock.gridwise_gemm %arg0, %arg1 {arch = "gfx942"} : memref<16x16xf8E4M3FNUZ>, memref<16x16xf8E4M3FNUZ>',
        "    return",
        "  }",
        "}",
    ]) + "\n"
    p = parse_log(log, "mix.log", mlir_layer=False)
    assert not p.errors_found
    bare, low = p.mlir_modules
    assert bare.bare_func and bare.complete and bare.runnable and (bare.start_line, bare.end_line) == (1, 5)
    assert bare.interleaved == [3] and "Warning" not in bare.text
    assert [(o.line, o.kind, o.inside) for o in p.other] == [(3, "warning", "mlir 0")]
    assert low.kind == "rock" and not low.runnable
    assert "rock dialect (lowered) MLIR" in low.unsupported
    assert "op rock.gridwise_gemm not supported (rock dialect)" in low.unsupported
    assert "fp8 type f8E4M3FNUZ" in low.unsupported


def test_mlirtrace_own_trace_sink_output():
    log = "\n".join([
        "Benchmarking gpu::mlir_op: 3 configs (from tuning database)",
        "Problem: pocl-cpu\t2\t-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 24 -n 40 -k 16",
        "Built 2 solutions (1 failed) in 0.20s (sum of builds 0.30s)",
        "Benchmarking solution: 16,16,4,1 mlir 1a2b3c span 4d5e6f",
        "0.012ms",
        "Benchmarking solution: 32,32,4,1 mlir 1a2b3c span 777777",
        "Failed: crash",
        "Benchmarking solution: 8,8,4,1 mlir 1a2b3c span 888888",
        "No binary",
        "Fastest solution: 16,16,4,1",
    ]) + "\n"
    p = parse_log(log, "own.log")
    b = p.benchmarks[0]
    assert b.from_database and b.problem.arch == "pocl-cpu" and b.problem.num_cu == 2 and b.problem.m == 24
    assert [(s.config.raw, s.status) for s in b.solutions] == [
        ("16,16,4,1", "timed"), ("32,32,4,1", "failed"), ("8,8,4,1", "no_binary")]
    assert b.solutions[1].detail == "crash" and b.solutions[0].detail == "mlir 1a2b3c span 4d5e6f"
    assert b.fastest.raw == "16,16,4,1" and p.other_kinds() == {"info": 1}


def test_program_dumps_with_headers_attributes_read_loosely_and_unknown_types():
    log = "\n".join([
        'module: "main"',
        "@0 = check_context::migraphx::gpu::context -> float_type, {}, {}, target_id=0",
        "@1 = hip::hip_allocate_memory[shape=float_type, {1, 4}, {4, 1},id=main:#output_0] -> float_type, {1, 4}, {4, 1}, target_id=0",  # noqa: E501 - a log line as written
        "x = @param:x -> fp8e4m3fnuz_type, {1, 4}, {4, 1}, target_id=0",
        "@3 = @return(@1), target_id=0",
        'module: "main:pointwise0"',
        "main:pointwise0:x0 = @param:x0 -> float_type, {4}, {1}, target_id=0",
        "main:pointwise0:@1 = relu(main:pointwise0:x0) -> float_type, {4}, {1}, target_id=0",
    ]) + "\n"
    p = parse_log(log, "prog.log")
    assert [(d.name, d.n_instructions, d.start_line, d.end_line) for d in p.module_dumps] == [
        ("main", 4, 1, 5), ("main:pointwise0", 2, 6, 8)]
    d = p.module_dumps[0]
    # a shape as an attribute value is read as a shape (MIGraphX prints hip::allocate's so)
    assert d.module.instructions[1].attrs == {"shape": Shape.of("f32", [1, 4], [4, 1]), "id": "main:#output_0"}
    assert d.module.instructions[1].attrs["shape"].strides == (4, 1)
    assert any("fp8e4m3fnuz_type" in u for u in d.unsupported) and not d.malformed and not p.errors_found
    assert p.module_dumps[1].runnable and p.module_dumps[1].prefix == "main:pointwise0"


# ------------------------------------------------------------ damaged logs --
def _lines():
    return seed_text().splitlines()


def test_truncated_mid_mlir():
    text = "\n".join(_lines()[:24]) + "\n"          # cut after "%2 = migraphx.reshape ..."
    p = parse_log(text, "cut.log", mlir_layer=False)
    assert [(e.line, "MLIR module 0 is not closed" in e.message) for e in p.errors_found] == [(20, True)]
    assert "the log ends" in p.errors_found[0].message
    m = p.mlir_modules[0]
    assert not m.complete and not m.runnable and m.why_not.startswith("truncated MLIR (2 '}' missing)")
    assert [o.short for o in m.funcs[0].ops] == ["multibroadcast", "transpose", "reshape"]
    assert p.module_dumps[0].n_instructions == 11 and p.benchmarks[0].fastest.raw == "64,64,8,16,64,8,1,1"
    assert p.links[0].module_reason == "structural match"      # a prefix of the dump's ops


def test_truncated_mlir_followed_by_more_log():
    text = "\n".join(_lines()[:24] + _lines()) + "\n"
    p = parse_log(text, "cut2.log", mlir_layer=False)
    assert [e.line for e in p.errors_found] == [20]
    assert "moves on at line 25" in p.errors_found[0].message
    assert [m.complete for m in p.mlir_modules] == [False, True]
    assert [m.start_line for m in p.mlir_modules] == [20, 44]
    assert len(p.module_dumps) == 2 and len(p.benchmarks) == 2
    assert p.links[1].module == 1 and p.mlir_modules[1].runnable


def test_malformed_instruction_line():
    lines = _lines()
    lines[11] = lines[11].replace("768}]", "768}")          # line 12: reshape[dims=... without its ']'
    p = parse_log("\n".join(lines) + "\n", "bad.log", mlir_layer=False)
    assert [(e.line, e.message.startswith("malformed instruction line in module dump 0")) for e in p.errors_found] \
        == [(12, True)]
    d = p.module_dumps[0]
    assert d.malformed == [12] and d.n_instructions == 10 and (d.start_line, d.end_line) == (6, 16)
    assert not d.runnable and "reshape[dims" in d.text
    assert p.mlir_modules[0].runnable and p.benchmarks[0].n_configs == 36
    assert p.links[0].module == 0 and p.links[0].module_reason == "adjacent"


def test_lost_instruction_line_is_reported_where_it_is_used():
    lines = _lines()
    lines[11] = "some stderr text where @6 used to be"
    p = parse_log("\n".join(lines) + "\n", "lost.log", mlir_layer=False)
    assert [e.line for e in p.errors_found] == [14]           # @8 = dot(@6, @7) uses it
    assert "mlir_main:pointwise4:@6" in p.errors_found[0].message
    assert p.module_dumps[0].n_instructions == 10 and p.module_dumps[0].interleaved == [12]
    assert [(o.line, o.inside) for o in p.other if o.kind == "text"] == [(12, "module 0")]


GARBAGE = ["warning: something odd happened", "[W] MIGraphX: an stderr line", "qwerty 12345 !!"]


def test_garbage_lines_in_between_do_not_break_blocks():
    lines = _lines()
    # inside the dump (after line 9), inside the MLIR (after line 23), between blocks (after 2)
    for at, g in sorted([(9, GARBAGE[0]), (23, GARBAGE[1]), (2, GARBAGE[2])], reverse=True):
        lines.insert(at, g)
    p = parse_log("\n".join(lines) + "\n", "noisy.log", mlir_layer=False)
    assert p.errors_found == []
    d, m = p.module_dumps[0], p.mlir_modules[0]
    assert d.n_instructions == 11 and (d.start_line, d.end_line) == (7, 18) and d.interleaved == [11]
    assert m.complete and m.runnable and (m.start_line, m.end_line) == (22, 32) and m.interleaved == [26]
    assert "[W]" not in m.text
    noise = {o.line: (o.kind, o.inside) for o in p.other if o.kind != "comment"}
    assert noise == {3: ("text", None), 11: ("warning", "module 0"), 26: ("warning", "mlir 0")}
    assert p.links[0].module_reason == "structural match"


def test_unbalanced_braces():
    lines = _lines()
    del lines[27]                                               # the func's closing "  }"
    bench = ["Benchmarking gpu::mlir_op: 2 configs",
             "Problem: gfx90a:sramecc+:xnack-\t110\t-t f16 -out_datatype f16 -transA false -transB false -g 1 "
             "-m 384 -n 768 -k 768",
             "Benchmarking solution: 1,2,3,4,5,6,7,8", "0.1ms", "Benchmarking solution: 2,2,3,4,5,6,7,8",
             "No binary", "Fastest solution: 1,2,3,4,5,6,7,8"]
    p = parse_log("\n".join(lines + bench + ["}"]) + "\n", "unbal.log", mlir_layer=False)
    assert [e.line for e in p.errors_found] == [20, 36]
    assert "not closed: 1 '}' missing" in p.errors_found[0].message
    assert "'}' outside any MLIR module" in p.errors_found[1].message
    b = p.benchmarks[1]
    assert (b.start_line, b.end_line, len(b.timed), len(b.no_binary)) == (29, 35, 1, 1)
    assert (p.links[0].bench, p.links[0].bench_reason) == (1, "structural match")   # key m/n/k match the dot


def test_unterminated_string_is_damage_and_never_reaches_the_mlir_layer():
    lines = _lines()
    lines[20] = lines[20].replace('kernel = "mixr"', 'kernel = "mixr')
    calls = []

    class Layer:
        def parse_mlir(self, text, source):  # noqa: ARG002 - the mlir layer's signature
            calls.append(text)
            return []

    p = parse_log("\n".join(lines) + "\n", "str.log", mlir_layer=Layer())
    assert calls == [] and [e.line for e in p.errors_found] == [21]
    assert "unterminated string literal (log line 21)" in p.mlir_modules[0].why_not


# ------------------------------------------------------------- mlir layer --
class _Parsed:
    def __init__(self, name, unsupported=None, invalid=None):
        self.name, self.unsupported, self.invalid, self.module, self.attrs, self.line = (
            name, unsupported, invalid, None, {}, 1)


def test_mlir_layer_reasons_are_used_and_positions_become_log_lines():
    class Layer:
        def parse_mlir(self, text, source):  # noqa: ARG002 - the mlir layer's signature
            return [_Parsed("mlir_transpose_reshape_dot_add", unsupported="op migraphx.reshape at 5:5 not supported")]

    p = parse_log(seed_text(), "seed.log", mlir_layer=Layer())
    m = p.mlir_modules[0]
    assert m.checked_by == "mlir" and not m.runnable
    assert m.why_not == "op migraphx.reshape at log line 24:5 not supported"


def test_mlir_layer_failures_degrade_to_the_scanner():
    class Broken:
        def parse_mlir(self, text, source):  # noqa: ARG002 - the mlir layer's signature
            raise RuntimeError("boom")

        def emit_mlir(self, module):  # noqa: ARG002 - the mlir layer's signature
            raise RuntimeError("no")

    p = parse_log(seed_text(), "seed.log", mlir_layer=Broken())
    m = p.mlir_modules[0]
    assert m.parse_error == "RuntimeError: boom" and m.checked_by == "scanner"
    assert not m.runnable and "cannot parse" in m.why_not
    assert p.links[0].module_reason == "structural match"       # linking does not need the layer
    assert parse_log(seed_text(), mlir_layer=object()).mlir_layer is False   # no parse_mlir: not a layer


def test_emitted_mlir_of_the_dump_is_compared_when_the_layer_can_emit():
    seen = []

    class Layer:
        def parse_mlir(self, text, source):  # noqa: ARG002 - the mlir layer's signature
            return []

        def emit_mlir(self, module):  # noqa: ARG002 - the mlir layer's signature
            seen.append(module.name)
            return ("module {\n  func.func @x(%arg0: tensor<1x384x768xf16>, %arg1: tensor<1x12x384x64xf16>, "
                    "%arg2: tensor<1x768x768xf16>) -> tensor<1x384x768xf16> {\n"
                    "    %0 = migraphx.multibroadcast(%arg2) : (tensor<1x768x768xf16>) -> tensor<1x768x768xf16>\n"
                    "  }\n}\n")

    lines = _lines()
    lines[12] = "mlir_main:pointwise4:@7 = identity(mlir_main:pointwise4:@2) -> half_type, {1, 768, 768}, {589824, 768, 1}, target_id=0"  # noqa: E501 - a log line as written
    p = parse_log("\n".join(lines) + "\n", "emit.log", mlir_layer=Layer())
    assert seen == ["mlir_main:pointwise4"]
    assert p.links[0].module_reason == "adjacent"          # neither the dump's ops nor the emitted text match


# ------------------------------------------------------- keys and configs --
@pytest.mark.parametrize("key,want", [
    ("gfx908:sramecc+:xnack- 120     -t f16 -out_datatype f16 -transA false -transB false -g 1 -m 1 -n 2304 -k 768",
     ("gfx908:sramecc+:xnack-", 120, None, "space", 1, 2304, 768)),
    ("gfx90a:sramecc+:xnack-\t104\t1\t-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 4096 -n 320 -k 320",
     ("gfx90a:sramecc+:xnack-", 104, 1, "tab", 4096, 320, 320)),
    ("gfx1030 40 -t f16 -g 24 -seq_len_q 4096 -seq_len_k 4096 -head_dim_qk 64 -head_dim_v 64 MLIR Fused Kernel: module {",  # noqa: E501 - a log line as written
     ("gfx1030", 40, None, "space", None, None, None)),
])
def test_problem_keys(key, want):
    k = parse_problem_key(key)
    assert (k.arch, k.num_cu, k.chiplets, k.separator, k.m, k.n, k.k) == want
    assert "MLIR" not in k.raw


def test_problem_key_conv_and_not_a_key():
    k = parse_problem_key("gfx942\t304\tconv -F 1 -f GNCHW -I NGCHW -O NGCHW -n 1 -c 512 -H 28 -W 28 -k 256 -y 1 -x 1 -t f32")  # noqa: E501 - a log line as written
    assert k.operation == "conv" and k.kind == "conv" and k.fields["c"] == "512" and k.dims()["H"] == 28
    assert parse_problem_key("no flags here") is None and parse_problem_key("") is None


@pytest.mark.parametrize("raw,version,kind,n", [
    ("64,64,8,16,64,8,1,1", 1, None, 8), ("v2:16,64,8,16,16,8,1,1,1", 2, None, 9),
    ("v3:64,64,8,16,64,8,1,1,2,1", 3, None, 10), ("v4:256,128,64,32,32,1,1,2,1,1,1", 4, None, 11),
    ("attn:v1:32,32,32,32,32,32,16,1,1", 1, "attn", 9), ("{weird}", None, None, 1),
])
def test_perf_configs(raw, version, kind, n):
    pc = parse_perf_config(raw)
    assert (pc.raw, pc.version, pc.kind, pc.n_fields) == (raw, version, kind, n)


# ---------------------------------------------------------------- property --
def _fragments() -> list[str]:
    out = seed_text().splitlines()
    for f in [DATA / "bench3_crash.log", DATA / "traceback_no_valid_tuned.log"]:
        out += f.read_text().splitlines()
    if CORPUS.is_dir():
        for f in sorted(CORPUS.glob("*.txt")):
            out += [ln for ln in f.read_text().splitlines() if not ln.startswith("# ")]
    return out


FRAGMENTS = _fragments()
PUNCT = ["{", "}", "}}", '"', "module {", "func.func @f(", "<br />", "&nbsp;", "\t", "\x1b[31m", "what():",
         "terminate called", "Traceback (most recent call last):", ",".join(["7"] * 20), "@3 = dot(", " -> ",
         "Benchmarking solution: ", "ms", "Problem: ", "module: \"", "#map = ", "loc(", "%0 = migraphx.add"]


@st.composite
def log_lines(draw):
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(FRAGMENTS))
    if kind == 1:
        return draw(st.text(max_size=60))
    if kind == 2:
        return draw(st.sampled_from(PUNCT))
    s = draw(st.sampled_from(FRAGMENTS))
    i = draw(st.integers(0, len(s)))
    return s[:i] + draw(st.sampled_from(PUNCT + ["", "x"])) + s[i + draw(st.integers(0, 3)):]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(log_lines(), max_size=40), st.booleans())
def test_parse_log_never_raises(lines, layer):
    text = "\n".join(lines)
    p = parse_log(text, "fuzz.log", mlir_layer=layer and bool(LAYERS[1:]))
    assert all(isinstance(e, LogError) for e in p.errors_found)
    assert not any(e.message.startswith("internal error") for e in p.errors_found), p.errors_found
    n = p.n_lines
    for part in p.module_dumps + p.mlir_modules + p.benchmarks:
        assert 1 <= part.start_line <= part.end_line <= n
    for e in p.errors:
        assert 1 <= e.line <= e.end_line <= n
    assert all(1 <= o.line <= n for o in p.other)
    assert set(p.links) == {m.index for m in p.mlir_modules}
    p.summary()
    json.loads(p.to_json())


def test_error_line_forms():
    log = "\n".join([
        "loc(\"mlir_main:pointwise4\"): error: 'migraphx.dot' op operand #1 has the wrong shape",   # 1
        "loc(\"mlir_main:pointwise4\"): note: see the producer here",                               # 2
        "<unknown>:0: error: failed to legalize operation 'migraphx.convolution'",                  # 3
        "error: unable to open output file",                                                        # 4
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",              # 5
        "[  FAILED  ] GPU_MLIR.dot_add (12 ms)",                                                    # 6
        "terminate called without an active exception",                                            # 7
        "Segmentation fault (core dumped)",                                                         # 8
        "this line mentions errors but is fine",                                                    # 9
        "/src/AMDMIGraphX/src/targets/gpu/mlir.cpp:754: run_backend_pipeline: MLIR backend compilation failed: Error: bad",  # noqa: E501 - a log line as written
    ]) + "\n"
    p = parse_log(log, "errs.log")
    assert [(e.line, e.kind) for e in p.errors] == [
        (1, "mlir_diagnostic"), (3, "mlir_diagnostic"), (4, "error"), (5, "hip_error"), (6, "test_failed"),
        (7, "terminate"), (8, "crash"), (10, "backend_failed")]
    assert p.errors[0].context == [(2, 'loc("mlir_main:pointwise4"): note: see the producer here')]
    assert p.errors[0].location == 'loc("mlir_main:pointwise4")' and p.errors[-1].detail == "bad"
    assert [(o.line, o.kind) for o in p.other] == [(9, "text")] and not p.errors_found
