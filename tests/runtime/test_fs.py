"""pytest_mlirtrace._internal.fs: atomic writes, the inter-process lock, the cache directory (and its users)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_mlirtrace._internal import fs
from pytest_mlirtrace._internal.config import environment, resolve
from pytest_mlirtrace._internal.engine import database
from pytest_mlirtrace._internal.repro import files as repro_files
from pytest_mlirtrace._internal.runtime import bench_lock, opencl_env

ROOT = str(Path(__file__).resolve().parents[2])


def _spawn(code: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(procs, timeout=120):
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err
    return procs


# ------------------------------------------------------------ atomic_write ---

def test_atomic_write_text_bytes_mode_and_no_leftovers(tmp_path):
    p = tmp_path / "sub" / "dir" / "f.txt"
    assert fs.atomic_write(p, "héllo\n") == p
    assert p.read_text(encoding="utf-8") == "héllo\n"
    fs.atomic_write(str(p), b"\x00\x01", 0o755)
    assert p.read_bytes() == b"\x00\x01"
    assert p.stat().st_mode & 0o777 == 0o755
    fs.atomic_write(p, "x")
    assert p.stat().st_mode & 0o777 == 0o644
    assert sorted(os.listdir(p.parent)) == ["f.txt"]          # no temporary file left behind


def test_atomic_write_failure_keeps_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "f"
    fs.atomic_write(p, "old")

    def boom(_src, _dst):
        raise OSError("planted")
    monkeypatch.setattr(fs.os, "replace", boom)
    with pytest.raises(OSError, match="planted"):
        fs.atomic_write(p, "new")
    assert p.read_text() == "old" and os.listdir(tmp_path) == ["f"]


_REWRITER = """
import sys
from pytest_mlirtrace._internal import fs
path, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    c = "abcdefgh"[i % 8]
    fs.atomic_write(path, c * (1 << 20) + "\\n")     # 1 MiB: many write() calls, were it in place
"""


def test_a_reader_never_sees_a_partial_file(tmp_path):
    p = tmp_path / "big.txt"
    fs.atomic_write(p, "z" * (1 << 20) + "\n")
    writer = _spawn(_REWRITER, str(p), "150")
    reads = 0
    while writer.poll() is None:
        data = p.read_text()
        assert len(data) == (1 << 20) + 1 and data.endswith("\n")
        assert data.count(data[0]) == 1 << 20, "a mix of two versions"
        reads += 1
    _finish([writer])
    assert reads > 0
    assert sorted(os.listdir(tmp_path)) == ["big.txt"]


# ------------------------------------------------------------------ locked ---

_INCREMENTER = """
import json, sys
from pytest_mlirtrace._internal import fs
path, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    with fs.locked(path + ".lock"):
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            data = {"count": 0, "writers": []}
        data["count"] += 1
        data["writers"].append(sys.argv[3])
        fs.atomic_write(path, json.dumps(data))
"""


def test_concurrent_writers_in_several_processes_lose_no_update(tmp_path):
    p = tmp_path / "state" / "counter.json"
    procs, n = 4, 40
    _finish([_spawn(_INCREMENTER, str(p), str(n), f"w{i}") for i in range(procs)])
    data = json.loads(p.read_text())
    assert data["count"] == procs * n
    assert sorted(data["writers"]) == sorted(f"w{i}" for i in range(procs) for _ in range(n))


_HOLDER = """
import sys, time
from pytest_mlirtrace._internal import fs
with fs.locked(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_locked_excludes_another_process_until_released(tmp_path):
    lock = tmp_path / "x" / "a.lock"
    holder = _spawn(_HOLDER, str(lock), "1.5")
    assert holder.stdout.readline().strip() == "held"
    t0 = time.monotonic()
    with fs.locked(lock) as got:
        waited = time.monotonic() - t0
    _finish([holder])
    assert got == lock and waited > 0.5, waited


def test_repro_files_reexports_fs():
    assert repro_files.atomic_write is fs.atomic_write and repro_files.locked is fs.locked


# --------------------------------------------------------------- cache_dir ---

def test_cache_dir_env_override(tmp_path, monkeypatch):
    d = tmp_path / "my" / "cache"
    monkeypatch.setenv(fs.ENV_CACHE_DIR, str(d))
    assert fs.cache_dir() == str(d) and d.is_dir()
    # both users resolve it the same way
    assert opencl_env.cache_dir() == str(d) and environment.CACHE_DIR == fs.ENV_CACHE_DIR
    monkeypatch.delenv(environment.TUNING_DB, raising=False)
    assert database.default_path(resolve().tuning_db) == d / "tuning.json"
    assert database.TuningDatabase(resolve().tuning_db).path == d / "tuning.json"
    # the setting (resolved once by a front end, here from the environment) is passed down
    monkeypatch.setenv(environment.TUNING_DB, str(tmp_path / "db.json"))
    assert database.default_path(resolve().tuning_db) == tmp_path / "db.json"
    assert database.default_path() == d / "tuning.json"     # the engine reads no setting itself


def test_cache_dir_default_is_the_user_cache_dir(tmp_path, monkeypatch):
    monkeypatch.delenv(fs.ENV_CACHE_DIR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    import platformdirs
    assert fs.cache_dir() == platformdirs.user_cache_dir("mlirtrace", appauthor=False)
    if sys.platform.startswith("linux"):
        assert fs.cache_dir() == str(tmp_path / "xdg" / "mlirtrace")


def test_cache_dir_falls_back_to_the_temp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    fallback = str(tmp_path / "tmp" / f"mlirtrace-{os.getuid()}")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv(fs.ENV_CACHE_DIR, str(not_a_dir / "cache"))      # cannot be created
    assert fs.cache_dir() == fallback and os.path.isdir(fallback)
    monkeypatch.delenv(environment.TUNING_DB, raising=False)
    assert database.default_path() == Path(fallback) / "tuning.json"
    # exists but not writable (os.access says so: root may write anywhere)
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    monkeypatch.setattr(fs.os, "access",
                        lambda p, m, **kw: False if str(p) == str(ro) else real_access(p, m, **kw))
    monkeypatch.setenv(fs.ENV_CACHE_DIR, str(ro))
    assert fs.cache_dir() == fallback == opencl_env.cache_dir()


# -------------------------------------------------------- the bench lock ---

_TRY_LOCK = """
import sys, filelock
try:
    with filelock.FileLock(sys.argv[1], timeout=0.2):
        print("free")
except filelock.Timeout:
    print("busy")
"""


def test_bench_guard_holds_a_file_lock_in_the_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(fs.ENV_CACHE_DIR, str(tmp_path))
    monkeypatch.delenv(environment.NO_BENCH_LOCK, raising=False)
    lock = tmp_path / "locks" / "bench-some-device.lock"

    def probe():
        p = _spawn(_TRY_LOCK, str(lock))
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        return out.strip()

    with bench_lock.bench_guard("some-device"):
        assert lock.exists() and probe() == "busy"
    assert probe() == "free"
    monkeypatch.setenv(environment.NO_BENCH_LOCK, "1")
    with bench_lock.bench_guard("some-device"):
        assert probe() == "free"
