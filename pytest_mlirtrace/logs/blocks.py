"""Benchmark blocks (``MIGRAPHX_TRACE_BENCHMARKING``) and the code objects level 3 prints.

A block opens at ``Benchmarking <op>: N configs`` (or at a ``Problem:`` / solution line with no open
block), takes the ``Problem:`` key, each ``Benchmarking solution: <cfg>`` with its result line
(``<t>ms``, ``No binary``, ``Failed: <status>``), and closes at ``Fastest solution: <cfg>``; a
``Skipped N configs for <op>`` line goes with the block just closed.  Keys and configs are read by
:mod:`pytest_mlirtrace.vocab`.
"""
from __future__ import annotations

import re

from ..vocab.perf_config import parse_perf_config
from ..vocab.problem_key import ProblemKey, parse_problem_key
from .lines import BENCH_HDR, BENCH_TIME, FAILED_SOL, FASTEST, NOBIN, PROBLEM, SKIPPED, SOLUTION, TIME, Line
from .parts import BenchmarkBlock, CodeObjectDump, Solution
from .reader import Reader


def new_bench(r: Reader, L: Line) -> BenchmarkBlock:
    """Open a new benchmark block at ``L`` (the open one, if any, is closed)."""
    close_bench(r)
    b = BenchmarkBlock(index=len(r.parts.benchmarks), start_line=L.no, end_line=L.no)
    r.parts.benchmarks.append(b)
    r.bench = b
    r.closed_bench = None
    return b


def close_bench(r: Reader) -> None:
    """No block open, no solution waiting for its result line."""
    r.bench = None
    r.pending_solution = None


def bench_line(r: Reader, i: int) -> bool:
    """Read line ``i`` if it belongs to a benchmark block (header, key, solution, result, fastest,
    skipped); whether it did."""
    L = r.lines[i]
    t = L.text
    m = BENCH_HDR.match(t)
    if m:
        b = new_bench(r, L)
        b.op, b.n_configs, b.header_line = m.group("op"), int(m.group("n")), L.no
        b.from_database = "tuning database" in m.group("tail")
        return True
    m = PROBLEM.match(t)
    if m and "no config provided" not in t:
        b = r.bench
        if b is None or b.problem is not None or b.solutions:
            b = new_bench(r, L)
        key = m.group("key").strip()
        b.problem = parse_problem_key(key) or ProblemKey(raw=key)
        b.problem_line = L.no
        b.end_line = L.no
        return True
    m = FASTEST.match(t)
    if m:
        b = r.bench
        if b is None or b.fastest is not None:
            b = new_bench(r, L)
        b.fastest, b.fastest_line, b.end_line = parse_perf_config(m.group("cfg")), L.no, L.no
        close_bench(r)
        r.closed_bench = b
        return True
    m = BENCH_TIME.match(t)
    if m:
        b = r.bench or r.closed_bench or (r.parts.benchmarks[-1] if r.parts.benchmarks else None) or new_bench(r, L)
        setattr(b, "fastest_time_ms" if m.group("which") == "Fastest" else "slowest_time_ms", float(m.group("t")))
        b.time_lines.append(L.no)
        b.end_line = max(b.end_line, L.no)
        return True
    m = SOLUTION.match(t)
    if m and not t.lstrip().lower().startswith("fastest"):
        b = r.bench or new_bench(r, L)
        cfg = m.group("cfg").strip()
        detail = None
        mm = re.match(r"^(?P<cfg>\S+)\s+(?P<tail>(?:mlir|span|=>)\s.*)$", cfg)
        if mm:
            cfg, detail = mm.group("cfg"), mm.group("tail")
        s = Solution(line=L.no, config=parse_perf_config(cfg), detail=detail)
        b.solutions.append(s)
        b.end_line = L.no
        r.pending_solution = s
        return True
    m = SKIPPED.search(t)
    if m:
        b = r.closed_bench if (r.closed_bench is not None and r.closed_bench.skipped is None
                               and r.bench is None) else None
        if b is None:
            b = r.bench if (r.bench is not None and r.bench.skipped is None) else new_bench(r, L)
            b.op = b.op or m.group("op")
        b.skipped, b.skipped_line, b.end_line = int(m.group("n")), L.no, L.no
        r.closed_bench = None
        if b is r.bench:
            close_bench(r)
        return True
    s = r.pending_solution
    if s is not None and r.bench is not None:
        m = TIME.match(t)
        if m:
            s.status, s.result_line = "timed", L.no
            try:
                s.time_ms = float(m.group("t"))
            except ValueError:
                s.time_ms = None
            r.bench.end_line = L.no
            r.pending_solution = None
            return True
        if NOBIN.match(t):
            s.status, s.result_line = "no_binary", L.no
            r.bench.end_line = L.no
            r.pending_solution = None
            return True
        m = FAILED_SOL.match(t)
        if m:
            s.status, s.result_line, s.detail = "failed", L.no, m.group("status")
            r.bench.end_line = L.no
            r.pending_solution = None
            return True
    return False


def bytes_line(r: Reader, i: int) -> None:
    """A line of code-object bytes: a new code object, or more of the one the line before began."""
    L = r.lines[i]
    vals = [int(x) for x in re.split(r"[,\s]+", L.text) if x.isdigit()]
    data = bytes(v for v in vals if v <= 255)
    if r.parts.code_objects and r.bytes_idx == i - 1:
        co = r.parts.code_objects[-1]
        co.end_line = L.no
        co.data += data
    else:
        co = CodeObjectDump(index=len(r.parts.code_objects), start_line=L.no, end_line=L.no)
        co.data = data
        r.parts.code_objects.append(co)
    r.bytes_idx = i
    co.n_bytes = len(co.data)
    strs = [s.decode("ascii") for s in re.findall(rb"[\x20-\x7e]{4,}", co.data)]
    co.strings = strs
    names = []
    for s in strs:
        for k in re.findall(r"\b(mlir_\w+|\w+_kernel)\b", s):
            if k not in names:
                names.append(k)
    co.kernel_names = names
