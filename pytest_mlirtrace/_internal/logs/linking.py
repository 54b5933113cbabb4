"""Linking: each MLIR module to the module dump it came from, its benchmark block and its error.

A module dump links by structure (the same ops and parameter types, straight or as the ``mlir`` layer
emits the dump), else by adjacency; a benchmark block or error by its problem key (the key's sizes
against what the MLIR's dots and convolutions say, :func:`derived_problems`), else by adjacency with no
other MLIR module between.  Each MLIR module looks only at the parts near it (a window of
:data:`_WINDOW` on each side), so a log with thousands of modules links in linear time.
"""
from __future__ import annotations

import bisect
import re
from math import prod
from typing import Any

from ..vocab import ProblemKey
from .mlir_scan import FuncScan, scan_mlir
from .parts import Link, MLIRPart, ModuleDump, TraceLogParts

_WINDOW = 32


def link(parts: TraceLogParts, layer: Any = None) -> None:
    """Fill ``parts.links`` (one :class:`Link` per MLIR module); ``layer`` may emit a dump as MLIR."""
    _Linker(parts, layer).run()


class _Linker:
    """Links the parts of one log; the start lines of the MLIR modules, benchmark blocks and errors (in
    log order) find the parts near a module."""

    def __init__(self, parts: TraceLogParts, layer: Any):
        self.parts = parts
        self.layer = layer
        self._mlir_starts = [m.start_line for m in parts.mlir_modules]
        self._mlir_ends = [m.end_line for m in parts.mlir_modules]
        self._bench_starts = [b.start_line for b in parts.benchmarks]
        self._error_starts = [e.line for e in parts.errors]

    def run(self) -> None:
        mlirs = self.parts.mlir_modules
        dumps = self.parts.module_dumps
        dump_ends = [d.end_line for d in dumps]
        dump_sigs: dict[int, list] = {}
        fsigs = {m.index: [(f, _norm_ops(f.migraphx_ops()),
                            [(t.lens, t.dtype) if t.lens is not None else None for t in f.args]) for f in m.funcs]
                 for m in mlirs}
        taken: dict[int, int] = {}     # dump index -> the mlir index it matched structurally
        for m in mlirs:
            ln = Link(mlir=m.index)
            self.parts.links[m.index] = ln
            pos = bisect.bisect_right(dump_ends, m.start_line)
            best = None
            for d in dumps[max(0, pos - _WINDOW):pos + _WINDOW]:
                if d.index not in dump_sigs:
                    dump_sigs[d.index] = self._dump_sigs(d)
                for f, ops, args in fsigs[m.index]:
                    for sig in dump_sigs[d.index]:
                        sc = _struct_score(f, sig, m.complete, ops, args)
                        if sc[0] >= 2 and sc[1] >= 2:
                            dist = m.start_line - d.end_line
                            rank = (sc[0] + sc[1], dist >= 0, -abs(dist))
                            if best is None or rank > best[0]:
                                best = (rank, d.index, sc)
            if best is not None:
                ln.module, ln.module_reason, ln.module_score = best[1], "structural match", best[2]
                taken.setdefault(best[1], m.index)
        timings_by_name: dict[str, list[int]] = {}
        for k, t in enumerate(self.parts.kernel_timings):
            timings_by_name.setdefault(t.name, []).append(k)
        # a code object goes with the last MLIR module of its kernel's name printed before it
        # (or the first one after it, when none was printed before)
        by_name: dict[str, list[MLIRPart]] = {}
        for m in mlirs:
            for nm in set(m.func_names):
                by_name.setdefault(nm, []).append(m)
        name_starts = {nm: [x.start_line for x in ms] for nm, ms in by_name.items()}
        co_by_mlir: dict[int, set[int]] = {}
        for co in self.parts.code_objects:
            for nm in co.kernel_names:
                ms = by_name.get(nm)
                if not ms:
                    continue
                k = bisect.bisect_right(name_starts[nm], co.start_line) - 1
                co_by_mlir.setdefault(ms[max(k, 0)].index, set()).add(co.index)
        for m in mlirs:
            ln = self.parts.links[m.index]
            prev_end = self._mlir_ends[m.index - 1] if m.index > 0 else 0
            if ln.module is None:
                pos = bisect.bisect_right(dump_ends, m.start_line)
                for d in reversed(dumps[max(0, pos - _WINDOW):pos]):
                    if d.start_line <= prev_end:
                        break
                    if taken.get(d.index, m.index) != m.index:
                        continue
                    ln.module, ln.module_reason = d.index, "adjacent"
                    sigs = dump_sigs.get(d.index)
                    if sigs is None:
                        sigs = dump_sigs[d.index] = self._dump_sigs(d)
                    if fsigs[m.index] and sigs:
                        f, ops, args = fsigs[m.index][0]
                        ln.module_score = max(_struct_score(f, sg, m.complete, ops, args) for sg in sigs)
                    break
            self._link_bench(m, ln)
            self._link_error(m, ln)
            names = m.func_names
            ln.timings = sorted({k for nm in names for k in timings_by_name.get(nm, [])})
            ln.code_objects = sorted(co_by_mlir.get(m.index, ()))

    def _between_other_mlir(self, m: MLIRPart, lo: int, hi: int) -> bool:
        """Is another MLIR module printed strictly between lines ``lo`` and ``hi``?"""
        lo, hi = min(lo, hi), max(lo, hi)
        i = bisect.bisect_right(self._mlir_starts, lo)
        while i < len(self._mlir_starts) and self._mlir_ends[i] < hi:
            if i != m.index:
                return True
            i += 1
        return False

    def _key_vs_mlir(self, key: ProblemKey | None, m: MLIRPart, arch: str | None) -> bool | None:
        if key is None:
            return None
        r = key_matches(key.fields, m.problems)
        # "gfx90a" and "gfx90a:sramecc+:xnack-" are one chip; an empty arch (rocMLIR tests) says nothing
        if r is not False and key.arch and arch and key.arch.split(":")[0] != arch.split(":")[0]:
            return False
        return r

    @staticmethod
    def _near(parts: list, starts: list[int], m: MLIRPart) -> list:
        pos = bisect.bisect_left(starts, m.start_line)
        return parts[max(0, pos - _WINDOW):pos + _WINDOW]

    def _link_bench(self, m: MLIRPart, ln: Link) -> None:
        arch = m.arch
        near = self._near(self.parts.benchmarks, self._bench_starts, m)
        best = None
        for b in near:
            if self._key_vs_mlir(b.problem, m, arch) is True:
                dist = _dist(m, b.start_line, b.end_line)
                if best is None or dist < best[0]:
                    best = (dist, b.index)
        if best is not None:
            ln.bench, ln.bench_reason = best[1], "structural match"
            return
        cands = []
        for b in near:
            if self._key_vs_mlir(b.problem, m, arch) is False:
                continue
            lo, hi = (b.end_line, m.start_line) if b.end_line <= m.start_line else (m.end_line, b.start_line)
            if self._between_other_mlir(m, lo, hi):
                continue
            cands.append((_dist(m, b.start_line, b.end_line), b.index))
        if cands:
            ln.bench, ln.bench_reason = min(cands)[1], "adjacent"

    def _link_error(self, m: MLIRPart, ln: Link) -> None:
        arch = m.arch
        best = None
        for e in self._near(self.parts.errors, self._error_starts, m):
            r = self._key_vs_mlir(e.problem, m, arch)
            dist = _dist(m, e.line, e.end_line)
            if r is True:
                cand = (0, dist, e.index, "structural match")
            elif r is None and dist <= 3 and not self._between_other_mlir(m, e.line, m.start_line):
                cand = (1, dist, e.index, "adjacent")
            else:
                continue
            if best is None or cand < best:
                best = cand
        if best is not None:
            ln.error, ln.error_reason = best[2], best[3]

    def _dump_sigs(self, d: ModuleDump) -> list[tuple[list, list]]:
        """(ops, params) of a dump: straight from its instructions, and as the mlir layer emits it."""
        mod = d.module
        if mod is None:
            return []
        out = []
        try:
            params = []
            for ins in sorted((x for x in mod.instructions if x.op == "@param"), key=lambda x: x.param or ""):
                params.append((tuple(ins.shape.lens), ins.shape.dtype.mlir) if ins.shape is not None else None)
            ops = _norm_ops([x.op for x in mod.instructions if not x.op.startswith("@")])
            out.append((ops, params))
        except Exception:
            pass
        if self.layer is not None and hasattr(self.layer, "emit_mlir") and not d.malformed:
            try:
                emitted = self.layer.emit_mlir(mod)
                sc = scan_mlir(str(emitted))
                if sc.funcs:
                    f = sc.funcs[0]
                    out.append((_norm_ops(f.migraphx_ops()),
                                [(t.lens, t.dtype) if t.lens is not None else None for t in f.args]))
            except Exception:
                pass
        return out


_SAME_AS_RESHAPE = {"squeeze", "unsqueeze", "flatten", "reshape_lazy"}


def _norm_ops(ops: list[str]) -> list[str]:
    out = []
    for op in ops:
        op = op.split(".", 1)[1] if op.startswith("migraphx.") else op
        if op in ("contiguous", "literal", "@literal"):
            continue
        out.append("reshape" if op in _SAME_AS_RESHAPE else op)
    return out


def _struct_score(f: FuncScan, sig: tuple[list, list], complete: bool, m_ops: list[str] | None = None,
                  m_args: list | None = None) -> tuple[int, int]:
    """How well a func's (ops, argument types) agree with a dump's: (ops 0..3, params 0..3)."""
    d_ops, d_params = sig
    if m_ops is None:
        m_ops = _norm_ops(f.migraphx_ops())
    if m_args is None:
        m_args = [(t.lens, t.dtype) if t.lens is not None else None for t in f.args]
    if not m_ops:
        o = 0
    elif m_ops == d_ops:
        o = 3
    elif not complete and d_ops[:len(m_ops)] == m_ops:
        o = 2
    elif sorted(m_ops) == sorted(d_ops):
        o = 2
    else:
        o = 0
    if not m_args or None in d_params:
        a = 0
    elif m_args == d_params:
        a = 3
    elif None not in m_args and sorted(m_args, key=str) == sorted(d_params, key=str):
        a = 2
    elif not f.signature_complete and d_params[:len(m_args)] == m_args:
        a = 1
    else:
        a = 0
    return o, a


def _dist(m: MLIRPart, a: int, b: int) -> int:
    if b < m.start_line:
        return m.start_line - b
    if a > m.end_line:
        return a - m.end_line
    return 0


# -------------------------------------------------------- derived problems --
def derived_problems(f: FuncScan) -> list[dict[str, Any]]:
    """What the key of ``f``'s tuning problem could say: gemm m/n/k/g/t, attention or conv sizes.

    Several candidates when the MLIR allows more than one reading (two dots: attention, or a gemm
    keyed by its first dot); empty when no dot/convolution with known operand types is visible.
    """
    gemms = [o for o in f.ops if o.short in ("dot", "quant_dot") and len(o.operands) >= 2
             and all(t.lens is not None and len(t.lens) >= 2 for t in o.operands[:2])]
    convs = [o for o in f.ops if o.short in ("convolution", "quant_convolution") and len(o.operands) >= 2
             and all(t.lens is not None and len(t.lens) >= 3 for t in o.operands[:2])]
    out: list[dict[str, Any]] = []
    if len(gemms) >= 2:   # attention: Q*K^T then *V
        a, b = gemms[0].operands[:2]
        v = gemms[1].operands[1]
        out.append({"kind": "attention", "t": a.dtype, "seq_len_q": a.lens[-2], "head_dim_qk": a.lens[-1],
                    "seq_len_k": b.lens[-1], "head_dim_v": v.lens[-1],
                    "g": prod(a.lens[:-2]) if len(a.lens) > 2 else 1})
    if gemms:
        a, b = gemms[0].operands[:2]
        out.append({"kind": "gemm", "t": a.dtype, "m": a.lens[-2], "k": a.lens[-1], "n": b.lens[-1],
                    "g": prod(a.lens[:-2]) if len(a.lens) > 2 else 1})
    if convs:
        x, w = convs[0].operands[:2]
        d = {"kind": "conv", "t": x.dtype, "n": x.lens[0], "c": x.lens[1], "k": w.lens[0]}
        sp, fs = x.lens[2:], w.lens[2:]
        if len(sp) == 2 and len(fs) == 2:
            d.update({"H": sp[0], "W": sp[1], "y": fs[0], "x": fs[1]})
        out.append(d)
    return out


def _key_matches_one(fields: dict[str, str], derived: dict[str, Any]) -> bool | None:
    names = [k for k in derived if k not in ("kind", "t", "g") and derived[k] is not None]
    comparable = [k for k in names if k in fields and re.fullmatch(r"-?\d+", str(fields[k]))]
    if derived.get("kind") == "gemm" and not all(k in comparable for k in ("m", "n", "k")):
        return None
    if not comparable:
        return None
    for k in comparable:
        if int(fields[k]) != int(derived[k]):
            return False
    t = derived.get("t")
    if t and fields.get("t") and fields["t"] != t and (fields["t"], t) not in {("i8", "si8")}:
        return False
    return True


def key_matches(fields: dict[str, str], derived: list[dict[str, Any]]) -> bool | None:
    """True/False when a key's fields can be compared with any derived problem; None when none can."""
    if not derived or not fields:
        return None
    res = [_key_matches_one(fields, d) for d in derived]
    if any(r is True for r in res):
        return True
    if any(r is False for r in res):
        return False
    return None
