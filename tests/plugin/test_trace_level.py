"""``--mlir-trace=LEVEL`` validated wherever the level comes from (issue 18): a bad one is one pytest
usage error (exit 4) that names its source -- the option, the ini key and its file, or the environment
variable (MIGraphX's ``MIGRAPHX_TRACE_MLIR`` / ``MIGRAPHX_TRACE_BENCHMARKING``, read by the trace layer)."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def plain(pytester, monkeypatch):
    for var in ("MIGRAPHX_TRACE_MLIR", "MIGRAPHX_TRACE_BENCHMARKING"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_x="""
from pytest_mlirtrace._internal.plugin.plugin import STATE_KEY

def test_x(pytestconfig):
    print("LEVEL", pytestconfig.stash[STATE_KEY].level)
""")
    return pytester


def test_a_bad_option_level(plain):
    for bad in ("loud", "4", "-1"):
        res = plain.runpytest(f"--mlir-trace={bad}", "test_x.py")
        assert res.ret == pytest.ExitCode.USAGE_ERROR
        res.stderr.fnmatch_lines([f"*: --mlir-trace={bad}: expected a trace level 0-3"])


def test_a_bad_ini_level_names_the_key_and_the_file(plain):
    plain.makeini("[pytest]\nmlir_trace = loud\n")
    res = plain.runpytest("test_x.py")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*: mlir_trace = loud in tox.ini: expected a trace level 0-3"])
    plain.runpytest("-s", "--mlir-trace=2", "test_x.py").stdout.fnmatch_lines(["*LEVEL 2"])   # the option wins
    plain.makeini("[pytest]\nmlir_trace = on\n")
    plain.runpytest("-s", "test_x.py").stdout.fnmatch_lines(["*LEVEL 1"])


@pytest.mark.parametrize("var", ["MIGRAPHX_TRACE_MLIR", "MIGRAPHX_TRACE_BENCHMARKING"])
def test_a_bad_environment_level_names_the_variable(plain, monkeypatch, var):
    monkeypatch.setenv(var, "loud")
    res = plain.runpytest("test_x.py")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*: {var}=loud: expected a trace level 0-3 (or on / off)"])
    for good in ("2", "on", "off", ""):
        monkeypatch.setenv(var, good)
        plain.runpytest("test_x.py").assert_outcomes(passed=1)
