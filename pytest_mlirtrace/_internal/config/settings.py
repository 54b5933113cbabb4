"""One settings object, resolved once: command-line option > environment > ini file > default.

Every front end (the pytest plugin, the CLI) resolves :class:`Settings` once from what it has and passes
the values down; nothing below reads these knobs from the environment itself. Each value remembers
where it came from, so a bad one is reported with its source (``--mlir-timeout=abc``,
``MLIRTRACE_TIMEOUT=abc``, ``mlir_timeout = abc in pytest.ini``) instead of as a bare error later.

Planted faults (``MLIRTRACE_INJECT``) are the one setting read again at each use (:func:`inject_now`): a
test switches one on for itself (``monkeypatch.setenv``) while the session that runs it lives on.
The variables' names, and those that processes mlirtrace starts read for themselves, are in
:mod:`.environment`.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..vocab.faults import FaultError, parse_inject
from . import environment
from .store_spec import StoreSpec, parse_store

__all__ = ["Settings", "SettingError", "resolve", "inject_now", "ENV"]

#: Settings field -> the environment variable that sets it
ENV = environment.SETTINGS


class SettingError(ValueError):
    """A bad setting; the message starts with where it came from."""


def _text(v) -> str | None:
    s = str(v).strip()
    return s or None


def _timeout(v) -> float:
    try:
        t = float(v)
    except (TypeError, ValueError):
        raise ValueError("expected a number of seconds") from None
    if not t > 0 or t == float("inf"):
        raise ValueError("expected a positive number of seconds")
    return t


def _level(v) -> int:
    s = str(v).strip().lower()
    if s in ("on", "true", "yes"):
        return 1
    if s in ("off", "false", "no"):
        return 0
    if not s.isdigit() or int(s) > 3:
        raise ValueError("expected a trace level 0-3")
    return int(s)


def _faults(v) -> str:
    try:
        return ",".join(sorted(parse_inject(str(v))))
    except FaultError as e:
        raise ValueError(str(e)) from None


def _bool(v) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _reduce(v) -> float | None:
    """``off`` / ``0``: no reduction; ``on``: 120 s; a number: seconds per reproducer."""
    s = str(v).strip().lower()
    if s in ("off", "false", "no", "0"):
        return None
    if s in ("on", "true", "yes", ""):
        return 120.0
    try:
        return _timeout(s)
    except ValueError:
        raise ValueError("expected a number of seconds per reproducer, or on / off") from None


_UNITS = {"": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
          "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def _bytes(v) -> int:
    """``1048576``, ``512M``, ``2G``, ``64KiB`` -> a positive number of bytes."""
    s = str(v).strip().upper().replace(" ", "")
    num = s.rstrip("KMGIB")
    unit = s[len(num):]
    try:
        n = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError("expected a size in bytes (1048576, 512M, 2G)") from None
    if not n >= 1 or n != n or n == float("inf"):
        raise ValueError("expected a positive size in bytes")
    return int(n)


def _devices(v) -> tuple[str, ...]:
    """``all``, or device specs separated by commas (``0:0,0:1``, ``nvidia``, ``pocl``)."""
    specs = tuple(x.strip() for x in str(v).split(",") if x.strip())
    if not specs:
        raise ValueError("expected all, or device specs separated by commas (0:0,0:1)")
    if "all" in (x.lower() for x in specs) and len(specs) > 1:
        raise ValueError("'all' stands alone: all, or a list of device specs")
    return ("all",) if specs[0].lower() == "all" else specs


def _store(v):
    return parse_store(v)


PARSE: dict[str, Callable] = {"device": _text, "timeout_s": _timeout, "trace": _level, "inject": _faults,
                              "tuning_db": _text, "repro_dir": _text, "repro": _bool,
                              "max_bytes": _bytes, "reduce_s": _reduce, "store": _store,
                              "devices": _devices, "machine": _text}


@dataclass(frozen=True)
class Settings:
    device: str | None = None        # OpenCL device spec; None: the runtime's default (PoCL's CPU)
    timeout_s: float = 30.0          # seconds before a kernel counts as hung
    trace: int | None = None         # one trace level for both dumps; None: MIGRAPHX_TRACE_* decide
    inject: str = ""                 # planted faults at start-up (validated); see inject_now()
    tuning_db: str | None = None     # None: the default database file
    repro_dir: str | None = None     # None: the front end's default
    repro: bool = True               # write reproducers
    max_bytes: int = 2 << 30         # the most host memory one module's tensors may take (checked before allocating)
    reduce_s: float | None = None    # pytest: reduce each new reproducer after the run, this long each; None: not
    store: StoreSpec | None = None   # a StoreSpec: a directory or redis://host:port/db; None: the local defaults
    devices: tuple | None = None     # pytest-xdist: one worker per device (("all",) or specs); None: one device
    machine: str | None = None       # this machine's name in a fleet's records; None: the host name
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)

    def source(self, name: str) -> str:
        """Where ``name`` came from: ``--mlir-timeout (command line)``, ``MLIRTRACE_TIMEOUT (environment)``,
        ``mlir_timeout (ini file pytest.ini)`` or ``default``."""
        return self.sources.get(name, "default")


def resolve(options: Mapping[str, object] | None = None, *, option_names: Mapping[str, str] | None = None,
            env: Mapping[str, str] | None = None, ini: Mapping[str, object] | None = None,
            ini_names: Mapping[str, str] | None = None, ini_file: str = "") -> Settings:
    """Each field from the first that has it: ``options`` (values not None; ``option_names`` spells them
    as the user typed them), ``env`` (non-empty variables of :data:`ENV`), ``ini`` (non-empty values;
    ``ini_names`` spells the keys, ``ini_file`` names the file), else the default. Raises
    :class:`SettingError` naming the source of a bad value."""
    options, env = options or {}, os.environ if env is None else env
    ini, option_names, ini_names = ini or {}, option_names or {}, ini_names or {}
    values, sources = {}, {}
    for name, parse in PARSE.items():
        found = None
        var = ENV.get(name)
        if options.get(name) is not None:
            opt = option_names.get(name, name)
            found = (options[name], f"{opt} (command line)", f"{opt}={options[name]}")
        elif var and str(env.get(var, "")).strip():
            found = (env[var], f"{var} (environment)", f"{var}={env[var]}")
        elif ini.get(name) not in (None, ""):
            key = ini_names.get(name, name)
            where = f"ini file {ini_file}" if ini_file else "ini file"
            found = (ini[name], f"{key} ({where})", f"{key} = {ini[name]} in {ini_file or 'the ini file'}")
        if found is None:
            continue
        raw, source, spelled = found
        try:
            values[name] = parse(raw)
        except ValueError as e:
            raise SettingError(f"{spelled}: {e}") from None
        sources[name] = source
    return Settings(**values, sources=sources)


def inject_now(env: Mapping[str, str] | None = None) -> str:
    """The planted faults as ``MLIRTRACE_INJECT`` has them now ("" for none), validated; the one place
    that reads it. Raises :class:`SettingError` for an unknown fault."""
    env = os.environ if env is None else env
    raw = environment.value(environment.INJECT, env)
    if not raw:
        return ""
    try:
        return _faults(raw)
    except ValueError as e:
        raise SettingError(f"{environment.INJECT}={raw}: {e}") from None
