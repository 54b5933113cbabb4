"""Real MIGraphX logs (tests/data/logs, sources in tests/data/SOURCES.tsv, and ../shared/corpus/traces): every
line becomes a typed part or is listed as unrecognised with its line number; verify failures, .mxr dumps,
perf reports and benchmark times are typed parts; import-trace never ends in a traceback."""
import json
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.logs import parse_log
from tests.corpus import TRACES

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
LOGS = sorted(p.name for p in DATA.glob("*.log"))
CORPUS = sorted(p.name for p in TRACES.glob("*.txt")) if TRACES.is_dir() else []


def _log_body(path: Path) -> str:
    """A corpus trace without its leading '#' header block (the log itself follows it)."""
    lines = path.read_text().split("\n")
    i = 0
    while path.parent == TRACES and i < len(lines) and lines[i].startswith("#"):
        i += 1
    return "\n".join(lines[i:])


def _accounted(p, text: str) -> set[int]:
    """The log lines some part claims (a part's line range, its context lines, a typed single line) or that
    are blank."""
    got: set[int] = set()
    for d in p.module_dumps:
        got.update(range(d.start_line, d.end_line + 1))
    for m in p.mlir_modules:
        got.update(range(m.start_line, m.end_line + 1))
    for b in p.benchmarks:
        got.update(range(b.start_line, b.end_line + 1))
    for e in p.errors:
        got.update(range(e.line, e.end_line + 1))
        got.update(n for n, _ in e.context)
    for co in p.code_objects:
        got.update(range(co.start_line, co.end_line + 1))
    got.update(t.line for t in p.kernel_timings)
    got.update(o.line for o in p.other)
    got.update(n for n, line in enumerate(text.split("\n"), 1) if not line.strip())
    return got


@pytest.mark.parametrize("path", [DATA / n for n in LOGS] + [TRACES / n for n in CORPUS],
                         ids=lambda p: p.name[:40])
def test_every_line_of_a_real_log_is_a_part_or_listed(path):
    text = _log_body(path)
    p = parse_log(text, path.name, mlir_layer=False)
    n = len(text.split("\n")) - (1 if text.endswith("\n") else 0)
    assert _accounted(p, text) >= set(range(1, n + 1))
    assert not [e for e in p.errors_found if e.message.startswith("internal error")]
    unknown = p.unrecognised()
    if unknown:
        assert f"  unrecognised lines ({len(unknown)}): line {', '.join(str(o.line) for o in unknown)}\n" in p.summary()
    assert all(o.kind == "text" for o in unknown)


def test_gathered_logs_have_no_unrecognised_line():
    for name in LOGS:
        p = parse_log((DATA / name).read_text(), name, mlir_layer=False)
        assert [(o.line, o.text) for o in p.unrecognised()] == [], name


def test_verify_failure_block_is_one_typed_error():
    p = parse_log((DATA / "issue2365_test_verify_navi32.log").read_text(), "2365", mlir_layer=False)
    (e,) = p.errors
    assert (e.kind, e.op, e.line, e.end_line) == ("verify_failed", "gpu", 4, 7)
    assert [n for n, _ in e.context] == [5, 6, 7]
    assert e.detail == "Mismatch at 24: 0.121094 != -0.171875"
    assert [(d.start_line, d.end_line, d.n_instructions) for d in p.module_dumps] == [(9, 13, 4), (17, 21, 4),
                                                                                      (25, 29, 4)]
    assert p.benchmarks[0].fastest.values == [64, 64, 32, 4, 4, 2]
    assert p.other_kinds() == {"label": 3}
    old = parse_log((DATA / "issue1873_verify_failed_error_line.log").read_text(), "1873", mlir_layer=False)
    assert [(e.kind, e.end_line) for e in old.errors] == [("verify_failed", 4)]


def test_old_printer_dump_with_bare_parameters_is_one_module():
    p = parse_log((DATA / "issue903_verify_add_run_instruction.log").read_text(), "903", mlir_layer=False)
    assert [(d.start_line, d.end_line, d.name, d.n_instructions) for d in p.module_dumps] == [
        (2, 5, "main", 3), (16, 20, "main", 4)]
    assert p.module_dumps[0].runnable and not p.module_dumps[1].runnable
    assert "a compiled program" in p.module_dumps[1].unsupported[0]
    assert p.other_kinds() == {"label": 1, "run_instruction": 6, "run_time": 6}
    assert not p.errors_found


def test_perf_report_lines_are_typed_not_malformed_module_text():
    p = parse_log((DATA / "driver_perf_simple_graph.log").read_text(), "perf", mlir_layer=False)
    assert len(p.module_dumps) == 1 and p.module_dumps[0].n_instructions == 20 and not p.errors_found
    assert p.other_kinds()["perf_instruction"] == 20


def test_annotated_solution_keeps_its_config_and_note():
    p = parse_log((DATA / "issue3700_benchmarking2_v2_solution_annotated.log").read_text(), "3700",
                  mlir_layer=False)
    (s,) = p.benchmarks[0].solutions
    assert s.config.raw == "v2:16,256,4,16,64,4,1,1,1" and s.config.version == 2
    assert s.detail == "=> ((16*256) / (16*64)) * 32 = 128" and s.time_ms == 2.6971


# Forms no gathered log shows, written as MIGraphX's printers write them (compile_ops.cpp, pass_manager.cpp,
# mlir.cpp's exception text on two lines).
FORMS = """terminate called after throwing an instance of 'migraphx::version_1::exception'
  what():  /src/AMDMIGraphX/src/targets/gpu/mlir.cpp:771: run_high_level_pipeline: Invalid MLIR created:
error: 'migraphx.dot' op operand #0 must be shaped of any type values
Error lowering: something broke
Dump: "/tmp/migraphx/lowering1712345.mxr"
Benchmarking gpu::mlir_op: 2 configs
Fastest solution: 4,128,4,4,64,4,1,1:
Fastest time: 0.0123ms
Slowest time: 1.5ms
"""


def test_multi_line_exception_mxr_dump_and_benchmark_times():
    p = parse_log(FORMS, "forms.log", mlir_layer=False)
    e0, e1 = p.errors
    assert (e0.kind, e0.line, e0.end_line) == ("invalid_mlir", 1, 3)
    assert e0.message.endswith("Invalid MLIR created: error: 'migraphx.dot' op operand #0 must be shaped of any "
                               "type values")
    assert (e1.line, e1.dump, e1.dump_line) == (4, "/tmp/migraphx/lowering1712345.mxr", 5)
    (b,) = p.benchmarks
    assert b.fastest.values == [4, 128, 4, 4, 64, 4, 1, 1] and b.fastest.version == 1
    assert (b.fastest_time_ms, b.slowest_time_ms, b.time_lines, b.end_line) == (0.0123, 1.5, [8, 9], 9)
    assert not p.other and not p.errors_found


def test_consecutive_exceptions_stay_separate():
    line = ("Exception in gpu::mlir_op: /data/src/targets/gpu/mlir.cpp:754: run_backend_pipeline: MLIR backend "
            "compilation failed: Error: totalLDSSize (131072) exceeds 65536KB")
    p = parse_log(line + "\n" + line + "\n", "two.log", mlir_layer=False)
    assert [e.line for e in p.errors] == [1, 2]


# per module dump: ran and matched the oracle ("ok"), or why it did not run (a word of the reason)
DUMP_OUTCOMES = {
    "driver_perf_simple_graph.log": ["compiled program"],
    "issue2365_test_verify_navi32.log": ["ok", "ok", "compiled program"],
    "issue903_verify_add_run_instruction.log": ["host memory", "compiled program"],
}


@pytest.mark.parametrize("name", sorted(DUMP_OUTCOMES))
def test_import_trace_runs_or_lists_each_module_dump(name, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    rc = main(["import-trace", str(DATA / name), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    assert "Traceback" not in cap.out + cap.err
    acc = json.loads((tmp_path / "r" / "import-lines.json").read_text())
    assert acc["unrecognised"] == []
    got = []
    for d in acc["module_dumps"]:
        if d.get("status") == "ok":
            assert Path(d["reproducer"]).is_file()
            got.append("ok")
        else:
            why = " ".join(d["why_not"]) if isinstance(d["why_not"], list) else d["why_not"]
            got.append(next((w for w in DUMP_OUTCOMES[name] if w != "ok" and w in why), why))
    assert got == DUMP_OUTCOMES[name]
    assert json.loads((tmp_path / "r" / "import-report.json").read_text()) == []


def test_import_trace_of_an_attention_module_reports_it(tmp_path, capsys):
    # the MLIR rocMLIR's attention test holds (../shared/corpus/rocmlir), printed as MIGRAPHX_TRACE_MLIR prints
    src = (TRACES.parent / "rocmlir" / "fusion__pr-e2e__attention__mixr-attention.mlir")
    if not src.is_file():
        pytest.skip("shared corpus not present")
    body = [x for x in src.read_text().splitlines() if not x.startswith("//")]
    i = body.index("module {")
    log = tmp_path / "attention.log"
    log.write_text("\n".join(["Benchmarking gpu::mlir_op: 2 configs"] + body[i:i + 7] + ["}"]) + "\n")
    rc = main(["import-trace", str(log), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc in (0, 1) and "Traceback" not in cap.out + cap.err
    (entry,) = json.loads((tmp_path / "r" / "import-report.json").read_text())
    assert entry["mlir"] == 0
    if entry["runnable"]:
        assert Path(entry["reproducer"]).is_file() and entry["status"] == "ok"
    else:
        assert entry["why_not"] and f"not runnable: {entry['why_not']}" in cap.out


@pytest.mark.skipif(not CORPUS, reason="shared corpus not present")
def test_an_unrecognised_line_is_listed_with_its_number(tmp_path, capsys):
    # corpus 026: the ComfyUI node name printed before MIGraphX's error (its header block is lines 1-9)
    log = TRACES / next(n for n in CORPUS if n.startswith("026_"))
    rc = main(["import-trace", str(log), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc in (0, 1), cap.out + cap.err
    assert "  unrecognised lines (1): line 10\n" in cap.out
    acc = json.loads((tmp_path / "r" / "import-lines.json").read_text())
    assert acc["unrecognised"] == [{"line": 10, "text": "CompileDiffusersMIGraphX"}]


def test_every_module_dump_of_the_real_logs_prints_back_as_logged():
    from pytest_mlirtrace._internal.ir import print_module

    seen = 0
    for path in [DATA / n for n in LOGS] + [TRACES / n for n in CORPUS]:
        p = parse_log(path.read_text(), path.name, mlir_layer=False)
        for d in p.module_dumps:
            if d.module is None or d.parse_error or d.malformed or d.interleaved:
                continue
            assert print_module(d.module) == d.text, (path.name, d.index)
            seen += 1
    assert seen >= (21 if CORPUS else 17)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.log")))
def test_every_gathered_log_imports_with_exit_0_and_every_line_accounted_for(name, tmp_path, capsys, monkeypatch):
    """Each real log under tests/data/logs (tests/data/SOURCES.tsv) imports: exit 0, no traceback, no line left
    unrecognised -- a log holding only migraphx-driver's perf summary included (nothing to reproduce there)."""
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    rc = main(["import-trace", str(DATA / name), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    assert "Traceback" not in cap.out + cap.err
    acc = json.loads((tmp_path / "r" / "import-lines.json").read_text())
    assert acc["unrecognised"] == [], acc["unrecognised"]
