"""A reproducer directory replayed: every reproducer run alone, its verdict kept in ``REPLAY.json``.

``replay(dir)`` runs each reproducer INDEX.json lists alone (:func:`.launch.launch`: a fresh process group,
as a user would run it), with the faults it was recorded with switched on when asked
(``with_faults``: a planted failure's reproducer only fails with them); ``replays(dir)`` reads the verdicts
back; ``prune(dir)`` removes the reproducers (script, ticket, ``.mlir``, index entry) whose last replay said
fixed, and index entries whose script is gone.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..fs import atomic_write, locked
from ..vocab import ExitCode
from .launch import launch
from .writer import ReproWriter

__all__ = ["Replay", "replay", "replays", "prune", "VERDICTS", "overall_exit"]

REPLAY_FILE = "REPLAY.json"

#: a reproducer's exit status -> the word the table shows
VERDICTS = {ExitCode.OK: "fixed", ExitCode.FAILURE: "reproduces", ExitCode.DIFFERENT: "differs",
            ExitCode.NEEDS_TEST: "needs its test", ExitCode.NOT_SUPPORTED: "not supported",
            ExitCode.ENVIRONMENT: "cannot run", ExitCode.USAGE: "bad usage"}


@dataclass
class Replay:
    signature: str
    kind: str            # the recorded failure kind
    verdict: str         # a word of VERDICTS, "timed out" or "missing"
    exit: int | None     # the reproducer's exit status (None: killed at the limit, or no script)
    line: str            # its verdict line ("REPRODUCED: wrong: ...")
    seconds: float
    when: float          # time.time() of the replay
    script: str


def replay(d, timeout_s: float = 300.0, with_faults: bool = True, device: str | None = None,
           progress=None) -> list[Replay]:
    """Run every reproducer of directory ``d`` alone, oldest first, each for at most ``timeout_s`` seconds
    (it and what it started killed then); record the verdicts in ``d/REPLAY.json``. ``progress(i, n, entry)``
    is told before each."""
    d = Path(d)
    entries = ReproWriter(d).index()
    out: list[Replay] = []
    for i, e in enumerate(entries):
        if progress is not None:
            progress(i, len(entries), e)
        script = d / e["script"]
        t0 = time.monotonic()
        if not script.exists():
            out.append(Replay(e["signature"], e.get("kind", "?"), "missing", None, f"{script.name}: no such file",
                              0.0, time.time(), e["script"]))
            continue
        code, text = launch(script, limit_s=timeout_s, inject=e.get("inject") if with_faults else None,
                            device=device, cwd=d)
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if code is None:
            verdict, line = "timed out", f"killed after {timeout_s:g} s"
        else:
            verdict = VERDICTS.get(code, f"exit {code}")
            line = lines[-1] if lines else ""
        out.append(Replay(e["signature"], e.get("kind", "?"), verdict, code, line[:500],
                          round(time.monotonic() - t0, 2), time.time(), e["script"]))
    with locked(d / ".lock"):
        atomic_write(d / REPLAY_FILE, json.dumps({"format": 1, "replays": {r.signature: asdict(r) for r in out}},
                                                 indent=1, sort_keys=True) + "\n")
    return out


def replays(d) -> dict[str, Replay]:
    """The verdicts of the last :func:`replay` of ``d`` by signature (empty when it was never replayed)."""
    try:
        data = json.loads((Path(d) / REPLAY_FILE).read_text(encoding="utf-8"))
        return {s: Replay(**r) for s, r in data.get("replays", {}).items()}
    except (FileNotFoundError, ValueError, TypeError):
        return {}


def overall_exit(rs: list[Replay]) -> int:
    """For CI: 1 when a reproducer still fails the recorded way or timed out, else 6 when one fails
    differently, else 2 when one could not run as written (bad usage: a broken script or data), else 0 (fixed,
    or only what cannot be judged here: a test's assertion, another device, a script deleted from the index)."""
    if any(r.verdict in ("reproduces", "timed out") for r in rs):
        return ExitCode.FAILURE
    if any(r.verdict == "differs" for r in rs):
        return ExitCode.DIFFERENT
    if any(r.verdict == "bad usage" for r in rs):
        return ExitCode.USAGE
    return ExitCode.OK


def prune(d, dry_run: bool = False) -> list[str]:
    """Remove what the last replay of ``d`` found fixed, and index entries whose script is gone: the
    signatures removed (with ``dry_run``: those that would be)."""
    d = Path(d)
    last = replays(d)
    w = ReproWriter(d)
    gone = [e["signature"] for e in w.index()
            if not (d / e["script"]).exists()
            or (e["signature"] in last and last[e["signature"]].verdict == "fixed")]
    if gone and not dry_run:
        w.remove(gone)
    return gone
