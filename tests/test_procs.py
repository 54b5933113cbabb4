"""``procs.run_group``: a child past its limit is killed with what it started; its exit status otherwise."""
from __future__ import annotations

import os
import sys
import time

from pytest_mlirtrace._internal.procs import run_group

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


def test_the_output_comes_back_and_a_killed_grandchild_does_not_block_it(tmp_path):
    from pytest_mlirtrace._internal.procs import run_group_output

    code, out = run_group_output([sys.executable, "-c", "import sys; print('to out'); "
                                  "print('to err', file=sys.stderr); raise SystemExit(6)"], timeout=30)
    assert code == 6 and "to out" in out and "to err" in out
    spawner = "print('started', flush=True)\n" + SPAWNER
    t0 = time.monotonic()
    code, out = run_group_output([sys.executable, "-c", spawner, str(tmp_path / "pid")], timeout=3)
    assert code is None and "started" in out and time.monotonic() - t0 < 20
