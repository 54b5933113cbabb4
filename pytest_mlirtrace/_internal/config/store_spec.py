"""The store setting: where shared state lives. A local directory (the default: no server) or a Redis URL
(``redis://host:port/db``, ``rediss://`` with TLS, ``unix:///path/redis.sock?db=N``) that a fleet of runners
shares. Parsed once, eagerly, so a bad value is reported with where it came from before any work starts."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["StoreSpec", "parse_store", "REDIS_SCHEMES"]

REDIS_SCHEMES = ("redis", "rediss", "unix")


@dataclass(frozen=True)
class StoreSpec:
    """``kind`` "dir" (``where``: a directory) or "redis" (``where``: the URL as given)."""
    kind: str
    where: str

    @property
    def is_redis(self) -> bool:
        return self.kind == "redis"

    def display(self) -> str:
        """The URL without a password (what reports and warnings print)."""
        if not self.is_redis:
            return self.where
        u = urlsplit(self.where)
        if u.password:
            host = u.hostname or ""
            port = f":{u.port}" if u.port else ""
            user = f"{u.username}:***@" if u.username else ":***@"
            return u._replace(netloc=f"{user}{host}{port}").geturl()
        return self.where

    def __str__(self) -> str:
        return self.display()


def parse_store(text) -> StoreSpec:
    """``text`` as a :class:`StoreSpec`; ValueError saying what was expected for a URL that is not one
    mlirtrace can use (an unknown scheme, a bad port or database number)."""
    s = str(text).strip()
    if not s:
        raise ValueError("expected a directory or a redis://host:port/db URL")
    if "://" not in s:
        return StoreSpec("dir", s)
    u = urlsplit(s)
    scheme = u.scheme.lower()
    if scheme not in REDIS_SCHEMES:
        raise ValueError(f"unknown store scheme {scheme!r}: expected a directory or redis://host:port/db "
                         "(rediss:// for TLS, unix:///path/to/redis.sock)")
    try:
        port = u.port
    except ValueError:
        raise ValueError(f"bad port in {s!r}: expected redis://host:port/db") from None
    if scheme != "unix":
        if not u.hostname:
            raise ValueError(f"no host in {s!r}: expected redis://host:port/db")
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"port {port} out of range in {s!r}")
        db = u.path.strip("/")
        if db and not db.isdigit():
            raise ValueError(f"database {db!r} in {s!r} is not a number: expected redis://host:port/db")
    elif not u.path:
        raise ValueError(f"no socket path in {s!r}: expected unix:///path/to/redis.sock")
    return StoreSpec("redis", s)
