"""A child process run to a time limit, then killed together with everything it started.

``subprocess.run(timeout=...)`` kills only the child: a reproducer's OpenCL worker (or its ``--_child``)
would live on, hung or spinning, on a machine of two cores. Here the child leads a new session, and at the
limit its whole process group gets SIGKILL. Standard library only.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile

__all__ = ["run_group", "run_group_output"]


def _run(cmd, env, timeout, cwd, out) -> int | None:
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                         stderr=subprocess.STDOUT if out is not subprocess.DEVNULL else subprocess.DEVNULL,
                         start_new_session=True)
    try:
        return p.wait(timeout=max(0.0, timeout))
    except subprocess.TimeoutExpired:
        return None
    finally:
        try:   # the group too: workers the child started and left behind, at the limit or on its way out
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:   # SIGKILL ends it at once, unless it sits in the kernel (uninterruptible I/O): not forever
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def run_group(cmd: list[str], *, env: dict | None = None, timeout: float, cwd: str | None = None) -> int | None:
    """Run ``cmd`` (output discarded) for at most ``timeout`` seconds: its exit status, or None when it had to
    be killed at the limit (it and its process group)."""
    return _run(cmd, env, timeout, cwd, subprocess.DEVNULL)


def run_group_output(cmd: list[str], *, env: dict | None = None, timeout: float,
                     cwd: str | None = None) -> tuple[int | None, str]:
    """:func:`run_group` keeping what ``cmd`` printed (stdout and stderr together, through a file: a pipe
    a killed grandchild holds open would block the read)."""
    with tempfile.TemporaryFile() as f:
        code = _run(cmd, env, timeout, cwd, f)
        f.seek(0)
        return code, f.read().decode("utf-8", "replace")
