"""``mlirtrace repro list|run|status|prune|pull [DIR]``: a reproducer directory as a whole, for people and CI;
``pull`` fetches a fleet's reproducers from its store."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ..config import environment
from ..repro import replay as rp
from ..repro.writer import ReproWriter
from ..trace.table import Column, echo
from ..vocab import ExitCode
from .common import CLIError, add_store_option, run_guarded, settings, store

ACTIONS = ("list", "run", "status", "prune", "pull")


def add_parser(sub, name):
    p = sub.add_parser(name, help="list, rerun, show the status of or prune a reproducer directory",
                       description="list: every reproducer of DIR (INDEX.json) with its kind, count and last "
                                   "replay. run: rerun every reproducer alone (a fresh process each, its faults "
                                   "as recorded), a table of fixed / reproduces / differs, kept in "
                                   "DIR/REPLAY.json; exit 1 when one still fails the recorded way or timed out, "
                                   "6 when one fails differently, 2 when one could not run as called, else 0. "
                                   "status: the last run's table and exit status, without running. prune: remove "
                                   "the reproducers the last run found fixed (and index entries whose script is "
                                   "gone). pull: fetch every reproducer and ticket of a fleet's store (--store "
                                   f"redis://host:port/db or {environment.STORE}) into DIR, with the fleet's counts "
                                   "and the machines and devices that hit each.")
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("dir", nargs="?", default="reproducers", metavar="DIR",
                   help="the reproducer directory (default: reproducers)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="run: the most one reproducer may take, it and what it started killed then (default 300)")
    p.add_argument("--without-faults", action="store_true",
                   help="run: do not switch on the planted faults a reproducer was recorded with")
    p.add_argument("--device", default=None, help="run: the OpenCL device the reproducers use (default: recorded)")
    p.add_argument("--dry-run", action="store_true", help="prune: say what would go, remove nothing")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    add_store_option(p)
    return p


def run(args) -> int:
    return run_guarded(_run, args)


def _run(args) -> int:
    d = Path(args.dir)
    if args.action == "pull":
        return _pull(args, d)
    if not (d / "INDEX.json").is_file():
        raise CLIError(f"{d}: no INDEX.json here: not a reproducer directory mlirtrace wrote")
    if args.timeout <= 0:
        raise CLIError(f"--timeout {args.timeout:g}: expected a positive number of seconds")
    if args.action == "list":
        entries, last = ReproWriter(d).index(), rp.replays(d)
        if args.json:
            print(json.dumps([dict(e, last_replay=asdict(last[e["signature"]]) if e["signature"] in last else None)
                              for e in entries], indent=1))
            return ExitCode.OK
        _table(["signature", "kind", "count", "last seen", "last origin", "last replay"],
               [(e["signature"], e.get("kind", "?"), str(e.get("count", 1)), _when(e.get("last_seen")),
                 str(e.get("last_origin", "")), last[e["signature"]].verdict if e["signature"] in last else "-")
                for e in entries])
        print(f"{len(entries)} reproducer(s) in {d}")
        return ExitCode.OK
    if args.action == "prune":
        gone = rp.prune(d, dry_run=args.dry_run)
        if args.json:
            print(json.dumps({"removed" if not args.dry_run else "would_remove": gone}))
        else:
            for s in gone:
                print(("would remove " if args.dry_run else "removed ") + s)
            print(f"{len(gone)} reproducer(s) {'would be ' if args.dry_run else ''}removed from {d}"
                  + ("" if rp.replays(d) else f" (never replayed: `mlirtrace repro run {d}` first to find "
                                                "the fixed ones)"))
        return ExitCode.OK
    if args.action == "run":
        def progress(i, n, e):
            if not args.json:
                print(f"[{i + 1}/{n}] {e['signature']} ...", file=sys.stderr, flush=True)
        rs = rp.replay(d, timeout_s=args.timeout, with_faults=not args.without_faults, device=args.device,
                       progress=progress)
    else:
        last = rp.replays(d)
        if not last:
            raise CLIError(f"{d}: never replayed: `mlirtrace repro run {d}` first")
        rs = list(last.values())
    code = rp.overall_exit(rs)
    if args.json:
        print(json.dumps({"exit": int(code), "replays": [asdict(r) for r in rs]}, indent=1))
        return code
    _table(["signature", "recorded", "verdict", "seconds", "verdict line"],
           [(r.signature, r.kind, r.verdict, f"{r.seconds:.1f}", r.line) for r in rs])
    counts: dict[str, int] = {}
    for r in rs:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    print(", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + f"  (exit {int(code)})")
    return code


def _pull(args, d: Path) -> int:
    from ..store.link import Unreachable
    from ..store.repros import pull

    spec = settings(args).store
    if spec is None or not spec.is_redis:
        raise CLIError(f"repro pull: name the fleet's store: --store redis://host:port/db (or {environment.STORE})")
    s = store(args)
    try:
        got = pull(s.link, d)
    except Unreachable as e:
        raise CLIError(f"repro pull: the store is unreachable: {e}", ExitCode.USAGE) from None
    if args.json:
        print(json.dumps([w.to_dict() for w in got], indent=1))
        return ExitCode.OK
    entries = {e["signature"]: e for e in _index(d)}
    _table(["signature", "kind", "count", "hit on", "reproducer"],
           [(w.signature, entries.get(w.signature, {}).get("kind", "?"), str(w.count),
             ", ".join(sorted(entries.get(w.signature, {}).get("hits", {}))), str(w.script_path)) for w in got])
    print(f"{len(got)} reproducer(s) pulled from {spec.display()} into {d}")
    return ExitCode.OK


def _index(d: Path) -> list[dict]:
    return ReproWriter(d).index()


def _when(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(t))) if t else "-"


def _table(headers, rows) -> None:
    echo([Column(h) for h in headers], rows)
