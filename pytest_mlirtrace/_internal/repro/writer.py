"""Writing reproducers: ``<dir>/<signature>.py`` (runs alone), ``<dir>/<signature>.md`` (ticket body),
``<dir>/INDEX.json`` + ``<dir>/INDEX.md`` (every signature, kind, count, first/last origin).

The same signature again writes no new files: its count goes up in the index and the ticket. Every
file is written atomically (temporary file + ``os.replace``) and each write happens under an
exclusive ``fcntl`` lock on ``<dir>/.lock``, so pytest-xdist workers and concurrent processes
neither clobber each other's files nor lose index updates; a process that dies leaves what it had
written complete.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..config import environment
from .files import atomic_write, display_path, locked
from .payload import build_payload
from .record import FailureRecord
from .reproducer_template import encode_payload, load_payload
from .signature import first_line, signature
from .ticket import render_index, render_ticket, update_occurrences

TEMPLATE_PATH = Path(__file__).with_name("reproducer_template.py")
PAYLOAD_MARKER = f'PAYLOAD = ""  # @@{environment.PAYLOAD}@@'   # the template's one line the payload replaces
INDEX_FORMAT = 1
MAX_ORIGINS = 50


@dataclass(frozen=True)
class WrittenRepro:
    signature: str
    script_path: Path
    ticket_path: Path
    new: bool
    count: int
    elsewhere: str = ""     # a fleet's store holds it, not this directory (another runner wrote it): the store

    def to_dict(self) -> dict:
        return {"signature": self.signature, "script_path": str(self.script_path),
                "ticket_path": str(self.ticket_path), "new": self.new, "count": self.count,
                "elsewhere": self.elsewhere}

    @classmethod
    def from_dict(cls, d: dict) -> WrittenRepro:
        return cls(d["signature"], Path(d["script_path"]), Path(d["ticket_path"]), bool(d["new"]), int(d["count"]),
                   str(d.get("elsewhere", "")))


def render_script(data: dict) -> str:
    """The fixed template with the data assigned to ``PAYLOAD`` as base64 (no text of the data in the code)."""
    template = TEMPLATE_PATH.read_text(encoding="utf-8")
    if template.count(PAYLOAD_MARKER) != 1:
        raise RuntimeError(f"{TEMPLATE_PATH}: the payload marker must occur exactly once")
    b64 = encode_payload(data)
    lines = ["PAYLOAD = ("] + [f'    "{b64[i:i + 96]}"' for i in range(0, len(b64), 96)] + [")"]
    return template.replace(PAYLOAD_MARKER, "\n".join(lines))


class ReproWriter:
    def __init__(self, repro_dir: str | os.PathLike = "reproducers"):
        self.dir = Path(repro_dir).absolute()

    @property
    def index_path(self) -> Path:
        return self.dir / "INDEX.json"

    def paths(self, sig: str) -> tuple[Path, Path]:
        return self.dir / f"{sig}.py", self.dir / f"{sig}.md"

    # ---- index -------------------------------------------------------------
    def _read_index(self) -> dict:
        try:
            data = json.loads(self.index_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return {"format": INDEX_FORMAT, "reproducers": {}}
        if not isinstance(data, dict) or not isinstance(data.get("reproducers"), dict):
            return {"format": INDEX_FORMAT, "reproducers": {}}
        return data

    def index(self) -> list[dict]:
        """Every signature's entry, oldest first (reads INDEX.json)."""
        entries = self._read_index()["reproducers"].values()
        return sorted(entries, key=lambda e: (e.get("first_seen", 0), e["signature"]))

    def _write_index(self, idx: dict) -> None:
        atomic_write(self.index_path, json.dumps(idx, indent=1, sort_keys=True) + "\n")
        entries = sorted(idx["reproducers"].values(), key=lambda e: (e.get("first_seen", 0), e["signature"]))
        atomic_write(self.dir / "INDEX.md", render_index(entries))

    # ---- write -------------------------------------------------------------
    def write(self, rec: FailureRecord, also=(), passed=()) -> WrittenRepro:
        """Write ``rec`` (one occurrence of its signature). ``also``: more records of the same signature from
        the same call (other solutions failing the same way); ``passed``: solutions that worked on the same
        module. A known signature gets its count raised and its lists of failing and passing solutions
        merged (the reproducer's payload and the ticket are written again when a list grows)."""
        sig = signature(rec)
        failing = _unique([rec.span.solution] + [r.span.solution for r in also])
        ok = [p for p in _unique(list(rec.passed) + list(passed)) if p not in failing]
        script, ticket = self.paths(sig)
        # the expensive part (oracle, layout checks) outside the lock, and only for a signature not seen yet
        known = sig in self._read_index()["reproducers"] and script.exists()
        data = None if known else build_payload(rec, sig)
        now = time.time()
        origin = rec.origin or "?"
        with locked(self.dir / ".lock"):
            idx = self._read_index()
            entry = idx["reproducers"].get(sig)
            if entry is not None and script.exists() and ticket.exists():
                entry["count"] = int(entry.get("count", 1)) + 1
                entry["last_origin"], entry["last_seen"] = origin, now
                entry["origins"] = (entry.get("origins", []) + [origin])[-MAX_ORIGINS:]
                sols = _unique(list(entry.get("solutions") or [entry.get("solution", "")]) + failing)
                good = [p for p in _unique(list(entry.get("passed") or []) + ok) if p not in sols]
                if sols != entry.get("solutions") or good != entry.get("passed"):
                    entry["solutions"], entry["passed"] = sols, good
                    data = read_payload(script)
                    data["solutions"], data["passed"] = sols, good
                    atomic_write(script, render_script(data), 0o755)
                    mlir_file = script.with_suffix(".mlir")
                    atomic_write(ticket, render_ticket(data, entry, display_path(script),
                                                       display_path(mlir_file) if mlir_file.exists() else None))
                else:
                    atomic_write(ticket, update_occurrences(ticket.read_text(encoding="utf-8"), entry))
                new = False
            else:
                if data is None:
                    data = build_payload(rec, sig)
                data["solutions"], data["passed"] = failing, ok
                count = int(entry.get("count", 0)) + 1 if entry else 1
                entry = {"signature": sig, "kind": rec.kind, "stage": rec.stage, "symbol": rec.symbol,
                         "solution": rec.span.solution, "problem_key": rec.span.problem_key,
                         "device": data["device_key"], "error": first_line(rec.error),
                         "script": script.name, "ticket": ticket.name, "count": count,
                         "first_origin": entry.get("first_origin", origin) if entry else origin,
                         "last_origin": origin, "first_seen": entry.get("first_seen", now) if entry else now,
                         "last_seen": now, "origins": [origin], "inject": rec.inject, "planted": rec.planted,
                         "solutions": failing, "passed": ok, "standalone": data["standalone"] is not None}
                atomic_write(script, render_script(data), 0o755)
                mlir_file = None
                if data.get("mlir_text"):      # the hand-off file: the MLIR as rocMLIR takes it
                    mlir_file = script.with_suffix(".mlir")
                    atomic_write(mlir_file, data["mlir_text"].rstrip() + "\n")
                    entry["mlir"] = mlir_file.name
                atomic_write(ticket, render_ticket(data, entry, display_path(script),
                                                   display_path(mlir_file) if mlir_file else None))
                new = True
            idx["reproducers"][sig] = entry
            idx["format"] = INDEX_FORMAT
            self._write_index(idx)
            return WrittenRepro(sig, script, ticket, new, int(entry["count"]))

    def files_of(self, sig: str) -> tuple[dict, dict[str, str]]:
        """``sig``'s index entry and its files (name -> text: the script, the ticket, the ``.mlir``), as
        this directory holds them (({}, {}) when it does not)."""
        entry = self._read_index()["reproducers"].get(sig)
        if not entry:
            return {}, {}
        files = {}
        for k in ("script", "ticket", "mlir"):
            name = entry.get(k)
            if name and (self.dir / name).is_file():
                files[name] = (self.dir / name).read_text(encoding="utf-8")
        return dict(entry), files

    def adopt(self, entry: dict, files: dict[str, str]) -> WrittenRepro:
        """Install a reproducer written elsewhere (another runner, through the fleet store): ``files`` (name
        -> text) and its index ``entry``, whose count and origins replace this directory's; the ticket's
        occurrence line follows the count. A file name must be a plain name of this signature (no path)."""
        sig = str(entry.get("signature", ""))
        if not sig or Path(sig).name != sig:
            raise ValueError(f"not a reproducer signature: {sig!r}")
        for name in files:
            if Path(name).name != name or not name.startswith(sig):
                raise ValueError(f"{sig}: refusing the file name {name!r} (not a plain name of this signature)")
        script, ticket = self.paths(sig)
        with locked(self.dir / ".lock"):
            for name, text in files.items():
                if name == ticket.name:
                    text = update_occurrences(text, entry)
                atomic_write(self.dir / name, text, 0o755 if name.endswith(".py") else 0o644)
            idx = self._read_index()
            new = sig not in idx["reproducers"]
            idx["reproducers"][sig] = dict(entry)
            idx["format"] = INDEX_FORMAT
            self._write_index(idx)
        return WrittenRepro(sig, script, ticket, new, int(entry.get("count", 1)))

    def set_count(self, sig: str, count: int) -> None:
        """The count of ``sig`` (the fleet's total) in the index and the ticket's occurrence line."""
        with locked(self.dir / ".lock"):
            idx = self._read_index()
            entry = idx["reproducers"].get(sig)
            if entry is None or int(entry.get("count", 0)) == count:
                return
            entry["count"] = count
            ticket = self.dir / entry.get("ticket", f"{sig}.md")
            if ticket.exists():
                atomic_write(ticket, update_occurrences(ticket.read_text(encoding="utf-8"), entry))
            self._write_index(idx)

    def remove(self, signatures) -> None:
        """Take ``signatures`` out: their script, ticket and ``.mlir`` files and their index entries."""
        with locked(self.dir / ".lock"):
            idx = self._read_index()
            for sig in signatures:
                entry = idx["reproducers"].pop(sig, None) or {}
                script, ticket = self.paths(sig)
                for f in (script, ticket, script.with_suffix(".mlir"),
                          *(self.dir / entry[k] for k in ("script", "ticket", "mlir") if entry.get(k))):
                    try:
                        f.unlink()
                    except FileNotFoundError:
                        pass
            self._write_index(idx)

    def write_all(self, recs, passed=()) -> list[WrittenRepro]:
        """Write the records of one call (a tune, a test): records that share a signature (the same bug
        with several solutions) are one occurrence of one reproducer, listing each failing solution;
        ``passed``: the solutions that worked on the same module. One :class:`WrittenRepro` per
        signature, in the order first seen."""
        return write_grouped(self, recs, passed)


def write_grouped(writer, recs, passed=()) -> list[WrittenRepro]:
    """``writer.write`` once per signature of ``recs`` (the first record, the others as ``also``), in the
    order first seen: what every writer's ``write_all`` does."""
    groups: dict[str, list[FailureRecord]] = {}
    for r in recs:
        groups.setdefault(signature(r), []).append(r)
    return [writer.write(rs[0], also=rs[1:], passed=passed) for rs in groups.values()]


def _unique(items) -> list[str]:
    out: list[str] = []
    for x in items:
        if x and x not in out:
            out.append(x)
    return out


def read_payload(script: Path) -> dict:
    """The data a written reproducer carries (its ``PAYLOAD``)."""
    text = script.read_text(encoding="utf-8")
    start = text.index("PAYLOAD = (")
    end = text.index("\n)", start)
    return load_payload("".join(line.strip().strip('"') for line in text[start + len("PAYLOAD = ("):end].splitlines()))
