"""``mlirtrace repro list|run|status|prune``: a directory of real reproducers rerun as a whole."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal import engine, ir, repro

from ..settings import DEVICE


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "pytest_mlirtrace", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def dot(m, k, n):
    mod = ir.Module()
    a, b = mod.add_param("a", "f32", [m, k]), mod.add_param("b", "f32", [k, n])
    mod.add_return(mod.add("relu", mod.add("dot", a, b)))
    return mod


@pytest.fixture(scope="module")
def repro_dir(tmp_path_factory):
    """Two reproducers of a planted K-tail bug (different modules: two signatures) and an index entry whose
    script was deleted."""
    d = tmp_path_factory.mktemp("repros")
    pipe = engine.Pipeline(DEVICE, inject="k_tail_off_by_one", timeout_s=30, database=engine.MemoryDatabase())
    w = repro.ReproWriter(d)
    written = []
    for mod in (dot(5, 13, 7), dot(3, 11, 2)):
        res = pipe.run(mod, seed=2)
        assert res.status == "wrong", res.detail
        written.append(w.write(repro.FailureRecord.from_run(res, origin="test", timeout_s=30,
                                                            inject="k_tail_off_by_one", device_info=pipe.device)))
    gone = w.write(repro.FailureRecord.from_run(pipe.run(dot(2, 9, 3), seed=2), origin="test", timeout_s=30,
                                                inject="k_tail_off_by_one", device_info=pipe.device))
    gone.script_path.unlink()
    return d, [x.signature for x in written], gone.signature


def test_run_status_and_prune(repro_dir):
    d, sigs, gone = repro_dir
    # with the faults they were recorded with: both still fail; the deleted one is missing
    p = cli("repro", "run", d, "--timeout", "200")
    assert p.returncode == 1, p.stdout + p.stderr
    rows = {ln.split()[0]: ln.split()[2] for ln in p.stdout.splitlines() if ln.startswith("wrong-")}
    assert rows == {sigs[0]: "reproduces", sigs[1]: "reproduces", gone: "missing"}, p.stdout
    assert "2 reproduces" in p.stdout and "(exit 1)" in p.stdout
    assert "[1/3]" in p.stderr and "[3/3]" in p.stderr
    st = cli("repro", "status", d, "--json")
    data = json.loads(st.stdout)
    assert st.returncode == 1 and data["exit"] == 1
    assert {r["signature"]: r["verdict"] for r in data["replays"]} == {sigs[0]: "reproduces", sigs[1]: "reproduces",
                                                                       gone: "missing"}
    assert all(r["line"].startswith("REPRODUCED: wrong") for r in data["replays"] if r["verdict"] == "reproduces")
    # nothing fixed yet: prune takes only the entry whose script is gone
    assert cli("repro", "prune", d, "--dry-run").stdout.splitlines()[0] == f"would remove {gone}"
    # the bug fixed (faults off): every reproducer passes, exit 0; prune removes them with their files
    p = cli("repro", "run", d, "--without-faults", "--timeout", "200")
    rows = {ln.split()[0]: ln.split()[2] for ln in p.stdout.splitlines() if ln.startswith("wrong-")}
    assert p.returncode == 0 and rows == {sigs[0]: "fixed", sigs[1]: "fixed", gone: "missing"}, p.stdout
    lst = cli("repro", "list", d)
    assert lst.returncode == 0 and "3 reproducer(s)" in lst.stdout and "fixed" in lst.stdout
    p = cli("repro", "prune", d)
    assert p.returncode == 0 and "3 reproducer(s) removed" in p.stdout, p.stdout
    assert json.loads((d / "INDEX.json").read_text())["reproducers"] == {}
    assert not list(d.glob("*.py")) and not list(d.glob("*.mlir")) and not list(d.glob("wrong-*.md"))


def test_run_passes_the_device_to_each_reproducer(tmp_path):
    """``repro run --device D``: every reproducer runs on D (the argument was once swallowed into a comment, so
    each ran on its recorded device): a device this machine lacks makes each one "cannot run"."""
    pipe = engine.Pipeline(DEVICE, inject="k_tail_off_by_one", timeout_s=30, database=engine.MemoryDatabase())
    res = pipe.run(dot(5, 13, 7), seed=2)
    assert res.status == "wrong", res.detail
    sig = repro.ReproWriter(tmp_path).write(repro.FailureRecord.from_run(
        res, origin="test", timeout_s=30, inject="k_tail_off_by_one", device_info=pipe.device)).signature
    p = cli("repro", "run", tmp_path, "--timeout", "200", "--device", "no-such-device-xyz")
    data = json.loads(cli("repro", "status", tmp_path, "--json").stdout)
    assert {r["signature"]: r["verdict"] for r in data["replays"]} == {sig: "cannot run"}, p.stdout + p.stderr
    assert data["replays"][0]["exit"] == 4, data                 # the environment's exit: no such device
    p = cli("repro", "run", tmp_path, "--timeout", "200")          # on its recorded device it still fails
    assert p.returncode == 1, p.stdout + p.stderr


def test_bad_directory_and_never_replayed(tmp_path):
    p = cli("repro", "run", tmp_path / "nowhere")
    assert p.returncode == 2 and "no INDEX.json here" in p.stderr and "Traceback" not in p.stderr
    (tmp_path / "INDEX.json").write_text('{"format": 1, "reproducers": {}}')
    p = cli("repro", "status", tmp_path)
    assert p.returncode == 2 and "never replayed" in p.stderr
    p = cli("repro", "run", tmp_path, "--timeout", "0")
    assert p.returncode == 2 and "expected a positive number of seconds" in p.stderr


def test_a_relative_directory_runs_its_reproducers_and_a_broken_one_is_not_a_pass(tmp_path):
    """``repro run DIR`` with DIR relative to the caller's directory (each reproducer runs with DIR as its cwd:
    the script's path must not be taken relative twice); a reproducer that cannot run as called gives exit 2,
    never 0."""
    d = tmp_path / "rd"
    pipe = engine.Pipeline(DEVICE, inject="k_tail_off_by_one", timeout_s=30, database=engine.MemoryDatabase())
    res = pipe.run(dot(3, 9, 2), seed=3)
    assert res.status == "wrong", res.detail
    w = repro.ReproWriter(d).write(repro.FailureRecord.from_run(res, origin="test", timeout_s=30,
                                                                inject="k_tail_off_by_one", device_info=pipe.device))
    run = lambda *a: subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "repro", "run", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=600, cwd=tmp_path)
    p = run("rd", "--timeout", "200")
    assert p.returncode == 1 and f"{w.signature}" in p.stdout and "reproduces" in p.stdout, p.stdout + p.stderr
    # a reproducer that refuses to run as called (exit 2, as python itself does for a path it cannot open)
    w.script_path.write_text("raise SystemExit(2)\n")
    p = run("rd", "--timeout", "200")
    assert p.returncode == 2 and "bad usage" in p.stdout, p.stdout + p.stderr
