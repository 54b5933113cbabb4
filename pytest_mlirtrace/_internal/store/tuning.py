"""The tuning database on a fleet: a result tuned on one runner is every runner's.

A Redis hash ``mlirtrace:tuning`` keyed by ``<mlirtrace version> | <device key> | <problem key>`` holds each
problem's fastest solution (a Lua script keeps the faster of what is there and what is stored). The local
database file is read and written too: a lookup that finds nothing in Redis (or can't reach it) falls back to
it, and a store while Redis is unreachable waits in the outbox.
"""
from __future__ import annotations

import json
import time

from .link import Unreachable

__all__ = ["FleetTuningDatabase", "push_tuning"]

KEY = "mlirtrace:tuning"
_KEEP_FASTER = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local t = cjson.decode(old)['time_ms']
  if t and tonumber(t) <= tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


def _device_key(problem_key: str, device: str) -> str:
    from ..vocab.problem_key import parse_problem_key

    try:
        pk = parse_problem_key(problem_key)
    except ValueError:      # a key of another form: the device as given
        pk = None
    return (pk.arch if pk is not None else None) or device


def _version() -> str:
    from ... import __version__

    return __version__


class FleetTuningDatabase:
    def __init__(self, local, link, outbox):
        self.local, self.link, self.outbox = local, link, outbox
        self.path = local.path

    @staticmethod
    def key(problem_key: str, device: str) -> str:
        """``<mlirtrace version>|<device key>|<problem key>``: the device key (``pocl-cpu``, ``nvidia-h200``) is
        the problem key's arch field, not the local device spec (``0:0`` on one runner is ``1:0`` on another)."""
        return f"{_version()}|{_device_key(problem_key, device)}|{problem_key}"

    def lookup(self, problem_key: str, device: str) -> dict | None:
        try:
            raw = self.link.call(lambda r: r.hget(KEY, self.key(problem_key, device)), what="tuning lookup")
        except Unreachable:
            raw = None
        if raw:
            return json.loads(raw)
        return self.local.lookup(problem_key, device)

    def store(self, problem_key: str, device: str, solution: str, time_ms: float, **extra) -> None:
        self.local.store(problem_key, device, solution, time_ms, **extra)
        entry = {"op": "tuning", "key": self.key(problem_key, device),
                 "value": {"solution": solution, "time_ms": time_ms, "stored": time.time(), **extra}}
        try:
            push_tuning(self.link, entry)
        except Unreachable:
            self.outbox.add(entry)

    def entries(self) -> dict:
        try:
            raw = self.link.call(lambda r: r.hgetall(KEY), what="tuning entries")
        except Unreachable:
            return self.local.entries()
        out = dict(self.local.entries())
        prefix = _version() + "|"
        for k, v in raw.items():
            k = k.decode()
            if k.startswith(prefix):
                out[k[len(prefix):]] = json.loads(v)
        return out


def push_tuning(link, entry: dict) -> None:
    """One tuning result (``{"key", "value"}``, as :meth:`FleetTuningDatabase.store` makes it) into the fleet's
    hash, the faster kept; :class:`~.link.Unreachable` when Redis is."""
    v = entry["value"]
    script = link.client.register_script(_KEEP_FASTER)
    link.call(lambda _r: script(keys=[KEY], args=[entry["key"], json.dumps(v), float(v["time_ms"])]),
              what="tuning store")
