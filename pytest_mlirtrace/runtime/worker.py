"""The worker process: one OpenCL context, a program cache, a request loop.

Run as a script (``python worker.py --serve SPEC`` or ``--list``) by
:mod:`.pool` / :mod:`.device`; it never imports the rest of the package (the
sibling modules it needs are loaded by file path), so a worker starts in
about the time of ``import pyopencl`` plus context creation.

Protocol: pickled messages over :class:`multiprocessing.connection.Connection` objects on the
worker's stdin (requests) and a private duplicate of its original stdout (replies), while file
descriptor 1 itself is redirected to stderr (so ``printf`` in kernels cannot corrupt the stream).
"""

from __future__ import annotations

import os
import re
import sys
from multiprocessing.connection import Connection

_HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL_VERSION = 3
MAX_PROGRAMS = 512
_TEMPFILE_RE = re.compile(r"(?:[^\s:'\"]*/)?tempfile_\w+\.cl")
# clBuildProgram codes that are the compiler's verdict on the source/options
_COMPILE_FAILURES = (-11, -15, -17, -43, -66)
WARMUP_CUT_MARGIN = 1.5    # a warm-up launch counts toward a cut only past 1.5x the cutoff (measured: first
#                            launches within 1.2x of the steady state on PoCL)
WARMUP_SOURCE = "__kernel void mlirtrace_warmup(__global int *p) { p[0] = 1; }"
# a guard zone after every output buffer, filled with GUARD_FILL: a kernel that writes past the end of an
# output changes it, found on every run (without it such a write corrupts the worker's heap, or not, by chance).
# (The reproducer's standalone path, which imports nothing of the package, keeps the same two numbers.)
GUARD_BYTES = 4096
GUARD_FILL = 0xA5
# inputs kept on the device between runs (pristine copies, by content key, least recently used dropped first):
# at most this share of the device's memory, and at most RESIDENT_MAX_BYTES (RESIDENT_CPU_BYTES on a CPU device,
# whose memory is the host's: each worker holds its own)
RESIDENT_SHARE = 0.25
RESIDENT_MAX_BYTES = 8 << 30
RESIDENT_CPU_BYTES = 256 << 20


# ------------------------------------------------------- package modules ---

def _package_by_path() -> None:
    """Run as a script: make the package's modules importable from the files around this one, without running
    the ``__init__`` of the package, of ``runtime`` or of ``config`` (they import numpy, the pool, the settings),
    whether or not the package is installed where this interpreter looks."""
    import types
    root = os.path.dirname(_HERE)
    top = os.path.basename(root)
    for name, path in ((top, root), (f"{top}.runtime", _HERE), (f"{top}.config", os.path.join(root, "config"))):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [path]
            sys.modules[name] = mod


def _load_sibling(name: str):
    """The module ``runtime.<name>`` (``opencl_env.prepare``, ``device``, ...)."""
    import importlib
    pkg = __package__ or f"{os.path.basename(os.path.dirname(_HERE))}.runtime"
    return importlib.import_module(f"{pkg}.{name}")


# ------------------------------------------------------ device queries ----

def _device_dict(cl, devmod, pi: int, di: int, p, d) -> dict:
    dtype = d.type
    if dtype & cl.device_type.GPU:
        kind = "gpu"
    elif dtype & cl.device_type.CPU:
        kind = "cpu"
    elif dtype & cl.device_type.ACCELERATOR:
        kind = "accelerator"
    else:
        kind = "other"
    ext = tuple(d.extensions.split())
    version = d.version.strip()
    m = re.match(r"OpenCL\s+(\d+\.\d+)", version)
    try:
        fp64 = "cl_khr_fp64" in ext or bool(d.double_fp_config)
    except Exception:
        fp64 = "cl_khr_fp64" in ext
    name = d.name.strip()
    pname = p.name.strip()

    def get(attr, default):
        try:
            return getattr(d, attr)
        except Exception:
            return default

    return {
        "spec": f"{pi}:{di}", "name": name, "platform": pname, "kind": kind,
        "vendor": d.vendor.strip(),
        "max_work_group_size": int(d.max_work_group_size),
        "local_mem_size": int(d.local_mem_size),
        "compute_units": int(d.max_compute_units),
        "has_fp16": "cl_khr_fp16" in ext, "has_fp64": fp64,
        "key_name": devmod.make_key_name(name, pname, kind, version),
        "opencl_version": m.group(1) if m else version,
        "platform_index": pi, "device_index": di,
        "device_version": version, "driver_version": get("driver_version", "").strip(),
        "global_mem_size": int(get("global_mem_size", 0)),
        "max_work_item_sizes": tuple(int(x) for x in get("max_work_item_sizes", ())),
        "max_mem_alloc_size": int(get("max_mem_alloc_size", 0)),
        "extensions": ext,
        "target_cpu": devmod.pocl_target_cpu(version) if "pocl" in version.lower() else "",
        "vector_bits": devmod.builtin_vector_bits(kind, pname, version),
        # NVIDIA's cl_nv_device_attribute_query gives the compute capability
        "mma": devmod.nvidia_mma(d.vendor, int(get("compute_capability_major_nv", 0) or 0),
                                 int(get("compute_capability_minor_nv", 0) or 0)),
    }


def _enumerate(cl, devmod):
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return out
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devs):
            out.append((_device_dict(cl, devmod, pi, di, p, d), d))
    return out


def _setup_env():
    # mlirtrace owns the kernel cache (PoCL's, see opencl_env/pocl_cache.py): pyopencl's own binary cache must not
    # answer a build instead of the driver (it is read at pyopencl's import)
    os.environ["PYOPENCL_NO_CACHE"] = "1"
    # import pyopencl first: its import resets PYOPENCL_HOME, which
    # ensure_opencl_env() must override afterwards
    import warnings

    import pyopencl as cl
    # build logs are returned to the parent; no CompilerWarning noise on stderr
    warnings.filterwarnings("ignore", category=getattr(cl, "CompilerWarning", UserWarning))
    env = _load_sibling("opencl_env.prepare")
    env.ensure_opencl_env()
    return cl, env


def main_list() -> int:
    import json
    devmod = _load_sibling("device")
    try:
        cl, _fix = _setup_env()
        devs = [d for d, _ in _enumerate(cl, devmod)]
        payload = {"devices": devs}
    except Exception as e:  # report, don't traceback
        payload = {"error": f"{type(e).__name__}: {e}", "devices": []}
    sys.stdout.write(devmod.DEVICE_LIST_LINE + json.dumps(payload) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip driver teardown


# -------------------------------------------------------------- server ----


def _kernel_names(cl, prg) -> list[str] | None:
    """The kernels a built program has (None: the driver can't say). A program without kernels is not asked
    their names: NVIDIA's driver crashed on it."""
    try:
        if not prg.get_info(cl.program_info.NUM_KERNELS):
            return []
        return [n for n in str(prg.get_info(cl.program_info.KERNEL_NAMES)).split(";") if n]
    except Exception:  # noqa: BLE001 - a driver without the query: launch will tell
        return None


class _Server:
    def __init__(self, out: Connection, inp: Connection, spec: str):
        self.out = out
        self.inp = inp
        self.spec = spec
        self.programs = {}   # key -> entry dict (OrderedDict semantics via dict order)
        self.inputs = {}     # input key -> pristine device buffer (dict order: least recently used first)
        self.input_bytes = 0
        self.check_kernels = {}      # storage kind -> the built devcheck kernel
        self.fp64 = None
        self.resident_cap = None     # bytes of inputs kept: _resident_cap()
        self.shard = None    # pocl_cache.Shard: this process's part of mlirtrace's PoCL kernel cache

    def send(self, obj):
        self.out.send(obj)

    def start(self) -> bool:
        import time
        t0 = time.perf_counter()
        try:
            cl, fix = _setup_env()
            self._claim_kernel_cache()
            import numpy as np
            devmod = _load_sibling("device")
            found = _enumerate(cl, devmod)
            infos = [devmod.DeviceInfo.from_dict(d) for d, _ in found]
            try:
                chosen = devmod.match_spec(infos, self.spec)
            except devmod.DeviceError as e:
                self.send({"op": "fatal", "kind": "device", "error": str(e),
                           "devices": [d for d, _ in found]})
                return False
            dev = next(d for info, d in found if info["spec"] == chosen.spec)
            self.cl, self.np = cl, np
            self.dev = dev
            # PoCL compiles a kernel's work-group function at its first launch; other drivers compile all
            # of it at the build, and may report a launch SUBMITTED until it ends (a hang is no compile)
            self.compiles_at_launch = "portable computing language" in dev.platform.name.lower()
            self.ctx = cl.Context([dev])
            self.queue = cl.CommandQueue(
                self.ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
        except Exception as e:
            import traceback
            self.send({"op": "fatal", "kind": "init",
                       "error": f"worker init failed: {type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()})
            return False
        self.send({"op": "ready", "pid": os.getpid(), "device": chosen.to_dict(),
                   "devices": [d for d, _ in found], "fix": fix.fix_state(),
                   "startup_s": time.perf_counter() - t0, "protocol": PROTOCOL_VERSION,
                   "kernel_cache": self.shard.path if self.shard else None})
        return True

    def _claim_kernel_cache(self) -> None:
        """PoCL's on-disk cache: a shard of mlirtrace's own directory (see opencl_env/pocl_cache.py), set
        before PoCL starts."""
        self.shard = _load_sibling("opencl_env.pocl_cache").claim_worker_shard()

    def warm_up(self):
        """The first build in a process pays ~0.5 s of clang/LLVM start-up
        (even on a PoCL cache hit); pay it now, while the parent is not
        waiting yet (requests queue up in the pipe meanwhile)."""
        if os.environ.get("MLIRTRACE_WORKER_WARMUP", "1") in ("0", ""):
            return
        try:
            self.cl.Program(self.ctx, WARMUP_SOURCE).build(devices=[self.dev])
        except Exception:
            pass

    def healthy(self) -> bool:
        """Can the context still do a tiny write/read round trip?"""
        cl, np = self.cl, self.np
        try:
            h = np.arange(4, dtype=np.int32)
            b = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, h.nbytes)
            cl.enqueue_copy(self.queue, b, h)
            back = np.empty_like(h)
            cl.enqueue_copy(self.queue, back, b)
            self.queue.finish()
            b.release()
            return bool((back == h).all())
        except Exception:
            return False

    # --- build ---
    def get_program(self, key: str, source: str, options: str, kernel: str = ""):
        """Return (entry, cached).  entry: dict(ok, prg, log, error, build_s).  A program that builds
        but lacks ``kernel`` is a failed build (PoCL has returned such programs after miscompiling)."""
        ent = self.programs.get(key)
        if ent is not None:
            self.programs[key] = self.programs.pop(key)  # LRU bump
            return ent, True
        ent = self._compile(source, options, [kernel] if kernel else [])
        if not ent.get("retire"):
            self._keep(key, ent)
        return ent, False

    def _keep(self, key: str, ent: dict) -> None:
        self.programs[key] = ent
        while len(self.programs) > MAX_PROGRAMS:
            self.programs.pop(next(iter(self.programs)))

    def _compile(self, source: str, options: str, kernels: list[str]) -> dict:
        """Build ``source``: dict(ok, prg, log, error, build_s, kernels); a build lacking one of ``kernels`` failed."""
        import time
        cl = self.cl
        t0 = time.perf_counter()
        ok, err, prg, code = True, "", None, None
        try:
            prg = cl.Program(self.ctx, source)
            prg.build(options=options or None, devices=[self.dev])
        except cl.Error as e:   # a failed build: cl.RuntimeError, its message carries the log
            ok, err = False, str(e)
            code = getattr(e, "code", None)
        except Exception as e:
            ok, err, code = False, f"{type(e).__name__}: {e}", None
        build_s = time.perf_counter() - t0
        missing = ""
        if ok and kernels:
            names = _kernel_names(cl, prg)
            lost = [k for k in kernels if names is not None and k not in names]
            if lost:
                ok, code = False, None
                missing = (f"build produced no kernel {lost[0]!r} (the program has "
                           f"{', '.join(repr(n) for n in names) or 'no kernel'})")
        if not ok and not missing and code not in _COMPILE_FAILURES and not self.healthy():
            # not a compiler verdict: the context broke (e.g. an earlier device
            # fault); don't cache, tell the parent to replace this worker
            return {"ok": False, "prg": None, "log": "", "build_s": build_s, "kernels": {},
                    "error": f"build failed: device context unusable: {err}",
                    "retire": True}
        log = ""
        if prg is not None:
            try:   # the compiler's own log (on a failed build too: the program object exists)
                log = prg.get_build_info(self.dev, cl.program_build_info.LOG) or ""
            except Exception:
                pass
        # PoCL compiles a random temp file (…/kcache/tempfile_AbC123.cl): name it
        # stably, so that the first error line can be part of a bug signature
        log = _TEMPFILE_RE.sub("<source>", log.strip("\x00").rstrip())
        err = _TEMPFILE_RE.sub("<source>", err)
        if not ok:
            first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), "")
            head = missing or first or (err.strip().splitlines()[0] if err.strip() else "unknown error")
            err = "build failed: " + head
            if not log:
                log = err
        return {"ok": ok, "prg": prg if ok else None, "log": log, "error": err,
                "build_s": build_s, "kernels": {}}

    def op_build(self, m):
        ent, cached = self.get_program(m["key"], m["source"], m["options"], m.get("kernel", ""))
        if ent.get("retire"):
            return {"op": "result", "status": "crash", "retire": True, "build_log": "",
                    "error": ent["error"], "build_s": ent["build_s"], "cached": False}
        return {"op": "result", "status": "ok" if ent["ok"] else "build_error",
                "build_log": ent["log"], "error": ent["error"],
                "build_s": 0.0 if cached else ent["build_s"], "cached": cached}

    def op_build_batch(self, m):
        """Build several kernels (``items``: key, source, kernel; one ``options``) as one program where
        :mod:`.kbatch` can combine them, else (or when that program does not build) one by one, each as
        ``op_build`` would.  Each kernel keeps its own entry (its key), sharing the program; its build time
        is its share of the program's.  Reply: ``results``, one ``op_build`` reply per item, in order."""
        items, options = m["items"], m["options"]
        todo = list({it["key"]: it for it in items if it["key"] not in self.programs}.values())   # once each
        fresh: set = set()
        if len(todo) >= 2:
            kb = _load_sibling("kbatch")
            text = kb.combine([(it["source"], it["kernel"]) for it in todo])
            if text is not None:
                keys = [it["key"] for it in todo]
                names = [kb.alias(it["kernel"], i) for i, it in enumerate(todo)]
                if self.shard is not None:
                    self.shard.begin(keys)
                ent = self._compile(text, options, names)
                if self.shard is not None:
                    self.shard.end(ok=ent["ok"])
                if ent["ok"]:       # else: one by one below (a compiler's verdict names its own kernel)
                    for key, name in zip(keys, names):
                        self._keep(key, {**ent, "alias": name, "kernels": {},
                                         "build_s": ent["build_s"] / len(keys), "batched": len(keys)})
                    fresh = set(keys)
        results = []
        for it in items:
            key, it = it["key"], dict(it, options=options)
            if key in fresh:        # built just now, with the others: its share of the time, not "cached"
                results.append(dict(self.op_build(it), build_s=self.programs[key]["build_s"], cached=False,
                                    batched=self.programs[key]["batched"]))
                fresh.discard(key)
                continue
            alone = self.shard is not None and key not in self.programs
            if alone:
                self.shard.begin(key)
            r = self.op_build(it)
            if alone:
                self.shard.end(ok=r["status"] == "ok")
            if r.get("retire"):     # the context broke: the parent replaces this worker and builds the rest anew
                return r
            results.append(r)
        return {"op": "result", "status": "ok", "results": results}

    # --- run ---
    def op_run(self, m):
        cl, np = self.cl, self.np
        ent, cached = self.get_program(m["key"], m["source"], m["options"], m["kernel"])
        build_s = 0.0 if cached else ent["build_s"]
        base = {"op": "result", "build_log": ent["log"], "build_s": build_s, "cached": cached}
        if ent.get("retire"):
            return dict(base, status="crash", retire=True, error=ent["error"])
        if not ent["ok"]:
            return dict(base, status="build_error", error=ent["error"])
        checks = m.get("check") or []
        sent = [(a[1], a[2]) for a in m["args"] if a[0] == "in" and len(a) > 2]
        sent += [pair for c in checks for pair in ((c[2], c[3]), (c[4], c[5]))]
        missing = [k for arr, k in sent if arr is None and k not in self.inputs]
        if missing:     # dropped since the parent sent them: it sends the run again, with the arrays
            return dict(base, status="need_inputs", keys=missing)
        keep = {k for _arr, k in sent if k is not None}
        # PoCL compiles a kernel's work-group function at its first launch (the command sits SUBMITTED,
        # not RUNNING, meanwhile): the parent times that apart from the run (see pool._request)
        first = not ent.get("launched") and self.compiles_at_launch
        self.send({"op": "built", "build_s": build_s, "first_launch": first})
        name = ent.get("alias") or m["kernel"]      # its name in a program built with others (op_build_batch)
        mf = cl.mem_flags
        bufs, outs, vals = [], [], []
        stage = "setup"
        try:
            knl = ent["kernels"].get(name)
            if knl is None:
                try:
                    knl = cl.Kernel(ent["prg"], name)
                except cl.Error as e:
                    names = _kernel_names(cl, ent["prg"])
                    if names is not None and name not in names:     # as a fresh build of this job says it
                        return dict(base, status="build_error",
                                    error=f"build produced no kernel {name!r} (the program has "
                                          f"{', '.join(repr(n) for n in names) or 'no kernel'})")
                    return dict(base, status="launch_error",
                                error=f"kernel {name!r} not found in program: {e}")
                ent["kernels"][name] = knl
            for a in m["args"]:
                kind = a[0]
                if kind == "in":
                    key = a[2] if len(a) > 2 else None
                    if key is not None:
                        # every run gets its own copy of the pristine buffer: a kernel that writes to an
                        # input can't change what the next run reads
                        src, nbytes = self._resident(key, a[1], keep)
                        b = cl.Buffer(self.ctx, mf.READ_ONLY, nbytes)
                        cl.enqueue_copy(self.queue, b, src)
                    else:
                        arr = np.ascontiguousarray(self._array(a[1]))
                        if arr.nbytes:
                            b = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=arr)
                        else:
                            b = cl.Buffer(self.ctx, mf.READ_ONLY, 16)
                    bufs.append(b)
                    vals.append(b)
                elif kind == "out":
                    _k, shape, dt, fill = a
                    host = np.empty(shape, dtype=np.dtype(dt))
                    b = cl.Buffer(self.ctx, mf.READ_WRITE, host.nbytes + GUARD_BYTES)
                    cl.enqueue_copy(self.queue, b, np.full(GUARD_BYTES, GUARD_FILL, np.uint8), dst_offset=host.nbytes)
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
            knl.set_args(*vals)
            gsize = tuple(m["global"])
            lsize = tuple(m["local"]) if m["local"] is not None else None
            warmup, repeats = int(m.get("warmup", 0)), max(int(m.get("repeats", 1)), 1)
            cutoff = m.get("cutoff_ms")      # a tune's "clearly slower than the best so far": stop timing it
            cutoff_once = m.get("cutoff_once_ms")    # ... and "far slower": one launch past it is enough
            cut, over = False, 0
            times = []
            q = self.queue
            for it in range(warmup + repeats):
                stage = "setup"
                for host, b, init in outs:
                    if init is not None and init.nbytes:
                        cl.enqueue_copy(q, b, init)
                stage = "enqueue"
                ev = cl.enqueue_nd_range_kernel(q, knl, gsize, lsize)
                if first:
                    self._await_running(ev)
                    ent["launched"] = first = False
                    self.send({"op": "launched"})
                stage = "execute"
                ev.wait()
                t_ms = (ev.profile.end - ev.profile.start) * 1e-6
                if it >= warmup:
                    times.append(t_ms)
                if cutoff_once is not None and t_ms > float(cutoff_once) and it + 1 < warmup + repeats:
                    if not times:
                        times.append(t_ms)      # a warm-up launch: the one time there is (first launches run slower)
                    cut = True
                    break
                # two launches past the cutoff (a warm-up launch counts past 1.5x it: a first launch may page in
                # or warm caches), so that one noisy launch never cuts the best solution short
                if cutoff is not None and t_ms > float(cutoff) * (1.0 if it >= warmup else WARMUP_CUT_MARGIN):
                    over += 1
                    if over >= 2 and it + 1 < warmup + repeats:
                        cut = True              # the outputs of this launch are still read back and checked
                        break
            stage = "check"
            checked = self._check_on_device(checks, outs, keep) if checks else None
            passed = {c[0] for c, ok in zip(checks, checked or ()) if ok}
            if checked is not None and not all(checked):
                passed = set()          # one output failed: all go back, the parent judges them together
            stage = "read back"
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
            if overrun is not None:
                i, changed = overrun
                # the last bytes of the zone changed too: the write may have gone further, into the heap
                return dict(base, status="crash", retire=bool(changed[-1] >= GUARD_BYTES - 64),
                            error=f"the kernel wrote past the end of output {i}: the guard zone after it "
                                  f"changed, up to byte {changed[-1] + 1} of {GUARD_BYTES}")
        except cl.Error as e:
            if stage in ("execute", "check", "read back"):
                # the kernel faulted on the device (e.g. NVIDIA: illegal address,
                # CL error -9999 / OUT_OF_RESOURCES); the context is unusable now
                return dict(base, status="crash", retire=True,
                            error=f"kernel failed on the device during {stage}: {e}")
            r = dict(base, status="launch_error", error=f"launch failed: {e}")
            if not self.healthy():
                r.update(retire=True, error=r["error"] + " (device context unusable)")
            return r
        except Exception as e:
            return dict(base, status="launch_error", error=f"launch failed: {type(e).__name__}: {e}")
        finally:
            for b in bufs:
                try:
                    b.release()
                except Exception:
                    pass
        return dict(base, status="ok", outputs=results, times_ms=times, error="", cut=cut, checked=checked)

    def _check_on_device(self, checks, outs, keep):
        """Per check of the request: did every element of that output pass (see devcheck.py)? None when the
        device can't (no double precision) or a kind has no check kernel: then every output goes back."""
        cl, np = self.cl, self.np
        dc = _load_sibling("devcheck")
        if not self._has_fp64() or any(c[1] not in dc.KINDS for c in checks):
            return None
        flags = []
        for out_pos, kind, exp_arr, exp_key, b_arr, b_key, one_bound in checks:
            host, got, _init = outs[out_pos]
            n = host.size
            want, _ = self._resident(exp_key, exp_arr, keep)
            bound, _ = self._resident(b_key, b_arr, keep)
            if want.size < n * dc.itemsize(kind) or bound.size < (1 if one_bound else n) * 4:
                return None         # not this output's values: let the parent judge
            knl = self.check_kernels.get(kind)
            if knl is None:
                try:
                    prg = cl.Program(self.ctx, dc.source(kind)).build(devices=[self.dev])
                    knl = self.check_kernels[kind] = cl.Kernel(prg, dc.KERNEL)
                except cl.Error:      # the driver won't build it: the parent checks, as without
                    self.fp64 = False
                    return None
            flag = np.zeros(1, np.int32)
            fbuf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=flag)
            try:
                if n:
                    knl.set_args(got, want, bound, np.uint64(n), np.int32(1 if one_bound else 0), fbuf)
                    cl.enqueue_nd_range_kernel(self.queue, knl, (min(n, 1 << 18),), None)
                cl.enqueue_copy(self.queue, flag, fbuf)
                self.queue.finish()
            finally:
                fbuf.release()
            flags.append(bool(flag[0] == 0))
        return flags

    def _has_fp64(self) -> bool:
        if self.fp64 is None:
            try:
                self.fp64 = "cl_khr_fp64" in (self.dev.extensions or "") or bool(self.dev.double_fp_config)
            except Exception:   # noqa: BLE001 - a driver without the query
                self.fp64 = False
        return self.fp64

    def _array(self, x):
        """An array the parent sent: itself, or ``("shm", path, dtype, shape)``: read from that file."""
        if isinstance(x, tuple) and x and x[0] == "shm":
            np = self.np
            return np.fromfile(x[1], dtype=np.dtype(x[2])).reshape(x[3])
        return x

    def _resident(self, key: str, arr, keep=()):
        """(pristine device buffer, bytes) of input ``key``: made from ``arr`` when it came with the request
        (again if it was held: the parent thought it was not), else the one held since an earlier run.
        Inputs in ``keep`` (the rest of this run's) are not dropped to make room."""
        cl = self.cl
        if arr is None:
            buf = self.inputs.pop(key)
            self.inputs[key] = buf                      # most recently used last
            return buf, buf.size
        old = self.inputs.pop(key, None)
        if old is not None:
            self.input_bytes -= old.size
            old.release()
        arr = self.np.ascontiguousarray(self._array(arr))
        buf = cl.Buffer(self.ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
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
            cl = self.cl
            try:
                cpu = bool(self.dev.type & cl.device_type.CPU)
                self.resident_cap = min(int(self.dev.global_mem_size * RESIDENT_SHARE),
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
        import time
        running = self.cl.command_execution_status.RUNNING
        nap = 0.001
        while True:
            try:
                if ev.command_execution_status <= running:   # RUNNING, COMPLETE or an error code
                    return
            except Exception:   # noqa: BLE001 - a driver without the query: ev.wait() tells
                return
            time.sleep(nap)
            nap = min(nap * 2, 0.02)

    def op_forget(self, m):
        """The parent judged a program's results wrong: drop it, and what it left in the kernel
        cache, so that the next run of it starts cold, as the first did."""
        self.programs.pop(m["key"], None)
        self.drop_inputs()      # nothing of that run is kept: its inputs are sent again
        removed = self.shard.forget(m["key"]) if self.shard is not None else 0
        return {"op": "result", "status": "ok", "removed": removed}

    def loop(self):
        while True:
            try:
                m = self.inp.recv()
            except (EOFError, OSError):   # the parent closed the pipe (or died)
                return
            if m.get("op") == "exit":
                return
            op = m.get("op")
            journal = self.shard is not None and op in ("build", "run")
            if journal:
                self.shard.begin(m["key"])
            r = {"op": "result", "status": "launch_error"}
            try:
                if op == "build":
                    r = self.op_build(m)
                elif op == "build_batch":
                    r = self.op_build_batch(m)
                elif op == "run":
                    r = self.op_run(m)
                elif op == "ping":
                    r = {"op": "result", "status": "ok", "pid": os.getpid()}
                elif op == "forget":
                    r = self.op_forget(m)
                else:
                    r = {"op": "result", "status": "launch_error", "error": f"unknown op {op!r}"}
            except (ImportError, MemoryError) as e:   # the environment, not a kernel: nothing to judge
                r = {"op": "result", "status": "environment", "error": f"{type(e).__name__}: {e}"}
            except Exception as e:
                import traceback
                r = {"op": "result", "status": "launch_error",
                     "error": f"worker error: {type(e).__name__}: {e}",
                     "traceback": traceback.format_exc()}
            finally:
                if journal:
                    failed = r.get("status") not in ("ok", "need_inputs")
                    if failed:
                        self.programs.pop(m["key"], None)
                    self.shard.end(ok=not failed)
            r["id"] = m.get("id")
            self.send(r)


def _watch_parent(ppid: int) -> None:
    import signal
    import threading
    import time

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != ppid:
                os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def main_serve(spec: str) -> int:
    import signal
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
    if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
        sys.path.pop(0)      # don't let our module names shadow anything
    if not __package__:
        _package_by_path()
    if len(argv) >= 1 and argv[0] == "--list":
        return main_list()
    if len(argv) >= 2 and argv[0] == "--serve":
        return main_serve(argv[1])
    sys.stderr.write("usage: worker.py --list | --serve SPEC\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
