"""The fuzz's example database: Hypothesis's directory database, its keys prefixed with what the run
draws (kinds, dtypes, sizes, device), so a run replays only examples of its own kind of search.

Hypothesis keys a database by the test function; every campaign's test is the same local function,
whatever the options. Prefixing the keys through the public ``ExampleDatabase`` interface does what a
per-options test identity would, without touching Hypothesis internals.
"""
from __future__ import annotations

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
    prefix = hashlib.sha256(repr(what).encode()).hexdigest()[:16].encode()
    return KeyedDatabase(DirectoryBasedExampleDatabase(path), prefix)
