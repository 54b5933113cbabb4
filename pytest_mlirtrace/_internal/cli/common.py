"""Shared bits of the subcommands: reading a module file, device/trace options, errors, progress.

Every error a command can meet is turned here into one line on stderr and a status of the exit-code
contract (:class:`~pytest_mlirtrace._internal.vocab.exit_codes.ExitCode`): bad input or usage 2
(``mlirtrace: FILE:LINE:COL: message``), a module the code generator does not handle 3
(``mlirtrace: not supported: FILE: <which op, why>``); ``main`` adds 4 (environment) and 130 (Ctrl-C).
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time

from ..config import SettingError, environment, resolve
from ..vocab.exit_codes import ExitCode


class CLIError(Exception):
    """A user error: printed as ``mlirtrace: <message>`` with exit status 2 (``code``: another status)."""

    def __init__(self, message: str, code: int = ExitCode.USAGE):
        super().__init__(message)
        self.code = code


def add_device_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None,
                   help="OpenCL device: pocl (default, embedded CPU), nvidia, gpu, cpu, P:D, or a name substring "
                        f"(env {environment.DEVICE})")
    p.add_argument("--trace", default=None, metavar="LEVEL",
                   help="set MIGRAPHX_TRACE_MLIR and MIGRAPHX_TRACE_BENCHMARKING to LEVEL (0-3)")
    p.add_argument("--timeout", default=None, metavar="SECONDS",
                   help=f"seconds before a kernel counts as hung (env {environment.TIMEOUT}; default 30)")
    add_store_option(p)


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, metavar="DIR|URL",
                   help="where shared state lives: a directory, or redis://host:port/db to share reproducers, "
                        "tickets, fuzz examples and tuning results with a fleet of runners (env "
                        f"{environment.STORE}; default: local files)")


def add_module_options(p: argparse.ArgumentParser, *, database: bool = False) -> None:
    """``--func`` and ``--max-bytes`` (run, compile, tune); ``database``: also ``--no-database``."""
    p.add_argument("--func", default=None, metavar="NAME",
                   help="the func of an MLIR file to use (required when the file has several)")
    p.add_argument("--max-bytes", default=None, metavar="SIZE",
                   help="most host memory a checked run may take for inputs, outputs and the numpy oracle, "
                        f"checked before anything is allocated: bytes or 512M, 2G (env {environment.MAX_BYTES}; "
                        "default 2G)")
    if database:
        p.add_argument("--no-database", action="store_true",
                       help="read and write no tuning database (tune results are kept in memory only)")


def _located(msg: str, path: str) -> str:
    return msg if msg.startswith(path) else f"{path}: {msg}"


def read_source(path: str, func: str | None = None):
    """(Module, MLIR text or None) from a MIGraphX-text or MLIR file, with file:line errors: usage errors
    (exit 2), or not supported (exit 3) for valid MLIR that no func of can be converted."""
    from ..engine.session import load_module
    from ..engine.session import read_source as read_text
    from ..mlir import MLIRUnsupportedError

    try:
        text = read_text(path)
    except OSError as e:
        raise CLIError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise CLIError(_located(str(e), path)) from None
    try:
        return load_module(text, path, func=func)
    except MLIRUnsupportedError as e:
        raise CLIError("not supported: " + _located(str(e), path), ExitCode.NOT_SUPPORTED) from None
    except ValueError as e:
        raise CLIError(_located(str(e), path)) from None


_OPTIONS = {"device": "--device", "timeout_s": "--timeout", "trace": "--trace", "max_bytes": "--max-bytes",
            "repro_dir": "--repro-dir", "store": "--store"}
_SETTINGS = "_mlirtrace_settings"     # the attribute of args that keeps the command's Settings, once resolved
_STORES: list = []      # the stores this command opened: closed (what waited pushed) by run_guarded


def settings(args):
    """The command's :class:`~pytest_mlirtrace._internal.config.Settings` (options > environment > defaults), resolved
    on the first call and kept on ``args`` for the others; a bad value is a usage error naming where it came
    from."""
    st = getattr(args, _SETTINGS, None)
    if st is not None:
        return st
    values = {name: getattr(args, attr, None) for name, attr in (
        ("device", "device"), ("timeout_s", "timeout"), ("trace", "trace"), ("max_bytes", "max_bytes"),
        ("repro_dir", "repro_dir"), ("store", "store"))}
    try:
        st = resolve(values, option_names=_OPTIONS)
    except SettingError as e:
        raise CLIError(str(e)) from None
    setattr(args, _SETTINGS, st)
    return st


def session(args, **kw):
    """The TraceSession of a command (a missing device raises runtime.DeviceError: exit 4 in main): its
    settings' device, timeout, trace level, planted faults and size limit; the tuning database of the
    ``tuning_db`` setting (else ``tuning.json`` of a directory store, else the default one) -- shared with
    the fleet under a ``redis://`` store --, or with ``--no-database`` one in memory only."""
    from ..engine.database import MemoryDatabase
    from ..trace import TraceConfig, TraceSession

    st = settings(args)
    config = TraceConfig.from_level(st.trace) if st.trace is not None else TraceConfig.from_env()
    kw.setdefault("inject", st.inject or None)
    kw.setdefault("max_bytes", st.max_bytes)
    if "database" not in kw:
        if getattr(args, "no_database", False):
            kw["database"] = MemoryDatabase()
        else:
            s = store(args)
            kw["database"] = s.tuning_database(s.local_path("tuning.json", st.tuning_db))
    return TraceSession(st.device, config=config, timeout_s=st.timeout_s, **kw)


def store(args):
    """The command's :class:`~pytest_mlirtrace._internal.store.Store` (the ``store`` setting; this machine's name in
    the fleet's records from the ``machine`` setting), opened once and closed when the command ends
    (:func:`run_guarded`)."""
    from ..store import Store

    if _STORES and _STORES[0][0] is args:
        return _STORES[0][1]
    st = settings(args)
    s = Store(st.store, machine=st.machine)
    _STORES.insert(0, (args, s))
    return s


def repro_writer(args, default: str = "reproducers"):
    """The command's reproducer writer: ``--repro-dir`` (or the store's directory, or ``default``) through
    the store (a fleet's writes one reproducer per signature fleet-wide)."""
    s = store(args)
    return s.repro_writer(s.local_path("reproducers", settings(args).repro_dir) or default)


def open_module(args, **kw):
    """(module, MLIR text or None, TraceSession) of the command's FILE, ``--func`` and device options."""
    module, mlir_text = read_source(args.file, getattr(args, "func", None))
    return module, mlir_text, session(args, **kw)


@contextlib.contextmanager
def solution_usage(args):
    """A malformed ``--solution`` is a usage error naming it."""
    from ..codegen import SolutionError

    try:
        yield
    except SolutionError as e:
        raise CLIError(f"bad solution {args.solution!r}: {e}") from None


class Progress:
    """Tune's progress on ``stream`` (stderr). On a terminal, a ``rich`` progress bar: solutions
    benchmarked out of all, time since the tuning began, the last solution and its status. Otherwise a
    plain ``LABEL: DONE/TOTAL (ELAPSEDs)`` line every ``every_s`` and at the end. Use it as a context
    manager (or call :meth:`close`) so that the bar is taken down however the tuning ends."""

    def __init__(self, total: int, label: str, stream=None, every_s: float = 5.0):
        from ..trace.table import is_terminal

        self.total, self.label = total, label
        self.stream = stream or sys.stderr
        self.tty = is_terminal(self.stream)
        self.t0 = self.last = time.monotonic()
        self.every_s = every_s
        self._bar = self._task = None
        self._live = False
        if self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            from ..trace.table import terminal_console

            self._bar = Bar(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("{task.fields[current]}", markup=False),
                            console=terminal_console(self.stream), refresh_per_second=4,
                            redirect_stdout=False, redirect_stderr=False)
            # the task's clock starts now, with the builds; the bar shows from the first result on
            self._task = self._bar.add_task(label, total=total or None, current="")

    def __call__(self, done: int, total: int | None = None, row=None) -> None:
        total = total or self.total
        if self._bar is not None:
            current = f"{row.solution} {row.status}" if row is not None else ""
            self._bar.update(self._task, total=max(total, 1), completed=done, current=current)
            if not self._live:
                self._live = True
                self._bar.start()
            if done >= total:
                self.close()
            return
        now = time.monotonic()
        if now - self.last >= self.every_s or done >= total:
            self.last = now
            self.stream.write(f"{self.label}: {done}/{total} ({now - self.t0:.1f}s)\n")
            self.stream.flush()

    def close(self) -> None:
        """Take the bar down (a last refresh, then a new line); nothing when it never showed."""
        if self._live:
            self._live = False
            self._bar.stop()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_guarded(fn, args) -> int:
    """``fn(args)``, with what the user can do something about reported in one line and its status:
    usage and bad input 2, a module the code generator does not handle 3, a size over ``--max-bytes`` 2."""
    from ..codegen import LoweringError, NotSupported
    from ..engine import SizeLimitError
    from ..ir import IRError

    where = getattr(args, "file", None) or getattr(args, "log", None) or "mlirtrace"
    try:
        try:
            return int(fn(args))
        finally:
            while _STORES:
                _STORES.pop()[1].close()
    except CLIError as e:
        print(f"mlirtrace: {e}", file=sys.stderr)
        return e.code
    except NotSupported as e:
        print(f"mlirtrace: not supported: {where}: {e}", file=sys.stderr)
        return ExitCode.NOT_SUPPORTED
    except LoweringError as e:
        print(f"mlirtrace: not supported: {where}: cannot lower: {e}", file=sys.stderr)
        return ExitCode.NOT_SUPPORTED
    except IRError as e:
        # a module that breaks the rules, found once it is lowered (e.g. MIGraphX text with an unknown '@' op)
        print(f"mlirtrace: {_located(str(e), where)}", file=sys.stderr)
        return ExitCode.USAGE
    except SizeLimitError as e:
        print(f"mlirtrace: {where}: {e} (raise it with --max-bytes or {environment.MAX_BYTES})", file=sys.stderr)
        return ExitCode.USAGE
    except OSError as e:
        if e.filename is None:
            raise
        # a path given that can't be written or read (an output folder that is a file, no permission, ...)
        print(f"mlirtrace: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return ExitCode.USAGE
