"""What the plugin says on the terminal: the report header's one line, and after the run the reproducers
written (new or repeat, where, which tests), with ``--mlir-reduce`` each new one reduced."""
from __future__ import annotations

import json
from pathlib import Path

from .keys import PROP_REPRO

__all__ = ["Reporter", "header_line"]


def header_line(config, state) -> str:
    """The device, the tuning database, where reproducers go (and PoCL's wheel version when installed);
    nothing is imported or started for it."""
    device = state.device or "default (PoCL CPU)"
    if state.pinned is not None:
        device = f"{state.pinned[0]} (one pytest-xdist worker per device: {', '.join(state.pinned[1])})"
    db = _shown(config, state.tuning_db) if state.tuning_db is not None else "per test, in memory"
    repro = f"reproducers -> {_shown(config, state.repro_dir)}" if state.repro else "reproducers off"
    if state.is_fleet and state.tuning_db is None:
        db = f"{state.store_spec.display()} (fleet)"
    elif state.is_fleet:
        db += f" + {state.store_spec.display()} (fleet)"
    if state.is_fleet:
        repro += f" (one per signature fleet-wide: {state.store_spec.display()})"
    return f"mlirtrace: device {device}{_pocl_version()}, tuning database {db}, {repro}"


def _pocl_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return f" (pocl-binary-distribution {version('pocl-binary-distribution')})"
        except PackageNotFoundError:
            return ""
    except Exception:   # noqa: BLE001 - a header is never worth a failed run
        return ""


def _shown(config, path) -> str:
    """``path`` relative to where pytest was started when it lies below it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path(config.invocation_params.dir).resolve()))
    except (ValueError, OSError):
        return str(path)


class Reporter:
    """Registered per config: collects the reproducers each report names (on the xdist controller
    too, user_properties travel with the reports) and lists them in the terminal summary."""

    def __init__(self, state):
        self.state = state

    def pytest_runtest_logreport(self, report):
        if not report.failed:
            return
        for name, value in getattr(report, "user_properties", None) or ():
            if name != PROP_REPRO:
                continue
            try:
                d = json.loads(value)
            except (TypeError, ValueError):
                continue
            self.state.reported.setdefault((report.nodeid, d["signature"]), dict(d, nodeid=report.nodeid))

    def pytest_terminal_summary(self, terminalreporter):
        state, tr = self.state, terminalreporter
        rows = list(state.reported.values())
        extra = _written_elsewhere(state, rows) if tr.stats.get("failed") or rows else []
        if not rows and not extra:
            return
        by_sig: dict[str, list[dict]] = {}
        for r in rows:
            by_sig.setdefault(r["signature"], []).append(r)
        new = [rs[0]["script_path"] for rs in by_sig.values() if any(r["new"] for r in rs)]
        _write_summary(tr, state, by_sig, extra, len(new))
        if state.settings.reduce_s and new and not hasattr(tr.config, "workerinput"):   # not on an xdist worker
            _reduce_new(state, tr, new)


def _write_summary(tr, state, by_sig: dict[str, list[dict]], extra: list[dict], n_new: int) -> None:
    from ..repro.files import display_path as _rel

    tr.write_sep("=", "mlirtrace reproducers")
    for sig, rs in by_sig.items():
        count = max(int(r["count"]) for r in rs)
        tag = "new" if any(r["new"] for r in rs) else "repeat"
        where = _rel(rs[0]["script_path"])
        if rs[0].get("elsewhere") and not any(r["new"] for r in rs):
            where = f"(another runner's, in the store {rs[0]['elsewhere']}: mlirtrace repro pull)"
        tr.write_line(f"{tag:<6} {sig}  {where}  (count {count}: "
                      f"{', '.join(r['nodeid'] for r in rs)})")
    for e in extra:
        tr.write_line(f"{'index':<6} {e['signature']}  {_rel(str(state.repro_dir / e['script']))}  "
                      f"(count {e['count']}, last from {e.get('last_origin')}: no test report named it)")
    tr.write_line(f"{len(by_sig) + len(extra)} reproducer(s), {n_new} new, in {_rel(str(state.repro_dir))}/ "
                  f"(INDEX.md, INDEX.json); run one: python <reproducer>.py  (exit 0 = fixed, 1 = reproduces)")


def _reduce_new(state, tr, scripts: list[str]) -> None:
    """``--mlir-reduce``: each new reproducer reduced (isolated runs, its budget), one line each; a reproducer
    no run shows again (an assertion, a slow run) or a failure of the reduction is said, never raised."""
    from ..repro.files import display_path as _rel
    from ..repro.reduce import reduce_reproducer

    budget = state.settings.reduce_s
    tr.write_sep("-", f"mlirtrace reduce ({budget:g} s at most each)")
    for path in scripts:
        tr.write_line(f"reducing {_rel(path)} ...")
        try:
            out = reduce_reproducer(path, state.device, state.timeout_s, budget)
        except ValueError as e:
            tr.write_line(f"  not reduced: {e}")
            continue
        except Exception as e:   # noqa: BLE001 - the test run's outcome stands; say what went wrong
            tr.write_line(f"  not reduced: {type(e).__name__}: {e}")
            continue
        tr.write_line(f"  {out.message}")
        if out.script_path is not None:
            tr.write_line(f"  {_rel(str(out.script_path))}  (ticket: {_rel(str(out.ticket_path))})")


def _written_elsewhere(state, rows) -> list[dict]:
    """Index entries updated during this session that no report named (a worker that died, say)."""
    path = state.repro_dir / "INDEX.json"
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("reproducers", {})
    except (OSError, ValueError):
        return []
    named = {r["signature"] for r in rows}
    return [e for sig, e in sorted(entries.items())
            if sig not in named and float(e.get("last_seen", 0)) >= state.started]
