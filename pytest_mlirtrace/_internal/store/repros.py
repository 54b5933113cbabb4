"""Reproducers and tickets on a fleet: exactly one per signature fleet-wide, whoever finds it first.

Redis keys (prefix ``mlirtrace:``):

* ``repro:<sig>``: a hash -- ``owner`` (the runner that wrote it), ``entry`` (its index entry, JSON),
  ``files`` (name -> text, JSON: the script, the ticket, the ``.mlir``), ``count`` (occurrences fleet-wide),
  ``first_seen`` / ``last_seen``;
* ``repro:<sig>:hits``: a hash ``<machine> | <device>`` -> occurrences;
* ``repros``: the set of signatures (what ``mlirtrace repro pull`` fetches).

A new signature is claimed, its files stored and its count raised by one Lua script, so the claim is
atomic on the server: of two runners finding one bug in the same second one owns it and the other's
finding counts as an occurrence; a runner killed after the script ran has lost nothing (its files are in
Redis), one killed before has written nothing. The owner installs the files in its own reproducer
directory; the others don't (one reproducer and ticket fleet-wide; ``repro pull`` brings them anywhere).
While Redis is unreachable a runner writes locally as it would alone and queues the occurrence in the
outbox; once back, the queued occurrences are pushed (claiming the signature if nobody has).
"""
from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path

from ..repro.payload import device_key
from ..repro.signature import signature
from ..repro.writer import ReproWriter, WrittenRepro, write_grouped
from .link import Unreachable

__all__ = ["FleetReproWriter", "FleetRepros", "machine_name"]

PREFIX = "mlirtrace:"

# KEYS: repro hash, hits hash, signature set; ARGV: owner, entry, files, hit key, now, sig, occurrences,
# only-if-known ("1": no claim, just count when the signature is known)
_CLAIM = """
if ARGV[8] == '1' and redis.call('HEXISTS', KEYS[1], 'owner') == 0 then
  return {-1, 0, ''}
end
local won = redis.call('HSETNX', KEYS[1], 'owner', ARGV[1])
if won == 1 then
  redis.call('HSET', KEYS[1], 'entry', ARGV[2], 'files', ARGV[3], 'first_seen', ARGV[5])
  redis.call('SADD', KEYS[3], ARGV[6])
end
local count = redis.call('HINCRBY', KEYS[1], 'count', ARGV[7])
redis.call('HSET', KEYS[1], 'last_seen', ARGV[5])
redis.call('HINCRBY', KEYS[2], ARGV[4], ARGV[7])
return {won, count, redis.call('HGET', KEYS[1], 'owner')}
"""


def machine_name(machine: str | None = None) -> str:
    """This machine's name in the fleet's records: ``machine`` (the ``machine`` setting a front end resolved),
    else the host name."""
    return machine or socket.gethostname() or "?"


def _keys(sig: str) -> list[str]:
    return [f"{PREFIX}repro:{sig}", f"{PREFIX}repro:{sig}:hits", f"{PREFIX}repros"]


class FleetRepros:
    """The fleet's reproducer registry in Redis (through a :class:`~.link.RedisLink`)."""

    def __init__(self, link, machine: str | None = None):
        self.link = link
        self.machine = machine_name(machine)
        self._script = link.client.register_script(_CLAIM)

    def claim(self, sig: str, entry: dict | None, files: dict | None, hit: str, n: int = 1) -> tuple[int, int, str]:
        """(won: 1 claimed now / 0 known / -1 unknown and nothing given to claim it with, the fleet's count,
        the owner)."""
        only_known = "1" if files is None else "0"
        args = [f"{self.machine}:{os.getpid()}", json.dumps(entry or {}), json.dumps(files or {}), hit,
                repr(time.time()), sig, int(n), only_known]
        won, count, owner = self.link.call(lambda _r: self._script(keys=_keys(sig), args=args), what="reproducer claim")
        return int(won), int(count), owner.decode() if isinstance(owner, bytes) else str(owner or "")

    def push(self, entry: dict) -> None:
        """An outbox entry of :meth:`FleetReproWriter.write`: claim the signature with the files of the local
        directory it was written to (if nobody has) and add the occurrence; :class:`~.link.Unreachable` when
        still down."""
        local = ReproWriter(entry["dir"])
        e, files = local.files_of(entry["sig"])
        if not files:      # removed locally meanwhile: the occurrence still counts
            self.claim(entry["sig"], None, None, entry["hit"], entry.get("n", 1))
            return
        e.pop("count", None)
        _, count, _ = self.claim(entry["sig"], e, files, entry["hit"], entry.get("n", 1))
        local.set_count(entry["sig"], count)

    def signatures(self) -> list[str]:
        sigs = self.link.call(lambda r: r.smembers(f"{PREFIX}repros"), what="reproducer list")
        return sorted(s.decode() if isinstance(s, bytes) else s for s in sigs)

    def get(self, sig: str) -> tuple[dict, dict[str, str]] | None:
        """(index entry with the fleet's count, first/last seen and hits, files) of ``sig``; None if unknown."""
        def read(r):
            p = r.pipeline()
            p.hgetall(_keys(sig)[0])
            p.hgetall(_keys(sig)[1])
            return p.execute()
        h, hits = self.link.call(read, what="reproducer pull")
        if not h or b"entry" not in h:
            return None
        entry = json.loads(h[b"entry"])
        entry["count"] = int(h.get(b"count", 1))
        entry["owner"] = h.get(b"owner", b"").decode()
        for k in (b"first_seen", b"last_seen"):
            if k in h:
                entry[k.decode()] = float(h[k])
        entry["hits"] = {k.decode(): int(v) for k, v in hits.items()}
        return entry, json.loads(h[b"files"])


class FleetReproWriter:
    """A :class:`~pytest_mlirtrace._internal.repro.ReproWriter` whose signatures are shared with the fleet (the same
    ``write`` / ``write_all`` / ``index`` / ``paths`` / ``dir``): see the module's docstring."""

    def __init__(self, repro_dir, link, outbox, machine: str | None = None):
        self.local = ReproWriter(repro_dir)
        self.dir = self.local.dir
        self.link, self.outbox = link, outbox
        self.fleet = FleetRepros(link, machine)

    def index(self) -> list[dict]:
        return self.local.index()

    @property
    def index_path(self) -> Path:
        return self.local.index_path

    def paths(self, sig: str):
        return self.local.paths(sig)

    def remove(self, signatures) -> None:
        self.local.remove(signatures)

    def write_all(self, recs, passed=()) -> list[WrittenRepro]:
        return write_grouped(self, recs, passed)

    def write(self, rec, also=(), passed=()) -> WrittenRepro:
        sig = signature(rec)
        hit = f"{self.fleet.machine} | {device_key(rec)}"
        try:
            won, count, _ = self.fleet.claim(sig, None, None, hit)
            if won == -1:
                # new to the fleet: written aside first (payload, ticket), then claimed with its files in one step
                with tempfile.TemporaryDirectory(prefix="mlirtrace-stage-") as stage:
                    staged = ReproWriter(stage)
                    staged.write(rec, also=also, passed=passed)
                    entry, files = staged.files_of(sig)
                entry["origins"] = entry.get("origins", [])[-10:]
                won, count, _ = self.fleet.claim(sig, entry, files, hit)
                if won == 1:
                    entry["count"] = count
                    entry["hits"] = {hit: 1}
                    return self.local.adopt(entry, files)
        except Unreachable:
            w = self.local.write(rec, also=also, passed=passed)
            self.outbox.add({"op": "repro", "sig": sig, "dir": str(self.dir), "hit": hit, "n": 1})
            return w
        # known fleet-wide: an occurrence; the local copy (the owner's, or pulled) follows the count
        script, ticket = self.local.paths(sig)
        if script.exists():
            self.local.write(rec, also=also, passed=passed)
            self.local.set_count(sig, count)
            return WrittenRepro(sig, script, ticket, False, count)
        return WrittenRepro(sig, script, ticket, False, count, elsewhere=self.link.spec.display())

    def refresh(self) -> None:
        """The fleet's counts and hits into this directory's index and tickets, for each signature it holds
        (the owner's copy follows what the other runners found)."""
        for e in self.local.index():
            got = self.fleet.get(e["signature"])
            if got is not None and (got[0]["count"] != e.get("count") or got[0]["hits"] != e.get("hits")):
                entry = dict(e, count=got[0]["count"], hits=got[0]["hits"])
                _, files = self.local.files_of(e["signature"])
                self.local.adopt(entry, {k: v for k, v in files.items() if k.endswith(".md")})



def pull(link, repro_dir) -> list[WrittenRepro]:
    """Every reproducer and ticket of the fleet into ``repro_dir`` (the fleet's counts and hits)."""
    fleet = FleetRepros(link)
    local = ReproWriter(repro_dir)
    out = []
    for sig in fleet.signatures():
        got = fleet.get(sig)
        if got is not None:
            out.append(local.adopt(*got))
    return out
