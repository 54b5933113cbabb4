"""What the report page shows, gathered from files: a reproducer directory, a tuning database, a fuzz report.

Everything is read here and checked as it is read; the page (:mod:`.page`) only lays it out. A file that is
missing or not what mlirtrace writes raises :class:`ReportInputError` naming the file and what was expected
(the CLI turns it into ``mlirtrace: FILE: ...`` and exit status 2). A reproducer whose script is gone or whose
payload cannot be read is not an error: the page shows the finding from its index entry and says so.

Sources and what each gives:

- ``DIR/INDEX.json`` (:class:`..repro.writer.ReproWriter`): one entry per signature (kind, count, failing and
  passing solutions, problem key, device, first error line, the script and ticket file names);
- each reproducer's payload (:func:`..repro.writer.read_payload`): the device's description, the MLIR and
  the benchmark table of the tune that recorded it (every solution's status and time, failed ones too);
- ``DIR/REPLAY.json`` (:mod:`..repro.replay`, written by ``mlirtrace repro run``): each signature's last
  replay verdict;
- the tuning database (:mod:`..engine.database`): the fastest solution and its time per problem and device.
  It keeps only the best solution of a problem; an entry that also lists ``solutions`` (rows as
  ``mlirtrace tune --json`` prints them: solution, status, time_ms) is shown whole;
- a fuzz report (``mlirtrace fuzz --report FILE``, :func:`..fuzz.report.report_dict`): counts, what the
  fuzz drew (coverage) and its findings.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..config import environment
from ..vocab import Status

__all__ = ["ReportInputError", "Finding", "TuningRun", "Problem", "FuzzSummary", "ReportData", "gather",
           "parse_bench_table", "read_index", "read_replays", "read_tuning_db", "read_fuzz_report"]


class ReportInputError(Exception):
    """An input of the report that is missing or not what was expected: ``path`` and the message."""

    def __init__(self, path, message: str):
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = message


# ------------------------------------------------------------------------------------------- model ---
@dataclass
class Replay:
    verdict: str               # fixed, reproduces, differs, needs its test, cannot run, timed out, missing, ...
    line: str
    when: float | None
    seconds: float | None


@dataclass
class Finding:
    signature: str
    kind: str
    stage: str
    symbol: str
    count: int
    device: str                 # the device's key name (problem key's arch)
    device_description: str     # from the payload ("" when it could not be read)
    problem_key: str
    error: str                  # the scrubbed first line of the error
    solutions: list[str]        # the solutions that fail this way
    passed: list[str]           # the solutions that passed on the same module
    planted: bool | None        # a planted fault's doing (True), a real bug (False), not checked (None)
    inject: str
    first_seen: float | None
    last_seen: float | None
    first_origin: str
    last_origin: str
    script: Path | None         # None: the index names a script that is not there
    ticket: Path | None
    mlir: Path | None
    mlir_text: str = ""
    bench_rows: list = field(default_factory=list)     # (solution, status, time_ms or None) of its tune
    replay: Replay | None = None
    notes: list[str] = field(default_factory=list)     # what could not be read, said on the page


@dataclass
class TuningRun:
    """One tuning of a problem: a row per solution (solution, status, time_ms or None)."""
    source: str                 # where the rows come from, said under the chart
    rows: list
    signatures: list[str] = field(default_factory=list)   # the findings that carry this benchmark table
    only_best: bool = False     # the database's fastest solution alone


@dataclass
class Problem:
    key: str
    symbol: str = ""
    best: list = field(default_factory=list)     # database entries: dicts (device, solution, time_ms, stored)
    runs: list[TuningRun] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)   # findings on this problem

    def solution_times(self) -> tuple[dict, dict]:
        """(solution -> fastest time it ran in, solution -> status of a failure) over every run; a solution
        that ran once counts as timed, its failures elsewhere are left to the per-run charts."""
        ok: dict[str, float] = {}
        bad: dict[str, str] = {}
        for run in self.runs:
            for sol, status, t in run.rows:
                if status == Status.OK and t is not None:
                    ok[sol] = min(t, ok.get(sol, t))
                else:
                    bad.setdefault(sol, status)
        return ok, {s: st for s, st in bad.items() if s not in ok}


@dataclass
class FuzzSummary:
    path: Path
    cases: int
    examples: int
    elapsed_s: float
    lanes: int
    failures: dict
    kinds: dict                 # problem kind -> examples
    layouts: dict               # parameter layout -> parameters
    longest: dict               # problem kind -> longest reduction
    ops: dict                   # (op, dtype) -> examples
    odd: dict
    inject: str
    findings: list[dict]
    exit_code: int | None


@dataclass
class ReportData:
    repro_dir: Path
    tuning_db: Path | None
    tuning_db_note: str         # why there is no tuning data ("" when there is)
    fuzz_report: Path | None
    findings: list[Finding]
    problems: list[Problem]
    fuzz: FuzzSummary | None
    replayed_at: float | None
    generated: float = field(default_factory=time.time)

    def kinds(self) -> dict[str, tuple[int, int]]:
        """kind -> (signatures, occurrences), most signatures first."""
        out: dict[str, list[int]] = {}
        for f in self.findings:
            n = out.setdefault(f.kind, [0, 0])
            n[0] += 1
            n[1] += f.count
        return {k: (v[0], v[1]) for k, v in sorted(out.items(), key=lambda kv: (-kv[1][0], kv[0]))}


# ----------------------------------------------------------------------------------------- readers ---
def _load_json(path: Path, what: str):
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReportInputError(path, f"no such file; expected {what}") from None
    except IsADirectoryError:
        raise ReportInputError(path, f"is a directory; expected {what}") from None
    except OSError as e:
        raise ReportInputError(path, f"cannot read it ({e.strerror or e}); expected {what}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReportInputError(path, f"not UTF-8 (byte {e.start}); expected {what}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportInputError(path, f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
                                     f"expected {what}") from None


INDEX_WHAT = ("the INDEX.json that mlirtrace writes into a reproducer directory (mlirtrace tune, fuzz, the pytest "
              "plugin)")


def read_index(d: Path) -> list[dict]:
    """The entries of ``d/INDEX.json``, oldest first; a missing or malformed directory or index is an error."""
    if not d.exists():
        raise ReportInputError(d, "no such directory; expected a reproducer directory holding " + INDEX_WHAT)
    if not d.is_dir():
        raise ReportInputError(d, "not a directory; expected a reproducer directory holding " + INDEX_WHAT)
    path = d / "INDEX.json"
    if not path.exists():
        raise ReportInputError(d, "no INDEX.json here: not a reproducer directory mlirtrace wrote "
                                  "(expected " + INDEX_WHAT + ")")
    data = _load_json(path, INDEX_WHAT)
    if not isinstance(data, dict) or not isinstance(data.get("reproducers"), dict):
        raise ReportInputError(path, 'expected an object {"format": 1, "reproducers": {signature: entry}}')
    entries = []
    for sig, e in data["reproducers"].items():
        if not isinstance(e, dict) or not isinstance(e.get("script", ""), str):
            raise ReportInputError(path, f"entry {sig!r}: expected an object with signature, kind, script, ticket")
        entries.append(dict(e, signature=str(e.get("signature") or sig)))
    return sorted(entries, key=lambda e: (_num(e.get("first_seen")) or 0.0, e["signature"]))


def read_replays(d: Path) -> dict[str, Replay]:
    """The last replay's verdict by signature (``DIR/REPLAY.json``; empty when never replayed)."""
    path = d / "REPLAY.json"
    if not path.exists():
        return {}
    what = "the REPLAY.json that `mlirtrace repro run` writes"
    data = _load_json(path, what)
    reps = data.get("replays") if isinstance(data, dict) else None
    if not isinstance(reps, dict) or not all(isinstance(r, dict) for r in reps.values()):
        raise ReportInputError(path, f'expected an object {{"format": 1, "replays": {{signature: replay}}}}, {what}')
    return {str(s): Replay(str(r.get("verdict", "?")), str(r.get("line", "")), _num(r.get("when")),
                           _num(r.get("seconds"))) for s, r in reps.items()}


DB_WHAT = "a tuning database as mlirtrace tune writes it (an object \"DEVICE|PROBLEM KEY\": {solution, time_ms})"


def read_tuning_db(path: Path) -> list[dict]:
    """The entries of a tuning database: dicts with device, problem_key, solution, time_ms (or None), stored,
    symbol and, when the entry keeps them, every solution's row."""
    data = _load_json(path, DB_WHAT)
    if not isinstance(data, dict):
        raise ReportInputError(path, "expected " + DB_WHAT)
    out = []
    for k, v in data.items():
        if "|" not in k or not isinstance(v, dict) or not isinstance(v.get("solution"), str):
            raise ReportInputError(path, f"entry {k!r}: expected " + DB_WHAT)
        device, key = k.split("|", 1)
        rows = []
        for r in v.get("solutions") or []:      # kept by a tuner that stores every solution's result
            if isinstance(r, dict) and isinstance(r.get("solution"), str):
                rows.append((r["solution"], str(r.get("status", Status.OK)), _num(r.get("time_ms"))))
        out.append({"device": device, "problem_key": key, "solution": v["solution"], "time_ms": _num(v.get("time_ms")),
                    "stored": _num(v.get("stored")), "symbol": str(v.get("symbol") or ""),
                    "imported_from": str(v.get("imported_from") or ""), "rows": rows})
    return out


FUZZ_WHAT = "the JSON report of `mlirtrace fuzz --report FILE` (an object with cases and coverage)"


def read_fuzz_report(path: Path) -> FuzzSummary:
    data = _load_json(path, FUZZ_WHAT)
    if not isinstance(data, dict) or not isinstance(data.get("coverage"), dict) or "cases" not in data:
        raise ReportInputError(path, "expected " + FUZZ_WHAT)
    cov = data["coverage"]
    ops: dict[tuple[str, str], int] = {}
    for k, n in (cov.get("ops") or {}).items():
        op, _, dt = str(k).partition(":")
        ops[(op, dt or "?")] = _int(n)
    findings = [f for f in data.get("findings") or [] if isinstance(f, dict)]
    return FuzzSummary(path=path, cases=_int(data.get("cases")), examples=_int(data.get("examples")),
                       elapsed_s=_num(data.get("elapsed_s")) or 0.0, lanes=_int(data.get("lanes")),
                       failures=_counts(data.get("failures")), kinds=_counts(cov.get("kinds")),
                       layouts=_counts(cov.get("layouts")), longest=_counts(cov.get("longest_reduction")),
                       ops=ops, odd=data.get("odd_perf_configs") if isinstance(data.get("odd_perf_configs"), dict)
                       else {}, inject=str(data.get("inject") or ""), findings=findings,
                       exit_code=data.get("exit_code") if isinstance(data.get("exit_code"), int) else None)


def parse_bench_table(text: str) -> list[tuple[str, str, float | None]]:
    """The rows of a benchmark table as :func:`..trace.table.solution_table` prints it (columns solution,
    status, time_ms, build_s, span): (solution, status, time_ms or None), in the table's order."""
    rows = []
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if not lines or lines[0].split()[:2] != ["solution", "status"]:
        return rows
    for ln in lines[1:]:
        parts = ln.split()
        if len(parts) < 5:
            continue
        solution, status, t = parts[0], " ".join(parts[1:-3]), _num(parts[-3])
        rows.append((solution, status, t if status == Status.OK else None))
    return rows


# ---------------------------------------------------------------------------------------- gather ---
def _finding(d: Path, e: dict, replays: dict[str, Replay]) -> Finding:
    from ..repro.writer import read_payload

    def file(name_key):
        name = e.get(name_key)
        if not name:
            return None
        p = d / str(name)
        return p if p.is_file() else None

    script, ticket, mlir = file("script"), file("ticket"), file("mlir")
    sig = e["signature"]
    f = Finding(signature=sig, kind=str(e.get("kind", "?")), stage=str(e.get("stage", "")),
                symbol=str(e.get("symbol", "")), count=_int(e.get("count"), 1), device=str(e.get("device", "")),
                device_description="", problem_key=str(e.get("problem_key", "")), error=str(e.get("error", "")),
                solutions=[str(s) for s in (e.get("solutions") or [e.get("solution")]) if s],
                passed=[str(s) for s in e.get("passed") or []], planted=e.get("planted"),
                inject=str(e.get("inject") or ""), first_seen=_num(e.get("first_seen")),
                last_seen=_num(e.get("last_seen")), first_origin=str(e.get("first_origin", "")),
                last_origin=str(e.get("last_origin", "")), script=script, ticket=ticket, mlir=mlir,
                replay=replays.get(sig))
    if script is None:
        f.notes.append(f"the reproducer script {e.get('script')} is not in {d}")
    else:
        try:
            data = read_payload(script)
        except Exception as exc:   # noqa: BLE001 - a damaged script: the index still tells the finding
            f.notes.append(f"{script.name}: its payload could not be read ({type(exc).__name__})")
        else:
            f.device_description = str(data.get("device_description") or "")
            f.mlir_text = str(data.get("mlir_text") or "")
            f.bench_rows = parse_bench_table(str(data.get("bench_table") or ""))
    if not f.mlir_text and mlir is not None:
        try:
            f.mlir_text = mlir.read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    if e.get("ticket") and ticket is None:
        f.notes.append(f"the ticket {e.get('ticket')} is not in {d}")
    return f


def _problems(findings: list[Finding], db: list[dict]) -> list[Problem]:
    probs: dict[str, Problem] = {}

    def get(key: str) -> Problem:
        return probs.setdefault(key, Problem(key))

    for entry in db:
        p = get(entry["problem_key"])
        p.symbol = p.symbol or entry["symbol"]
        p.best.append(entry)
        if entry["rows"]:
            p.runs.append(TuningRun(f"tuning database (device {entry['device']})", list(entry["rows"])))
    for f in findings:
        if not f.problem_key:
            continue
        if not f.bench_rows and f.problem_key not in probs:
            continue
        p = get(f.problem_key)
        p.symbol = p.symbol or f.symbol
        p.signatures.append(f.signature)
        if not f.bench_rows:
            continue
        same = next((r for r in p.runs if r.rows == f.bench_rows), None)
        if same is not None:           # one tune that wrote several signatures: one table
            same.signatures.append(f.signature)
            continue
        origin = f.last_origin or f.first_origin or "a tune"
        fault = f" with {environment.INJECT}={f.inject}" if f.inject else ""
        p.runs.append(TuningRun(f"{origin}{fault}, recorded with {f.signature}", list(f.bench_rows), [f.signature]))
    for p in probs.values():
        if not p.runs:
            for b in p.best:
                if b["time_ms"] is not None:
                    p.runs.append(TuningRun(f"tuning database (device {b['device']}): it keeps the fastest solution "
                                            f"of a problem, not every solution tried",
                                            [(b["solution"], Status.OK, b["time_ms"])], only_best=True))
    # problems with timings first, then by symbol and key
    return sorted((p for p in probs.values() if p.runs or p.best), key=lambda p: (not p.runs, p.symbol, p.key))


def gather(repro_dir, tuning_db=None, fuzz_report=None, *, tuning_db_explicit: bool = True) -> ReportData:
    """Read everything the page shows. ``tuning_db``: the database file (None: none at all);
    ``tuning_db_explicit``: False when it is the default one, which then may be absent (the page says so)."""
    d = Path(repro_dir)
    entries = read_index(d)
    replays = read_replays(d)
    findings = [_finding(d, e, replays) for e in entries]
    db, note, db_path = [], "", None
    if tuning_db is not None:
        db_path = Path(tuning_db)
        if not db_path.exists() and not tuning_db_explicit:
            note = (f"no tuning database at {db_path} yet (mlirtrace tune FILE writes it; --tuning-db FILE names "
                    "another)")
        else:
            db = read_tuning_db(db_path)
            if not db:
                note = f"the tuning database {db_path} is empty"
    else:
        note = "no tuning database given"
    fuzz = read_fuzz_report(Path(fuzz_report)) if fuzz_report is not None else None
    when = [r.when for r in replays.values() if r.when]
    return ReportData(repro_dir=d, tuning_db=db_path, tuning_db_note=note, fuzz_report=fuzz.path if fuzz else None,
                      findings=findings, problems=_problems(findings, db), fuzz=fuzz,
                      replayed_at=max(when) if when else None)


# ---------------------------------------------------------------------------------------- helpers ---
def _num(v) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _int(v, default: int = 0) -> int:
    n = _num(v)
    return int(n) if n is not None else default


def _counts(v) -> dict:
    return {str(k): _int(n) for k, n in v.items()} if isinstance(v, dict) else {}


def relative_href(target: Path, out_dir: Path) -> str:
    """A relative URL from the page's folder to ``target`` (forward slashes, escaped for a URL)."""
    from urllib.parse import quote

    rel = os.path.relpath(os.path.abspath(target), os.path.abspath(out_dir))
    return quote(rel.replace(os.sep, "/"))
