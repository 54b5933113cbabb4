"""The typed parts a log is split into (what :func:`~pytest_mlirtrace._internal.logs.parse_log` returns).

:class:`TraceLogParts` holds them all: module dumps, MLIR modules, benchmark blocks (with their
solutions), errors the log reports, kernel timings, code objects, the links between an MLIR module and
the rest, every other line, and :class:`LogError` for what is damaged in the log itself.  Each part
knows its 1-based log lines and writes itself as a dict (``parts.json``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..ir import Module, print_module
from ..vocab import PerfConfig, ProblemKey
from .mlir_scan import FuncScan, MLIRScan


@dataclass
class LogError:
    """Something damaged in the log itself (not an error the log reports)."""
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass
class OtherLine:
    line: int
    text: str
    kind: str                     # comment, driver, prompt, html, time, rocblas, warning, info, text, ...
    inside: str | None = None     # "mlir 0" / "module 2" when the line interrupted a block

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "kind": self.kind, "inside": self.inside}


@dataclass
class ModuleDump:
    index: int
    start_line: int
    end_line: int
    text: str                                  # the dump's lines as in the log (interleaved lines left out)
    name: str | None = None                    # module: "name" header, else the instructions' name prefix
    module: Module | None = None               # parsed (verify=False); built line by line if parse_module refused
    header_line: int | None = None
    instruction_lines: list[int] = field(default_factory=list)
    malformed: list[int] = field(default_factory=list)       # lines that look like instructions but do not parse
    interleaved: list[int] = field(default_factory=list)
    parse_error: str | None = None             # why parse_module refused the dump text
    unsupported: list[str] = field(default_factory=list)     # ops/types we cannot run, with the reason

    @property
    def prefix(self) -> str | None:
        return self.module.name if self.module is not None else None

    @property
    def n_instructions(self) -> int:
        return len(self.module.instructions) if self.module is not None else 0

    @property
    def ops(self) -> list[str]:
        return [i.op for i in self.module.instructions] if self.module is not None else []

    @property
    def runnable(self) -> bool:
        return self.module is not None and not self.malformed and not self.unsupported and not self.parse_error

    def to_dict(self) -> dict[str, Any]:
        mod_text = None
        if self.module is not None:
            try:
                mod_text = print_module(self.module)
            except Exception:
                mod_text = None
        return {"index": self.index, "start_line": self.start_line, "end_line": self.end_line, "name": self.name,
                "prefix": self.prefix, "n_instructions": self.n_instructions, "ops": self.ops,
                "header_line": self.header_line, "malformed": self.malformed, "interleaved": self.interleaved,
                "parse_error": self.parse_error, "unsupported": self.unsupported, "runnable": self.runnable,
                "text": self.text, "module_text": mod_text}


@dataclass
class MLIRPart:
    index: int
    start_line: int
    end_line: int
    text: str                                  # the MLIR text (interleaved stderr lines left out)
    complete: bool = True                      # False: the log cut it (or a brace is missing)
    bare_func: bool = False                    # a func.func without module { }
    scan: MLIRScan = field(default_factory=MLIRScan)
    kind: str = "migraphx"                     # migraphx / rock / lowered / unknown
    runnable: bool = False
    why_not: str | None = None
    unsupported: list[str] = field(default_factory=list)    # every reason, never dropped
    parsed: list[Any] | None = None            # the mlir layer's ParsedFunc list when it parsed the text
    parse_error: str | None = None             # the mlir layer's message when it did not
    checked_by: str = "scanner"                # "mlir" when the mlir layer judged the ops
    interleaved: list[int] = field(default_factory=list)
    hash: str | None = None                    # "mlir hash: ..." printed after it (mlirtrace's own sink)
    problems: list[dict[str, Any]] = field(default_factory=list)   # what its tuning key should say
    log_lines: list[int] = field(default_factory=list, repr=False)  # the log line of each line of .text
    missing_braces: int = 0                    # how many '}' an unclosed module lacks

    @property
    def funcs(self) -> list[FuncScan]:
        return self.scan.funcs

    @property
    def func_names(self) -> list[str]:
        names = [f.name for f in self.scan.funcs]
        if not names and self.parsed:
            names = [str(getattr(p, "name", "")) for p in self.parsed]
        return names

    @property
    def name(self) -> str | None:
        n = self.func_names
        return n[0] if n else None

    @property
    def syntax(self) -> str:
        return self.scan.syntax

    @property
    def attrs(self) -> dict[str, str]:
        if not self.scan.funcs:
            return {}
        out = {}
        for k, v in self.scan.funcs[0].attrs.items():
            v = re.sub(r"\s*:\s*i\d+$", "", v.strip())
            out[k] = v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v
        return out

    @property
    def arch(self) -> str | None:
        a = self.attrs
        return a.get("arch", a.get("rock.arch", a.get("mhal.arch")))

    @property
    def num_cu(self) -> int | None:
        a = self.attrs
        v = a.get("num_cu", a.get("rock.num_cu"))
        return int(v) if v is not None and re.fullmatch(r"\d+", v) else None

    @property
    def modules(self) -> list[Module]:
        """The ir modules the mlir layer gave back (empty when it did not parse the text)."""
        return [m for m in (getattr(p, "module", None) for p in (self.parsed or [])) if m is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "start_line": self.start_line, "end_line": self.end_line, "name": self.name,
                "func_names": self.func_names, "complete": self.complete, "bare_func": self.bare_func,
                "kind": self.kind, "syntax": self.syntax, "runnable": self.runnable, "why_not": self.why_not,
                "unsupported": self.unsupported, "checked_by": self.checked_by, "parse_error": self.parse_error,
                "attrs": self.attrs, "funcs": [f.to_dict() for f in self.scan.funcs],
                "dtypes": sorted(self.scan.dtypes), "interleaved": self.interleaved, "hash": self.hash,
                "problems": self.problems, "text": self.text}


@dataclass
class LoggedSolution:
    line: int
    config: PerfConfig
    status: str = "pending"          # timed / no_binary / failed / pending (no result line: cut or crashed)
    time_ms: float | None = None
    result_line: int | None = None
    detail: str | None = None        # a failure status, or the text after the config

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "config": self.config.to_dict(), "status": self.status, "time_ms": self.time_ms,
                "result_line": self.result_line, "detail": self.detail}


@dataclass
class BenchmarkBlock:
    index: int
    start_line: int
    end_line: int
    op: str | None = None
    n_configs: int | None = None
    header_line: int | None = None
    problem: ProblemKey | None = None
    problem_line: int | None = None
    solutions: list[LoggedSolution] = field(default_factory=list)
    fastest: PerfConfig | None = None
    fastest_line: int | None = None
    skipped: int | None = None
    skipped_line: int | None = None
    from_database: bool = False
    fastest_time_ms: float | None = None     # "Fastest time: <t>"
    slowest_time_ms: float | None = None     # "Slowest time: <t>"
    time_lines: list[int] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.fastest is not None

    @property
    def timed(self) -> list[LoggedSolution]:
        return [s for s in self.solutions if s.status == "timed"]

    @property
    def no_binary(self) -> list[LoggedSolution]:
        return [s for s in self.solutions if s.status == "no_binary"]

    @property
    def failed(self) -> list[LoggedSolution]:
        return [s for s in self.solutions if s.status == "failed"]

    @property
    def pending(self) -> list[LoggedSolution]:
        return [s for s in self.solutions if s.status == "pending"]

    @property
    def best(self) -> LoggedSolution | None:
        t = [s for s in self.timed if s.time_ms is not None]
        return min(t, key=lambda s: s.time_ms) if t else None

    def to_dict(self) -> dict[str, Any]:
        b = self.best
        return {"index": self.index, "start_line": self.start_line, "end_line": self.end_line, "op": self.op,
                "n_configs": self.n_configs, "header_line": self.header_line,
                "problem": self.problem.to_dict() if self.problem else None, "problem_line": self.problem_line,
                "solutions": [s.to_dict() for s in self.solutions],
                "fastest": self.fastest.to_dict() if self.fastest else None, "fastest_line": self.fastest_line,
                "skipped": self.skipped, "skipped_line": self.skipped_line, "from_database": self.from_database,
                "fastest_time_ms": self.fastest_time_ms, "slowest_time_ms": self.slowest_time_ms,
                "time_lines": self.time_lines,
                "complete": self.complete, "best": b.to_dict() if b else None}


@dataclass
class ErrorPart:
    index: int
    line: int
    end_line: int
    kind: str              # no_valid_tuned, no_solutions, invalid_mlir, backend_failed, compile_exception,
                           # terminate, mlir_diagnostic, traceback, crash, gpu_fault, hip_error, error, ...
    origin: str            # how it was printed: terminate / exception_in / what / diagnostic / traceback / line
    message: str
    text: list[str] = field(default_factory=list)
    problem: ProblemKey | None = None
    op: str | None = None               # gpu::mlir_op
    location: str | None = None         # mlir.cpp:771
    function: str | None = None         # run_high_level_pipeline
    detail: str | None = None           # the text after the last "Error: "
    mlir_op: str | None = None          # the op of a "see current operation" note
    exception_type: str | None = None
    context: list[tuple[int, str]] = field(default_factory=list)
    bench: int | None = None            # the benchmark block running when it was printed
    solution: str | None = None         # ... and the solution it was timing (no result line came)
    dump: str | None = None             # the .mxr a "Dump: <path>" line after it names
    dump_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "line": self.line, "end_line": self.end_line, "kind": self.kind,
                "origin": self.origin, "message": self.message, "text": self.text,
                "problem": self.problem.to_dict() if self.problem else None, "op": self.op,
                "location": self.location, "function": self.function, "detail": self.detail,
                "mlir_op": self.mlir_op, "exception_type": self.exception_type,
                "context": [list(c) for c in self.context], "bench": self.bench, "solution": self.solution,
                "dump": self.dump, "dump_line": self.dump_line}


@dataclass
class CodeObjectDump:
    """A compiled code object printed as comma-separated byte values (MIGRAPHX_TRACE_BENCHMARKING=3)."""
    index: int
    start_line: int
    end_line: int
    n_bytes: int = 0
    strings: list[str] = field(default_factory=list)
    kernel_names: list[str] = field(default_factory=list)
    data: bytes = field(default=b"", repr=False)      # the bytes read (the first/last may be cut)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "start_line": self.start_line, "end_line": self.end_line,
                "n_bytes": self.n_bytes, "strings": self.strings[:200], "kernel_names": self.kernel_names}


@dataclass
class KernelTiming:
    line: int
    name: str
    time_ms: float
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "name": self.name, "time_ms": self.time_ms, "text": self.text}


@dataclass
class Link:
    mlir: int
    module: int | None = None
    module_reason: str | None = None      # "structural match" / "adjacent"
    bench: int | None = None
    bench_reason: str | None = None       # "structural match" (problem key) / "adjacent"
    error: int | None = None
    error_reason: str | None = None
    timings: list[int] = field(default_factory=list)        # kernel timing lines naming its func
    code_objects: list[int] = field(default_factory=list)   # code objects holding its func's symbol
    module_score: tuple[int, int] | None = None             # (ops, params) agreement, 0..3 each

    def to_dict(self) -> dict[str, Any]:
        return {"mlir": self.mlir, "module": self.module, "module_reason": self.module_reason,
                "bench": self.bench, "bench_reason": self.bench_reason, "error": self.error,
                "error_reason": self.error_reason, "timings": self.timings, "code_objects": self.code_objects,
                "module_score": list(self.module_score) if self.module_score else None}


@dataclass
class TraceLogParts:
    source: str
    n_lines: int = 0
    module_dumps: list[ModuleDump] = field(default_factory=list)
    mlir_modules: list[MLIRPart] = field(default_factory=list)
    benchmarks: list[BenchmarkBlock] = field(default_factory=list)
    errors: list[ErrorPart] = field(default_factory=list)
    other: list[OtherLine] = field(default_factory=list)
    errors_found: list[LogError] = field(default_factory=list)
    links: dict[int, Link] = field(default_factory=dict)      # mlir index -> Link
    kernel_timings: list[KernelTiming] = field(default_factory=list)
    code_objects: list[CodeObjectDump] = field(default_factory=list)
    blank_lines: int = 0
    mlir_layer: bool = False          # whether pytest_mlirtrace._internal.mlir was there to parse the MLIR

    # ---- views ---------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return {"module_dumps": len(self.module_dumps), "mlir_modules": len(self.mlir_modules),
                "benchmarks": len(self.benchmarks),
                "solutions": sum(len(b.solutions) for b in self.benchmarks),
                "timed": sum(len(b.timed) for b in self.benchmarks), "errors": len(self.errors),
                "other": len(self.other), "errors_found": len(self.errors_found),
                "kernel_timings": len(self.kernel_timings), "code_objects": len(self.code_objects),
                "blank_lines": self.blank_lines}

    def unrecognised(self) -> list[OtherLine]:
        """The lines no reader knows (kept in ``other`` with kind ``text``/``unread``), in log order."""
        return [o for o in self.other if o.kind in ("text", "unread")]

    def other_kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.other:
            out[o.kind] = out.get(o.kind, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "n_lines": self.n_lines, "mlir_layer": self.mlir_layer,
                "counts": self.counts(), "module_dumps": [d.to_dict() for d in self.module_dumps],
                "mlir_modules": [m.to_dict() for m in self.mlir_modules],
                "benchmarks": [b.to_dict() for b in self.benchmarks], "errors": [e.to_dict() for e in self.errors],
                "other": [o.to_dict() for o in self.other], "errors_found": [e.to_dict() for e in self.errors_found],
                "links": {str(k): v.to_dict() for k, v in self.links.items()},
                "kernel_timings": [t.to_dict() for t in self.kernel_timings],
                "code_objects": [c.to_dict() for c in self.code_objects], "blank_lines": self.blank_lines}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def summary(self) -> str:
        c = self.counts()
        out = [f"{self.source}: {self.n_lines} lines: {c['module_dumps']} module dumps, {c['mlir_modules']} MLIR "
               f"modules, {c['benchmarks']} benchmark blocks ({c['solutions']} solutions, {c['timed']} timed), "
               f"{c['errors']} errors, {c['other']} other lines, {len(self.errors_found)} problems found"]
        for d in self.module_dumps:
            head = f"  module dump {d.index} (lines {d.start_line}-{d.end_line})"
            nm = f" {d.name}" if d.name else ""
            extra = []
            if d.malformed:
                extra.append(f"{len(d.malformed)} malformed line(s)")
            if d.unsupported:
                extra.append("cannot run: " + "; ".join(d.unsupported))
            if d.parse_error:
                extra.append(f"parse: {d.parse_error}")
            out.append(f"{head}{nm}: {d.n_instructions} instructions" + (f" [{', '.join(extra)}]" if extra else ""))
        for m in self.mlir_modules:
            st = "runnable" if m.runnable else f"not runnable: {m.why_not}"
            out.append(f"  mlir {m.index} (lines {m.start_line}-{m.end_line}) @{m.name or '?'} [{m.kind}, "
                       f"{m.syntax}{'' if m.complete else ', truncated'}]: {st}")
            ln = self.links.get(m.index)
            if ln is not None:
                bits = []
                if ln.module is not None:
                    bits.append(f"module dump {ln.module} ({ln.module_reason})")
                if ln.bench is not None:
                    bits.append(f"benchmark {ln.bench} ({ln.bench_reason})")
                if ln.error is not None:
                    bits.append(f"error {ln.error} ({ln.error_reason})")
                if ln.timings:
                    bits.append(f"kernel timings {ln.timings}")
                if ln.code_objects:
                    bits.append(f"code objects {ln.code_objects}")
                out.append("      linked to: " + (", ".join(bits) if bits else "nothing"))
        for b in self.benchmarks:
            head = f"  benchmark {b.index} (lines {b.start_line}-{b.end_line})"
            if b.op:
                head += f" {b.op}"
            if b.n_configs is not None:
                head += f": {b.n_configs} configs"
            bits = []
            if b.problem:
                bits.append(f"problem {b.problem.short()}")
            if b.solutions:
                bits.append(f"{len(b.solutions)} solutions ({len(b.timed)} timed, {len(b.no_binary)} no binary, "
                            f"{len(b.failed)} failed, {len(b.pending)} without result)")
            if b.pending and b.fastest is None:
                bits.append(f"stopped at solution {b.pending[-1].config.raw} (line {b.pending[-1].line}, no result)")
            if b.fastest:
                bits.append(f"fastest {b.fastest.raw}")
            elif b.best:
                bits.append(f"no 'Fastest solution' line; best timed {b.best.config.raw} {b.best.time_ms}ms")
            if b.skipped is not None:
                bits.append(f"skipped {b.skipped}")
            if b.fastest_time_ms is not None or b.slowest_time_ms is not None:
                bits.append(f"fastest time {b.fastest_time_ms}ms, slowest time {b.slowest_time_ms}ms")
            out.append(head + ("; " + "; ".join(bits) if bits else ""))
        for e in self.errors:
            during = f" [while benchmarking {e.solution} of benchmark {e.bench}]" if e.solution else ""
            out.append(f"  error {e.index} (line {e.line}) {e.kind}: {e.message[:160]}{during}"
                       + (f"; dump {e.dump} (line {e.dump_line})" if e.dump else ""))
        for t in self.kernel_timings:
            out.append(f"  kernel timing (line {t.line}) {t.name}: {t.time_ms}ms")
        for co in self.code_objects:
            out.append(f"  code object {co.index} (lines {co.start_line}-{co.end_line}): {co.n_bytes} bytes"
                       + (f", kernels {', '.join(co.kernel_names)}" if co.kernel_names else ""))
        if self.other:
            out.append("  other lines: " + ", ".join(f"{k} {n}" for k, n in sorted(self.other_kinds().items())))
        unknown = self.unrecognised()
        if unknown:     # their text is in parts.json / import-lines.json (a log line is not echoed as ours)
            nums = [str(o.line) for o in unknown]
            out.append(f"  unrecognised lines ({len(unknown)}): line " + ", ".join(nums[:50])
                       + (f", ... ({len(nums) - 50} more)" if len(nums) > 50 else ""))
        if self.errors_found:
            out.append("  problems found in the log:")
            out.extend(f"    line {e.line}: {e.message}" for e in self.errors_found)
        return "\n".join(out) + "\n"
