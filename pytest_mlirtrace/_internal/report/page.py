"""The report page: one static, self-contained HTML file (inline CSS, inline SVG charts, no script, nothing
fetched from a network) laid out from :class:`.data.ReportData`.

Sections: the findings by kind and signature (count, module, device, failing and passing solutions, last
replay, links to each reproducer's script, ticket and ``.mlir`` relative to the page), the tuning results
(for each problem: time per solution of each recorded tuning, the spread of the solution space, the
database's choice) and, when a fuzz report is given, what the fuzz drew (problem kinds, op x dtype,
parameter layouts, forms). Every piece of text from the inputs goes through :func:`.charts.esc`.
"""
from __future__ import annotations

import time
from pathlib import Path

from ..config import environment
from ..vocab import Status
from .charts import count_bars, esc, fmt_ms, solution_bars, spread_histogram
from .data import Finding, Problem, ReportData, relative_href

__all__ = ["render"]

VERDICT_CLASS = {"fixed": "good", "reproduces": "bad", "timed out": "bad", "differs": "warn", "missing": "warn"}
KIND_COLORS = {Status.WRONG: "#c62828", Status.CRASH: "#6a1b9a", Status.HANG: "#ef6c00",
               Status.BUILD_ERROR: "#8d6e63", Status.SLOW: "#f9a825", Status.ASSERTION: "#546e7a",
               Status.IMPORTED: "#00838f"}

CSS = """
:root { --fg: #1d1d1f; --muted: #5f6368; --line: #dadce0; --bg: #ffffff; --soft: #f6f8fa;
        --bad: #c62828; --good: #2e7d32; --warn: #ef6c00; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 24px 48px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: var(--fg); background: var(--bg); }
header { border-bottom: 1px solid var(--line); padding: 18px 0 10px; margin-bottom: 8px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--soft); border: 1px solid var(--line); padding: 8px; overflow: auto; max-height: 24em;
      white-space: pre; }
.key { white-space: pre-wrap; tab-size: 2; word-break: break-all; }
.meta, .muted { color: var(--muted); }
.meta span + span::before { content: " · "; }
nav a { margin-right: 14px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 140px;
        background: var(--soft); }
.card b { display: block; font-size: 20px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 14px; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff;
         background: var(--muted); white-space: nowrap; }
.badge.good { background: var(--good); } .badge.bad { background: var(--bad); } .badge.warn { background: var(--warn); }
.links a { margin-right: 8px; white-space: nowrap; }
.err { color: var(--bad); font-size: 12.5px; margin-top: 2px; word-break: break-word; }
.sols { max-width: 26em; }
.sols code { display: inline-block; margin: 0 6px 2px 0; }
.note { color: var(--warn); }
details > summary { cursor: pointer; color: var(--muted); }
.problem { border: 1px solid var(--line); border-radius: 6px; padding: 4px 14px 10px; margin: 14px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 6px 0; }
figcaption { color: var(--muted); font-size: 12.5px; max-width: 560px; }
svg.chart { display: block; max-width: 100%; height: auto; background: #fff; }
table.matrix td, table.matrix th { text-align: center; padding: 3px 6px; font-size: 12.5px; }
table.matrix th:first-child, table.matrix td:first-child { text-align: left; }
table.matrix { width: auto; }
.grid2 { display: flex; flex-wrap: wrap; gap: 28px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
"""


def _when(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-mlirtrace")
    except PackageNotFoundError:
        return "?"


def _anchor(prefix: str, s: str) -> str:
    return prefix + "".join(c if c.isalnum() or c in "-_" else "-" for c in s)


def _link(target: Path | None, text: str, out_dir: Path) -> str:
    if target is None:
        return ""
    return f'<a href="{esc(relative_href(target, out_dir))}">{esc(text)}</a>'


def _sols(sols: list[str], limit: int = 6) -> str:
    if not sols:
        return '<span class="muted">none recorded</span>'
    head = "".join(f"<code>{esc(s)}</code>" for s in sols[:limit])
    if len(sols) <= limit:
        return head
    rest = "".join(f"<code>{esc(s)}</code>" for s in sols[limit:])
    return f"{head}<details><summary>{len(sols) - limit} more</summary>{rest}</details>"


def _replay(f: Finding) -> str:
    r = f.replay
    if r is None:
        return '<span class="muted">never replayed</span>'
    cls = VERDICT_CLASS.get(r.verdict, "")
    return (f'<span class="badge {cls}" title="{esc(r.line)}">{esc(r.verdict)}</span>'
            f'<div class="muted">{esc(_when(r.when))}</div>')


def _finding_row(f: Finding, out_dir: Path) -> str:
    planted = {True: "planted (passes with the fault off)", False: "real bug (fails with the fault off too)"}.get(
        f.planted, "not checked" if f.inject else "")
    origin = f.last_origin or f.first_origin
    details = [f"<div><b>problem key</b> <code class=\"key\">{esc(f.problem_key)}</code></div>"
               if f.problem_key else "",
               f"<div><b>stage</b> {esc(f.stage)}</div>" if f.stage else "",
               f"<div><b>fault</b> <code>{environment.INJECT}={esc(f.inject)}</code> {esc(planted)}</div>"
               if f.inject else "",
               f"<div><b>seen</b> {esc(_when(f.first_seen))} … {esc(_when(f.last_seen))}, last by "
               f"<code>{esc(origin)}</code></div>" if origin else "",
               f"<div><b>last replay</b> <code>{esc(f.replay.line)}</code></div>" if f.replay and f.replay.line else "",
               f"<div><b>MLIR</b><pre>{esc(f.mlir_text.rstrip())}</pre></div>" if f.mlir_text else ""]
    notes = "".join(f'<div class="note">{esc(n)}</div>' for n in f.notes)
    links = " ".join(x for x in (_link(f.script, "reproducer", out_dir), _link(f.ticket, "ticket", out_dir),
                                 _link(f.mlir, ".mlir", out_dir)) if x) or '<span class="muted">no files</span>'
    device = esc(f.device) + (f'<div class="muted">{esc(f.device_description)}</div>' if f.device_description else "")
    return (f'<tr id="{esc(_anchor("f-", f.signature))}" class="finding" data-kind="{esc(f.kind)}">'
            f'<td><code class="sig">{esc(f.signature)}</code><div class="err">{esc(f.error)}</div>{notes}'
            f'<details><summary>details</summary>{"".join(details)}</details></td>'
            f'<td class="num">{f.count}</td>'
            f'<td><code>{esc(f.symbol)}</code></td>'
            f'<td>{device}</td>'
            f'<td class="sols"><div><b>{len(f.solutions)} failing</b> {_sols(f.solutions)}</div>'
            f'<div><b>{len(f.passed)} passing</b> {_sols(f.passed) if f.passed else ""}</div></td>'
            f'<td>{_replay(f)}</td>'
            f'<td class="links">{links}</td></tr>')


def _findings(data: ReportData, out_dir: Path) -> str:
    out = ['<section id="findings"><h2>Findings</h2>']
    if not data.findings:
        out.append(f'<p>No findings in <code>{esc(data.repro_dir)}</code>: its index lists no reproducer.</p>'
                   '</section>')
        return "\n".join(out)
    kinds = data.kinds()
    total = sum(n for _, n in kinds.values())
    replay = (f"last replayed {_when(data.replayed_at)}" if data.replayed_at
              else f"never replayed (<code>mlirtrace repro run {esc(data.repro_dir)}</code> does)")
    out.append(f'<p>{len(data.findings)} signature(s) (one bug each), {total} occurrence(s); {replay}.</p>')
    out.append('<figure>' + count_bars([(k, n[0]) for k, n in kinds.items()], title="signatures by kind",
                                       colors=KIND_COLORS, unit=" signature(s)")
               + '<figcaption>signatures by kind</figcaption></figure>')
    for kind, (nsig, nocc) in kinds.items():
        out.append(f'<h3 id="{esc(_anchor("kind-", kind))}">{esc(kind)} '
                   f'<span class="muted">{nsig} signature(s), {nocc} occurrence(s)</span></h3>')
        out.append('<table class="findings"><thead><tr><th>signature and first error line</th>'
                   '<th class="num">count</th><th>module</th><th>device</th><th>solutions</th><th>last replay</th>'
                   '<th>files</th></tr></thead><tbody>')
        out.extend(_finding_row(f, out_dir) for f in data.findings if f.kind == kind)
        out.append("</tbody></table>")
    out.append("</section>")
    return "\n".join(out)


def _problem(i: int, p: Problem) -> str:
    out = [f'<article class="problem" id="problem-{i}"><h3>{esc(p.symbol or "problem")}: '
           f'<code class="key">{esc(p.key)}</code></h3>']
    best_sol = None
    for b in p.best:
        best_sol = best_sol or b["solution"]
        src = f", imported from {b['imported_from']}" if b["imported_from"] else ""
        out.append(f'<p>tuning database (device {esc(b["device"])}): fastest <code>{esc(b["solution"])}</code> '
                   f'{esc(fmt_ms(b["time_ms"]))}, stored {esc(_when(b["stored"]))}{esc(src)}</p>')
    if p.signatures:
        out.append("<p>findings: " + ", ".join(f'<a href="#{esc(_anchor("f-", s))}"><code>{esc(s)}</code></a>'
                                               for s in p.signatures) + "</p>")
    if not p.runs:
        out.append('<p class="muted">no time recorded (an imported entry)</p></article>')
        return "\n".join(out)
    out.append('<div class="charts">')
    for run in p.runs:
        marked = [s for r in run.rows for s in [r[0]] if r[1] != Status.OK] if run.signatures else []
        out.append("<figure>" + solution_bars(run.rows, title=f"time per solution: {' '.join(p.key.split())}",
                                              marked=marked, best=best_sol)
                   + f"<figcaption>time per solution, fastest first; failed solutions in red. "
                     f"From {esc(run.source)}.</figcaption></figure>")
    ok, bad = p.solution_times()
    out.append("<figure>" + spread_histogram(list(ok.values()), len(bad),
                                             title=f"spread: {' '.join(p.key.split())}")
               + "<figcaption>spread of the solution space: the times of every solution tried "
                 "(each solution's fastest run)</figcaption></figure>")
    out.append("</div></article>")
    return "\n".join(out)


def _tuning(data: ReportData) -> str:
    out = ['<section id="tuning"><h2>Tuning results</h2>']
    src = f"tuning database <code>{esc(data.tuning_db)}</code>" if data.tuning_db else "no tuning database"
    out.append(f"<p>From the {src} and the benchmark tables the reproducers carry. "
               f"{len(data.problems)} problem(s).</p>")
    if data.tuning_db_note:
        out.append(f'<p class="note">{esc(data.tuning_db_note)}</p>')
    out.extend(_problem(i, p) for i, p in enumerate(data.problems))
    out.append("</section>")
    return "\n".join(out)


def _ops_matrix(ops: dict) -> str:
    rows: dict[str, dict[str, int]] = {}
    cols: set[str] = set()
    for (op, dt), n in ops.items():
        if "->" in dt:                       # a convert: one row per target type, the source in the column
            src, dst = dt.split("->", 1)
            op, dt = f"{op} → {dst}", src
        rows.setdefault(op, {})[dt] = rows.get(op, {}).get(dt, 0) + n
        cols.add(dt)
    order = sorted(cols)
    peak = max([n for r in rows.values() for n in r.values()] + [1])
    out = ['<table class="matrix"><thead><tr><th>op \\ dtype</th>'
           + "".join(f"<th>{esc(c)}</th>" for c in order) + "</tr></thead><tbody>"]
    for op in sorted(rows):
        cells = []
        for c in order:
            n = rows[op].get(c, 0)
            shade = f' style="background: rgba(79,129,189,{0.15 + 0.6 * n / peak:.2f})"' if n else ""
            cells.append(f"<td{shade}>{n if n else ''}</td>")
        out.append(f"<tr><td><code>{esc(op)}</code></td>{''.join(cells)}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _fuzz(data: ReportData) -> str:
    z = data.fuzz
    if z is None:
        return ('<section id="fuzz"><h2>Fuzz coverage</h2><p class="muted">no fuzz report given '
                '(<code>mlirtrace fuzz --report FILE</code> writes one; <code>--fuzz-report FILE</code> shows it '
                'here)</p></section>')
    out = ['<section id="fuzz"><h2>Fuzz coverage</h2>',
           f'<p>From <code>{esc(z.path)}</code>: {z.cases} case(s), {z.examples} example(s) in {z.elapsed_s:.1f} s '
           f'on {z.lanes} lane(s)' + (f", faults <code>{esc(z.inject)}</code>" if z.inject else "")
           + (", failing cases: " + ", ".join(f"{esc(k)} {n}" for k, n in sorted(z.failures.items()))
              if z.failures else ", no failing case") + ".</p>",
           '<div class="grid2">']
    if z.kinds:
        out.append("<figure>" + count_bars(sorted(z.kinds.items(), key=lambda kv: (-kv[1], kv[0])),
                                           title="problem kinds drawn", unit=" example(s)")
                   + "<figcaption>problem kinds drawn (examples)</figcaption></figure>")
    if z.layouts:
        out.append("<figure>" + count_bars(sorted(z.layouts.items(), key=lambda kv: (-kv[1], kv[0])),
                                           title="parameter layouts drawn", unit=" parameter(s)")
                   + "<figcaption>parameter layouts drawn (parameters)</figcaption></figure>")
    if z.longest:
        out.append('<figure><table class="matrix"><thead><tr><th>kind</th><th>longest reduction</th></tr>'
                   '</thead><tbody>'
                   + "".join(f"<tr><td>{esc(k)}</td><td>{n}</td></tr>" for k, n in sorted(z.longest.items()))
                   + "</tbody></table><figcaption>longest reduction drawn</figcaption></figure>")
    out.append("</div>")
    if z.ops:
        out.append("<h3>ops × dtype drawn</h3>" + _ops_matrix(z.ops)
                   + '<p class="muted">examples that hold the op with that input type (a convert: source type '
                     'in the column, target in the row)</p>')
    else:
        out.append('<p class="muted">no example drawn</p>')
    drawn = (z.odd or {}).get("drawn")
    if drawn:
        refused = (z.odd or {}).get("refused") or {}
        out.append(f"<p>perf configs beyond the space: {int(drawn)} drawn, {sum(map(int, refused.values()))} refused"
                   + (" (" + ", ".join(f"{esc(k)} {int(n)}" for k, n in sorted(refused.items())) + ")"
                      if refused else "")
                   + "</p>")
    if z.findings:
        out.append("<h3>fuzz findings</h3><table><thead><tr><th>kind</th><th>signature</th><th>module</th>"
                   "<th>solution</th><th>first error line</th></tr></thead><tbody>")
        sigs = {f.signature for f in data.findings}
        for f in z.findings:
            sig = str(f.get("signature", ""))
            name = (f'<a href="#{esc(_anchor("f-", sig))}"><code>{esc(sig)}</code></a>' if sig in sigs
                    else f"<code>{esc(sig or f.get('path', ''))}</code>")
            out.append(f"<tr><td>{esc(f.get('kind', ''))}</td><td>{name}</td><td><code>{esc(f.get('symbol', ''))}"
                       f"</code></td><td><code>{esc(f.get('solution', ''))}</code></td>"
                       f"<td class=\"err\">{esc(f.get('error', ''))}</td></tr>")
        out.append("</tbody></table>")
    out.append("</section>")
    return "\n".join(out)


def render(data: ReportData, out_path) -> str:
    """The page for ``data``, its links relative to the folder of ``out_path`` (where it will be written)."""
    out_dir = Path(out_path).absolute().parent
    kinds = data.kinds()
    cards = [("findings", f"{len(data.findings)}", ", ".join(f"{k} {n[0]}" for k, n in kinds.items()) or "none"),
             ("occurrences", f"{sum(n for _, n in kinds.values())}", "failures recorded"),
             ("problems tuned", f"{len(data.problems)}",
              f"{sum(len(r.rows) for p in data.problems for r in p.runs)} solution results")]
    if data.fuzz is not None:
        cards.append(("fuzz cases", f"{data.fuzz.cases}", f"{data.fuzz.examples} examples, "
                                                           f"{len(data.fuzz.ops)} op x dtype pairs"))
    sources = [f"<span>reproducers <code>{esc(data.repro_dir)}</code></span>",
               f"<span>tuning database <code>{esc(data.tuning_db) if data.tuning_db else 'none'}</code></span>"]
    if data.fuzz_report:
        sources.append(f"<span>fuzz report <code>{esc(data.fuzz_report)}</code></span>")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>mlirtrace report: {esc(data.repro_dir.name or data.repro_dir)}</title>",
        f"<style>{CSS}</style></head><body>",
        "<header><h1>mlirtrace report</h1>",
        f'<p class="meta">{"".join(sources)}<span>generated {esc(_when(data.generated))} by mlirtrace '
        f"{esc(_version())}</span></p>",
        '<nav><a href="#findings">Findings</a><a href="#tuning">Tuning results</a>'
        '<a href="#fuzz">Fuzz coverage</a></nav>',
        '<div class="cards">' + "".join(f'<div class="card"><span class="muted">{esc(t)}</span><b>{esc(v)}</b>'
                                        f'<span class="muted">{esc(s)}</span></div>' for t, v, s in cards) + "</div>",
        "</header>",
        _findings(data, out_dir), _tuning(data), _fuzz(data),
        '<footer>A static page written by <code>mlirtrace report</code>: no script, nothing loaded from a network. '
        "Links to reproducers and tickets are relative to this file.</footer>",
        "</body></html>", ""])
