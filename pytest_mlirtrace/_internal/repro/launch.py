"""The one launcher of reproducer scripts: a script run alone, as a user runs it (``python SCRIPT --quiet``),
in a fresh process group (it and what it starts are killed at the limit), with the planted faults asked
for switched on by their variable (``config.environment.INJECT``) and no others.

``mlirtrace repro run`` replays a directory's scripts with it (:mod:`.replay`); the fuzz runs each finding's
reproducer once before writing it (:func:`launch_record`: does it fail in a fresh process?).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..config import environment
from ..procs import run_group_output
from .record import FailureRecord
from .writer import ReproWriter

__all__ = ["launch", "launch_record", "script_environment"]


def script_environment(inject: str | None, base=None) -> dict:
    """The environment a reproducer runs in: ``base`` (this process's) with the planted faults ``inject``
    switched on, and none when ``inject`` is empty."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != environment.INJECT}
    if inject:
        env[environment.INJECT] = inject
    return env


def launch(script, *, limit_s: float, inject: str | None = None, device: str | None = None,
           timeout_s: float | None = None, cwd=None) -> tuple[int | None, str]:
    """Run the reproducer ``script`` alone for at most ``limit_s`` seconds, with the faults ``inject``,
    ``--device`` ``device`` and ``--timeout`` ``timeout_s`` when given: (its exit status, or None when it was
    killed at the limit; what it printed)."""
    cmd = [sys.executable, str(Path(script).resolve()), "--quiet"]     # absolute: it may run in another cwd
    if timeout_s is not None:
        cmd += ["--timeout", f"{timeout_s:g}"]
    if device:
        cmd += ["--device", device]
    return run_group_output(cmd, env=script_environment(inject), timeout=limit_s,
                            cwd=None if cwd is None else str(cwd))


def launch_record(rec: FailureRecord, *, limit_s: float, inject: str | None = None, device: str | None = None,
                  timeout_s: float | None = None) -> int | None:
    """``rec``'s reproducer, written to a directory of its own, run alone (:func:`launch`): its exit status
    (None: killed at the limit)."""
    with tempfile.TemporaryDirectory(prefix="mlirtrace-verify-") as d:
        w = ReproWriter(d).write(rec)
        code, _ = launch(w.script_path, limit_s=limit_s, inject=inject, device=device, timeout_s=timeout_s)
        return code
