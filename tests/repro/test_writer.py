"""The repro layer without a device: signatures, dedup, index, tickets, safe embedding, concurrency."""
from __future__ import annotations

import ast
import json
import multiprocessing
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.engine import Span
from pytest_mlirtrace._internal.repro import FailureRecord, ReproWriter, normalise_error, render_script, signature
from pytest_mlirtrace._internal.repro.reproducer_template import load_payload
from pytest_mlirtrace._internal.repro.writer import read_payload

MLIR = """\
func.func @mlir_dot_add(%arg0: !migraphx.shaped<1x5x4xf32, 20x4x1>, %arg1: !migraphx.shaped<1x4x3xf32, 12x3x1>, %arg2: !migraphx.shaped<1x5x3xf32, 15x3x1>) -> !migraphx.shaped<1x5x3xf32, 15x3x1> attributes {arch = "pocl-cpu", kernel = "mixr", num_cu = 2 : i64} {
  %0 = migraphx.dot %arg0, %arg1 : <1x5x4xf32, 20x4x1>, <1x4x3xf32, 12x3x1> -> <1x5x3xf32, 15x3x1>
  %1 = migraphx.add %0, %arg2 : <1x5x3xf32, 15x3x1>, <1x5x3xf32, 15x3x1> -> <1x5x3xf32, 15x3x1>
  return %1 : !migraphx.shaped<1x5x3xf32, 15x3x1>
}
"""  # noqa: E501 - the MLIR as rocMLIR prints it, one line per op
# text that would break any reproducer pasting it into Python source or a markdown fence
NASTY = '// """ \'\'\' \\ \\n \\x00 ${x} {0} %s ``` </details>\n'


def span(mlir: str = MLIR, solution: str = "16,16,1", kernel: str = "__kernel void k(__global float *y) {}") -> Span:
    return Span("x = @param:x -> float_type, {1, 5, 4}, {20, 4, 1}\n", mlir,
                "pocl-cpu\t2\t-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 5 -n 3 -k 4",
                solution, kernel, "0:0", "k")


def record(kind="wrong", error="output 0: 3/15 elements differ (rtol=0.0001, atol=2e-05)", origin="t.py::a",
           **kw) -> FailureRecord:
    return FailureRecord(kind, kw.pop("span", None) or span(), "run", error, seed=kw.pop("seed", 0), origin=origin,
                         inject="", **kw)


def test_signature_is_stable_and_ignores_numbers_paths_addresses_comments():
    a = record(error="output 0: 3/15 elements differ; worst at [0, 2]: got 1.5, expected 0.25")
    b = record(error="output 0: 7/15 elements differ; worst at [4, 1]: got -3.0, expected 1e-05\nother detail")
    assert signature(a) == signature(b)
    assert signature(a).startswith("wrong-mlir_dot_add-")
    assert len(signature(a).rsplit("-", 1)[1]) == 8
    c = record(span=span(mlir="// a comment\n" + MLIR.replace("  %", "      %")), error=a.error)
    assert signature(c) == signature(a)
    assert normalise_error("crash at 0x7ffd12 in /tmp/x/abc.so:12") == "crash at ADDR in PATH:N"


def test_signature_is_the_same_for_every_solution():
    """One bug, one signature: the solution is not part of it, and its text in the error is scrubbed."""
    base = record(error="worker killed by signal 11 (SIGSEGV) while running kernel 'k' [16,16,1]")
    other = record(span=span(solution="32,8,4,2"),
                   error="worker killed by signal 11 (SIGSEGV) while running kernel 'k' [32,8,4,2]")
    assert signature(other) == signature(base)
    assert normalise_error("failed [v2:32,8,4]", "v2:32,8,4") == "failed [SOLUTION]"


@pytest.mark.parametrize("change", ["kind", "mlir", "error"])
def test_signature_changes_with_each_part(change):
    base = record()
    other = {"kind": lambda: record(kind="crash"),
             "mlir": lambda: record(span=span(mlir=MLIR.replace("migraphx.add", "migraphx.sub"))),
             "error": lambda: record(error="output 0: NaN where a number was expected")}[change]()
    assert signature(other) != signature(base)


def test_same_signature_twice_gives_one_reproducer_with_count_two(tmp_path):
    w = ReproWriter(tmp_path / "r")
    first = w.write(record(origin="t.py::a"))
    second = w.write(record(origin="t.py::b", error="output 0: 9/15 elements differ (rtol=0.0001, atol=2e-05)"))
    assert first.new and not second.new
    assert (first.signature, first.script_path, first.ticket_path) == (second.signature, second.script_path,
                                                                       second.ticket_path)
    assert (first.count, second.count) == (1, 2)
    assert sorted(p.name for p in (tmp_path / "r").iterdir() if not p.name.startswith(".")) == sorted(
        [first.script_path.name, first.ticket_path.name, first.script_path.with_suffix(".mlir").name, "INDEX.json",
         "INDEX.md"])
    [entry] = w.index()
    assert entry["count"] == 2 and entry["first_origin"] == "t.py::a" and entry["last_origin"] == "t.py::b"
    ticket = first.ticket_path.read_text()
    assert "**Occurrences:** 2 (first: t.py::a; last: t.py::b)" in ticket
    md = (tmp_path / "r" / "INDEX.md").read_text()
    assert first.signature in md and "| 2 |" in md


def test_ticket_has_what_a_compiler_engineer_files(tmp_path):
    w = ReproWriter(tmp_path)
    got = w.write(record(build_log="", mismatch="output 0: 3/15 elements differ", bench_table="sol  ok  0.1"))
    t = got.ticket_path.read_text()
    assert t.splitlines()[0] == "# [mlirtrace] wrong: mlir_dot_add with solution 16,16,1 on pocl-cpu"
    for piece in ("**Failure kind:** wrong", "## Problem key", "-m 5 -n 3 -k 4",
                  "**Solution (perf config):** `16,16,1`", "## Error", "```mlir\nfunc.func @mlir_dot_add",
                  "## migraphx module", "## How to reproduce",
                  f"python {got.script_path}", "--standalone", "## Environment", "- numpy:", "**Occurrences:** 1",
                  "## Benchmark table"):
        assert piece in t, piece


def test_untrusted_text_is_data_not_code(tmp_path):
    nasty_mlir = NASTY + MLIR + NASTY
    rec = record(span=span(mlir=nasty_mlir, kernel="/* */ \"\"\" \\ */ __kernel void k() {} " + NASTY),
                 error='boom """ \\ \'\'\' ``` end', origin='t.py::a["""\\"]')
    got = ReproWriter(tmp_path).write(rec)
    src = got.script_path.read_text()
    ast.parse(src)                                    # still valid Python
    assert "${x}" not in src and '""" \\' not in src  # nothing of the data pasted into the code
    ns: dict = {}
    exec(compile(src, str(got.script_path), "exec"), ns)   # defines functions only (main is guarded)
    data = ns["load_payload"]()
    assert data["mlir_text"] == nasty_mlir and data["error"] == rec.error and data["origin"] == rec.origin
    assert data["kernel_source"] == rec.span.kernel_source
    # the ticket's fences are longer than any backtick run inside
    t = got.ticket_path.read_text()
    assert "````mlir\n" + NASTY in t
    out = subprocess.run([sys.executable, str(got.script_path), "--quiet", "--standalone"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 4, out.stdout + out.stderr     # no kernel layout for this made-up span: cannot run
    assert "COULD NOT RUN" in out.stdout


def test_script_prints_the_dumps(tmp_path):
    got = ReproWriter(tmp_path).write(record())
    out = subprocess.run([sys.executable, str(got.script_path), "--standalone", "--show-kernel"],
                         capture_output=True, text=True, timeout=60)
    for piece in ("==== migraphx module ====", "==== MLIR ====", "func.func @mlir_dot_add", "==== problem key ====",
                  "==== solution ====\n16,16,1", "==== kernel source", "__kernel void k"):
        assert piece in out.stdout, piece


def test_template_payload_marker_and_roundtrip():
    data = {"kind": "wrong", "mlir_text": NASTY, "n": [1, 2.5, None]}
    src = render_script(data)
    ns: dict = {}
    exec(compile(src, "<repro>", "exec"), ns)
    assert ns["load_payload"]() == data
    assert load_payload(ns["PAYLOAD"]) == data


def _write_many(args):
    d, i = args
    w = ReproWriter(d)
    out = []
    for j in range(6):
        # signatures: 3 shared by everyone, 1 of this process's own
        kind = ["wrong", "crash", "hang"][j % 3] if j < 5 else "build_error"
        sol = "16,16,1" if j < 5 else f"{i + 1},1,1"
        out.append(w.write(record(kind=kind, span=span(solution=sol), origin=f"p{i}::{j}")).to_dict())
    return out


def test_concurrent_writers_lose_nothing(tmp_path):
    n = 4
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(n) as pool:
        results = [r for rs in pool.map(_write_many, [(str(tmp_path), i) for i in range(n)]) for r in rs]
    idx = {e["signature"]: e for e in ReproWriter(tmp_path).index()}
    # the build error of each process's own solution is one bug: one reproducer listing every solution
    assert len(idx) == 4
    assert sum(e["count"] for e in idx.values()) == 6 * n
    assert sorted(e["count"] for e in idx.values()) == sorted([2 * n, 2 * n, n, n])
    assert sum(r["new"] for r in results) == 4
    [build] = [e for e in idx.values() if e["kind"] == "build_error"]
    assert sorted(build["solutions"]) == sorted(f"{i + 1},1,1" for i in range(n))
    assert sorted(read_payload(tmp_path / build["script"])["solutions"]) == sorted(build["solutions"])
    for e in idx.values():
        assert (tmp_path / e["script"]).exists() and (tmp_path / e["ticket"]).exists()
        assert f"**Occurrences:** {e['count']} " in (tmp_path / e["ticket"]).read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    json.loads((tmp_path / "INDEX.json").read_text())


def test_record_validation_and_from_dict():
    with pytest.raises(ValueError):
        record(kind="oops")
    rec = record(mismatch="m", time_ms=1.5, max_ms=1.0)
    back = FailureRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back == rec and signature(back) == signature(rec)
    assert FailureRecord("build_error", span(), "lower", "x").stage == "build"


@pytest.mark.parametrize("kind, status, extra, code", [
    ("wrong", "wrong", {}, 1), ("wrong", "ok", {}, 0), ("wrong", "crash", {}, 6), ("hang", "hang", {}, 1),
    ("slow", "ok", {"time_ms": 2.0}, 1), ("slow", "ok", {"time_ms": 0.5}, 0), ("assertion", "ok", {}, 5),
    ("wrong", "not_supported", {}, 3),
    # the recorded solution refused now by a rule (a fixed odd-perf-config bug), whatever the recorded failure
    ("wrong", "refused", {}, 0), ("lowering_error", "refused", {}, 0),
    ("imported", "ok", {}, 0), ("imported", "wrong", {}, 1), ("crash", "cannot_run", {}, 4),
])
def test_verdicts(kind, status, extra, code):
    from pytest_mlirtrace._internal.repro.reproducer_template import verdict

    got, msg = verdict({"kind": kind, "max_ms": 1.0, "origin": "t"}, {"status": status, "error": "e", **extra})
    assert got == code, msg


def test_the_mlir_goes_beside_the_reproducer_and_the_ticket_hands_it_off(tmp_path):
    w = ReproWriter(tmp_path)
    got = w.write(record())
    mf = got.script_path.with_suffix(".mlir")
    assert mf.read_text() == MLIR             # the file rocMLIR takes, byte for byte
    t = got.ticket_path.read_text()
    assert "## Reproduce with rocMLIR (hand-off)" in t
    assert f"rocmlir-gen -fut mlir_dot_add --arch \"${{ARCH:-gfx942}}\" --clone-harness {mf}" in t
    assert "--perf_config=16,16,1" in t
    assert "rocmlir-driver -kernel-pipeline=migraphx,highlevel -host-pipeline=migraphx,highlevel" in t
    assert "// RUN: rocmlir-gen -fut mlir_dot_add --arch %arch --clone-harness %s" in t
    # the tuning config line is the key's flags, without its arch and CU prefix
    assert "```text\n-t f32 -out_datatype f32 -transA false -transB false -g 1 -m 5 -n 3 -k 4\n```" in t
    assert "MIGRAPHX_TRACE_MLIR=1" in t
    assert json.loads((tmp_path / "INDEX.json").read_text())["reproducers"][got.signature]["mlir"] == mf.name
