"""What the report gathers from a real reproducer directory, tuning database and fuzz report."""
from __future__ import annotations

import json

import pytest

from pytest_mlirtrace._internal.report import gather
from pytest_mlirtrace._internal.report.data import ReportInputError, parse_bench_table, read_fuzz_report


def test_findings_come_from_the_index_the_payloads_and_the_replay(inputs):
    data = gather(inputs.repros, inputs.db, inputs.fuzz)
    by_kind = {f.kind: f for f in data.findings}
    assert set(by_kind) == {"wrong", "crash"}, [f.signature for f in data.findings]
    index = json.loads((inputs.repros / "INDEX.json").read_text())["reproducers"]
    for f in data.findings:
        e = index[f.signature]
        assert f.script == inputs.repros / e["script"] and f.script.is_file()
        assert f.ticket == inputs.repros / e["ticket"] and f.ticket.is_file()
        assert f.mlir is not None and f.mlir.is_file()
        assert f.solutions == e["solutions"] and f.passed == e["passed"] and f.count == e["count"] == 1
        assert f.device == "pocl-cpu" and f.device_description, f
        assert f.replay is not None and f.replay.verdict == "reproduces", f.replay
        assert f.planted is True and f.inject in ("missing_barrier", "oob_write_n_edge")
        assert "migraphx.dot" in f.mlir_text and f.symbol == "mlir_dot_add"
        assert not f.notes
        # the benchmark table of the tune that recorded it: every solution, the failing ones among them
        sols = {r[0]: r for r in f.bench_rows}
        assert set(f.solutions) <= set(sols) and all(sols[s][1] == f.kind and sols[s][2] is None for s in f.solutions)
        assert all(sols[s][1] == "ok" and sols[s][2] > 0 for s in f.passed)
    assert data.kinds() == {"crash": (1, 1), "wrong": (1, 1)}
    assert data.replayed_at is not None


def test_problems_merge_the_database_and_the_benchmark_tables(inputs):
    data = gather(inputs.repros, inputs.db, inputs.fuzz)
    db = json.loads(inputs.db.read_text())
    assert len(data.problems) == len(db) == 2
    odd = next(p for p in data.problems if "-k 13" in p.key)
    small = next(p for p in data.problems if "-k 4" in p.key)
    assert {b["solution"] for b in odd.best} == {v["solution"] for k, v in db.items() if k.endswith(odd.key)}
    # two planted tunes of the same problem: two benchmark tables, each linked to its finding
    assert len(odd.runs) == 2 and sorted(s for r in odd.runs for s in r.signatures) == sorted(
        f.signature for f in data.findings)
    assert sorted(odd.signatures) == sorted(f.signature for f in data.findings)
    ok, bad = odd.solution_times()
    assert ok and all(t > 0 for t in ok.values()) and set(ok).isdisjoint(bad)
    # a problem only the database knows: its fastest solution alone, said so
    assert len(small.runs) == 1 and small.runs[0].only_best and len(small.runs[0].rows) == 1
    assert small.runs[0].rows[0][0] == small.best[0]["solution"] and small.symbol == "mlir_dot_add"


def test_the_fuzz_report(inputs):
    z = read_fuzz_report(inputs.fuzz)
    raw = json.loads(inputs.fuzz.read_text())
    assert z.cases == raw["cases"] > 0 and z.examples == raw["examples"]
    assert z.kinds == raw["coverage"]["kinds"] and z.layouts == raw["coverage"]["layouts"]
    assert sum(z.ops.values()) == sum(raw["coverage"]["ops"].values()) and z.ops
    assert all(op and dt for op, dt in z.ops)


def test_bench_table_parsing():
    text = ("solution              status             time_ms   build_s  span\n"
            "4,4,4,4,4,4,0,4       ok                  0.0123      1.45  d494ef28b6cd990f\n"
            "2,2,4,2,2,2,0,4       wrong                    -      2.47  a576b268bf937a59\n"
            "v2:1,1,4,1,1,1,0,4    build_error              -      0.41  c1cc137d4754a6f5\n")
    assert parse_bench_table(text) == [("4,4,4,4,4,4,0,4", "ok", 0.0123), ("2,2,4,2,2,2,0,4", "wrong", None),
                                       ("v2:1,1,4,1,1,1,0,4", "build_error", None)]
    assert parse_bench_table("") == [] and parse_bench_table("not a table\n1 2 3 4 5") == []


def test_a_missing_script_is_a_note_not_an_error(inputs, tmp_path):
    import shutil

    d = tmp_path / "r"
    shutil.copytree(inputs.repros, d)
    gone = next(d.glob("crash-*.py"))
    gone.unlink()
    data = gather(d, None, None)
    f = next(f for f in data.findings if f.kind == "crash")
    assert f.script is None and f.notes == [f"the reproducer script {gone.name} is not in {d}"]
    assert data.tuning_db is None and data.tuning_db_note == "no tuning database given"


@pytest.mark.parametrize("content, expected", [
    (None, "no such directory"),
    ("", "no INDEX.json here"),
    ('{"format": 1, "reproducers": ', "INDEX.json: not valid JSON (line 1, column 30"),
    ('[1, 2]', 'INDEX.json: expected an object {"format": 1, "reproducers"'),
])
def test_a_bad_directory_is_named_with_what_was_expected(tmp_path, content, expected):
    d = tmp_path / "r"
    if content is not None:
        d.mkdir()
        if content:
            (d / "INDEX.json").write_text(content)
    with pytest.raises(ReportInputError) as e:
        gather(d)
    assert expected in str(e.value) and str(e.value).startswith(str(d))


def test_a_database_entry_that_keeps_every_solution_is_charted_whole(tmp_path):
    """A tuner that stores every solution's row (as `mlirtrace tune --json` prints them) beside the fastest:
    the chart shows them all; an empty reproducer directory is a page with no findings."""
    from pytest_mlirtrace._internal.report import write_report

    d = tmp_path / "r"
    d.mkdir()
    (d / "INDEX.json").write_text('{"format": 1, "reproducers": {}}')
    key = "pocl-cpu\t2\t-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 5 -n 3 -k 4"
    db = tmp_path / "db.json"
    db.write_text(json.dumps({f"0:0|{key}": {
        "solution": "8,1,4,1,1,1,0,4", "time_ms": 0.0005, "stored": 1.7e9, "symbol": "mlir_dot_add",
        "solutions": [{"solution": "8,1,4,1,1,1,0,4", "status": "ok", "time_ms": 0.0005},
                      {"solution": "4,1,16,1,1,1,0,8", "status": "ok", "time_ms": 0.0006},
                      {"solution": "1,1,4,1,1,1,0,4", "status": "build_error", "time_ms": None}]}}))
    data = write_report(d, tmp_path / "report.html", db)
    (p,) = data.problems
    assert p.key == key and len(p.runs) == 1 and not p.runs[0].only_best
    assert p.runs[0].rows == [("8,1,4,1,1,1,0,4", "ok", 0.0005), ("4,1,16,1,1,1,0,8", "ok", 0.0006),
                              ("1,1,4,1,1,1,0,4", "build_error", None)]
    assert p.solution_times() == ({"8,1,4,1,1,1,0,4": 0.0005, "4,1,16,1,1,1,0,8": 0.0006},
                                  {"1,1,4,1,1,1,0,4": "build_error"})
    html = (tmp_path / "report.html").read_text()
    assert "No findings in" in html and "✗ build_error" in html and html.count('<rect class="bar"') >= 3
