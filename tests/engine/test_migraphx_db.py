"""MIGraphX's tuning files, both ways: the MIGRAPHX_MLIR_TUNING_DB TSV and the MIGRAPHX_PROBLEM_CACHE JSON."""
from __future__ import annotations

import json

import pytest

from pytest_mlirtrace._internal.engine import TuningDatabase
from pytest_mlirtrace._internal.engine.migraphx_db import (
    TuningFileError,
    export_problem_cache,
    export_tuning_tsv,
    import_problem_cache,
    import_tuning_tsv,
)

# lines as MIGraphX's load_tuning_table reads them (arch with its feature suffixes, CUs, rocMLIR flags, perf config)
TSV = ("gfx90a:sramecc+:xnack-\t104\t-t f16 -out_datatype f16 -transA false -transB false -g 1 -m 384 -n 2304 "
       "-k 768\tv2:64,128,8,32,64,8,1,1,1\n"
       "gfx942\t304\t-t f32 -out_datatype f32 -transA false -transB true -g 12 -m 384 -n 384 -k 64\t"
       "128,256,4,64,128,8,1,1\n")


def test_the_tsv_round_trips_byte_for_byte(tmp_path):
    src = tmp_path / "in.tsv"
    src.write_text(TSV)
    db = TuningDatabase(tmp_path / "t.json")
    assert import_tuning_tsv(src, db, "0:0") == 2
    hit = db.lookup(TSV.splitlines()[1].rsplit("\t", 1)[0], "0:0")
    assert hit["solution"] == "128,256,4,64,128,8,1,1" and hit["imported_from"] == str(src)
    assert export_tuning_tsv(db, tmp_path / "out.tsv") == 2
    assert (tmp_path / "out.tsv").read_text() == "".join(sorted(TSV.splitlines(keepends=True)))


def test_the_problem_cache_round_trips_and_keeps_to_fused_mlir_ops(tmp_path):
    rows = [ln.rsplit("\t", 1) for ln in TSV.splitlines()]
    cache = [[{"name": "gpu::mlir_op", "problem": k}, s] for k, s in rows]
    cache += [[{"name": "gpu::mlir_op", "problem": "gfx942\t304\t-t f16 -m 1 -n 1 -k 1"}, None],   # a mark
              [{"name": "gpu::ck_gemm", "problem": {"m": 1}}, 3]]                                 # another op
    src = tmp_path / "pc.json"
    src.write_text(json.dumps(cache))
    db = TuningDatabase(tmp_path / "t.json")
    assert import_problem_cache(src, db, "0:0") == (2, 2)
    assert export_problem_cache(db, tmp_path / "out.json") == 2
    back = json.loads((tmp_path / "out.json").read_text())
    assert back == sorted(cache[:2], key=lambda e: e[0]["problem"])
    # and through the TSV: the same entries
    export_tuning_tsv(db, tmp_path / "x.tsv")
    assert (tmp_path / "x.tsv").read_text() == "".join(sorted(TSV.splitlines(keepends=True)))


def test_mlirtraces_own_tuning_results_export(tmp_path):
    db = TuningDatabase(tmp_path / "t.json")
    key = "pocl-cpu\t2\t-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 384 -n 768 -k 768"
    db.store(key, "0:0", "32,32,8,8,32,16,0,4", 1.18, symbol="mlir_dot")
    db.store(key, "1:0", "64,64,8,8,64,16,1,4", 0.02)
    assert export_tuning_tsv(db, tmp_path / "a.tsv", device="0:0") == 1
    assert (tmp_path / "a.tsv").read_text() == f"{key}\t32,32,8,8,32,16,0,4\n"


@pytest.mark.parametrize("line, why", [
    ("gfx942\t304\t-t f16 -m 1", "expected arch<TAB>number of CUs<TAB>problem<TAB>perf config, got 3"),
    ("gfx942\tmany\t-t f16 -m 1\t1,2,3", "number of CUs 'many' is not a number"),
    ("gfx942\t304\tdot 1x2\t1,2,3", "not in rocMLIR's flag form"),
    ("gfx942\t304\t-t f16 -m 1\tv9:1,2", "perf config 'v9:1,2'"),
])
def test_a_bad_tsv_line_is_named_and_nothing_is_stored(tmp_path, line, why):
    src = tmp_path / "bad.tsv"
    src.write_text(TSV + line + "\n")
    db = TuningDatabase(tmp_path / "t.json")
    with pytest.raises(TuningFileError, match=r"bad\.tsv:3: ") as e:
        import_tuning_tsv(src, db, "0:0")
    assert why in str(e.value)
    assert db.entries() == {}


@pytest.mark.parametrize("text, why", [
    ("{\"a\": 1}", "got an object"), ("[[1, 2]]", "entry 0: expected"), ("[", "not JSON"),
    ("[[{\"name\": \"gpu::mlir_op\", \"problem\": \"-t f16\"}, \"1,2\"]]", "needs a tuning key"),
])
def test_a_bad_problem_cache_is_named(tmp_path, text, why):
    src = tmp_path / "pc.json"
    src.write_text(text)
    with pytest.raises(TuningFileError) as e:
        import_problem_cache(src, TuningDatabase(tmp_path / "t.json"), "0:0")
    assert why in str(e.value) and "pc.json" in str(e.value)


def test_the_cli_moves_them_both_ways(tmp_path, monkeypatch):
    from pytest_mlirtrace._internal.cli.main import main
    from pytest_mlirtrace._internal.config import environment

    monkeypatch.setenv(environment.TUNING_DB, str(tmp_path / "t.json"))
    (tmp_path / "in.tsv").write_text(TSV)
    monkeypatch.setattr("pytest_mlirtrace._internal.runtime.resolve_device",
                        lambda _spec=None: type("D", (), {"spec": "0:0"}))
    assert main(["tuning-db", "import", str(tmp_path / "in.tsv")]) == 0
    assert main(["tuning-db", "export", str(tmp_path / "pc.json")]) == 0
    assert len(json.loads((tmp_path / "pc.json").read_text())) == 2
    (tmp_path / "bad.tsv").write_text("gfx942\t304\n")
    assert main(["tuning-db", "import", str(tmp_path / "bad.tsv")]) == 2
    assert main(["tuning-db", "import", str(tmp_path / "none.tsv")]) == 2
