"""mlirtrace import-trace: real MIGraphX logs in, linked parts and runnable reproducers out."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.cli.main import main
from tests.corpus import TRACES

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
CORPUS = TRACES


def test_seed_log_imports_linked_and_its_reproducer_passes_on_pocl(tmp_path, capsys):
    out = tmp_path / "repros"
    rc = main(["import-trace", str(DATA / "seed.log"), "--out", str(out), "--no-tune"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "1 module dumps, 1 MLIR modules, 1 benchmark blocks" in text
    assert "linked to: module dump 0 (structural match), benchmark 0 (adjacent)" in text
    assert "logged solution 64,64,8,16,64,8,1,1 does not map" in text
    report = json.loads((out / "import-report.json").read_text())
    assert len(report) == 1 and report[0]["status"] == "ok" and report[0]["func"] == "mlir_transpose_reshape_dot_add"
    script = Path(report[0]["reproducer"])
    # the reproducer carries the module as MIGraphX printed it (names and all) and the logged MLIR
    ticket = script.with_suffix(".md").read_text()
    assert "mlir_main:pointwise4:@4 = transpose[permutation={0, 2, 1, 3}]" in ticket
    assert "func.func @mlir_transpose_reshape_dot_add" in ticket
    env = dict(os.environ)
    env.pop("MLIRTRACE_INJECT", None)
    r = subprocess.run([sys.executable, str(script), "-q"], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def _import_with_fastest(tmp_path, capsys, logged: str) -> str:
    """Import the seed log with its "Fastest solution:" line replaced by ``logged``: the printed report."""
    log = (DATA / "seed.log").read_text().replace("Fastest solution: 64,64,8,16,64,8,1,1",
                                                   f"Fastest solution: {logged}")
    p = tmp_path / "logged.log"
    p.write_text(log)
    rc = main(["import-trace", str(p), "--out", str(tmp_path / "r"), "--no-tune"])
    text = capsys.readouterr().out
    assert rc == 0, text
    return text


def test_a_logged_solution_that_maps_is_used(tmp_path, capsys):
    text = _import_with_fastest(tmp_path, capsys, "16,16,8,4,4,4,0,2")
    assert "ok with solution 16,16,8,4,4,4,0,2 (logged solution 16,16,8,4,4,4,0,2 maps" in text


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/corpus/traces not present")
@pytest.mark.parametrize("log", sorted(p.name for p in CORPUS.glob("*.txt")) if CORPUS.is_dir() else [])
def test_every_corpus_log_imports(tmp_path, capsys, log):
    rc = main(["import-trace", str(CORPUS / log), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc in (0, 1), cap.out + cap.err
    parts = json.loads((tmp_path / "r" / "parts.json").read_text())
    report = json.loads((tmp_path / "r" / "import-report.json").read_text())
    # every MLIR module is accounted for: run (with a reproducer) or listed with its reason
    assert {r["mlir"] for r in report} == {m["index"] for m in parts["mlir_modules"]}
    for r in report:
        if r["runnable"]:
            assert Path(r["reproducer"]).is_file()
        else:
            assert r["why_not"] and f"not runnable: {r['why_not']}" in cap.out


def test_damaged_log_reports_lines_and_imports_the_rest(tmp_path, capsys):
    lines = (DATA / "seed.log").read_text().splitlines()
    # corrupt one instruction line of the module dump; the MLIR module stays intact
    bad = next(i for i, ln in enumerate(lines) if "@5 = contiguous" in ln)
    lines[bad] = "mlir_main:pointwise4:@5 = contiguous(mlir_main:pointwise4:@4 -> half_type, {1, 384"
    p = tmp_path / "damaged.log"
    p.write_text("\n".join(lines) + "\n")
    rc = main(["import-trace", str(p), "--out", str(tmp_path / "r"), "--no-tune"])
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    assert f"{p}:{bad + 1}:" in cap.err
    assert "@mlir_transpose_reshape_dot_add: ok" in cap.out


def test_a_logged_solution_in_a_versioned_form_maps_through_vocab(tmp_path, capsys):
    # "v1:" prefix and a trailing ':' are read by vocab.parse_perf_config, not stripped by hand
    text = _import_with_fastest(tmp_path, capsys, "v1:16,16,8,4,4,4,0,2:")
    assert "ok with solution 16,16,8,4,4,4,0,2 (logged solution v1:16,16,8,4,4,4,0,2: maps" in text
