"""The one table renderer: plain text wherever it is read (tests, logs, tickets), styled only on a terminal."""
from __future__ import annotations

import io
import re

import pytest

from pytest_mlirtrace._internal.engine.events import SolutionFinished
from pytest_mlirtrace._internal.trace import TraceLog, table
from pytest_mlirtrace._internal.trace.table import Column, render, solution_rows, solution_table

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ROWS = [SolutionFinished("4,2,4,4,2,2,0,4", "ok", 0.01234, "a" * 16, 0.5),
        SolutionFinished("1,1,4,1,1,1,0,4", "build_error", None, "b" * 16, 1.25),
        SolutionFinished("16,32,8,1,2,2,1,8", "ok", 0.002, "c" * 16, 0.125)]


class TTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture(autouse=True)
def loud_environment(monkeypatch):
    """What would make a careless console wrap, colour or draw boxes."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "20")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)


def test_the_solution_table_is_plain_aligned_text():
    text = solution_table(ROWS)
    lines = text.splitlines()
    assert re.fullmatch(r"solution\s+status\s+time_ms\s+build_s\s+span", lines[0])
    assert lines[1:] == ["4,2,4,4,2,2,0,4    ok                  0.0123      0.50  " + "a" * 16,
                         "1,1,4,1,1,1,0,4    build_error              -      1.25  " + "b" * 16,
                         "16,32,8,1,2,2,1,8  ok                  0.0020      0.12  " + "c" * 16]
    assert not ANSI.search(text) and text.isascii() and "\t" not in text
    assert all(ln == ln.rstrip() for ln in lines) and not text.endswith("\n")
    words = ["status", "ok", "build_error", "ok"]
    assert len({ln.index(w) for ln, w in zip(lines, words, strict=False)}) == 1   # aligned


def test_fastest_first_puts_untimed_rows_last_and_no_rows_leaves_the_header():
    order = [ln.split()[0] for ln in solution_table(ROWS, fastest_first=True).splitlines()[1:]]
    assert order == ["16,32,8,1,2,2,1,8", "4,2,4,4,2,2,0,4", "1,1,4,1,1,1,0,4"]
    assert re.fullmatch(r"solution\s+status\s+time_ms\s+build_s\s+span", solution_table([]))


def test_cells_are_text_not_markup_and_columns_justify():
    text = render([Column("name"), Column("n", "right")], [("[bold]x[/bold]", "1"), (":smile:", "100")])
    assert text.splitlines() == ["name              n", "[bold]x[/bold]    1", ":smile:         100"]


def test_bench_table_is_the_log_s_solutions_in_the_order_they_finished():
    log = TraceLog()
    assert log.bench_table() == ""
    for e in ROWS:
        log(e)
    assert log.bench_table() == solution_table(ROWS)
    one = TraceLog()
    one(ROWS[0])
    assert one.bench_table().splitlines()[1].startswith("4,2,4,4,2,2,0,4  ok")    # as tests/plugin reads it


def test_echo_styles_only_on_a_terminal():
    plain, tty = io.StringIO(), TTY()
    cells = solution_rows(ROWS, fastest_first=True)
    table.echo(table.SOLUTION_COLUMNS, cells, plain)
    table.echo(table.SOLUTION_COLUMNS, cells, tty)
    assert plain.getvalue() == solution_table(ROWS, fastest_first=True) + "\n"
    assert ANSI.search(tty.getvalue())
    assert [ln.rstrip() for ln in ANSI.sub("", tty.getvalue()).splitlines()] == plain.getvalue().splitlines()
