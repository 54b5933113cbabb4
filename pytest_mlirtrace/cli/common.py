"""Shared bits of the subcommands: reading a module file, device/trace options, errors, progress."""
from __future__ import annotations

import argparse
import contextlib
import sys
import time


class CLIError(Exception):
    """A user error: printed as ``mlirtrace: <message>`` with exit status 2."""


def add_device_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default=None,
                   help="OpenCL device: pocl (default, embedded CPU), nvidia, gpu, cpu, P:D, or a name substring "
                        "(env MLIRTRACE_DEVICE)")
    p.add_argument("--trace", default=None, metavar="LEVEL",
                   help="set MIGRAPHX_TRACE_MLIR and MIGRAPHX_TRACE_BENCHMARKING to LEVEL (0-3)")
    p.add_argument("--timeout", default=None, metavar="SECONDS",
                   help="seconds before a kernel counts as hung (env MLIRTRACE_TIMEOUT; default 30)")


def read_source(path: str):
    """(Module, MLIR text or None) from a MIGraphX-text or MLIR file, with file:line errors."""
    from ..engine import load_module

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CLIError(f"cannot read {path}: {e.strerror}") from None
    try:
        return load_module(text, path)
    except ValueError as e:
        msg = str(e)
        raise CLIError(msg if msg.startswith(path) else f"{path}: {msg}") from None


def settings(args):
    """The command's :class:`~pytest_mlirtrace.config.Settings` (options > environment > defaults); a
    bad value is a usage error naming where it came from."""
    from ..config import SettingError, resolve

    try:
        return resolve({"device": getattr(args, "device", None), "timeout_s": getattr(args, "timeout", None),
                        "trace": getattr(args, "trace", None)},
                       option_names={"device": "--device", "timeout_s": "--timeout", "trace": "--trace"})
    except SettingError as e:
        raise CLIError(str(e)) from None


def session(args, **kw):
    """The TraceSession of a command (a missing device raises runtime.DeviceError: exit 4 in main)."""
    from ..trace import TraceConfig, TraceSession

    st = settings(args)
    config = TraceConfig.from_level(st.trace) if st.trace is not None else TraceConfig.from_env()
    kw.setdefault("inject", st.inject or None)
    return TraceSession(st.device, config=config, timeout_s=st.timeout_s, **kw)


def open_module(args, **kw):
    """(module, MLIR text or None, TraceSession) of the command's FILE and device options."""
    module, mlir_text = read_source(args.file)
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

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_guarded(fn, args) -> int:
    try:
        return fn(args)
    except CLIError as e:
        print(f"mlirtrace: {e}", file=sys.stderr)
        return 2
