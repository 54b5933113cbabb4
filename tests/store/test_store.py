"""The store (issue 17) against a real ``redis-server``: the setting, the fleet's reproducer registry (one
reproducer and ticket per signature, claimed atomically, counts and hits summed), the shared example
database, the shared tuning database, ``repro pull``, and an unreachable Redis (one warning, work goes on
locally, pushed once it is back). No OpenCL here: records are made by hand, as in tests/repro."""
from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.config import SettingError, resolve
from pytest_mlirtrace._internal.repro import ReproWriter, signature
from pytest_mlirtrace._internal.store import Store, parse_store
from pytest_mlirtrace._internal.store.repros import FleetRepros
from tests.repro.test_writer import record, span
from tests.store.conftest import free_port

MLIR2 = span().mlir_text.replace("migraphx.add", "migraphx.sub")


def _store(url, tmp_path, said=None, **kw):
    return Store(parse_store(url), outbox_path=tmp_path / "outbox.jsonl",
                 say=(said.append if said is not None else (lambda _m: None)), **kw)


# ---- the setting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kind", [("redis://127.0.0.1:6379/0", "redis"), ("rediss://h:6380/2", "redis"),
                                        ("unix:///run/redis.sock", "redis"), (".mlirtrace/store", "dir")])
def test_store_setting_forms(text, kind):
    assert parse_store(text).kind == kind


@pytest.mark.parametrize("text, words", [("http://h:1/0", "unknown store scheme 'http'"),
                                         ("redis://h:99999/0", "bad port"), ("redis://h:1/x", "not a number"),
                                         ("redis:///0", "no host")])
def test_a_bad_store_names_where_it_came_from(text, words):
    with pytest.raises(SettingError) as e:
        resolve({"store": text}, option_names={"store": "--store"}, env={})
    assert str(e.value).startswith(f"--store={text}: ") and words in str(e.value)
    with pytest.raises(SettingError, match=f"^MLIRTRACE_STORE={text}: "):
        resolve(env={"MLIRTRACE_STORE": text})
    with pytest.raises(SettingError, match=f"^mlir_store = {text} in pytest.ini: "):
        resolve(env={}, ini={"store": text}, ini_names={"store": "mlir_store"}, ini_file="pytest.ini")


def test_a_password_is_not_shown():
    assert parse_store("redis://u:secret@h:1/0").display() == "redis://u:***@h:1/0"


# ---- reproducers -------------------------------------------------------------------------------------
def _claim_in_process(url, barrier, sig, out, i):
    from pytest_mlirtrace._internal.store.link import RedisLink
    link = RedisLink(parse_store(url))
    barrier.wait()
    won, count, owner = FleetRepros(link).claim(sig, {"signature": sig, "script": f"{sig}.py"},
                                                 {f"{sig}.py": f"# by {i}\n"}, f"m{i} | dev")
    out.put((i, won, count))


def test_claims_from_processes_in_the_same_instant_make_one_owner(redis_url):
    """Eight processes claim one signature at a barrier: exactly one owns it, the count is eight, every hit
    is kept, and the stored files are the owner's."""
    ctx = multiprocessing.get_context("fork")
    barrier, out, sig = ctx.Barrier(8), ctx.Queue(), "wrong-f-0123abcd"
    procs = [ctx.Process(target=_claim_in_process, args=(redis_url, barrier, sig, out, i)) for i in range(8)]
    for p in procs:
        p.start()
    got = [out.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(10)
    winners = [i for i, won, _ in got if won == 1]
    assert len(winners) == 1 and sorted(c for *_, c in got) == list(range(1, 9))
    from pytest_mlirtrace._internal.store.link import RedisLink
    entry, files = FleetRepros(RedisLink(parse_store(redis_url))).get(sig)
    assert entry["count"] == 8 and len(entry["hits"]) == 8
    assert files == {f"{sig}.py": f"# by {winners[0]}\n"}


def test_one_reproducer_fleet_wide_and_pull_brings_it_with_the_fleets_count(redis_url, tmp_path):
    a = _store(redis_url, tmp_path / "a").repro_writer(tmp_path / "a")
    b = _store(redis_url, tmp_path / "b").repro_writer(tmp_path / "b")
    w1 = a.write(record(origin="runner-a::t"))
    w2 = b.write(record(origin="runner-b::t"))
    w3 = b.write(record(origin="runner-b::t2"))
    assert w1.new and not w2.new and not w3.new and w3.count == 3
    assert w1.script_path.exists() and not w2.script_path.exists() and w2.elsewhere
    assert not (tmp_path / "b" / "INDEX.json").exists() or not ReproWriter(tmp_path / "b").index()
    # another signature found by b: b owns that one
    w4 = b.write(record(span=span(mlir=MLIR2), origin="runner-b::t3"))
    assert w4.new and w4.script_path.exists()

    out = tmp_path / "laptop"
    r = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "repro", "pull", str(out),
                        "--store", redis_url],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "2 reproducer(s) pulled" in r.stdout
    idx = {e["signature"]: e for e in ReproWriter(out).index()}
    assert set(idx) == {w1.signature, w4.signature}
    assert idx[w1.signature]["count"] == 3 and sum(idx[w1.signature]["hits"].values()) == 3
    ticket = (out / f"{w1.signature}.md").read_text()
    assert "**Occurrences:** 3" in ticket and "hit on:" in ticket
    assert (out / f"{w1.signature}.py").read_text() == w1.script_path.read_text()


def test_pull_refuses_a_local_store_and_says_so(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "repro", "pull", str(tmp_path / "x")],
                       capture_output=True, text=True, timeout=60, env={**__import__("os").environ,
                                                                          "MLIRTRACE_STORE": ""})
    assert r.returncode == 2 and "--store redis://" in r.stderr and "Traceback" not in r.stderr


def test_adopt_refuses_file_names_that_leave_the_directory(tmp_path):
    with pytest.raises(ValueError, match="refusing the file name"):
        ReproWriter(tmp_path).adopt({"signature": "wrong-x-1"}, {"../evil.py": "x"})


# ---- examples ---------------------------------------------------------------------------------------
def test_examples_saved_by_one_runner_are_replayed_by_another(redis_url, tmp_path):
    what = ("gemm", "f32")
    a = _store(redis_url, tmp_path / "a").example_database(str(tmp_path / "a" / "db"), what)
    b = _store(redis_url, tmp_path / "b").example_database(str(tmp_path / "b" / "db"), what)
    other = _store(redis_url, tmp_path / "c").example_database(str(tmp_path / "c" / "db"), ("softmax",))
    a.save(b"test", b"\x01failing")
    assert list(b.fetch(b"test")) == [b"\x01failing"]
    assert list(other.fetch(b"test")) == []            # another kind of search: its own keys
    b.delete(b"test", b"\x01failing")                   # shrunk away on b: gone fleet-wide (a's local copy stays)
    assert list(_store(redis_url, tmp_path / "d").example_database(None, what).fetch(b"test")) == []


# ---- tuning -----------------------------------------------------------------------------------------
def test_a_result_tuned_on_one_runner_is_every_runners(redis_url, tmp_path):
    a = _store(redis_url, tmp_path / "a").tuning_database(tmp_path / "a" / "tuning.json")
    b = _store(redis_url, tmp_path / "b").tuning_database(tmp_path / "b" / "tuning.json")
    a.store("pocl-cpu 2 -t f32 -m 4", "pocl-cpu", "8,8,1", 2.0)
    assert b.lookup("pocl-cpu 2 -t f32 -m 4", "pocl-cpu")["solution"] == "8,8,1"
    b.store("pocl-cpu 2 -t f32 -m 4", "pocl-cpu", "4,4,1", 3.0)      # slower: the fleet keeps the faster
    assert a.lookup("pocl-cpu 2 -t f32 -m 4", "pocl-cpu")["solution"] == "8,8,1"
    b.store("pocl-cpu 2 -t f32 -m 4", "pocl-cpu", "16,4,1", 1.0)
    assert a.lookup("pocl-cpu 2 -t f32 -m 4", "pocl-cpu")["solution"] == "16,4,1"
    assert b.lookup("pocl-cpu 2 -t f32 -m 4", "1:0")["solution"] == "16,4,1"   # another runner's spec, one device key
    assert a.lookup("nvidia-h200 132 -t f32 -m 4", "0:0") is None              # keyed by the device key
    keys = [k.decode() for k in __import__("redis").Redis.from_url(redis_url).hkeys("mlirtrace:tuning")]
    from pytest_mlirtrace import __version__
    assert keys == [f"{__version__}|pocl-cpu|pocl-cpu 2 -t f32 -m 4"]


# ---- Redis unreachable --------------------------------------------------------------------------------
def test_unreachable_at_start_goes_on_locally_with_one_warning_and_says_what_it_kept(tmp_path):
    said: list[str] = []
    s = _store(f"redis://127.0.0.1:{free_port()}/0", tmp_path, said, timeout_s=0.5)
    w = s.repro_writer(tmp_path / "r")
    first = w.write(record())
    second = w.write(record(origin="t.py::b"))
    db = s.example_database(str(tmp_path / "db"), ("x",))
    db.save(b"k", b"v")
    assert list(db.fetch(b"k")) == [b"v"]                  # the local half still answers
    assert first.new and first.script_path.exists() and second.count == 2
    assert len([m for m in said if "unreachable" in m]) == 1
    left = s.close()
    assert left == 3 and "could not push 3 item(s)" in said[-1] and str(tmp_path / "outbox.jsonl") in said[-1]


def test_an_outage_mid_run_loses_nothing(redis_server, redis_url, tmp_path):
    """Redis stops while a runner works: it goes on locally (one warning); when Redis is back the outbox
    pushes the reproducer (claimed, files stored), the examples and the tuning result."""
    said: list[str] = []
    s = _store(redis_url, tmp_path, said, timeout_s=0.5, retry_s=0.2)
    w = s.repro_writer(tmp_path / "r")
    db = s.example_database(str(tmp_path / "db"), ("x",))
    tdb = s.tuning_database(tmp_path / "tuning.json")
    db.save(b"k", b"before")
    redis_server.stop()
    try:
        rec = record()
        assert w.write(rec).new
        db.save(b"k", b"during")
        tdb.store("key", "dev", "4,4,1", 1.5)
        assert len(s.outbox) == 3
    finally:
        redis_server.start()
    import time
    time.sleep(0.3)
    assert s.link.ping()                                   # back: the outbox is pushed
    assert len(s.outbox) == 0
    assert any("reachable again" in m for m in said) and any("pushed 3 item(s)" in m for m in said)
    fresh = _store(redis_url, tmp_path / "fresh")
    assert sorted(fresh.example_database(None, ("x",)).fetch(b"k")) == [b"before", b"during"]
    got = FleetRepros(fresh.link).get(signature(rec))
    assert got is not None and got[0]["count"] == 1 and f"{signature(rec)}.py" in got[1]
    assert fresh.tuning_database(tmp_path / "t2.json").lookup("key", "dev")["solution"] == "4,4,1"
    assert s.close() == 0
