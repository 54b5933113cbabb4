"""A child process run to a time limit, then killed together with everything it started.

``subprocess.run(timeout=...)`` kills only the child: a reproducer's OpenCL worker (or its ``--_child``)
would live on, hung or spinning, on a machine of two cores. Here the child leads a new session, and at the
limit its whole process group gets SIGKILL. Standard library only.
"""
from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["run_group"]


def run_group(cmd: list[str], *, env: dict | None = None, timeout: float, cwd: str | None = None) -> int | None:
    """Run ``cmd`` (output discarded) for at most ``timeout`` seconds: its exit status, or None when it had to
    be killed at the limit (it and its process group)."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
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
