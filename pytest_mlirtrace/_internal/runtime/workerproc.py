"""One OpenCL worker process seen from the parent: started, spoken to over two pipes
(``multiprocessing.connection``), its stderr drained all the time, killed and reaped.

A reply that does not start by a deadline raises :class:`Timeout` (hung); end of file raises
:class:`Dead` (crashed or exited). :mod:`.pool` turns both into job results.
"""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection

from .device import WORKER_SCRIPT

__all__ = ["WorkerProc", "Timeout", "Dead", "signal_name"]

STDERR_TAIL_BYTES = 64 * 1024


class Timeout(Exception):
    pass


class Dead(Exception):
    pass


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


# ----------------------------------------------------------- one worker ---

class WorkerProc:
    _serials = itertools.count(1)

    def __init__(self, spec: str, env: dict):
        self.serial = next(self._serials)
        self.spec = spec
        # requests go down the worker's stdin, replies come back on its stdout: one Connection each
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, WORKER_SCRIPT, "--serve", spec],
                stdin=req_r, stdout=rep_w, stderr=subprocess.PIPE,
                bufsize=0, env=env, close_fds=True)
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.pid = self.proc.pid
        self.tx = Connection(req_w, readable=False)
        self.rx = Connection(rep_r, writable=False)
        self._tail = bytearray()
        self._tail_lock = threading.Lock()
        self._err = threading.Thread(target=self._drain_stderr, daemon=True,
                                     name=f"mlirtrace-worker-{self.pid}-stderr")
        self._err.start()
        self.ready: dict | None = None
        self.fatal: dict | None = None
        self.started = time.monotonic()

    # stderr is drained all the time so that a chatty worker never blocks
    def _drain_stderr(self):
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with self._tail_lock:
                self._tail += chunk
                if len(self._tail) > STDERR_TAIL_BYTES:
                    del self._tail[:-STDERR_TAIL_BYTES]

    def clear_tail(self):
        with self._tail_lock:
            self._tail.clear()

    def stderr_tail(self, nbytes: int = 6000, wait_eof: float = 0.0) -> str:
        if wait_eof:
            self._err.join(wait_eof)
        with self._tail_lock:
            data = bytes(self._tail[-nbytes:])
        return data.decode("utf-8", "replace").strip()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, obj) -> None:
        try:
            self.tx.send(obj)
        except (OSError, ValueError) as e:   # broken pipe: the worker is gone; closed here
            raise Dead(str(e)) from e

    def recv(self, deadline: float | None):
        """The next message; Timeout when none has started to arrive by *deadline* (hung),
        Dead at end of file (the worker died)."""
        try:
            if deadline is not None and not self.rx.poll(max(0.0, deadline - time.monotonic())):
                raise Timeout
            return self.rx.recv()
        except (EOFError, OSError, ValueError) as e:
            raise Dead(str(e) or "EOF") from e

    def wait_ready(self, timeout: float) -> dict:
        """The worker's ready message; raises Dead/Timeout, or returns a fatal."""
        if self.ready is not None:
            return self.ready
        if self.fatal is not None:
            return self.fatal
        m = self.recv(time.monotonic() + timeout)
        if m.get("op") == "ready":
            self.ready = m
        else:
            self.fatal = m
        return m

    def kill(self, grace: float = 1.0) -> int | None:
        """SIGTERM, then SIGKILL after *grace* seconds; reap; return the exit code."""
        p = self.proc
        if p.poll() is None:
            try:
                p.terminate()
            except OSError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    p.kill()
                except OSError:
                    pass
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            pass
        self._close_pipes()
        return p.returncode

    def shutdown(self, grace: float = 1.0) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"op": "exit"})
                self.tx.close()
            except (Dead, OSError):
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill(grace=0.5)

    def _close_pipes(self):
        for c in (self.tx, self.rx):
            try:
                c.close()
            except OSError:
                pass
        self._err.join(2.0)
        try:
            if self.proc.stderr is not None:
                self.proc.stderr.close()
        except OSError:
            pass
