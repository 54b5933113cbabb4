"""The fuzz's example database: Hypothesis's directory database (and, on a fleet, Redis), its keys prefixed
with what the run draws (kinds, dtypes, sizes, device), so a run replays only examples of its own kind of
search.

Hypothesis keys a database by the test function; every campaign's test is the same local function,
whatever the options. Prefixing the keys through the public ``ExampleDatabase`` interface does what a
per-options test identity would, without touching Hypothesis internals.
"""
from __future__ import annotations

import base64
import hashlib

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase


class KeyedDatabase(ExampleDatabase):
    """``inner`` with every key prefixed by ``prefix``."""

    def __init__(self, inner: ExampleDatabase, prefix: bytes):
        super().__init__()
        self.inner, self.prefix = inner, prefix

    def _k(self, key: bytes) -> bytes:
        return self.prefix + b"/" + key

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self._k(key), value)

    def fetch(self, key: bytes):
        return self.inner.fetch(self._k(key))

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self._k(key), value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self._k(src), self._k(dest), value)

    def __repr__(self) -> str:
        return f"KeyedDatabase({self.inner!r}, {self.prefix!r})"


def keyed_database(path: str | None, what: tuple) -> ExampleDatabase | None:
    """The directory database at ``path`` (None: no database) keyed by ``what`` the run draws."""
    if not path:
        return None
    return KeyedDatabase(DirectoryBasedExampleDatabase(path), _prefix(what))


def _prefix(what: tuple) -> bytes:
    return hashlib.sha256(repr(what).encode()).hexdigest()[:16].encode()


class FleetDatabase(ExampleDatabase):
    """Hypothesis's ``RedisExampleDatabase`` behind a :class:`~.link.RedisLink`: while Redis is unreachable a
    fetch finds nothing there and a save, delete or move waits in the :class:`~.outbox.Outbox` (pushed when the
    link is back). Meant as the shared half of a ``MultiplexedDatabase`` whose local half is a directory."""

    def __init__(self, link, outbox, key_prefix: bytes = b"mlirtrace:examples:"):
        super().__init__()
        from hypothesis.extra.redis import RedisExampleDatabase

        self.link, self.outbox = link, outbox
        self.redis_db = RedisExampleDatabase(link.client, key_prefix=key_prefix)

    def _do(self, op: str, *args: bytes) -> None:
        from .link import Unreachable

        try:
            self.link.call(lambda _r: getattr(self.redis_db, op)(*args), what=f"example {op}")
        except Unreachable:
            self.outbox.add({"op": "example", "call": op, "args": [base64.b64encode(a).decode() for a in args]})

    def replay(self, entry: dict) -> None:
        """An outbox entry of :meth:`_do`, pushed now (:class:`~.link.Unreachable` when still down)."""
        args = [base64.b64decode(a) for a in entry["args"]]
        self.link.call(lambda _r: getattr(self.redis_db, entry["call"])(*args), what="example push")

    def save(self, key: bytes, value: bytes) -> None:
        self._do("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._do("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._do("move", src, dest, value)

    def fetch(self, key: bytes):
        from .link import Unreachable

        try:
            values = self.link.call(lambda _r: list(self.redis_db.fetch(key)), what="example fetch")
        except Unreachable:
            values = []
        yield from values

    def __repr__(self) -> str:
        return f"FleetDatabase({self.link.spec.display()})"


def fleet_keyed_database(path: str | None, what: tuple, link, outbox) -> ExampleDatabase:
    """The run's example database on a fleet: the local directory ``path`` (when given) and the shared Redis
    read and written together (``MultiplexedDatabase``: a save goes to both, a fetch reads both), keyed by
    ``what`` the run draws as :func:`keyed_database` keys it."""
    from hypothesis.database import MultiplexedDatabase

    shared = FleetDatabase(link, outbox)
    inner = MultiplexedDatabase(DirectoryBasedExampleDatabase(path), shared) if path else shared
    return KeyedDatabase(inner, _prefix(what))
