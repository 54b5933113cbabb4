"""A pool of persistent OpenCL worker processes.

Each worker (``worker.py --serve``) owns one context + profiling queue on the
pool's device and keeps the programs it built.  A segfault in a kernel, an
endless kernel, or a compiler crash only costs that worker: the job gets a
``crash``/``hang`` result and the worker is replaced.

* :meth:`WorkerPool.build` builds jobs in parallel across the workers and
  remembers which worker holds which program.
* :meth:`WorkerPool.run` launches a job (on the worker that built it when
  possible).  Timed runs (``warmup > 0`` or ``repeats > 1``, or
  ``exclusive=True``) hold a per-device lock, in-process and across processes
  (a file lock, so pytest-xdist workers don't benchmark on the same cores at
  the same time: :mod:`.bench_lock`); builds and untimed runs may overlap.

The workers' places: :mod:`.pool_slots`; how a run's arrays reach a worker (inputs it holds left out, big
arrays through shared memory): :mod:`.transport`; one worker process seen from here: :mod:`.workerproc`.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import subprocess
import threading
import time
import weakref
from collections import deque
from concurrent.futures import Future

from ..config import environment
from ..vocab.status import Status
from .bench_lock import bench_guard
from .device import (
    WORKER_SCRIPT,
    DeviceError,
    DeviceInfo,
    EnvironmentFailure,
    default_device_spec,
    known_devices,
    match_spec,
    remember_devices,
)
from .job import REPLY_ENVIRONMENT, REPLY_NEED_INPUTS, JobResult, KernelJob
from .opencl_env import ensure_opencl_env
from .pool_slots import Slot, shutdown_slots
from .transport import SHM_MIN_BYTES, SharedMemory, every_array, inputs_sent, lean_message
from .workerproc import Dead, Timeout, WorkerProc, signal_name

__all__ = ["WorkerPool", "get_pool", "close_all_pools", "WORKER_SCRIPT", "BUILD_BATCH_CPU", "SHM_MIN_BYTES"]

# on a CPU device (PoCL) a worker builds up to this many kernels of one request as one program: PoCL parses its
# OpenCL headers once per program, ~0.09 s of the ~0.1 s a small kernel takes to build (kbatch.py)
BUILD_BATCH_CPU = 8


# ------------------------------------------------------------------ pool ---

class WorkerPool:
    """Persistent OpenCL worker processes for one device.

    ``device``: a :class:`DeviceInfo`, a device spec string, or None
    (``pocl-cpu``).  ``timeout_s``: per request
    phase (build, run) before the worker is declared hung and killed.
    """

    def __init__(self, device: DeviceInfo | str | None = None, workers: int | None = None,
                 timeout_s: float = 30.0, *, startup_timeout_s: float = 120.0,
                 kill_grace_s: float = 1.0, build_batch: int | None = None):
        if workers is None:
            workers = min(2, os.cpu_count() or 1)
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.timeout_s = float(timeout_s)
        self.startup_timeout_s = float(startup_timeout_s)
        self.kill_grace_s = float(kill_grace_s)
        self._pid = os.getpid()
        self._closed = False
        self._lock = threading.Lock()
        self._where: dict[str, tuple[int, int]] = {}   # program key -> (slot, serial)
        self._builds: dict[str, JobResult] = {}        # program key -> build result
        self._rr = itertools.count()
        self.stats = {"spawned": 0, "crashes": 0, "hangs": 0}
        # workers keep the inputs they were sent (see InBuf); False: every run sends its arrays (a benchmark's
        # "before": benchmarks/bench_tune.py)
        self.keep_inputs = True
        self.shm_min_bytes: int | None = SHM_MIN_BYTES      # None: every array down the pipe
        self._shm = SharedMemory()                          # its files: made on first use, removed at close
        # kernels a worker builds as one program (a build request's jobs, in groups; see kbatch.py): None, the
        # device's default (BUILD_BATCH_CPU on a CPU device, 1 elsewhere); 1: each kernel its own program
        if build_batch is not None and (isinstance(build_batch, bool) or int(build_batch) < 1):
            raise ValueError(f"build_batch must be an integer >= 1, not {build_batch!r}")
        self._build_batch = None if build_batch is None else int(build_batch)

        try:   # prepare once here; every worker applies it again after importing pyopencl
            ensure_opencl_env(import_pyopencl=False)
        except Exception:  # pragma: no cover - the workers will report what is wrong
            pass
        self._env = dict(os.environ)
        # PoCL's CPU device: pin its compute threads one per core. Unpinned, the scheduler now and
        # then runs both on one core and the launch takes twice as long (benchmarks/bench_affinity.py:
        # 5% of launches unpinned, 1% pinned, on a 2-core VM), which can mis-rank solutions while
        # tuning. A value the user set is kept.
        self._env.setdefault("POCL_AFFINITY", "1")

        if isinstance(device, DeviceInfo):
            self.device: DeviceInfo | None = device
            spec = device.spec
        else:
            want = default_device_spec(device)
            self.device = None
            spec = want
            known = known_devices()
            if known is not None:
                self.device = match_spec(known, want)   # raises DeviceError
                spec = self.device.spec
        self._spec = spec
        self._slots = [Slot(i) for i in range(workers)]
        self._finalizer = weakref.finalize(self, shutdown_slots, self._slots)
        for s in self._slots:
            self._spawn(s)
        # wait for the first worker: it resolves the device (or says why not)
        try:
            self._ensure_ready(self._slots[0], raise_device_error=True)
        except BaseException:
            self.close()
            raise

    # --- worker management ---------------------------------------------
    def _spawn(self, slot: Slot) -> WorkerProc:
        # the worker of slot i keeps its kernel cache in shard i where it can (opencl_env.claim_shard): builds go to
        # slots in a fixed order (build_async), so a second process finds each kernel where it left it
        w = WorkerProc(self._spec, {**self._env, environment.KCACHE_SHARD: str(slot.index)})
        slot.worker = w
        self.stats["spawned"] += 1
        return w

    def _ensure_ready(self, slot: Slot, raise_device_error: bool = False) -> WorkerProc:
        """The slot's worker, started and ready.  Raises Dead with a message."""
        w = slot.worker
        if w is None:
            w = self._spawn(slot)
        elif w.ready is not None:
            if w.alive():
                return w
            w.kill(0)           # died while idle
            w = self._spawn(slot)
        try:
            m = w.wait_ready(self.startup_timeout_s)
        except Timeout:
            w.kill(self.kill_grace_s)
            slot.worker = None
            raise Dead(f"worker did not start within {self.startup_timeout_s:.0f} s:\n"
                       + w.stderr_tail()) from None
        except Dead:
            rc = w.kill(0)
            slot.worker = None
            why = (f"killed by signal {-rc} ({signal_name(-rc)})" if rc is not None and rc < 0
                   else f"exited with status {rc}")
            msg = f"worker {why} during startup"
            tail = w.stderr_tail(wait_eof=1.0)
            if raise_device_error:
                raise DeviceError(msg + (":\n" + tail if tail else "")) from None
            raise Dead(msg + (":\n" + tail if tail else "")) from None
        if m.get("op") != "ready":
            w.kill(0)
            slot.worker = None
            if m.get("devices"):
                remember_devices([DeviceInfo.from_dict(d) for d in m["devices"]])
            if raise_device_error or m.get("kind") == "device":
                raise DeviceError(m.get("error", "worker failed to start"))
            raise Dead(m.get("error", "worker failed to start"))
        info = DeviceInfo.from_dict(m["device"])
        if self.device is None:
            self.device = info
            remember_devices([DeviceInfo.from_dict(d) for d in m["devices"]])
        self._spec = self.device.spec     # canonical from now on
        return w

    def _check_open(self):
        if self._closed:
            raise RuntimeError("WorkerPool is closed")
        if os.getpid() != self._pid:
            raise RuntimeError("WorkerPool used in a forked child; create a new pool there")

    @property
    def build_batch(self) -> int:
        """The most kernels one worker builds as one program (:mod:`.kbatch`)."""
        if self._build_batch is not None:
            return self._build_batch
        return BUILD_BATCH_CPU if self.device is not None and self.device.kind == "cpu" else 1

    @property
    def workers(self) -> int:
        return len(self._slots)

    def worker_pids(self) -> list[int]:
        return [s.worker.pid for s in self._slots if s.worker is not None and s.worker.alive()]

    # --- one request ----------------------------------------------------
    def _request(self, slot: Slot, msg: dict, timeout_s: float, what: str,
                 compile_timeout_s: float | None = None) -> dict:
        """Send *msg* to the slot's worker (slot lock held) and return the reply.

        A run's phases have their own limits: the build and the driver's first-launch compile (PoCL
        compiles the work-group function when a kernel first runs) ``compile_timeout_s`` each (None:
        ``timeout_s``), the launches themselves ``timeout_s``.

        Crashes and timeouts come back as reply dicts with status crash/hang.  A worker that cannot
        start (or cannot import what it needs) raises :class:`EnvironmentFailure`: no kernel of ours
        ran, so there is nothing to judge.
        """
        try:
            w = self._ensure_ready(slot)
        except Dead as e:
            raise EnvironmentFailure(f"the OpenCL worker for {self._spec} could not start: {e}") from None
        w.clear_tail()
        phase = _Phase(msg, timeout_s, compile_timeout_s)
        try:
            w.send(msg)
            phase.restart()
            while True:
                r = w.recv(phase.deadline)
                if r.get("op") == "result":
                    return self._answered(slot, w, msg, r)
                phase.advance(r)
        except Timeout:
            return self._hung(slot, w, f"timed out after {phase.limit:.1f} s while {phase.name} {what}, "
                                       f"worker killed")
        except Dead:
            return self._crashed(slot, w, f"while {phase.name} {what}")

    def _answered(self, slot: Slot, w: WorkerProc, msg: dict, r: dict) -> dict:
        """The worker's ``result`` reply to *msg*; a worker whose device faulted is replaced."""
        r["worker_pid"] = w.pid
        r["worker_serial"] = w.serial
        if r.get("status") == REPLY_ENVIRONMENT:
            raise EnvironmentFailure(f"the OpenCL worker for {self._spec} failed: {r.get('error')}")
        if r.get("retire"):
            # device fault (GPU): the worker's context is unusable
            w.kill(self.kill_grace_s)
            self.stats["crashes"] += 1
            self._replace(slot, w)
            r["error"] = (r.get("error") or "device fault") + "; worker replaced"
            return r
        if msg.get("key"):
            self._note_where(msg["key"], slot, w.serial)
        return r

    def _hung(self, slot: Slot, w: WorkerProc, error: str) -> dict:
        """The reply for a request whose worker ran past its limit: the worker killed and replaced."""
        w.kill(self.kill_grace_s)
        tail = w.stderr_tail(wait_eof=0.5)
        self.stats["hangs"] += 1
        self._replace(slot, w)
        return {"status": Status.HANG, "signal": None, "stderr": tail, "worker_pid": w.pid, "error": error}

    def _crashed(self, slot: Slot, w: WorkerProc, during: str) -> dict:
        """The reply for a request whose worker died (``during``: "while <phase> <what>"); it is replaced."""
        try:
            w.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        rc = w.kill(self.kill_grace_s)
        tail = w.stderr_tail(wait_eof=1.0)
        self.stats["crashes"] += 1
        self._replace(slot, w)
        if rc is not None and rc < 0:
            sig = -rc
            err = f"worker killed by signal {sig} ({signal_name(sig)}) {during}"
        else:
            sig = None
            err = f"worker exited with status {rc} {during}"
        return {"status": Status.CRASH, "signal": sig, "stderr": tail, "error": err,
                "worker_pid": w.pid}

    def _note_where(self, key: str, slot: Slot, serial: int) -> None:
        """The worker ``serial`` of ``slot`` now holds ``key``'s program."""
        with self._lock:
            self._where.pop(key, None)
            self._where[key] = (slot.index, serial)
            while len(self._where) > 65536:
                self._where.pop(next(iter(self._where)))

    def _replace(self, slot: Slot, dead: WorkerProc) -> None:
        if slot.worker is dead:
            slot.worker = None
            if not self._closed:
                self._spawn(slot)   # boots in the background

    def _result(self, r: dict, job: KernelJob, wall_s: float) -> JobResult:
        err = r.get("error", "") or ""
        tail = r.get("stderr", "") or ""
        if tail and r.get("status") in (Status.CRASH, Status.HANG):
            err = err + "\n--- worker stderr (tail) ---\n" + tail
        if r.get("traceback"):
            err = err + "\n" + r["traceback"]
        return JobResult(status=Status(r.get("status", Status.CRASH)), outputs=r.get("outputs", []) or [],
                         times_ms=r.get("times_ms", []) or [], build_log=r.get("build_log", ""),
                         error=err, signal=r.get("signal"), build_s=float(r.get("build_s", 0.0)),
                         wall_s=wall_s, stderr=tail, label=job.label, key=job.key,
                         cached=bool(r.get("cached", False)), worker_pid=r.get("worker_pid"),
                         cut=bool(r.get("cut", False)), checked=r.get("checked"),
                         batched=int(r.get("batched", 1) or 1))

    def _pick_slot(self, key: str | None) -> Slot:
        with self._lock:
            loc = self._where.get(key) if key else None
        if loc is not None:
            s = self._slots[loc[0]]
            if s.worker is not None and s.worker.serial == loc[1]:
                return s
        for s in self._slots:
            if not s.lock.locked():
                return s
        return self._slots[next(self._rr) % len(self._slots)]

    # --- public API -----------------------------------------------------
    def build(self, jobs: list[KernelJob], *, timeout_s: float | None = None,
              alone_after_failure: bool = True) -> list[JobResult]:
        """Build all jobs, in parallel across workers.  Results in job order."""
        return [f.result() for f in self.build_async(jobs, timeout_s=timeout_s, wait=True,
                                                     alone_after_failure=alone_after_failure)]

    def build_async(self, jobs: list[KernelJob], *, timeout_s: float | None = None,
                    wait: bool = False, alone_after_failure: bool = True) -> list[Future]:
        """Start building all jobs, in parallel across workers, in job order; one future per job (its
        :class:`JobResult`). A :meth:`run` meanwhile goes before the next build of the worker it needs, so
        that a tune can time the first solutions while the rest build (``wait``: return once all are built).
        ``alone_after_failure``: a group of kernels whose worker crashed or hung while building them as one
        program is built again kernel by kernel (True), or left unbuilt, each future getting the group's result
        (False: a caller that only builds ahead, and builds each kernel again when it runs it, so that a compile
        that hangs costs two limits rather than three)."""
        self._check_open()
        timeout = self.timeout_s if timeout_s is None else float(timeout_s)
        jobs = list(jobs)
        request = _BuildRequest(self, timeout, alone_after_failure)
        todo = request.take(jobs)
        n = min(len(self._slots), len(todo))
        # each worker builds up to ``size`` kernels at a time as one program; a group whose worker crashed or hung
        # is built again kernel by kernel, so that the verdict is each one's. Groups go to the slots in turn, not
        # to whichever is free: the same request builds each kernel on the same slot in every process, whose
        # worker keeps its kernel cache in the same shard (opencl_env.claim_shard), so a second process finds it there
        size = max(1, min(self.build_batch, -(-len(todo) // max(1, n))))
        groups = request.group(todo, size)
        request.queues = [deque(groups[i::n]) for i in range(n)]
        threads = [threading.Thread(target=request.drain, args=(s, q), daemon=True)
                   for s, q in zip(self._slots[:n], request.queues, strict=True)]
        for t in threads:
            t.start()
        if wait:
            for t in threads:
                t.join()
        return [request.labelled(j) for j in jobs]

    def _held(self, key: str) -> bool:
        with self._lock:
            loc = self._where.get(key)
        if loc is None:
            return False
        w = self._slots[loc[0]].worker
        return w is not None and w.serial == loc[1] and w.alive()

    def _remember_build(self, key: str, res: JobResult) -> None:
        with self._lock:
            self._builds[key] = res
            while len(self._builds) > 4096:
                self._builds.pop(next(iter(self._builds)))

    def run(self, job: KernelJob, *, warmup: int = 0, repeats: int = 1,
            timeout_s: float | None = None, exclusive: bool | None = None,
            compile_timeout_s: float | None = None, cutoff_ms: float | None = None,
            cutoff_once_ms: float | None = None, check: list | None = None) -> JobResult:
        """Build (if needed) and launch *job*; outputs are the OutBufs in order.

        ``timeout_s`` limits the launches; a build the worker still has to do and the driver's
        first-launch compile get ``compile_timeout_s`` each (None: ``timeout_s``).

        ``times_ms`` holds one profiling-event time per repeat.  Timed runs
        (warmup/repeats, or ``exclusive=True``) never overlap each other. ``cutoff_ms``: once two
        launches took longer (a warm-up launch counts when 1.5x longer), or one took longer than
        ``cutoff_once_ms``, no more are made (``cut`` set; the outputs are the last launch's).

        Inputs go to a worker once: it keeps them on the device (see :class:`InBuf`), and later runs there
        send only their keys.

        ``check``: :class:`OutCheck` s, outputs to check on the device (see :mod:`.devcheck`); ``checked`` in
        the result says which passed (those are not read back).
        """
        self._check_open()
        timeout = self.timeout_s if timeout_s is None else float(timeout_s)
        timed = (warmup > 0 or repeats > 1) if exclusive is None else bool(exclusive)
        msg = job.to_wire()
        msg.update(op="run", warmup=int(warmup), repeats=int(repeats))
        if cutoff_ms is not None:
            msg["cutoff_ms"] = float(cutoff_ms)
        if cutoff_once_ms is not None:
            msg["cutoff_once_ms"] = float(cutoff_once_ms)
        if check:
            msg["check"] = [c.to_wire() for c in check]
        guard = bench_guard(self._device_key()) if timed else contextlib.nullcontext()
        with guard:
            t0 = time.monotonic()
            slot = self._pick_slot(job.key)
            with self._lock:
                slot.runs_waiting += 1
            try:
                with slot.lock:
                    r = self._request_with_inputs(slot, msg, timeout, job.describe(), compile_timeout_s)
            finally:
                with self._lock:
                    slot.runs_waiting -= 1
            res = self._result(r, job, time.monotonic() - t0)
        if res.status == Status.BUILD_ERROR or (res.status == Status.OK and not res.cached):
            self._remember_build(job.key, JobResult(
                status=res.status, build_log=res.build_log, error=res.error,
                build_s=res.build_s, label=job.label, key=job.key))
        return res

    def _request_with_inputs(self, slot: Slot, msg: dict, timeout_s: float, what: str,
                             compile_timeout_s: float | None) -> dict:
        """A run request (slot lock held) without the inputs its worker holds; sent again with them all
        when the worker had dropped some (see :mod:`.transport`)."""
        if not self.keep_inputs:
            return self._request_shm(slot, every_array(msg), timeout_s, what, compile_timeout_s)
        r = self._request_shm(slot, lean_message(msg, slot.inputs_held()), timeout_s, what, compile_timeout_s)
        if r.get("status") == REPLY_NEED_INPUTS:
            slot.inputs_held().clear()
            r = self._request_shm(slot, msg, timeout_s, what, compile_timeout_s)
            if r.get("status") == REPLY_NEED_INPUTS:     # sent them all: cannot happen, but never a status of ours
                r = dict(r, status=Status.LAUNCH_ERROR,
                         error=f"the worker lost the inputs it was just sent: {r.get('keys')}")
        if r.get("status") == Status.OK:    # (the worker may have been replaced meanwhile: then a new set)
            slot.inputs_held().update(inputs_sent(msg, r))
        return r

    def _request_shm(self, slot: Slot, msg: dict, timeout_s: float, what: str,
                     compile_timeout_s: float | None) -> dict:
        """A run request whose big arrays travel as files in shared memory, removed once the worker answered."""
        with self._shm.message(msg, self.shm_min_bytes) as m:
            return self._request(slot, m, timeout_s, what, compile_timeout_s)

    def forget(self, key: str) -> None:
        """Forget the program ``key`` (a job whose results were judged wrong): the worker holding it
        drops it and removes what it wrote to the kernel cache, so the next run of it is cold again,
        as the first was (see opencl_env/pocl_cache.py)."""
        self._check_open()
        with self._lock:
            self._builds.pop(key, None)
            loc = self._where.pop(key, None)
        if loc is None:
            return
        slot = self._slots[loc[0]]
        with slot.lock:
            w = slot.worker
            if w is None or w.serial != loc[1] or not w.alive():
                return
            self._request(slot, {"op": "forget", "key": key}, self.timeout_s, "forget")
            slot.inputs_held().clear()       # the worker dropped its inputs too

    def _device_key(self) -> str:
        return self.device.key_name if self.device is not None else "device"

    def ping(self) -> list[int]:
        """Make sure every worker is up and answering (a round trip: whatever it was doing, such as
        its warm-up build, is over); return their pids."""
        self._check_open()
        pids = []
        for s in self._slots:
            with s.lock:
                w = self._ensure_ready(s)
                self._request(s, {"op": "ping"}, self.startup_timeout_s, "ping")
                pids.append(w.pid)
        return pids

    def close(self) -> None:
        """Stop all workers (reaped, no zombies).  Idempotent."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._pid:
            return  # forked child: the parent owns the workers
        self._shm.close()
        if self._finalizer():
            raise KeyboardInterrupt     # the workers are stopped; the caller still hears of the Ctrl-C

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        dev = self.device.key_name if self.device else self._spec
        return f"<WorkerPool {dev} workers={len(self._slots)} closed={self._closed}>"


# ------------------------------------------------- a request's parts ---

class _Phase:
    """Where one request to a worker is (what a timeout or crash names) and how long that part may take
    (see :meth:`WorkerPool._request`)."""

    def __init__(self, msg: dict, timeout_s: float, compile_timeout_s: float | None):
        self.timeout_s = timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.name = "building" if msg["op"] in ("build", "build_batch") else "building/starting"
        self.limit = timeout_s if compile_timeout_s is None else max(timeout_s, compile_timeout_s)
        self.deadline = 0.0

    def restart(self) -> None:
        self.deadline = time.monotonic() + self.limit

    def advance(self, r: dict) -> None:
        """A progress reply (``built``, ``launched``) starts the next part; any other leaves the deadline."""
        op = r.get("op")
        if op == "built" and r.get("first_launch") and self.compile_timeout_s is not None:
            self.name, self.limit = "compiling at first launch", self.compile_timeout_s
        elif op in ("built", "launched"):
            self.name, self.limit = "running", self.timeout_s
        else:
            return
        self.restart()


class _BuildRequest:
    """One :meth:`WorkerPool.build_async` call: a future per program key, the job each key is built from
    (later jobs of the key share its build), and per worker a queue of groups of keys to build."""

    def __init__(self, pool: WorkerPool, timeout: float, alone_after_failure: bool):
        self.pool = pool
        self.timeout = timeout
        self.alone_after_failure = alone_after_failure
        self.futures: dict[str, Future] = {}
        self.first: dict[str, KernelJob] = {}
        self.queues: list[deque[list[str]]] = []
        self.qlock = threading.Lock()

    def take(self, jobs: list[KernelJob]) -> deque[str]:
        """A future for each key of *jobs*; those whose build stands are settled now. Returns the keys to build."""
        todo: deque[str] = deque()
        for j in jobs:
            if j.key in self.futures:
                continue
            self.first[j.key] = j
            f = self.futures[j.key] = Future()
            prev = self.pool._builds.get(j.key)
            if prev is not None and (prev.status == Status.BUILD_ERROR or self.pool._held(j.key)):
                f.set_result(JobResult(**{**prev.__dict__, "cached": True, "wall_s": 0.0, "label": j.label}))
            else:
                todo.append(j.key)
        return todo

    def group(self, todo: deque[str], size: int) -> list[list[str]]:
        """*todo* in groups of up to ``size`` keys of one build options, in order (others wait for a later group)."""
        groups: list[list[str]] = []
        while todo:
            group = [todo.popleft()]
            opts, skipped = self.first[group[0]].build_options, []
            while todo and len(group) < size:
                k = todo.popleft()
                (group if self.first[k].build_options == opts else skipped).append(k)
            todo.extendleft(reversed(skipped))
            groups.append(group)
        return groups

    def settle(self, key: str, res: JobResult) -> None:
        # a crash or hang is no verdict on the kernel: not kept
        if res.status in (Status.OK, Status.BUILD_ERROR):
            self.pool._remember_build(key, res)
        self.futures[key].set_result(res)

    def drain(self, slot: Slot, queue: deque[list[str]]) -> None:
        """Build the groups of *queue* on *slot*'s worker, letting a run that waits for it go first."""
        group: list[str] = []
        try:
            while True:
                with self.qlock:
                    if not queue:
                        return
                    group = queue.popleft()
                while slot.runs_waiting:            # a run waits for this worker: it goes first
                    time.sleep(0.002)
                if len(group) > 1:
                    self.build_group(slot, group, queue)
                else:
                    self.build_one(slot, group[0])
                group = []
        except BaseException as e:  # noqa: BLE001 - the environment failed (or a bug): every waiter hears
            with self.qlock:
                rest = [k for k in group if not self.futures[k].done()] + [k for q in self.queues for g in q for k in g]
                for q in self.queues:
                    q.clear()
            for k in rest:
                if not self.futures[k].done():
                    self.futures[k].set_exception(e)

    def build_one(self, slot: Slot, key: str) -> None:
        job = self.first[key]
        t0 = time.monotonic()
        with slot.lock:
            r = self.pool._request(slot, {"op": "build", "key": key, "source": job.source,
                                          "options": job.build_options, "kernel": job.kernel_name},
                                   self.timeout, job.describe())
        self.settle(key, self.pool._result(r, job, time.monotonic() - t0))

    def build_group(self, slot: Slot, group: list[str], queue: deque[list[str]]) -> None:
        """Build *group* as one program; when its worker crashed or hung, each kernel alone (back on *queue*)
        or, without ``alone_after_failure``, each future gets the group's result."""
        jobs = [self.first[k] for k in group]
        t0 = time.monotonic()
        with slot.lock:
            r = self.pool._request(slot, {"op": "build_batch", "options": jobs[0].build_options,
                                          "items": [{"key": k, "source": j.source, "kernel": j.kernel_name}
                                                    for k, j in zip(group, jobs, strict=True)]},
                                   self.timeout, f"{len(jobs)} kernels as one program ({jobs[0].describe()}, ...)")
        wall = (time.monotonic() - t0) / len(group)
        if "results" not in r:      # the worker crashed or hung on the program: each kernel alone
            if not self.alone_after_failure:     # or left unbuilt: the caller builds each when it needs it
                # (the group's verdict, not remembered as this kernel's)
                for k, j in zip(group, jobs, strict=True):
                    self.futures[k].set_result(self.pool._result(
                        dict(r, error=f"built with {len(group) - 1} other kernel(s), not alone: "
                                      f"{r.get('error', '')}"), j, wall))
                return
            with self.qlock:
                queue.extendleft([k] for k in reversed(group))
            return
        for k, j, one in zip(group, jobs, r["results"], strict=True):
            one["worker_pid"] = r.get("worker_pid")
            res = self.pool._result(one, j, wall)
            if res.status == Status.OK:
                self.pool._note_where(k, slot, r["worker_serial"])
            self.settle(k, res)

    def labelled(self, j: KernelJob) -> Future:
        """*j*'s future: its key's, or for a later job of the key, the same build under *j*'s label."""
        f = self.futures[j.key]
        if self.first[j.key] is j:
            return f
        out: Future = Future()      # the same build, this job's label
        f.add_done_callback(lambda d: out.set_exception(d.exception()) if d.exception() is not None
                            else out.set_result(JobResult(**{**d.result().__dict__, "label": j.label})))
        return out


# ------------------------------------------------------- default pools ---

_pools: dict[str, WorkerPool] = {}
_pools_lock = threading.Lock()


def get_pool(device: DeviceInfo | str | None = None, **kwargs) -> WorkerPool:
    """A process-wide pool for *device*, created on first use and reused."""
    key = device.spec if isinstance(device, DeviceInfo) else default_device_spec(device)
    with _pools_lock:
        p = _pools.get(key)
        if p is not None and not p.closed and p._pid == os.getpid():
            return p
        p = WorkerPool(device, **kwargs)
        _pools[key] = p
        if p.device is not None:
            _pools.setdefault(p.device.spec, p)
        return p


def close_all_pools() -> None:
    """Close every process-wide pool. A Ctrl-C meanwhile stops the workers without waiting and is raised
    once all are closed."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    interrupted = False
    for p in pools:
        try:
            p.close()
        except KeyboardInterrupt:
            interrupted = True
        except Exception:
            pass
    if interrupted:
        raise KeyboardInterrupt


def _close_all_at_exit() -> None:
    """:func:`close_all_pools` at interpreter exit: a second Ctrl-C while the workers stop must not print
    an ``Exception ignored in atexit callback`` traceback; the workers are stopped all the same."""
    try:
        close_all_pools()
    except KeyboardInterrupt:
        pass


atexit.register(_close_all_at_exit)
