"""Tune's progress: a rich bar on a terminal, periodic plain lines otherwise."""
from __future__ import annotations

import io
import re
from types import SimpleNamespace

import pytest

from pytest_mlirtrace._internal.cli.common import Progress


class TTY(io.StringIO):
    def isatty(self):
        return True


def row(solution, status="ok"):
    return SimpleNamespace(solution=solution, status=status)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.delenv("TERM", raising=False)


def test_plain_lines_every_few_seconds_and_at_the_end():
    s = io.StringIO()
    p = Progress(0, "tuning", stream=s, every_s=3600)
    p(1, 3, row("1,1,4,1,1,1,0,4"))
    p(2, 3, row("2,2,4,1,1,1,0,4"))
    assert s.getvalue() == ""
    p(3, 3, row("4,2,4,4,2,2,0,4"))
    assert re.fullmatch(r"tuning: 3/3 \(\d+\.\ds\)\n", s.getvalue())
    s = io.StringIO()
    with Progress(0, "tuning", stream=s, every_s=0) as p:
        p(1, 2)
        p(2, 2)
    assert re.fullmatch(r"tuning: 1/2 \(\d+\.\ds\)\ntuning: 2/2 \(\d+\.\ds\)\n", s.getvalue())


def test_a_bar_on_a_terminal_with_the_last_solution_and_its_status():
    t = TTY()
    with Progress(0, "tuning", stream=t) as p:
        assert t.getvalue() == ""                    # nothing until the first result
        p(1, 2, row("1,1,4,1,1,1,0,4", "wrong"))
        p(2, 2, row("4,2,4,4,2,2,0,4"))
        done = t.getvalue()
    assert t.getvalue() == done                      # the last result took it down
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", done)
    assert "tuning" in plain and "1/2" in plain and "2/2" in plain and re.search(r"\d:\d\d:\d\d", plain)
    assert "1,1,4,1,1,1,0,4 wrong" in plain and plain.rstrip().endswith("4,2,4,4,2,2,0,4 ok")
    assert done.endswith("\n\x1b[?25h") and done.count("\n") == 1   # redrawn in place, then a new line


def test_leaving_early_takes_the_bar_down():
    t = TTY()
    with pytest.raises(KeyboardInterrupt):
        with Progress(0, "tuning", stream=t) as p:
            p(1, 5, row("1,1,4,1,1,1,0,4"))
            raise KeyboardInterrupt
    assert t.getvalue().endswith("\n\x1b[?25h")
