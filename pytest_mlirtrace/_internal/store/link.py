"""One process's connection to the fleet's Redis, and what happens when Redis can't be reached.

Every Redis call of the store goes through :meth:`RedisLink.call`. A connection error or a timeout marks
the link down and raises :class:`Unreachable`; the caller then goes on locally (and keeps what it could not
push in the :mod:`.outbox`). While down, calls fail at once without touching the network, and every
``retry_s`` one call tries again; the first call that gets through marks the link up and runs the
``on_back`` callbacks (the outbox pushes what waited). One warning when the link first goes down, one line
when it is back: a run against an unreachable store goes on with a single warning, never a traceback.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from ..config.store_spec import StoreSpec

__all__ = ["RedisLink", "Unreachable", "connect_errors"]


class Unreachable(Exception):
    """Redis could not be reached (now, or on the last try less than ``retry_s`` ago)."""


def connect_errors() -> tuple:
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


def _stderr(msg: str) -> None:
    print(f"mlirtrace: {msg}", file=sys.stderr, flush=True)


class RedisLink:
    def __init__(self, spec: StoreSpec, *, timeout_s: float = 2.0, retry_s: float = 2.0,
                 say: Callable[[str], None] = _stderr):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.spec = spec
        # no silent retries inside redis-py: an outage is handled here, once, and costs one timeout
        self.client = redis.Redis.from_url(spec.where, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                           retry=Retry(NoBackoff(), 0))
        self.retry_s = retry_s
        self.say = say
        self.up = True
        self.outages = 0
        self.calls = 0                 # Redis round trips made through this link (a pipeline is one)
        self._next_try = 0.0
        self._warned = False
        self._lock = threading.RLock()
        self.on_back: list[Callable[[], None]] = []

    def call(self, fn: Callable, *, what: str = ""):
        """``fn(client)``; :class:`Unreachable` when Redis can't be reached."""
        with self._lock:
            if not self.up and time.monotonic() < self._next_try:
                raise Unreachable(f"{self.spec.display()} is unreachable")
        try:
            self.calls += 1
            out = fn(self.client)
        except connect_errors() as e:
            self._down(e, what)
            raise Unreachable(f"{self.spec.display()}: {e}") from None
        if not self.up:
            self._back()
        return out

    def ping(self) -> bool:
        try:
            self.call(lambda r: r.ping(), what="ping")
            return True
        except Unreachable:
            return False

    def _down(self, err, what: str) -> None:
        with self._lock:
            first = self.up
            self.up = False
            self._next_try = time.monotonic() + self.retry_s
            if first:
                self.outages += 1
            if not self._warned:
                self._warned = True
                self.say(f"warning: the store {self.spec.display()} is unreachable ({_short(err)}"
                         f"{'; while ' + what if what else ''}): going on locally; what is found meanwhile "
                         "is pushed when it is back")

    def _back(self) -> None:
        with self._lock:
            if self.up:
                return
            self.up = True
        self.say(f"the store {self.spec.display()} is reachable again")
        for cb in list(self.on_back):
            cb()


def _short(err) -> str:
    s = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return s[:160]
