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

from .files import atomic_write, display_path, locked
from .payload import build_payload
from .record import FailureRecord
from .signature import first_line, signature
from .ticket import render_index, render_ticket, update_occurrences

TEMPLATE_PATH = Path(__file__).with_name("reproducer_template.py")
PAYLOAD_MARKER = 'PAYLOAD = ""  # @@MLIRTRACE_PAYLOAD@@'
INDEX_FORMAT = 1
MAX_ORIGINS = 50


@dataclass(frozen=True)
class WrittenRepro:
    signature: str
    script_path: Path
    ticket_path: Path
    new: bool
    count: int

    def to_dict(self) -> dict:
        return {"signature": self.signature, "script_path": str(self.script_path),
                "ticket_path": str(self.ticket_path), "new": self.new, "count": self.count}

    @classmethod
    def from_dict(cls, d: dict) -> "WrittenRepro":
        return cls(d["signature"], Path(d["script_path"]), Path(d["ticket_path"]), bool(d["new"]), int(d["count"]))


def render_script(data: dict) -> str:
    """The fixed template with the data assigned to ``PAYLOAD`` as base64 (no text of the data in the code)."""
    from .reproducer_template import encode_payload

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
        return sorted(self._read_index()["reproducers"].values(), key=lambda e: (e.get("first_seen", 0), e["signature"]))

    def _write_index(self, idx: dict) -> None:
        atomic_write(self.index_path, json.dumps(idx, indent=1, sort_keys=True) + "\n")
        entries = sorted(idx["reproducers"].values(), key=lambda e: (e.get("first_seen", 0), e["signature"]))
        atomic_write(self.dir / "INDEX.md", render_index(entries))

    # ---- write -------------------------------------------------------------
    def write(self, rec: FailureRecord) -> WrittenRepro:
        sig = signature(rec)
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
                atomic_write(ticket, update_occurrences(ticket.read_text(encoding="utf-8"), entry))
                new = False
            else:
                if data is None:
                    data = build_payload(rec, sig)
                count = int(entry.get("count", 0)) + 1 if entry else 1
                entry = {"signature": sig, "kind": rec.kind, "stage": rec.stage, "symbol": rec.symbol,
                         "solution": rec.span.solution, "problem_key": rec.span.problem_key,
                         "device": data["device_key"], "error": first_line(rec.error),
                         "script": script.name, "ticket": ticket.name, "count": count,
                         "first_origin": entry.get("first_origin", origin) if entry else origin,
                         "last_origin": origin, "first_seen": entry.get("first_seen", now) if entry else now,
                         "last_seen": now, "origins": [origin], "inject": rec.inject,
                         "standalone": data["standalone"] is not None}
                atomic_write(script, render_script(data), 0o755)
                atomic_write(ticket, render_ticket(data, entry, display_path(script)))
                new = True
            idx["reproducers"][sig] = entry
            idx["format"] = INDEX_FORMAT
            self._write_index(idx)
            return WrittenRepro(sig, script, ticket, new, int(entry["count"]))

    def write_all(self, recs, passed=()) -> list[WrittenRepro]:
        """Write the records of one compile/tune/run: records that share a signature (the same bug with
        several solutions) become one reproducer. ``passed``: the solutions that worked on the same module.
        One :class:`WrittenRepro` per signature, in the order first seen."""
        out: dict[str, WrittenRepro] = {}
        for r in recs:
            w = self.write(r)
            out.setdefault(w.signature, w)
        return list(out.values())

