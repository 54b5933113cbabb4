"""pytest-html extras of a failing test that used the fixture (only when pytest-html is active).

One ``extras.html`` block per distinct failure (signature): the problem key and solution, what
Hypothesis reported for the failing example, the migraphx module, the MLIR and the kernel source as
collapsible ``<details>`` sections, the reproducer, and the tuning chart (time per solution of each
problem the test tuned, the failing one first) as inline SVG (``tuning_chart``). Everything shown is
escaped text; the plain-text report sections stay as they are (pytest-html shows them in the log too).

Imported by ``plugin.py`` only when the ``html`` plugin is registered, so ``pytest_html`` is imported
only when it is installed and on.
"""
from __future__ import annotations

from html import escape

from ..repro import signature
from .facade import Reported, _key_section, _repro_section
from .keys import HTML_CLASS
from .tuning_chart import svg, tuned_problems

MAX_CHARTS = 4


def attach(rep, reported: list[Reported], repro_enabled: bool) -> None:
    """Add the blocks of ``reported`` to ``rep.extras`` (pytest-html's documented report attribute)."""
    from pytest_html import extras

    blocks = [extras.html(block) for r in reported for block in blocks_of(r, repro_enabled)]
    if blocks:
        rep.extras = [*getattr(rep, "extras", []), *blocks]


def blocks_of(r: Reported, repro_enabled: bool = True) -> list[str]:
    """The HTML of ``r``: one ``<div class="mlirtrace">`` per distinct signature of its records."""
    by_sig: dict[str, list] = {}
    for rec in r.records:
        by_sig.setdefault(signature(rec), []).append(rec)
    written = {w.signature: w for w in r.written}
    out = []
    for sig, recs in by_sig.items():
        first, s = recs[0], recs[0].span
        head = (f"mlirtrace: {first.kind}: {first.symbol} with solution {s.solution or '(none)'} "
                f"({first.stage} stage)")
        parts = [f'<div class="{HTML_CLASS}" data-signature="{escape(sig)}">',
                 f"<p><strong>{escape(head)}</strong>"
                 + (f"<br>called at <code>{escape(first.call_site)}</code>" if first.call_site else "")
                 + "</p>",
                 _details("problem key and solution", _key_section(first, recs), open_=True)]
        if r.notes:
            parts.append(_details("Hypothesis example", "\n".join(r.notes), open_=True))
        parts.append(_details("migraphx module", s.module_text or ""))
        parts.append(_details("MLIR", s.mlir_text or ""))
        if s.kernel_source:
            parts.append(_details("kernel source", s.kernel_source))
        charts = _charts(r.events, s.problem_key, [rec.span.solution for rec in recs])
        if charts:
            parts.append(f'<details open><summary>tuning chart</summary>{"".join(charts)}</details>')
        w = written.get(sig)
        parts.append(_details("reproducer", _repro_section([w] if w else [], r.errors, repro_enabled), open_=True))
        parts.append("</div>")
        out.append("".join(parts))
    return out


def _details(summary: str, text: str, open_: bool = False) -> str:
    return (f"<details{' open' if open_ else ''}><summary>{escape(summary)}</summary>"
            f'<pre style="white-space: pre-wrap">{escape(text)}</pre></details>')


def _charts(events, problem_key: str, failing) -> list[str]:
    problems = tuned_problems(events)
    problems.sort(key=lambda p: p.key != problem_key)        # the failing problem's chart first
    return [svg(p, failing_solutions=failing if p.key == problem_key else ()) for p in problems[:MAX_CHARTS]]
