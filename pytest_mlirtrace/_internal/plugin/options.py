"""The plugin's options and ini keys, and the one resolution of a run's settings from them.

Each setting is declared once in :data:`OPTIONS` (option, ini key, help); :func:`resolve_settings` turns
what pytest parsed, the environment and the ini file into :class:`~pytest_mlirtrace._internal.config.Settings`
(option > environment > ini > default). Standard library, pytest and ``config`` only (this runs in every
pytest process).
"""
from __future__ import annotations

import os
from typing import NamedTuple

import pytest

from ..config import SettingError, environment, resolve

__all__ = ["OPTIONS", "add_options", "resolve_settings", "trace_level_not_a_path"]


class Option(NamedTuple):
    setting: str          # the Settings field
    flag: str             # the command-line option
    ini: str              # the ini key
    ini_help: str
    kwargs: dict          # argparse's (dest, nargs, metavar, help, ...)


OPTIONS = (
    Option("trace", "--mlir-trace", "mlir_trace", "mlirtrace trace level 0-3 (like --mlir-trace=LEVEL)",
           dict(nargs="?", const="1", metavar="LEVEL",
                help="dump the migraphx module + MLIR before the first compile and each solution before it is "
                     "benchmarked, at LEVEL 1-3 (bare: 1); sets MIGRAPHX_TRACE_MLIR and "
                     "MIGRAPHX_TRACE_BENCHMARKING for the mlirtrace fixture (ini: mlir_trace)")),
    Option("repro_dir", "--mlir-repro-dir", "mlir_repro_dir", "mlirtrace reproducer directory (relative to the "
                                                              "ini file)",
           dict(metavar="DIR", help="where reproducers, tickets and INDEX.json go (ini: mlir_repro_dir; default: "
                                    "reproducers/ under the rootdir)")),
    Option("device", "--mlir-device", "mlir_device", "mlirtrace OpenCL device spec",
           dict(metavar="SPEC", help="OpenCL device for the mlirtrace fixture: pocl, nvidia, gpu, cpu, P:D, a name "
                                     f"substring (ini: mlir_device; env {environment.DEVICE})")),
    Option("timeout_s", "--mlir-timeout", "mlir_timeout", "mlirtrace hang timeout in seconds",
           dict(type=float, metavar="S", help="seconds before a kernel counts as hung (ini: mlir_timeout; "
                                              "default 30)")),
    Option("repro", "--mlir-no-repro", "mlir_repro", "write mlirtrace reproducers for failing tests (true/false; "
                                                     "default true)",
           dict(action="store_true", default=False,
                help="write no reproducers for failing tests (ini: mlir_repro = false)")),
    Option("reduce_s", "--mlir-reduce", "mlir_reduce", "reduce each new mlirtrace reproducer after the run: "
                                                       "seconds each, or on/off",
           dict(nargs="?", const="on", metavar="SECONDS",
                help="after the run, reduce each new reproducer (drop ops, shrink sizes, solution toward the "
                     "default, keeping its failure class) for at most SECONDS each (bare: 120); the reduced "
                     f"reproducer and ticket go beside it (ini: mlir_reduce; env: {environment.REDUCE})")),
    Option("tuning_db", "--mlir-tuning-db", "mlir_tuning_db", "mlirtrace tuning database file shared by the tests "
                                                              "(relative to the ini file); default: one in "
                                                              "memory per test",
           dict(metavar="PATH", help="tuning database file shared by the tests (ini: mlir_tuning_db; env "
                                     f"{environment.TUNING_DB}); default: each test has its own, in memory, so "
                                     "no test depends on another's tuning")),
    Option("store", "--mlir-store", "mlir_store", "mlirtrace store: a directory or redis://host:port/db",
           dict(metavar="DIR|URL", help="where shared state lives: a directory (reproducers/ and tuning.json "
                                        "under it), or redis://host:port/db to share reproducers, tickets and "
                                        "tuning results with a fleet of runners (ini: mlir_store; env "
                                        f"{environment.STORE}; default: local files)")),
    Option("devices", "--mlir-devices", "mlir_devices", "mlirtrace: one pytest-xdist worker per OpenCL device: "
                                                        "all, or specs",
           dict(metavar="all|SPEC,SPEC",
                help="with pytest-xdist: one worker per OpenCL device (all of them, or the specs listed: 0:0,0:1, "
                     "nvidia, ...), each worker's fixture pinned to its device and the device named in every "
                     f"report; -n defaults to the number of devices (ini: mlir_devices; env {environment.DEVICES})")),
)


def _dest(o: Option) -> str:
    return o.flag[2:].replace("-", "_")


def add_options(parser) -> None:
    """Every option in the ``mlirtrace`` group, every ini key."""
    g = parser.getgroup("mlirtrace", "mlirtrace (fused-op compiler traces and reproducers)")
    for o in OPTIONS:
        g.addoption(o.flag, dest=_dest(o), **{"default": None, **o.kwargs})
        parser.addini(o.ini, o.ini_help, default="")


def _ini_text(v):
    """An ini value as text (pytest may hand over a list for a key given twice)."""
    if v is None:
        return None
    return " ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _is_level(v: str) -> bool:
    return v.strip().lower() in ("", "on", "off", "true", "false", "yes", "no") or v.strip().isdigit()


def trace_level_not_a_path(args: list) -> None:
    """``--mlir-trace tests/x.py``: the optional LEVEL must not swallow the path that follows (``args``
    changed in place)."""
    for i, a in enumerate(list(args)):
        if a == "--":
            break
        if a == "--mlir-trace" and i + 1 < len(args) and not args[i + 1].startswith("-") \
                and not _is_level(args[i + 1]):
            args[i] = "--mlir-trace=1"


def resolve_settings(config):
    """The run's :class:`~pytest_mlirtrace._internal.config.Settings` (option > environment > ini); a bad value is a
    usage error naming where it came from."""
    values = {o.setting: getattr(config.option, _dest(o)) for o in OPTIONS}
    values["repro"] = False if values["repro"] else None         # --mlir-no-repro
    flags = {o.setting: o.flag for o in OPTIONS if o.setting != "repro"}
    ini_keys = {o.setting: o.ini for o in OPTIONS}
    try:
        return resolve(values, option_names=flags, env=os.environ,
                       ini={k: _ini_text(config.getini(v)) for k, v in ini_keys.items()},
                       ini_names=ini_keys, ini_file=str(config.inipath.name) if config.inipath else "")
    except SettingError as e:
        raise pytest.UsageError(str(e)) from None
