"""What a runner could not push while the fleet's Redis was unreachable, kept on its disk until it can.

One JSON-lines file per store URL in mlirtrace's cache directory (``outbox/<hash of the URL>.jsonl``),
appended under a lock, so a runner killed during an outage leaves its pending pushes for the next run on
the machine that reaches the store. :meth:`Outbox.flush` replays each entry through the handler of its
``op``; entries that still can't go (the link went down again) stay, in order.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from .. import fs
from ..config.store_spec import StoreSpec
from .link import Unreachable

__all__ = ["Outbox", "default_outbox_path"]


def default_outbox_path(spec: StoreSpec) -> Path:
    h = hashlib.sha256(spec.where.encode()).hexdigest()[:16]
    return Path(fs.cache_dir()) / "outbox" / f"{h}.jsonl"


class Outbox:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def _lock(self):
        return fs.locked(str(self.path) + ".lock")

    def add(self, entry: dict) -> None:
        line = json.dumps(entry, sort_keys=True) + "\n"
        with self._lock():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)

    def pending(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:     # a line cut by a kill mid-append: nothing to replay
                continue
        return out

    def __len__(self) -> int:
        return len(self.pending())

    def flush(self, handlers: dict[str, Callable[[dict], None]]) -> tuple[int, int]:
        """Replay the pending entries in order; (pushed, left). A handler raising :class:`Unreachable` stops
        the flush (that entry and the rest stay); an entry of an unknown op is dropped."""
        with self._lock():
            entries = self.pending()
            if not entries:
                return 0, 0
            done = 0
            for e in entries:
                fn = handlers.get(e.get("op"))
                if fn is not None:
                    try:
                        fn(e)
                    except Unreachable:
                        break
                done += 1
            left = entries[done:]
            if left:
                fs.atomic_write(self.path, "".join(json.dumps(e, sort_keys=True) + "\n" for e in left))
            else:
                self.path.unlink(missing_ok=True)
            return done, len(left)
