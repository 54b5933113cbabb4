"""The worker process's server: start-up (OpenCL environment, device, context, kernel cache), the request loop.

Protocol: pickled messages over :class:`multiprocessing.connection.Connection` objects on the worker's stdin
(requests) and a private duplicate of its original stdout (replies), while file descriptor 1 itself is
redirected to stderr (so ``printf`` in kernels cannot corrupt the stream). The first reply is ``ready`` (or
``fatal``: the device or the environment); each request (``build``, ``build_batch``, ``run``, ``forget``,
``ping``) gets one ``result``, a run first ``built`` and, where the driver compiles at the first launch,
``launched``. The jobs themselves: :mod:`.worker_programs` (builds), :mod:`.worker_runs` (runs).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from multiprocessing.connection import Connection

from ..config import environment
from ..vocab.status import Status
from . import device as devmod
from .job import REPLY_ENVIRONMENT, REPLY_NEED_INPUTS
from .opencl_env import pocl_cache, prepare
from .worker_programs import DeviceContext, Programs
from .worker_runs import Runs

__all__ = ["main", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 3
WARMUP_SOURCE = "__kernel void mlirtrace_warmup(__global int *p) { p[0] = 1; }"


def _setup_env():
    """pyopencl, imported once the OpenCL environment is right (see :mod:`.opencl_env`)."""
    # mlirtrace owns the kernel cache (PoCL's, see opencl_env/pocl_cache.py): pyopencl's own binary cache must
    # not answer a build instead of the driver (it is read at pyopencl's import)
    os.environ["PYOPENCL_NO_CACHE"] = "1"
    # import pyopencl first: its import resets PYOPENCL_HOME, which
    # ensure_opencl_env() must override afterwards
    import pyopencl as cl
    # build logs are returned to the parent; no CompilerWarning noise on stderr
    warnings.filterwarnings("ignore", category=getattr(cl, "CompilerWarning", UserWarning))
    prepare.ensure_opencl_env()
    return cl


def main_list() -> int:
    """``--list``: every device, as JSON after :data:`.device.DEVICE_LIST_LINE` on stdout."""
    try:
        cl = _setup_env()
        payload = {"devices": [d for d, _ in devmod.enumerate_cl_devices(cl)]}
    except Exception as e:  # report, don't traceback
        payload = {"error": f"{type(e).__name__}: {e}", "devices": []}
    sys.stdout.write(devmod.DEVICE_LIST_LINE + json.dumps(payload) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip driver teardown


class _Server:
    def __init__(self, out: Connection, inp: Connection, spec: str):
        self.out = out
        self.inp = inp
        self.spec = spec
        self.dc: DeviceContext | None = None
        self.programs: Programs | None = None
        self.runs: Runs | None = None

    def send(self, obj) -> None:
        self.out.send(obj)

    def start(self) -> bool:
        t0 = time.perf_counter()
        try:
            cl = _setup_env()
            # PoCL's on-disk cache: a shard of mlirtrace's own directory, set before PoCL starts
            shard = pocl_cache.claim_worker_shard()
            found = devmod.enumerate_cl_devices(cl)
            infos = [devmod.DeviceInfo.from_dict(d) for d, _ in found]
            try:
                chosen = devmod.match_spec(infos, self.spec)
            except devmod.DeviceError as e:
                self.send({"op": "fatal", "kind": "device", "error": str(e),
                           "devices": [d for d, _ in found]})
                return False
            dev = next(d for info, d in found if info["spec"] == chosen.spec)
            self.dc = DeviceContext(cl, dev, shard)
            self.programs = Programs(self.dc)
            self.runs = Runs(self.dc, self.programs, self.send)
        except Exception as e:
            self.send({"op": "fatal", "kind": "init",
                       "error": f"worker init failed: {type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()})
            return False
        self.send({"op": "ready", "pid": os.getpid(), "device": chosen.to_dict(),
                   "devices": [d for d, _ in found], "fix": prepare.fix_state(),
                   "startup_s": time.perf_counter() - t0, "protocol": PROTOCOL_VERSION,
                   "kernel_cache": shard.path if shard else None})
        return True

    def warm_up(self) -> None:
        """The first build in a process pays ~0.5 s of clang/LLVM start-up
        (even on a PoCL cache hit); pay it now, while the parent is not
        waiting yet (requests queue up in the pipe meanwhile)."""
        if os.environ.get(environment.WORKER_WARMUP, "1") in ("0", ""):
            return
        assert self.dc is not None
        try:
            self.dc.cl.Program(self.dc.ctx, WARMUP_SOURCE).build(devices=[self.dc.dev])
        except Exception:
            pass

    def op_forget(self, m: dict) -> dict:
        """The parent judged a program's results wrong: drop it, and what it left in the kernel
        cache, so that the next run of it starts cold, as the first did."""
        assert self.dc is not None and self.programs is not None and self.runs is not None
        self.programs.forget(m["key"])
        self.runs.drop_inputs()      # nothing of that run is kept: its inputs are sent again
        removed = self.dc.shard.forget(m["key"]) if self.dc.shard is not None else 0
        return {"op": "result", "status": Status.OK, "removed": removed}

    def handle(self, m: dict) -> dict:
        """The reply to request ``m``; a build or run that failed loses what it wrote to the kernel cache."""
        assert self.dc is not None and self.programs is not None and self.runs is not None
        op = m.get("op")
        journal = self.dc.shard is not None and op in ("build", "run")
        if journal:
            self.dc.begin(m["key"])
        r: dict = {"op": "result", "status": Status.LAUNCH_ERROR}
        try:
            if op == "build":
                r = self.programs.op_build(m)
            elif op == "build_batch":
                r = self.programs.op_build_batch(m)
            elif op == "run":
                r = self.runs.op_run(m)
            elif op == "ping":
                r = {"op": "result", "status": Status.OK, "pid": os.getpid()}
            elif op == "forget":
                r = self.op_forget(m)
            else:
                r = {"op": "result", "status": Status.LAUNCH_ERROR, "error": f"unknown op {op!r}"}
        except (ImportError, MemoryError) as e:   # the environment, not a kernel: nothing to judge
            r = {"op": "result", "status": REPLY_ENVIRONMENT, "error": f"{type(e).__name__}: {e}"}
        except Exception as e:
            r = {"op": "result", "status": Status.LAUNCH_ERROR,
                 "error": f"worker error: {type(e).__name__}: {e}",
                 "traceback": traceback.format_exc()}
        finally:
            if journal:
                failed = r.get("status") not in (Status.OK, REPLY_NEED_INPUTS)
                if failed:
                    self.programs.forget(m["key"])
                self.dc.end(ok=not failed)
        return r

    def loop(self) -> None:
        while True:
            try:
                m = self.inp.recv()
            except (EOFError, OSError):   # the parent closed the pipe (or died)
                return
            if m.get("op") == "exit":
                return
            r = self.handle(m)
            r["id"] = m.get("id")
            self.send(r)


def _watch_parent(ppid: int) -> None:
    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != ppid:
                os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def main_serve(spec: str) -> int:
    """``--serve SPEC``: serve requests on the device ``SPEC`` until the parent closes the pipe."""
    out = Connection(os.dup(1), readable=False)   # replies: a private copy of the original stdout
    os.dup2(2, 1)            # C-level stdout of kernels/drivers -> stderr
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's business
    _watch_parent(os.getppid())
    srv = _Server(out, Connection(0, writable=False), spec)
    if srv.start():
        srv.warm_up()
        srv.loop()
    sys.stderr.flush()
    os._exit(0)


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "--list":
        return main_list()
    if len(argv) >= 2 and argv[0] == "--serve":
        return main_serve(argv[1])
    sys.stderr.write("usage: worker.py --list | --serve SPEC\n")
    return 2
