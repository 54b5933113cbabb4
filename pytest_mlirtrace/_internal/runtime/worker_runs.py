"""In a worker process: running a kernel (``run``): its arguments, the timed launches, the outputs read back.

* Inputs are kept on the device between runs (pristine copies, by content key, least recently used dropped
  first), at most :data:`RESIDENT_SHARE` of the device's memory and :data:`RESIDENT_MAX_BYTES`
  (:data:`RESIDENT_CPU_BYTES` on a CPU device, whose memory is the host's: each worker holds its own); every
  run gets its own copy, so a kernel that writes to an input can't change what the next run reads.
* A guard zone of :data:`GUARD_BYTES` filled with :data:`GUARD_FILL` follows every output buffer: a kernel that
  writes past the end of an output changes it, found on every run (without it such a write corrupts the
  worker's heap, or not, by chance). The reproducer's standalone path, which imports nothing of the package,
  keeps the same two numbers.
* A tune's cutoffs stop the timing of a solution clearly slower than the best so far; its outputs are still
  checked, on the device where it can (:mod:`.devcheck`).
"""
from __future__ import annotations

import time

from ..vocab.status import Status
from . import devcheck
from .job import REPLY_NEED_INPUTS
from .worker_programs import DeviceContext, Programs, kernel_names, no_kernel

__all__ = ["Runs", "GUARD_BYTES", "GUARD_FILL"]

WARMUP_CUT_MARGIN = 1.5    # a warm-up launch counts toward a cut only past 1.5x the cutoff (measured: first
#                            launches within 1.2x of the steady state on PoCL)
GUARD_BYTES = 4096
GUARD_FILL = 0xA5
RESIDENT_SHARE = 0.25
RESIDENT_MAX_BYTES = 8 << 30
RESIDENT_CPU_BYTES = 256 << 20


class Runs:
    """The ``run`` requests of one worker: ``send`` tells the parent of each phase as it starts (built,
    launched), so that it times the build, the first-launch compile and the launches apart."""

    def __init__(self, dc: DeviceContext, programs: Programs, send):
        self.dc, self.programs, self.send = dc, programs, send
        self.inputs: dict = {}       # input key -> pristine device buffer (dict order: least recently used first)
        self.input_bytes = 0
        self.check_kernels: dict = {}      # storage kind -> the built devcheck kernel
        self.fp64: bool | None = None
        self.resident_cap: int | None = None     # bytes of inputs kept: _resident_cap()
        self.stage = "setup"        # what the run is doing: a driver's error is judged by it

    def op_run(self, m: dict) -> dict:
        ent, cached = self.programs.get(m["key"], m["source"], m["options"], m["kernel"])
        build_s = 0.0 if cached else ent["build_s"]
        base = {"op": "result", "build_log": ent["log"], "build_s": build_s, "cached": cached}
        if ent.get("retire"):
            return dict(base, status=Status.CRASH, retire=True, error=ent["error"])
        if not ent["ok"]:
            return dict(base, status=Status.BUILD_ERROR, error=ent["error"])
        checks = m.get("check") or []
        sent = [(a[1], a[2]) for a in m["args"] if a[0] == "in" and len(a) > 2]
        sent += [pair for c in checks for pair in ((c[2], c[3]), (c[4], c[5]))]
        missing = [k for arr, k in sent if arr is None and k not in self.inputs]
        if missing:     # dropped since the parent sent them: it sends the run again, with the arrays
            return dict(base, status=REPLY_NEED_INPUTS, keys=missing)
        keep = {k for _arr, k in sent if k is not None}
        # PoCL compiles a kernel's work-group function at its first launch (the command sits SUBMITTED,
        # not RUNNING, meanwhile): the parent times that apart from the run (see pool._request)
        first = not ent.get("launched") and self.dc.compiles_at_launch
        self.send({"op": "built", "build_s": build_s, "first_launch": first})
        return self._launch(ent, m, base, keep, checks, first)

    def _launch(self, ent: dict, m: dict, base: dict, keep: set, checks: list, first: bool) -> dict:
        """Bind the arguments, launch, check, read back; ``first``: the driver compiles the kernel at this, its
        first launch (the parent hears when that is over)."""
        cl = self.dc.cl
        bufs: list = []
        self.stage = "setup"
        try:
            knl = self._kernel(ent, ent.get("alias") or m["kernel"])   # its name in a program built with others
            if isinstance(knl, dict):
                return dict(base, **knl)
            vals, outs = self._arguments(m["args"], keep, bufs)
            knl.set_args(*vals)
            times, cut = self._timed_launches(ent, knl, m, outs, first)
            self.stage = "check"
            checked = self._check_on_device(checks, outs, keep) if checks else None
            passed = {c[0] for c, ok in zip(checks, checked or (), strict=False) if ok}
            if checked is not None and not all(checked):
                passed = set()          # one output failed: all go back, the parent judges them together
            self.stage = "read back"
            results, overrun = self._read_back(outs, passed)
            if overrun is not None:
                i, changed = overrun
                # the last bytes of the zone changed too: the write may have gone further, into the heap
                return dict(base, status=Status.CRASH, retire=bool(changed[-1] >= GUARD_BYTES - 64),
                            error=f"the kernel wrote past the end of output {i}: the guard zone after it "
                                  f"changed, up to byte {changed[-1] + 1} of {GUARD_BYTES}")
        except cl.Error as e:
            if self.stage in ("execute", "check", "read back"):
                # the kernel faulted on the device (e.g. NVIDIA: illegal address,
                # CL error -9999 / OUT_OF_RESOURCES); the context is unusable now
                return dict(base, status=Status.CRASH, retire=True,
                            error=f"kernel failed on the device during {self.stage}: {e}")
            r = dict(base, status=Status.LAUNCH_ERROR, error=f"launch failed: {e}")
            if not self.dc.healthy():
                r.update(retire=True, error=r["error"] + " (device context unusable)")
            return r
        except Exception as e:
            return dict(base, status=Status.LAUNCH_ERROR, error=f"launch failed: {type(e).__name__}: {e}")
        finally:
            for b in bufs:
                try:
                    b.release()
                except Exception:
                    pass
        return dict(base, status=Status.OK, outputs=results, times_ms=times, error="", cut=cut, checked=checked)

    def _kernel(self, ent: dict, name: str):
        """The kernel ``name`` of the program ``ent`` (made once); a reply's status and error when it has none."""
        cl = self.dc.cl
        knl = ent["kernels"].get(name)
        if knl is None:
            try:
                knl = cl.Kernel(ent["prg"], name)
            except cl.Error as e:
                names = kernel_names(cl, ent["prg"])
                if names is not None and name not in names:     # as a fresh build of this job says it
                    return {"status": Status.BUILD_ERROR, "error": no_kernel(name, names)}
                return {"status": Status.LAUNCH_ERROR, "error": f"kernel {name!r} not found in program: {e}"}
            ent["kernels"][name] = knl
        return knl

    def _arguments(self, args: list, keep: set, bufs: list) -> tuple[list, list]:
        """The kernel's argument values, and its outputs as (host array, device buffer, initial value); every
        buffer made is added to ``bufs`` (released after the run)."""
        cl, np, ctx, q = self.dc.cl, self.dc.np, self.dc.ctx, self.dc.queue
        mf = cl.mem_flags
        vals, outs = [], []
        for a in args:
            kind = a[0]
            if kind == "in":
                key = a[2] if len(a) > 2 else None
                if key is not None:
                    # every run gets its own copy of the pristine buffer: a kernel that writes to an
                    # input can't change what the next run reads
                    src, nbytes = self._resident(key, a[1], keep)
                    b = cl.Buffer(ctx, mf.READ_ONLY, nbytes)
                    cl.enqueue_copy(q, b, src)
                else:
                    arr = np.ascontiguousarray(self._array(a[1]))
                    if arr.nbytes:
                        b = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=arr)
                    else:
                        b = cl.Buffer(ctx, mf.READ_ONLY, 16)
                bufs.append(b)
                vals.append(b)
            elif kind == "out":
                _k, shape, dt, fill = a
                host = np.empty(shape, dtype=np.dtype(dt))
                b = cl.Buffer(ctx, mf.READ_WRITE, host.nbytes + GUARD_BYTES)
                cl.enqueue_copy(q, b, np.full(GUARD_BYTES, GUARD_FILL, np.uint8), dst_offset=host.nbytes)
                init = np.full(shape, fill, dtype=host.dtype) if fill is not None else None
                bufs.append(b)
                outs.append((host, b, init))
                vals.append(b)
            elif kind == "scalar":
                vals.append(a[1])
            elif kind == "local":
                vals.append(cl.LocalMemory(max(int(a[1]), 1)))
            else:
                raise ValueError(f"unknown argument kind {kind!r}")
        return vals, outs

    def _timed_launches(self, ent: dict, knl, m: dict, outs: list, first: bool) -> tuple[list[float], bool]:
        """Launch ``warmup + repeats`` times (fewer when the cutoffs say so): (the timed launches' times in
        ms, whether a cutoff stopped them). ``first``: wait for the first launch to start running (the
        driver's compile at it is over) and tell the parent."""
        cl, q = self.dc.cl, self.dc.queue
        gsize = tuple(m["global"])
        lsize = tuple(m["local"]) if m["local"] is not None else None
        warmup, repeats = int(m.get("warmup", 0)), max(int(m.get("repeats", 1)), 1)
        cutoff = m.get("cutoff_ms")      # a tune's "clearly slower than the best so far": stop timing it
        cutoff_once = m.get("cutoff_once_ms")    # ... and "far slower": one launch past it is enough
        over = 0
        times: list[float] = []
        for it in range(warmup + repeats):
            self.stage = "setup"
            for _host, b, init in outs:
                if init is not None and init.nbytes:
                    cl.enqueue_copy(q, b, init)
            self.stage = "enqueue"
            ev = cl.enqueue_nd_range_kernel(q, knl, gsize, lsize)
            if first:
                self._await_running(ev)
                ent["launched"] = first = False
                self.send({"op": "launched"})
            self.stage = "execute"
            ev.wait()
            t_ms = (ev.profile.end - ev.profile.start) * 1e-6
            if it >= warmup:
                times.append(t_ms)
            if cutoff_once is not None and t_ms > float(cutoff_once) and it + 1 < warmup + repeats:
                if not times:
                    times.append(t_ms)      # a warm-up launch: the one time there is (first launches run slower)
                return times, True
            # two launches past the cutoff (a warm-up launch counts past 1.5x it: a first launch may page in
            # or warm caches), so that one noisy launch never cuts the best solution short
            if cutoff is not None and t_ms > float(cutoff) * (1.0 if it >= warmup else WARMUP_CUT_MARGIN):
                over += 1
                if over >= 2 and it + 1 < warmup + repeats:
                    return times, True      # the outputs of this launch are still read back and checked
        return times, False

    def _read_back(self, outs: list, passed: set) -> tuple[list, tuple | None]:
        """The outputs (None for those that passed on the device), and the first output whose guard zone a
        kernel changed, with the bytes changed (None: none)."""
        cl, np, q = self.dc.cl, self.dc.np, self.dc.queue
        results = []
        overrun = None
        for i, (host, b, _init) in enumerate(outs):
            if i in passed:
                results.append(None)
            elif host.nbytes:
                cl.enqueue_copy(q, host, b)
                results.append(host)
            else:
                results.append(host)
            guard = np.empty(GUARD_BYTES, np.uint8)
            cl.enqueue_copy(q, guard, b, src_offset=host.nbytes)
            changed = np.flatnonzero(guard != GUARD_FILL)
            if changed.size and overrun is None:
                overrun = (i, changed)
        q.finish()
        return results, overrun

    # --- the outputs checked on the device ---
    def _check_on_device(self, checks, outs, keep):
        """Per check of the request: did every element of that output pass (see devcheck.py)? None when the
        device can't (no double precision) or a kind has no check kernel: then every output goes back."""
        cl, np, ctx, q = self.dc.cl, self.dc.np, self.dc.ctx, self.dc.queue
        if not self._has_fp64() or any(c[1] not in devcheck.KINDS for c in checks):
            return None
        flags = []
        for out_pos, kind, exp_arr, exp_key, b_arr, b_key, one_bound in checks:
            host, got, _init = outs[out_pos]
            n = host.size
            want, _ = self._resident(exp_key, exp_arr, keep)
            bound, _ = self._resident(b_key, b_arr, keep)
            if want.size < n * devcheck.itemsize(kind) or bound.size < (1 if one_bound else n) * 4:
                return None         # not this output's values: let the parent judge
            knl = self.check_kernels.get(kind)
            if knl is None:
                try:
                    prg = cl.Program(ctx, devcheck.source(kind)).build(devices=[self.dc.dev])
                    knl = self.check_kernels[kind] = cl.Kernel(prg, devcheck.KERNEL)
                except cl.Error:      # the driver won't build it: the parent checks, as without
                    self.fp64 = False
                    return None
            flag = np.zeros(1, np.int32)
            fbuf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flag)
            try:
                if n:
                    knl.set_args(got, want, bound, np.uint64(n), np.int32(1 if one_bound else 0), fbuf)
                    cl.enqueue_nd_range_kernel(q, knl, (min(n, 1 << 18),), None)
                cl.enqueue_copy(q, flag, fbuf)
                q.finish()
            finally:
                fbuf.release()
            flags.append(bool(flag[0] == 0))
        return flags

    def _has_fp64(self) -> bool:
        if self.fp64 is None:
            dev = self.dc.dev
            try:
                self.fp64 = "cl_khr_fp64" in (dev.extensions or "") or bool(dev.double_fp_config)
            except Exception:   # noqa: BLE001 - a driver without the query
                self.fp64 = False
        return bool(self.fp64)

    # --- the inputs kept on the device ---
    def _array(self, x):
        """An array the parent sent: itself, or ``("shm", path, dtype, shape)``: read from that file."""
        if isinstance(x, tuple) and x and x[0] == "shm":
            np = self.dc.np
            return np.fromfile(x[1], dtype=np.dtype(x[2])).reshape(x[3])
        return x

    def _resident(self, key: str, arr, keep=()):
        """(pristine device buffer, bytes) of input ``key``: made from ``arr`` when it came with the request
        (again if it was held: the parent thought it was not), else the one held since an earlier run.
        Inputs in ``keep`` (the rest of this run's) are not dropped to make room."""
        cl = self.dc.cl
        if arr is None:
            buf = self.inputs.pop(key)
            self.inputs[key] = buf                      # most recently used last
            return buf, buf.size
        old = self.inputs.pop(key, None)
        if old is not None:
            self.input_bytes -= old.size
            old.release()
        arr = self.dc.np.ascontiguousarray(self._array(arr))
        buf = cl.Buffer(self.dc.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
        cap = self._resident_cap()
        for k in [k for k in self.inputs if k not in keep]:
            if self.input_bytes + buf.size <= cap:
                break
            dropped = self.inputs.pop(k)
            self.input_bytes -= dropped.size
            dropped.release()
        if buf.size <= cap:
            self.inputs[key] = buf
            self.input_bytes += buf.size
        return buf, buf.size

    def _resident_cap(self) -> int:
        """How many bytes of inputs this worker keeps (asked of the device once)."""
        if self.resident_cap is None:
            dev = self.dc.dev
            try:
                cpu = bool(dev.type & self.dc.cl.device_type.CPU)
                self.resident_cap = min(int(dev.global_mem_size * RESIDENT_SHARE),
                                        RESIDENT_CPU_BYTES if cpu else RESIDENT_MAX_BYTES)
            except Exception:   # noqa: BLE001 - a driver without the query
                self.resident_cap = 1 << 30
        return self.resident_cap

    def drop_inputs(self) -> None:
        for buf in self.inputs.values():
            try:
                buf.release()
            except Exception:   # noqa: BLE001
                pass
        self.inputs.clear()
        self.input_bytes = 0

    def _await_running(self, ev) -> None:
        """Wait (polling, 1-20 ms) until ``ev`` leaves QUEUED/SUBMITTED: the first-launch compile is over."""
        running = self.dc.cl.command_execution_status.RUNNING
        nap = 0.001
        while True:
            try:
                if ev.command_execution_status <= running:   # RUNNING, COMPLETE or an error code
                    return
            except Exception:   # noqa: BLE001 - a driver without the query: ev.wait() tells
                return
            time.sleep(nap)
            nap = min(nap * 2, 0.02)
