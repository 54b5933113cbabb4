"""The one table renderer (``rich``): the tuning results table of ``mlirtrace tune`` and the benchmark
table of the trace log, reproducer records and tickets; and the terminal console that the progress
displays (``mlirtrace tune``, ``mlirtrace fuzz``) draw with.

Tables are rendered without borders: columns separated by two spaces, headers on the first line,
trailing blanks stripped. As text (:func:`render`, :func:`solution_table`) a table is plain: no ANSI
codes, no box drawing, whatever the environment says (``FORCE_COLOR``, ``COLUMNS``, Jupyter), because
tests, logs and reproducer tickets read it. :func:`echo` writes the same layout to a stream, with a
bold header and coloured statuses only where that stream is a terminal.
"""
from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..vocab import Status

if TYPE_CHECKING:                      # rich is imported when a table or a bar is drawn: ~75ms at start-up
    from rich.console import Console
    from rich.table import Table

_WIDE = 1 << 14          # "no wrapping": the console width given for text rendering


@dataclass(frozen=True)
class Column:
    header: str
    justify: str = "left"            # "left" | "right"
    min_width: int | None = None


#: the columns of a benchmark table, one row per solution (tune's table and :meth:`TraceLog.bench_table`)
SOLUTION_COLUMNS = (Column("solution"), Column("status", min_width=14), Column("time_ms", "right", 10),
                    Column("build_s", "right", 8), Column("span"))

_STATUS_STYLE = {Status.OK: "green"}


def _table(columns: Sequence[Column], rows: Iterable[Sequence[str]], styled: bool) -> Table:
    from rich.table import Table
    from rich.text import Text

    t = Table(box=None, padding=(0, 1), pad_edge=False, show_edge=False, expand=False,
              header_style="bold" if styled else "", highlight=False)
    for c in columns:
        t.add_column(c.header, justify=c.justify, min_width=c.min_width, no_wrap=True)
    headers = [c.header for c in columns]
    status = headers.index("status") if styled and "status" in headers else None
    for row in rows:
        cells = [Text(str(v)) for v in row]
        if status is not None:
            cells[status].stylize(_STATUS_STYLE.get(cells[status].plain, "red"))
        t.add_row(*cells)
    return t


def _print(table: Table, file, terminal: bool) -> None:
    from rich.console import Console

    console = Console(file=file, width=_WIDE, force_terminal=terminal, force_jupyter=False,
                      force_interactive=False, no_color=not terminal, color_system="auto" if terminal else None,
                      highlight=False, emoji=False, markup=False, legacy_windows=False, soft_wrap=False)
    with console.capture() as cap:          # captured so that trailing blanks can go
        console.print(table)
    text = "\n".join(line.rstrip() for line in cap.get().splitlines())
    file.write(text + "\n")


def render(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> str:
    """The table as plain text (no trailing newline)."""
    buf = io.StringIO()
    _print(_table(columns, rows, styled=False), buf, terminal=False)
    return buf.getvalue().rstrip("\n")


def is_terminal(stream) -> bool:
    """Whether ``stream`` is an interactive terminal that takes ANSI codes (a ``TERM=dumb`` one does not)."""
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def terminal_console(stream) -> Console:
    """A console drawing on ``stream``, a terminal (see :func:`is_terminal`): live displays, ANSI codes."""
    from rich.console import Console

    return Console(file=stream, force_terminal=True, force_interactive=True, force_jupyter=False,
                   highlight=False, emoji=False, markup=False, legacy_windows=False)


def echo(columns: Sequence[Column], rows: Iterable[Sequence[str]], file=None) -> None:
    """Print the table to ``file`` (stdout): :func:`render`'s text, styled only on a terminal."""
    file = file if file is not None else sys.stdout
    terminal = is_terminal(file)
    _print(_table(columns, rows, styled=terminal), file, terminal=terminal)


def solution_rows(rows, *, fastest_first: bool = False) -> list[tuple[str, ...]]:
    """The cells of :data:`SOLUTION_COLUMNS` for rows with ``solution``, ``status``, ``time_ms``,
    ``build_s`` and ``span_hash`` (BenchRow, SolutionFinished); fastest first (untimed last) if asked."""
    if fastest_first:
        rows = sorted(rows, key=lambda r: (r.time_ms is None, r.time_ms or 0))
    return [(r.solution, r.status, _time_cell(r), f"{r.build_s:.2f}", r.span_hash) for r in rows]


def _time_cell(r) -> str:
    """The time; ``>`` before it when the tune stopped timing it early (two launches already far slower
    than the best so far: ``BenchRow.cut``)."""
    if r.time_ms is None:
        return "-"
    return (">" if getattr(r, "cut", False) else "") + f"{r.time_ms:.4f}"


def solution_table(rows, *, fastest_first: bool = False) -> str:
    """The benchmark table of ``rows`` as plain text (the header line alone for no rows)."""
    return render(SOLUTION_COLUMNS, solution_rows(rows, fastest_first=fastest_first))
