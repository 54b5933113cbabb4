"""In a worker process: its OpenCL device and context, and the programs it built (``build``, ``build_batch``).

A worker keeps every program it built (least recently used dropped past :data:`MAX_PROGRAMS`), so that a run of
a kernel built earlier pays no build; a program that builds but lacks the kernel asked for is a failed build
(PoCL has returned such programs after miscompiling). Kernels of one ``build_batch`` request are built as one
program where :mod:`.kbatch` can combine them (PoCL parses its headers once per program). Every entry written
to the kernel cache while a build ran belongs to that build (:mod:`.opencl_env.pocl_cache`): a failed one is
removed.
"""
from __future__ import annotations

import re
import time

import numpy as np

from ..vocab.status import Status
from . import kbatch

__all__ = ["DeviceContext", "Programs", "kernel_names", "MAX_PROGRAMS"]

MAX_PROGRAMS = 512
_TEMPFILE_RE = re.compile(r"(?:[^\s:'\"]*/)?tempfile_\w+\.cl")
# clBuildProgram codes that are the compiler's verdict on the source/options
_COMPILE_FAILURES = (-11, -15, -17, -43, -66)


def kernel_names(cl, prg) -> list[str] | None:
    """The kernels a built program has (None: the driver can't say). A program without kernels is not asked
    their names: NVIDIA's driver crashed on it."""
    try:
        if not prg.get_info(cl.program_info.NUM_KERNELS):
            return []
        return [n for n in str(prg.get_info(cl.program_info.KERNEL_NAMES)).split(";") if n]
    except Exception:  # noqa: BLE001 - a driver without the query: launch will tell
        return None


def no_kernel(name: str, names: list[str]) -> str:
    """The error of a build that has no kernel ``name`` (the program has ``names``)."""
    return (f"build produced no kernel {name!r} (the program has "
            f"{', '.join(repr(n) for n in names) or 'no kernel'})")


class DeviceContext:
    """The worker's device: pyopencl, the device, one context with a profiling queue, and the shard of the
    kernel cache this process writes (None: PoCL's cache is off)."""

    def __init__(self, cl, dev, shard=None):
        self.cl, self.np, self.dev, self.shard = cl, np, dev, shard
        # PoCL compiles a kernel's work-group function at its first launch; other drivers compile all
        # of it at the build, and may report a launch SUBMITTED until it ends (a hang is no compile)
        self.compiles_at_launch = "portable computing language" in dev.platform.name.lower()
        self.ctx = cl.Context([dev])
        self.queue = cl.CommandQueue(self.ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)

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

    def begin(self, key) -> None:
        """A build or run of ``key`` (or of the keys of kernels built as one program) starts: the kernel cache's
        journal notes it."""
        if self.shard is not None:
            self.shard.begin(key)

    def end(self, ok: bool) -> None:
        """... and is over: a failed one loses what it wrote to the kernel cache."""
        if self.shard is not None:
            self.shard.end(ok=ok)


class Programs:
    """The programs a worker built, by program key: entry dicts (ok, prg, log, error, build_s, kernels, ...)."""

    def __init__(self, dc: DeviceContext):
        self.dc = dc
        self.entries: dict[str, dict] = {}      # dict order: least recently used first

    def get(self, key: str, source: str, options: str, kernel: str = "") -> tuple[dict, bool]:
        """Return (entry, cached).  entry: dict(ok, prg, log, error, build_s).  A program that builds
        but lacks ``kernel`` is a failed build (PoCL has returned such programs after miscompiling)."""
        ent = self.entries.get(key)
        if ent is not None:
            self.entries[key] = self.entries.pop(key)  # LRU bump
            return ent, True
        ent = self.compile(source, options, [kernel] if kernel else [])
        if not ent.get("retire"):
            self.keep(key, ent)
        return ent, False

    def keep(self, key: str, ent: dict) -> None:
        self.entries[key] = ent
        while len(self.entries) > MAX_PROGRAMS:
            self.entries.pop(next(iter(self.entries)))

    def forget(self, key: str) -> None:
        self.entries.pop(key, None)

    def compile(self, source: str, options: str, kernels: list[str]) -> dict:
        """Build ``source``: dict(ok, prg, log, error, build_s, kernels); a build lacking one of ``kernels`` failed."""
        cl = self.dc.cl
        t0 = time.perf_counter()
        ok, err, prg, code = True, "", None, None
        try:
            prg = cl.Program(self.dc.ctx, source)
            prg.build(options=options or None, devices=[self.dc.dev])
        except cl.Error as e:   # a failed build: cl.RuntimeError, its message carries the log
            ok, err = False, str(e)
            code = getattr(e, "code", None)
        except Exception as e:
            ok, err, code = False, f"{type(e).__name__}: {e}", None
        build_s = time.perf_counter() - t0
        missing = ""
        if ok and kernels:
            names = kernel_names(cl, prg)
            lost = [k for k in kernels if names is not None and k not in names]
            if lost and names is not None:
                ok, code = False, None
                missing = no_kernel(lost[0], names)
        if not ok and not missing and code not in _COMPILE_FAILURES and not self.dc.healthy():
            # not a compiler verdict: the context broke (e.g. an earlier device
            # fault); don't cache, tell the parent to replace this worker
            return {"ok": False, "prg": None, "log": "", "build_s": build_s, "kernels": {},
                    "error": f"build failed: device context unusable: {err}",
                    "retire": True}
        log = self._log(prg)
        err = _TEMPFILE_RE.sub("<source>", err)
        if not ok:
            first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), "")
            head = missing or first or (err.strip().splitlines()[0] if err.strip() else "unknown error")
            err = "build failed: " + head
            if not log:
                log = err
        return {"ok": ok, "prg": prg if ok else None, "log": log, "error": err,
                "build_s": build_s, "kernels": {}}

    def _log(self, prg) -> str:
        """The compiler's own log (on a failed build too: the program object exists). PoCL compiles a random
        temp file (…/kcache/tempfile_AbC123.cl): it is named stably, so that the first error line can be part
        of a bug signature."""
        log = ""
        if prg is not None:
            try:
                log = prg.get_build_info(self.dc.dev, self.dc.cl.program_build_info.LOG) or ""
            except Exception:
                pass
        return _TEMPFILE_RE.sub("<source>", log.strip("\x00").rstrip())

    # --- the requests ---
    def op_build(self, m: dict) -> dict:
        ent, cached = self.get(m["key"], m["source"], m["options"], m.get("kernel", ""))
        if ent.get("retire"):
            return {"op": "result", "status": Status.CRASH, "retire": True, "build_log": "",
                    "error": ent["error"], "build_s": ent["build_s"], "cached": False}
        return {"op": "result", "status": Status.OK if ent["ok"] else Status.BUILD_ERROR,
                "build_log": ent["log"], "error": ent["error"],
                "build_s": 0.0 if cached else ent["build_s"], "cached": cached}

    def op_build_batch(self, m: dict) -> dict:
        """Build several kernels (``items``: key, source, kernel; one ``options``) as one program where
        :mod:`.kbatch` can combine them, else (or when that program does not build) one by one, each as
        ``op_build`` would.  Each kernel keeps its own entry (its key), sharing the program; its build time
        is its share of the program's.  Reply: ``results``, one ``op_build`` reply per item, in order."""
        items, options = m["items"], m["options"]
        fresh = self._build_together(items, options)
        results = []
        for it in items:
            key, it = it["key"], dict(it, options=options)
            if key in fresh:        # built just now, with the others: its share of the time, not "cached"
                results.append(dict(self.op_build(it), build_s=self.entries[key]["build_s"], cached=False,
                                    batched=self.entries[key]["batched"]))
                fresh.discard(key)
                continue
            alone = key not in self.entries
            if alone:
                self.dc.begin(key)
            r = self.op_build(it)
            if alone:
                self.dc.end(ok=r["status"] == Status.OK)
            if r.get("retire"):     # the context broke: the parent replaces this worker and builds the rest anew
                return r
            results.append(r)
        return {"op": "result", "status": Status.OK, "results": results}

    def _build_together(self, items: list[dict], options: str) -> set[str]:
        """Build the items not built yet as one program, where :mod:`.kbatch` can combine them; the keys that
        built so (none when they can't be combined or the program did not build: a compiler's verdict names
        its own kernel, so each is built alone then)."""
        todo = list({it["key"]: it for it in items if it["key"] not in self.entries}.values())   # once each
        if len(todo) < 2:
            return set()
        text = kbatch.combine([(it["source"], it["kernel"]) for it in todo])
        if text is None:
            return set()
        keys = [it["key"] for it in todo]
        names = [kbatch.alias(it["kernel"], i) for i, it in enumerate(todo)]
        self.dc.begin(keys)
        ent = self.compile(text, options, names)
        self.dc.end(ok=ent["ok"])
        if not ent["ok"]:
            return set()
        for key, name in zip(keys, names, strict=True):
            self.keep(key, {**ent, "alias": name, "kernels": {}, "build_s": ent["build_s"] / len(keys),
                            "batched": len(keys)})
        return set(keys)
