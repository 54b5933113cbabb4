"""The structured trace log: every pipeline event, always recorded in memory."""
from __future__ import annotations

import json
import threading

from ..engine import CompileFailed, Event, ModuleLowered, SolutionFinished, Span
from .table import solution_table


class TraceLog:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def clear(self) -> None:
        self.events.clear()

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def modules(self) -> list[ModuleLowered]:
        return self.of(ModuleLowered)

    @property
    def failures(self) -> list[CompileFailed]:
        return self.of(CompileFailed)

    @property
    def spans(self) -> list[Span]:
        seen, out = set(), []
        for e in self.events:
            s = getattr(e, "span", None)
            if isinstance(s, Span) and s.hash not in seen:
                seen.add(s.hash)
                out.append(s)
        return out

    def bench_table(self) -> str:
        """The benchmarked solutions in the order they finished, as plain text ("" before any)."""
        rows = self.of(SolutionFinished)
        return solution_table(rows) if rows else ""

    def to_json(self) -> str:
        def enc(o):
            if isinstance(o, Span):
                return o.to_dict()
            return str(o)
        return json.dumps([e.to_dict() for e in self.events], default=enc, indent=1)
