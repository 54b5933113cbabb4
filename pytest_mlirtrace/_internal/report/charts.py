"""The report's charts, as SVG written by hand: time per solution, the spread of a solution space, counts.

Why no charting library (matplotlib, plotly, Vega): the charts here are horizontal bars and a histogram,
a few ``<rect>`` and ``<text>`` elements each, so a library would be the heaviest dependency of the whole
package (matplotlib with its fonts and C extensions, or a JavaScript bundle) for a hundred lines of code.
SVG written here goes inline into the page, so the page stays one self-contained file that loads without
a network and without a script; and its labels stay text: a solution string, a problem key or a time can
be found with the browser's search and copied with the mouse, which a rendered PNG would not allow. Every
string is escaped (:func:`esc`), so MLIR types, ``<`` and ``&`` in keys or statuses cannot break the page.

Each function returns one ``<svg class="chart ...">`` element whose data marks are ``<rect class="bar">``
(a failed solution is a ``<rect class="bar failed">``), each with a ``<title>`` for the tooltip.
"""
from __future__ import annotations

import math
from html import escape

from ..vocab import Status

__all__ = ["esc", "solution_bars", "spread_histogram", "count_bars", "fmt_ms"]

FONT = 'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" font-size="12"'
CHAR_W = 7.3            # about the width of a 12px monospace character
OK, FASTEST, FAILED, AXIS, MUTED = "#4f81bd", "#2e7d32", "#c62828", "#999999", "#555555"
MAX_ROWS = 60           # a whole exhaustive space would be unreadable: the rest are counted below the chart


def esc(s) -> str:
    """Text for SVG/HTML content and attribute values: ``& < > " '`` escaped."""
    return escape(str(s), quote=True)


def fmt_ms(t: float | None) -> str:
    if t is None:
        return "-"
    if t >= 100:
        return f"{t:.0f} ms"
    if t >= 1:
        return f"{t:.3g} ms"
    if t >= 0.001:
        return f"{t * 1000:.3g} µs"
    return f"{t * 1e6:.3g} ns"


def _svg(cls: str, width: float, height: float, label: str, body: list[str]) -> str:
    w, h = int(math.ceil(width)), int(math.ceil(height))
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {cls}" role="img" '
                      f'aria-label="{esc(label)}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" {FONT}>',
                      f"<title>{esc(label)}</title>", *body, "</svg>"])


def solution_bars(rows, *, title: str = "time per solution", marked=(), best: str | None = None) -> str:
    """Horizontal bars of the solutions that ran, fastest first (the fastest green); then the solutions that
    failed, as a short red bar with their status. ``rows``: (solution, status, time_ms or None); ``marked``:
    solutions to star (a finding's failing ones); ``best``: the database's fastest solution, noted."""
    ok = sorted(((s, st, t) for s, st, t in rows if st == Status.OK and t is not None), key=lambda r: r[2])
    bad = [(s, st, t) for s, st, t in rows if not (st == Status.OK and t is not None)]
    shown = (ok + bad)[:MAX_ROWS]
    hidden = len(ok) + len(bad) - len(shown)
    marked = set(marked)
    label_w = 12 + CHAR_W * max([len(r[0]) + (2 if r[0] in marked or r[0] == best else 0) for r in shown] + [8])
    bar_w, row_h, top, value_w = 240, 18, 8, 16 + CHAR_W * 15
    width = label_w + bar_w + value_w
    height = top + row_h * (len(shown) + (1 if hidden else 0)) + 24
    slowest = max([r[2] for r in ok] + [1e-12])
    body = [f'<line x1="{label_w:.1f}" y1="{top}" x2="{label_w:.1f}" y2="{top + row_h * len(shown)}" '
            f'stroke="{AXIS}"/>']
    for i, (sol, status, t) in enumerate(shown):
        y = top + i * row_h
        tag = (" *" if sol in marked else "") + (" ★" if sol == best else "")
        timed = status == Status.OK and t is not None
        tip = f"{sol}: {fmt_ms(t) if timed else status}" + (" (fastest)" if timed and i == 0 else "") \
            + (" (a finding's failing solution)" if sol in marked else "") \
            + (" (in the tuning database)" if sol == best else "")
        body.append(f'<g class="row"><title>{esc(tip)}</title>')
        body.append(f'<text x="{label_w - 6:.1f}" y="{y + 13}" text-anchor="end">{esc(sol + tag)}</text>')
        if timed:
            w = max(2.0, bar_w * t / slowest)
            fill = FASTEST if i == 0 else OK
            body.append(f'<rect class="bar" x="{label_w:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 5}" '
                        f'fill="{fill}"/>')
            body.append(f'<text x="{label_w + w + 5:.1f}" y="{y + 13}">{esc(fmt_ms(t))}</text>')
        else:
            body.append(f'<rect class="bar failed" x="{label_w:.1f}" y="{y + 3}" width="10" height="{row_h - 5}" '
                        f'fill="{FAILED}"/>')
            body.append(f'<text x="{label_w + 15:.1f}" y="{y + 13}" fill="{FAILED}">✗ {esc(status)}</text>')
        body.append("</g>")
    y = top + row_h * len(shown)
    if hidden:
        body.append(f'<text x="{label_w:.1f}" y="{y + 13}" fill="{MUTED}">… and {hidden} more</text>')
        y += row_h
    legend = f"{len(ok)} ran, {len(bad)} failed" \
        + ("; * fails in a finding" if marked & {r[0] for r in shown} else "") \
        + ("; ★ the tuning database's choice" if best in {r[0] for r in shown} else "")
    body.append(f'<text x="4" y="{y + 16}" fill="{MUTED}">{esc(legend)}</text>')
    width = max(width, 12 + CHAR_W * len(legend))
    return _svg("solution-bars", width, height, f"{title}: {legend}", body)


def spread_histogram(times, failed: int = 0, *, title: str = "spread of the solution space", bins: int = 12) -> str:
    """A histogram of the times of every solution that ran (log-spaced bins between the fastest and the
    slowest), and a red bar for the solutions that failed: how much choosing the solution matters."""
    times = sorted(t for t in times if t is not None and t > 0)
    left, plot_w, plot_h, top = 44, 360, 110, 10
    fail_w = 56 if failed else 0
    width, height = left + plot_w + fail_w + 30, top + 14 + plot_h + 48
    body = []
    counts: list[int] = []
    lo = hi = None
    if times:
        lo, hi = times[0], times[-1]
        nb = 1 if hi <= lo * 1.0001 else min(bins, max(3, len(times)))
        counts = [0] * nb
        span = math.log(hi / lo) if nb > 1 else 1.0
        for t in times:
            i = 0 if nb == 1 else min(nb - 1, int(math.log(t / lo) / span * nb))
            counts[i] += 1
    peak = max(counts + [failed, 1])
    top += 14                                  # room for the count over the tallest bar
    base = top + plot_h
    # y axis: counts
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="{AXIS}"/>')
    body.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w + fail_w}" y2="{base}" stroke="{AXIS}"/>')
    body.append(f'<text x="{left - 6}" y="{top + 9}" text-anchor="end" fill="{MUTED}">{peak}</text>')
    body.append(f'<text x="{left - 6}" y="{base}" text-anchor="end" fill="{MUTED}">0</text>')
    if counts:
        bw = plot_w / len(counts) if len(counts) > 1 else 40.0     # one time: one narrow bar, not a wall
        for i, n in enumerate(counts):
            if not n:
                continue
            h = plot_h * n / peak
            if len(counts) == 1:
                rng = f"{fmt_ms(lo)}"
            else:
                a, b = lo * (hi / lo) ** (i / len(counts)), lo * (hi / lo) ** ((i + 1) / len(counts))
                rng = f"{fmt_ms(a)} – {fmt_ms(b)}"
            body.append(f'<rect class="bar" x="{left + i * bw + 1:.1f}" y="{base - h:.1f}" width="{bw - 2:.1f}" '
                        f'height="{h:.1f}" fill="{OK}"><title>{esc(f"{n} solution(s) at {rng}")}</title></rect>')
        body.append(f'<text x="{left}" y="{base + 15}" fill="{MUTED}">{esc(fmt_ms(lo))}</text>')
        if len(counts) > 1:
            body.append(f'<text x="{left + plot_w}" y="{base + 15}" text-anchor="end" fill="{MUTED}">'
                        f'{esc(fmt_ms(hi))}</text>')
    else:
        body.append(f'<text x="{left + 8}" y="{top + plot_h / 2}" fill="{MUTED}">no solution ran</text>')
    if failed:
        h = plot_h * failed / peak
        x, w = left + plot_w + 16, fail_w - 16
        body.append(f'<rect class="bar failed" x="{x}" y="{base - h:.1f}" width="{w}" height="{h:.1f}" '
                    f'fill="{FAILED}"><title>{esc(f"{failed} solution(s) failed: no time")}</title></rect>')
        body.append(f'<text x="{x + w / 2}" y="{base - h - 4:.1f}" text-anchor="middle" fill="{FAILED}">'
                    f'{failed} ✗</text>')
    ratio = f", slowest/fastest {hi / lo:.3g}x" if times and lo else ""
    caption = f"{len(times)} solution(s) timed{ratio}" + (f", {failed} failed" if failed else "") + " (log time axis)"
    body.append(f'<text x="4" y="{base + 36}" fill="{MUTED}">{esc(caption)}</text>')
    width = max(width, 12 + CHAR_W * len(caption))
    return _svg("spread", width, height, f"{title}: {caption}", body)


def count_bars(items, *, title: str, colors: dict | None = None, unit: str = "") -> str:
    """Horizontal bars of (label, count) pairs, in the order given."""
    items = [(str(k), int(n)) for k, n in items]
    label_w = 12 + CHAR_W * max([len(k) for k, _ in items] + [6])
    bar_w, row_h, top = 240, 18, 6
    width, height = label_w + bar_w + 80, top + row_h * max(len(items), 1) + 8
    peak = max([n for _, n in items] + [1])
    body = []
    for i, (k, n) in enumerate(items):
        y = top + i * row_h
        w = max(2.0, bar_w * n / peak)
        fill = (colors or {}).get(k, OK)
        body.append(f'<g class="row"><title>{esc(f"{k}: {n}{unit}")}</title>')
        body.append(f'<text x="{label_w - 6:.1f}" y="{y + 13}" text-anchor="end">{esc(k)}</text>')
        body.append(f'<rect class="bar" x="{label_w:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 5}" '
                    f'fill="{fill}"/>')
        body.append(f'<text x="{label_w + w + 5:.1f}" y="{y + 13}">{n}</text></g>')
    if not items:
        body.append(f'<text x="4" y="{top + 13}" fill="{MUTED}">none</text>')
    return _svg("counts", width, height, title, body)
