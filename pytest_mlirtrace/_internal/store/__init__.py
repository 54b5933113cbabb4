"""Where shared state lives: reproducers and tickets, the fuzz's examples, tuning results.

The default is local: directories and files on this machine, no server (what every front end did before a
store was named). ``--store DIR`` puts them under one directory; ``--store redis://host:port/db`` shares
them with a fleet of runners through Redis (:mod:`.repros`, :mod:`.examples`, :mod:`.tuning`), each runner
keeping its local copies too, and going on locally with one warning while Redis can't be reached
(:mod:`.link`, :mod:`.outbox`).
"""
from __future__ import annotations

from pathlib import Path

from ..config.store_spec import REDIS_SCHEMES, StoreSpec, parse_store

__all__ = ["Store", "StoreSpec", "parse_store", "local_path", "REDIS_SCHEMES"]


def local_path(spec: StoreSpec | None, name: str, given: str | None) -> str | None:
    """A local path: ``given`` when the front end has one, else ``name`` under a directory store (None: the
    front end's own default)."""
    if given:
        return given
    if spec is not None and not spec.is_redis:
        return str(Path(spec.where) / name)
    return None


class Store:
    """One run's store (``spec`` None: the local defaults; ``machine``: this machine's name in a fleet's
    records, None: the host name). Front ends make one, ask it for the writer and databases they need, and
    :meth:`close` it (pushing what waited in the outbox, or saying it couldn't)."""

    def __init__(self, spec: StoreSpec | None = None, *, machine: str | None = None, say=None,
                 retry_s: float = 2.0, timeout_s: float = 2.0, outbox_path=None):
        self.spec = spec
        self.machine = machine
        self.link = self.outbox = None
        self._examples = self._tuning = self._writer = None
        if spec is not None and spec.is_redis:
            from .link import RedisLink, _stderr
            from .outbox import Outbox, default_outbox_path

            self.say = say or _stderr
            self.link = RedisLink(spec, retry_s=retry_s, timeout_s=timeout_s, say=self.say)
            self.outbox = Outbox(outbox_path or default_outbox_path(spec))
            self.link.on_back.append(self.flush)
            if len(self.outbox) and self.link.ping():
                self.flush()

    @property
    def is_fleet(self) -> bool:
        return self.link is not None

    def local_path(self, name: str, given: str | None) -> str | None:
        return local_path(self.spec, name, given)

    # ---- what front ends ask for ---------------------------------------------------------
    def repro_writer(self, repro_dir):
        from ..repro.writer import ReproWriter

        if not self.is_fleet:
            return ReproWriter(repro_dir)
        from .repros import FleetReproWriter

        self._writer = FleetReproWriter(repro_dir, self.link, self.outbox, self.machine)
        return self._writer

    def example_database(self, path: str | None, what: tuple):
        from .examples import fleet_keyed_database, keyed_database

        if not self.is_fleet:
            return keyed_database(path, what)
        self._examples = fleet_keyed_database(path, what, self.link, self.outbox)
        return self._examples

    def tuning_database(self, path=None):
        from ..engine.database import TuningDatabase

        local = TuningDatabase(path)
        if not self.is_fleet:
            return local
        from .tuning import FleetTuningDatabase

        self._tuning = FleetTuningDatabase(local, self.link, self.outbox)
        return self._tuning

    # ---- the outbox --------------------------------------------------------------------------
    def flush(self) -> tuple[int, int]:
        """Push what waited in the outbox: (pushed, left)."""
        if not self.is_fleet:
            return 0, 0
        from .examples import FleetDatabase
        from .repros import FleetRepros
        from .tuning import push_tuning

        link = self.link
        handlers = {"example": FleetDatabase(link, self.outbox).replay,
                    "repro": FleetRepros(link, self.machine).push,
                    "tuning": lambda e: push_tuning(link, e)}
        pushed, left = self.outbox.flush(handlers)
        if pushed:
            self.say(f"pushed {pushed} item(s) found while the store was unreachable to {self.spec.display()}")
        return pushed, left

    def summary(self) -> dict | None:
        """What a report says of the store: None for the local default."""
        if self.spec is None:
            return None
        if not self.is_fleet:
            return {"store": self.spec.display()}
        return {"store": self.spec.display(), "redis_calls": self.link.calls, "outages": self.link.outages,
                "unpushed": len(self.outbox)}

    def close(self) -> int:
        """Push what waits; the number of items left unpushed (said, with where they are kept)."""
        if not self.is_fleet:
            return 0
        if not self.link.up:
            self.link.ping()      # the last chance this run has to push (runs the flush when back)
        left = len(self.outbox) if not self.link.up else self.flush()[1]
        if self._writer is not None and self.link.up:
            from .link import Unreachable
            try:
                self._writer.refresh()
            except Unreachable:
                pass
        if left:
            self.say(f"warning: could not push {left} item(s) to the store {self.spec.display()}: kept in "
                     f"{self.outbox.path}, pushed by the next run on this machine that reaches it")
        self.link.client.close()
        return left

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
