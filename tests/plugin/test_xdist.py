"""Under pytest-xdist the workers write the reproducers (atomically, under the index lock), the controller's
summary lists them, and a worker process that dies loses nothing already written."""
from __future__ import annotations

import json

pytest_plugins = ["pytester"]

FILE_A = '''
from mods import DOT_T


def test_wrong(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)


def test_wrong_again(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=2)


def test_slow(mlirtrace):
    mlirtrace.run(DOT_T, max_ms=1e-9)


def test_pass(mlirtrace):
    mlirtrace.run(DOT_T)
'''

FILE_B = '''
import os
import signal

import pytest

from mods import DOT_T


@pytest.fixture
def die_afterwards():
    yield
    os.kill(os.getpid(), signal.SIGKILL)      # the test process dies in teardown, after its failure was reported


def test_assertion(mlirtrace):
    mlirtrace.run(DOT_T)
    assert 0, "after a fixture call"


def test_build_error_then_die(die_afterwards, mlirtrace, monkeypatch):
    monkeypatch.setenv("PLANT", "build_error")
    mlirtrace.run(DOT_T)
'''


def _outcomes(junit) -> dict[str, str]:
    """``{classname.name: passed | failed | skipped}`` of each test in a JUnit file."""
    import xml.etree.ElementTree as ET
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        tags = {child.tag for child in case}
        kind = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        name = f'{case.get("classname")}.{case.get("name")}'
        out[name] = "failed" if out.get(name) == "failed" else kind
    return out


def test_xdist_workers_lose_nothing(inner):
    inner.makepyfile(test_a=FILE_A, test_b=FILE_B)
    res = inner.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--junitxml=junit.xml")
    out = res.stdout.str()
    # each test's outcome as the controller recorded it (JUnit), not as pytest or xdist word their summaries
    assert _outcomes(inner.path / "junit.xml") == {
        "test_a.test_wrong": "failed", "test_a.test_wrong_again": "failed", "test_a.test_slow": "failed",
        "test_a.test_pass": "passed", "test_b.test_assertion": "failed", "test_b.test_build_error_then_die": "failed"}
    assert res.ret == 1
    index = json.loads((inner.path / "reproducers" / "INDEX.json").read_text())["reproducers"]
    kinds = sorted(e["kind"] for e in index.values())
    assert kinds == ["assertion", "build_error", "slow", "wrong"]
    by_kind = {e["kind"]: e for e in index.values()}
    assert by_kind["wrong"]["count"] == 2
    assert by_kind["build_error"]["first_origin"] == "test_b.py::test_build_error_then_die"
    for sig, e in index.items():
        assert (inner.path / "reproducers" / e["script"]).is_file()
        assert (inner.path / "reproducers" / e["ticket"]).is_file()
        # the controller's summary names every reproducer, written by whichever worker
        assert f"{sig}  reproducers/{sig}.py" in out, sig
    assert f"{len(index)} reproducer(s), {len(index)} new" in out
    # junitxml writes a test's properties with its teardown report, which a dead process never sends
    junit = (inner.path / "junit.xml").read_text()
    for e in index.values():
        assert (f'value="{e["signature"]}"' in junit) == (e["kind"] != "build_error"), e["signature"]


FILE_DEVICES = '''
import os

from mods import DOT_T


def test_{i}(mlirtrace, record_property):
    r = mlirtrace.run(DOT_T, seed={i})
    record_property("ran_on", mlirtrace.device.spec)
    assert r.ok
'''


def test_one_worker_per_device_each_pinned_and_named(inner, monkeypatch):
    """``--mlir-devices all`` with PoCL exposing two CPU devices (``POCL_DEVICES="pthread pthread"``): -n 2 by
    itself, each worker's fixture runs on its own device, and every report (JUnit) names the device."""
    monkeypatch.setenv("POCL_DEVICES", "pthread pthread")
    for i in range(6):
        inner.makepyfile(**{f"test_d{i}": FILE_DEVICES.replace("{i}", str(i))})
    res = inner.runpytest_subprocess("--mlir-devices", "all", "-p", "no:cacheprovider", "--junitxml=junit.xml",
                                     "--dist", "loadfile")
    assert res.ret == 0
    assert set(_outcomes(inner.path / "junit.xml").values()) == {"passed"}
    import xml.etree.ElementTree as ET
    ran = {}
    for case in ET.parse(inner.path / "junit.xml").iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["mlirtrace_device"] == props["ran_on"], props      # pinned, and the report says where
        ran[case.get("classname")] = props["ran_on"]
    assert len(ran) == 6 and set(ran.values()) == {"0:0", "0:1"}, ran


def test_a_device_list_that_matches_nothing_is_a_usage_error(inner):
    res = inner.runpytest_subprocess("--mlir-devices", "0:0,nosuchdevice", "-p", "no:cacheprovider")
    assert res.ret == 4      # pytest's usage error
    res.stderr.fnmatch_lines(["*--mlir-devices (command line)*nosuchdevice*"])
