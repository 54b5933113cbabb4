"""Every real rocMLIR test program in the shared corpus (tests/corpus.py), taken as it is.

Supported funcs parse, verify against the shape rules and run on the oracle; the others
say why (op / type and line:column).  ``test_corpus_summary`` prints the numbers
(``pytest -s`` or ``-rA`` shows them) and writes them to ``corpus_summary.txt`` in the
pytest cache directory.
"""
import re
from collections import Counter
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.ir import evaluate, random_inputs
from pytest_mlirtrace._internal.mlir import MLIRParseError, emit_func, normalise_mlir, parse_mlir
from pytest_mlirtrace._internal.vocab import Status
from tests.corpus import MISSING, ROCMLIR, TRACES

from ..settings import DEVICE
from .mlir_helpers import macs

CORPUS = ROCMLIR
FILES = sorted(CORPUS.glob("*.mlir")) if CORPUS.is_dir() else []
EVAL_BUDGET = 1e9     # multiply-adds; the oracle computes in float64 on the CPU

pytestmark = pytest.mark.skipif(not FILES, reason=MISSING)

_RESULTS: dict[str, list] = {}


def parsed(path: Path):
    if path.name not in _RESULTS:
        _RESULTS[path.name] = parse_mlir(path.read_text(), path.name)
    return _RESULTS[path.name]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file(path):
    funcs = parsed(path)
    assert funcs, "every corpus file has funcs"
    for f in funcs:
        if f.ok:
            f.module.verify()
            assert f.module.returns()
            if macs(f.module) <= EVAL_BUDGET:
                outs = evaluate(f.module, random_inputs(f.module, seed=3))
                assert [o.shape for o in outs] == [s.lens for s in f.module.output_shapes()]
            # what we re-emit parses back to the same text
            syntax = "shaped" if f.type_syntax in ("shaped", "mixed") else "tensor"
            again = "module {\n" + emit_func(f.module, attrs=f.attrs, type_syntax=syntax, name=f.name) + "}\n"
            assert normalise_mlir(again) == again
        else:
            assert f.reason, f
            assert f.declaration or re.search(r"\bat \d+:\d+", f.reason), f.reason


def test_corpus_known_outcomes():
    """A few files whose outcome we know exactly."""
    def one(name, func=None):
        fs = [f for f in parsed(CORPUS / name) if func is None or f.name == func]
        return fs

    seed_like = one("fusion__e2e__mixr-tp-reshape-dot-add.mlir")[0]
    assert seed_like.ok and seed_like.module.ops() == ["multibroadcast", "transpose", "reshape", "dot", "add"]
    causal = one("fusion__pr-e2e__attention__mixr-attention-causal.mlir")[0]
    assert causal.ok, causal.reason
    lit = causal.module.instructions[5]          # %2 = migraphx.literal(dense<0xFC00> : tensor<1xf16>)
    assert lit.op == "@literal" and float(lit.literal.reshape(-1)[0]) == float("-inf")
    wrapped = one("fusion__pr-e2e__attention__mixr-attention.mlir")
    assert [f.status for f in wrapped] == ["ok", "unsupported", "ok"]
    assert "op mhal.launch at 12:5" in wrapped[1].reason
    conv = one("fusion__e2e__mixr-conv-mul.mlir")[0]      # the IR has convolution's shape rule
    assert conv.ok and "convolution" in conv.module.ops(), conv.reason
    quant = one("fusion__e2e__mixr-quantizelinear__mixr-quant-quant-dot-bias-i8.mlir")[0]   # the IR has quantizelinear
    assert quant.ok and quant.module.ops() == ["quantizelinear", "quant_dot"], quant.reason
    assert [quant.module.get(n).shape.dtype.name for n in ("@3", "@4")] == ["i8", "i32"]
    # issue 14: fp4 / fp8 element types, the scaled quant_dot and unpack are held (and run:
    # tests/mlir/test_corpus_quantize.py)
    fp4 = one("Dialect__MIGraphX__ops.mlir", "migraphx_dot")[0]
    assert fp4.ok and fp4.module.ops() == ["dot"], fp4.reason
    assert fp4.module.get(fp4.module.returns()[0]).shape.dtype.name == "f32"
    scaled = one("Dialect__MIGraphX__ops.mlir", "migraphx_quant_dot")[0]
    assert scaled.ok and [scaled.module.get(i).shape.dtype.name for i in scaled.module.instructions[-2].inputs] \
        == ["f4E2M1FN", "f4E2M1FN", "f8E8M0FNU", "f8E8M0FNU"], scaled.reason
    int4 = one("Dialect__MIGraphX__realize-int4.mlir")
    assert [f.status for f in int4] == ["ok"] * 5 + ["invalid"]
    assert "!migraphx.shaped<4x8x3xi8, 0x1x0>" in int4[-1].reason and "broadcast" in int4[-1].reason
    multi = one("fusion__e2e__migraphx-multi-output.mlir")[0]
    # a real mistake in that rocMLIR test: out_lens = [1, 768, 768] for a 1x256x768 result; rocMLIR's lowering
    # follows the result type, and so do we, keeping a note
    assert multi.ok, multi.reason
    assert multi.module.get("@5").attrs["out_lens"] == [1, 256, 768]
    assert multi.notes == ["migraphx.multibroadcast at 7:9: out_lens = [1, 768, 768] disagrees with the result "
                           "type's lens [1, 256, 768]; the result type is followed, as rocMLIR's lowering does"]
    rock = one("fusion__pr-e2e__mixr-gemm__mixr-gemm-broadcast.e2e.mlir")[0]
    assert rock.ok and rock.attrs.prefix == "rock." and rock.attrs.arch == "" and rock.attrs.kernel is True
    acc = one("Dialect__MIGraphX__integration__mixr-dot-acc-f16.e2e.mlir")[0]
    assert acc.perf_configs == ["v2:16,16,8,16,16,4,1,1,1"]


def _reason_kind(reason: str) -> str:
    m = re.match(r"(op \S+( with 'scaled by' operands)?)", reason)
    if m:
        return m.group(1)
    m = re.search(r"element type (\S+)", reason)
    if m:
        return f"element type {m.group(1)}"
    return reason.split(" at ")[0]


def test_corpus_summary(request, capsys):
    funcs = [(p.name, f) for p in FILES for f in parsed(p)]
    ok = [(n, f) for n, f in funcs if f.ok]
    bad = [(n, f) for n, f in funcs if not f.ok]
    files_all_ok = [p.name for p in FILES if all(f.ok for f in parsed(p))]
    files_some_ok = [p.name for p in FILES if any(f.ok for f in parsed(p))]
    kinds = Counter((f.status, _reason_kind(f.reason)) for _, f in bad)
    lines = [f"corpus: {len(FILES)} files, {len(funcs)} funcs",
             f"parse+verify: {len(ok)} funcs; files with every func ok: {len(files_all_ok)}, "
             f"with at least one: {len(files_some_ok)}",
             f"evaluated with the oracle: {sum(1 for _, f in ok if macs(f.module) <= EVAL_BUDGET)} "
             f"(others over {EVAL_BUDGET:.0e} multiply-adds)",
             "not converted:"]
    lines += [f"  {n:3d} x {status}: {kind}" for (status, kind), n in kinds.most_common()]
    lines += [f"    {name}: {f}" for name, f in bad]
    text = "\n".join(lines) + "\n"
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        (Path(str(cache.mkdir("mlirtrace"))) / "corpus_summary.txt").write_text(text)
    with capsys.disabled():
        print("\n" + text)
    assert len(ok) >= 29
    assert all(f.reason for _, f in bad)


# ------------------------------------------------------------ trace logs --
def _log(name: str) -> list[str]:
    lines = (TRACES / name).read_text().splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("#"):
        i += 1
    return lines[i:]


needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="no traces")


@needs_traces
def test_mlir_printed_by_migraphx_in_trace_logs():
    # MIGRAPHX_TRACE_MLIR output of 2024-2026: shaped types, enable_splitk_for_tuning, irregular indentation
    f005 = parse_mlir("\n".join(_log("005_migraphx-doc-triage-rocmlir-trace-mlir1-modules.txt")), "005")
    assert [f.status for f in f005] == ["ok", "ok"]          # a convolution, then dot + add
    assert f005[0].module.ops() == ["convolution"]
    assert f005[1].attrs.extra == {"enable_splitk_for_tuning": "true"}
    assert f005[1].attrs.num_cu == 110
    lines015 = _log("015_rocmlir2146_perf-line-and-dot-add-reshape-transpose-f16.txt")
    f015 = parse_mlir("\n".join(lines015[lines015.index("module {"):]), "015")
    assert f015[0].ok and f015[0].module.ops() == ["dot", "multibroadcast", "add", "reshape", "transpose"]
    # 2023: seven modules back to back in old tensor syntax, spacing MIGraphX never printed
    f020 = parse_mlir("\n".join(_log("020_migraphx-test-gpu-mlir-2023-08-old-tensor-int8.txt")), "020")
    assert [f.name for f in f020 if f.ok] == ["mlir_convolution", "mlir_convolution_add_relu", "mlir_quant_dot_add",
                                             "mlir_dot_add", "mlir_quant_convolution_dequantizelinear_quantizelinear",
                                             "mlir_dot_convert", "mlir_dot_where"]
    convert = next(f for f in f020 if f.name == "mlir_dot_convert").module
    assert convert.instructions[-2].attrs == {"target_type": 1}


@needs_traces
def test_truncated_mlir_in_trace_logs_is_a_parse_error_with_location():
    lines = _log("022_migraphx4117_trace-mlir-submodule-then-mlir-module-dot-add.txt")
    text = "\n".join(lines[lines.index("module {"):]) + "\n"
    with pytest.raises(MLIRParseError) as e:
        parse_mlir(text, "022")
    last = text.rstrip().splitlines()
    assert (e.value.line, e.value.column) == (len(last), len(last[-1]) + 1)   # where the log was cut off
    assert e.value.msg == "unexpected end of input (Expected '>' to close !migraphx.shaped)"
    lines13 = _log("013_migraphx2274_trace-mlir-old-tensor-conv-then-rock-lowered.txt")
    with pytest.raises(MLIRParseError) as e:
        parse_mlir("\n".join(lines13), "013")
    assert e.value.line == len(lines13) and str(e.value).startswith(f"013:{len(lines13)}:")


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_corpus_func_runs_and_matches_the_oracle(path):
    """Every func of the file that the parser takes is compiled (default solution), run through the isolated
    runtime and matches the oracle within the computation's error bounds (issue 14's acceptance: attention,
    gemm-gemm, conv-gemm, multi-output, gemm + reduce and quantize programs among them). Slow (about two
    minutes for the corpus; the fp4 gemm alone is 256 x 50272 x 768): the default suite runs the same funcs
    kind by kind."""
    from pytest_mlirtrace._internal.codegen import NotSupported
    from pytest_mlirtrace._internal.engine import MemoryDatabase, Pipeline

    funcs = [f for f in parsed(path) if f.ok]
    if not funcs:
        pytest.skip("no func of this file is taken (each says why in test_corpus_file)")
    pipe = Pipeline(DEVICE, database=MemoryDatabase(), inject="", timeout_s=180)
    bad = []
    for f in funcs:
        try:
            res = pipe.run(f.module, seed=5)
        except NotSupported as e:
            # a test harness's helper func that returns a constant is no kernel (rocMLIR compiles none either)
            if "the module computes nothing" not in str(e):
                bad.append(f"{f.name}: not supported: {e}")
            continue
        if res.status != Status.OK:
            bad.append(f"{f.name}: {res.status}: {res.detail}")
    assert not bad, "\n".join(bad)
