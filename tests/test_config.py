"""One settings object: option > environment > ini file > default, resolved once; a bad value is
reported with where it came from."""
from __future__ import annotations

import pytest

from pytest_mlirtrace._internal.config import ENV, SettingError, Settings, inject_now, resolve

NAMES = {"timeout_s": "--mlir-timeout", "device": "--mlir-device", "trace": "--mlir-trace"}
INI = {"timeout_s": "mlir_timeout", "device": "mlir_device", "trace": "mlir_trace"}


def test_defaults_when_nothing_is_given():
    s = resolve(env={})
    assert s == Settings()
    assert s.timeout_s == 30.0 and s.device is None and s.trace is None and s.inject == "" and s.repro
    assert s.source("timeout_s") == "default"


@pytest.mark.parametrize("opt,env,ini,want,source", [
    (5, "7", "9", 5.0, "--mlir-timeout (command line)"),
    (None, "7", "9", 7.0, "MLIRTRACE_TIMEOUT (environment)"),
    (None, "", "9", 9.0, "mlir_timeout (ini file tox.ini)"),
    (None, None, "", 30.0, "default"),
])
def test_option_beats_environment_beats_ini_beats_default(opt, env, ini, want, source):
    s = resolve({"timeout_s": opt}, option_names=NAMES, env={} if env is None else {"MLIRTRACE_TIMEOUT": env},
                ini={"timeout_s": ini}, ini_names=INI, ini_file="tox.ini")
    assert s.timeout_s == want and s.source("timeout_s") == source


@pytest.mark.parametrize("where,kw,message", [
    ("option", {"options": {"timeout_s": "abc"}}, "--mlir-timeout=abc: expected a number of seconds"),
    ("env", {"env": {"MLIRTRACE_TIMEOUT": "-3"}}, "MLIRTRACE_TIMEOUT=-3: expected a positive number of seconds"),
    ("ini", {"ini": {"timeout_s": "soon"}, "ini_file": "pytest.ini"},
     "mlir_timeout = soon in pytest.ini: expected a number of seconds"),
    ("trace", {"options": {"trace": "7"}}, "--mlir-trace=7: expected a trace level 0-3"),
    ("inject", {"env": {"MLIRTRACE_INJECT": "no_such_fault"}}, "MLIRTRACE_INJECT=no_such_fault: unknown fault(s) "
                                                               "'no_such_fault'"),
    ("repro", {"env": {"MLIRTRACE_REPRO": "maybe"}}, "MLIRTRACE_REPRO=maybe: expected true or false"),
])
def test_a_bad_value_names_its_source(where, kw, message):  # noqa: ARG001 - where: the case's name
    kw.setdefault("env", {})
    with pytest.raises(SettingError) as e:
        resolve(option_names=NAMES, ini_names=INI, **kw)
    assert str(e.value).startswith(message), str(e.value)


def test_every_field_has_its_variable_and_parses():
    env = {ENV["device"]: "nvidia", ENV["timeout_s"]: "12.5", ENV["inject"]: "missing_barrier,k_tail_off_by_one",
           ENV["tuning_db"]: "/tmp/t.json", ENV["repro_dir"]: "r", ENV["repro"]: "no"}
    s = resolve(env=env)
    assert (s.device, s.timeout_s, s.tuning_db, s.repro_dir, s.repro) == ("nvidia", 12.5, "/tmp/t.json", "r", False)
    assert s.inject == "k_tail_off_by_one,missing_barrier"
    assert resolve({"trace": "on"}, env={}).trace == 1 and resolve({"trace": "3"}, env={}).trace == 3


def test_inject_now_reads_the_environment_at_each_call():
    assert inject_now({}) == ""
    assert inject_now({"MLIRTRACE_INJECT": " wrong_transpose_stride "}) == "wrong_transpose_stride"
    with pytest.raises(SettingError, match="MLIRTRACE_INJECT=bogus: unknown fault"):
        inject_now({"MLIRTRACE_INJECT": "bogus"})
