"""``procs.run_group``: a child past its limit is killed with what it started; its exit status otherwise."""
from __future__ import annotations

import os
import sys
import time

from pytest_mlirtrace.procs import run_group

# the child starts a grandchild that would sleep for a minute, writes its pid, then waits on it
SPAWNER = r"""
import subprocess, sys, time
g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(sys.argv[1], "w").write(str(g.pid))
g.wait()
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie awaiting its reaper counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_the_exit_status_comes_back():
    assert run_group([sys.executable, "-c", "raise SystemExit(3)"], timeout=30) == 3


def test_at_the_limit_the_child_and_its_grandchild_are_killed(tmp_path):
    pidfile = tmp_path / "pid"
    t0 = time.monotonic()
    assert run_group([sys.executable, "-c", SPAWNER, str(pidfile)], timeout=3) is None
    assert time.monotonic() - t0 < 20
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the grandchild outlived the limit"
