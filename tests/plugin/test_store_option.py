"""``--mlir-store redis://...`` from pytest: two runners (two pytest runs, their own reproducer directories,
as two CI machines) fail the same way; one reproducer and ticket fleet-wide, the second runner's report says
another runner wrote it, and the fleet counts both. A real ``redis-server`` (tests/store/conftest.py)."""
from __future__ import annotations

import json

from tests.store.conftest import redis_server, redis_url  # noqa: F401  (fixtures)

pytest_plugins = ["pytester"]

FILE = '''
from mods import DOT_T


def test_wrong(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(DOT_T, seed=1)
'''


def test_two_runners_one_reproducer_through_the_store(inner, redis_url, monkeypatch):  # noqa: F811
    import redis

    inner.makepyfile(test_a=FILE)
    monkeypatch.setenv("MLIRTRACE_MACHINE", "runner-a")
    a = inner.runpytest_subprocess("-p", "no:cacheprovider", "--mlir-store", redis_url, "--mlir-repro-dir", "ra")
    a.assert_outcomes(failed=1)
    assert f"(one per signature fleet-wide: {redis_url})" in a.stdout.str()
    monkeypatch.setenv("MLIRTRACE_MACHINE", "runner-b")
    b = inner.runpytest_subprocess("-p", "no:cacheprovider", "--mlir-store", redis_url, "--mlir-repro-dir", "rb")
    b.assert_outcomes(failed=1)
    out = b.stdout.str()
    assert "written by another runner (2 occurrences fleet-wide)" in out
    assert "mlirtrace repro pull DIR --store" in out and "Traceback" not in out
    assert len(list((inner.path / "ra").glob("*.py"))) == 1 and not list((inner.path / "rb").glob("*.py"))
    sig = list((inner.path / "ra").glob("*.py"))[0].stem
    r = redis.Redis.from_url(redis_url)
    assert int(r.hget(f"mlirtrace:repro:{sig}", "count")) == 2
    hits = {k.decode().split(" |")[0] for k in r.hkeys(f"mlirtrace:repro:{sig}:hits")}
    assert hits == {"runner-a", "runner-b"}
    # runner-a's copy follows the fleet when it runs again
    monkeypatch.setenv("MLIRTRACE_MACHINE", "runner-a")
    inner.runpytest_subprocess("-p", "no:cacheprovider", "--mlir-store", redis_url, "--mlir-repro-dir", "ra")
    idx = json.loads((inner.path / "ra" / "INDEX.json").read_text())["reproducers"][sig]
    assert idx["count"] == 3 and set(k.split(" |")[0] for k in idx["hits"]) == {"runner-a", "runner-b"}


def test_an_unreachable_store_warns_once_and_the_run_goes_on(inner):
    from tests.store.conftest import free_port

    inner.makepyfile(test_a=FILE)
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "--mlir-store", f"redis://127.0.0.1:{free_port()}/0",
                                     "--mlir-repro-dir", "r", "-W", "default")
    res.assert_outcomes(failed=1)
    out = res.stdout.str() + res.stderr.str()
    assert out.count("StoreWarning: mlirtrace: warning: the store") == 1 and "Traceback" not in out
    assert "could not push 1 item(s)" in out                      # and says what it kept, and where
    assert len(list((inner.path / "r").glob("*.py"))) == 1       # written locally meanwhile
