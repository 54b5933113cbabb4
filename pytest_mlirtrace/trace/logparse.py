"""Split a real MIGraphX / rocMLIR trace log into its parts (``mlirtrace import-trace LOG``).

A log from ``MIGRAPHX_TRACE_MLIR``, ``MIGRAPHX_TRACE_BENCHMARKING`` (levels 1-3) or
``MIGRAPHX_TRACE_COMPILE`` mixes, line by line:

* module dumps -- MIGraphX module text (``@4 = transpose[...](@3) -> half_type, {..}, {..}``, with or
  without ``target_id`` and ``mlir_main:pointwise4:`` name prefixes, maybe after a ``module: "main"``
  header), parsed with :func:`pytest_mlirtrace.ir.text.parse_module` where possible;
* MLIR modules -- ``module {`` ... ``}`` (or bare ``func.func``) in the migraphx dialect with ``tensor<>``
  or ``!migraphx.shaped<>`` types, or lowered (rock dialect, memrefs) which we keep and classify;
* benchmarking blocks -- ``Benchmarking gpu::mlir_op: N configs``, ``Problem: <key>``, per solution
  ``Benchmarking solution: <cfg>`` then ``<t>ms`` or ``No binary``, ``Fastest solution: <cfg>``,
  ``Skipped N configs for ...``;
* errors -- ``terminate called ...`` / ``what():``, ``Exception in gpu::mlir_op: ...``, MLIR
  diagnostics, "Invalid MLIR created", "MLIR backend compilation failed", "No valid tuned
  compilation", Python tracebacks, crashes ...;
* everything else, kept and counted.

:func:`parse_log` never raises for bad input: what is damaged (a truncated MLIR module, a malformed
instruction line, unbalanced braces) becomes a :class:`LogError` in ``errors_found`` and the rest of
the log still imports.  Line numbers are 1-based lines of the text given (HTML-rendered logs, whose
lines were joined with ``<br />``, and flattened error messages are split into logical lines that
keep the number of the line they came from).
"""
from __future__ import annotations

import html
import importlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..ir.module import Instruction, Module
from .log_keys import PerfConfig, ProblemKey, parse_perf_config, parse_problem_key
from .log_mlirscan import (FuncScan, MLIRScan, derived_problems, key_matches, scan_mlir, scan_reasons,
                           unquoted)

__all__ = [
    "parse_log", "TraceLogParts", "LogError", "OtherLine", "ModuleDump", "MLIRPart", "BenchmarkBlock",
    "Solution", "ErrorPart", "CodeObjectDump", "KernelTiming", "Link", "ProblemKey", "PerfConfig",
    "parse_problem_key", "parse_perf_config",
]


# =============================================================== the parts ==
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
                from ..ir.text import print_module
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
class Solution:
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
    solutions: list[Solution] = field(default_factory=list)
    fastest: PerfConfig | None = None
    fastest_line: int | None = None
    skipped: int | None = None
    skipped_line: int | None = None
    from_database: bool = False

    @property
    def complete(self) -> bool:
        return self.fastest is not None

    @property
    def timed(self) -> list[Solution]:
        return [s for s in self.solutions if s.status == "timed"]

    @property
    def no_binary(self) -> list[Solution]:
        return [s for s in self.solutions if s.status == "no_binary"]

    @property
    def failed(self) -> list[Solution]:
        return [s for s in self.solutions if s.status == "failed"]

    @property
    def pending(self) -> list[Solution]:
        return [s for s in self.solutions if s.status == "pending"]

    @property
    def best(self) -> Solution | None:
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

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "line": self.line, "end_line": self.end_line, "kind": self.kind,
                "origin": self.origin, "message": self.message, "text": self.text,
                "problem": self.problem.to_dict() if self.problem else None, "op": self.op,
                "location": self.location, "function": self.function, "detail": self.detail,
                "mlir_op": self.mlir_op, "exception_type": self.exception_type,
                "context": [list(c) for c in self.context], "bench": self.bench, "solution": self.solution}


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
    mlir_layer: bool = False          # whether pytest_mlirtrace.mlir was there to parse the MLIR

    # ---- views ---------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        return {"module_dumps": len(self.module_dumps), "mlir_modules": len(self.mlir_modules),
                "benchmarks": len(self.benchmarks),
                "solutions": sum(len(b.solutions) for b in self.benchmarks),
                "timed": sum(len(b.timed) for b in self.benchmarks), "errors": len(self.errors),
                "other": len(self.other), "errors_found": len(self.errors_found),
                "kernel_timings": len(self.kernel_timings), "code_objects": len(self.code_objects),
                "blank_lines": self.blank_lines}

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
            out.append(head + ("; " + "; ".join(bits) if bits else ""))
        for e in self.errors:
            during = f" [while benchmarking {e.solution} of benchmark {e.bench}]" if e.solution else ""
            out.append(f"  error {e.index} (line {e.line}) {e.kind}: {e.message[:160]}{during}")
        for t in self.kernel_timings:
            out.append(f"  kernel timing (line {t.line}) {t.name}: {t.time_ms}ms")
        for co in self.code_objects:
            out.append(f"  code object {co.index} (lines {co.start_line}-{co.end_line}): {co.n_bytes} bytes"
                       + (f", kernels {', '.join(co.kernel_names)}" if co.kernel_names else ""))
        if self.other:
            out.append("  other lines: " + ", ".join(f"{k} {n}" for k, n in sorted(self.other_kinds().items())))
        if self.errors_found:
            out.append("  problems found in the log:")
            out.extend(f"    line {e.line}: {e.message}" for e in self.errors_found)
        return "\n".join(out) + "\n"


# ================================================================= lexing ==
@dataclass
class _Line:
    no: int        # physical line number (1-based)
    text: str
    html: bool = False


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_HTML_HINT = re.compile(r"<br\s*/?>|&(?:nbsp|lt|gt|amp|quot|#\d+);|</?(?:summary|details)\b", re.I)
_HTML_BREAK = re.compile(r"<br\s*/?>|</?(?:summary|details|p|div|pre|li|ul|ol|tr|table)(?:\s[^<>]*)?>", re.I)
_HTML_TAG = re.compile(r"</?(?:code|b|i|em|strong|span|tt|td|th|a)(?:\s[^<>]*)?>", re.I)
_FLAT_MARKERS = re.compile(r"\s(?=MLIR Fused Kernel:)|(?<=MLIR Fused Kernel:)\s")


def _logical_lines(text: str) -> tuple[list[_Line], int]:
    phys = text.split("\n")
    if phys and phys[-1] == "":
        phys.pop()
    out: list[_Line] = []
    for no, raw in enumerate(phys, 1):
        line = raw.rstrip("\r")
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        if _COMMENT.match(line):
            out.append(_Line(no, line))
        elif _HTML_HINT.search(line):
            for piece in _HTML_BREAK.split(line):
                piece = html.unescape(_HTML_TAG.sub("", piece)).replace("\xa0", " ")
                out.extend(_Line(no, p, True) for p in _flat_split(piece))
        else:
            out.extend(_Line(no, p) for p in _flat_split(line))
    return out, len(phys)


def _flat_split(line: str) -> list[str]:
    """A flattened error message: the key, "MLIR Fused Kernel:" and the module on one line."""
    if "MLIR Fused Kernel:" not in line or len(line) < 40:
        return [line]
    parts = [p for p in _FLAT_MARKERS.split(line)]
    return parts if len(parts) > 1 else [line]


# ============================================================ recognisers ==
_BLANK = re.compile(r"^\s*$")
_COMMENT = re.compile(r"^\s*#(?![\w.$-]+\s*=)")
_ALIAS = re.compile(r"^\s*#[\w.$-]+\s*=")
_MLIR_START = re.compile(r"^\s*(?:module\b(?!:)[^{}]*\{|func\.func\b)")
_MLIR_BODY = re.compile(r'''^\s*(?:
      %[\w.$#-]+
    | \^[\w.$-]+
    | "?[A-Za-z_][\w$]*\.[\w.$]+"?(?:\s|\(|<|$)
    | return\b
    | [{})\]]
    | //
    | module\b(?!:)
    | func\.func\b
    | \#[\w.$-]+\s*=
    | attributes\b
    | ->
    | loc\(
    )''', re.X)
_MLIR_CONT = re.compile(r'^(?:\s+\S|[:!<({\[,"=])')
_MODULE_HDR = re.compile(r'^\s*module:\s*"?(?P<name>[^"]*?)"?\s*$')
_INS = re.compile(r"^\s*(?P<name>[A-Za-z0-9_@$.][\w@$.:#-]*) = "
                  r"(?P<op>@param:|@literal|@return|[A-Za-z_][\w:]*)(?P<rest>.*)$")
_STRAY_CLOSE = re.compile(r"^\s*\}[\s}]*$")
_FRAGMENT = re.compile(r'^\s*%[\w.$#-]+(?::\d+)?(?:\s*,\s*%[\w.$#-]+)*\s*=\s*"?[A-Za-z_]\w*\.\w')

_PREFIX = r"^\s*(?:\[[^\]]{1,40}\]\s*)?"
_BENCH_HDR = re.compile(_PREFIX + r"Benchmarking\s+(?P<op>\S+?)\s*:\s*(?P<n>\d+)\s+configs?\b(?P<tail>.*)$")
_PROBLEM = re.compile(_PREFIX + r"Problem\s*:\s*(?P<key>.*)$")
_SOLUTION = re.compile(_PREFIX + r"(?:Benchmarking\s+)?[Ss]olution\s*:\s*(?P<cfg>.*)$")
_FASTEST = re.compile(_PREFIX + r"Fastest solution\s*:\s*(?P<cfg>.*)$")
_TIME = re.compile(r"^\s*(?P<t>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)\s*ms\s*$")
_NOBIN = re.compile(r"^\s*No binary\s*$")
_FAILED_SOL = re.compile(r"^\s*Failed:\s*(?P<status>\S+)")
_SKIPPED = re.compile(r"Skipped\s+(?P<n>\d+)\s+configs?\s+for\s+(?P<op>\S+)")
_MLIR_HASH = re.compile(r"^\s*mlir hash:\s*(?P<h>\w+)")
_KTIME = re.compile(r"^\s*(?P<name>[A-Za-z_][\w]*(?:::[\w.-]+)+)\s*:\s*(?P<t>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*ms\b")
_DRIVER = re.compile(r"^\s*(?:Running \[ MIGraphX Version|Compiling \.\.\.|Reading: |Allocating params|"
                     r"Running performance report|Summary:|Batch size:|Rate:|Total time:|"
                     r"Total instructions time:|Overhead time:|Overhead:|Compiled |MIGraphX Version)")
_PROMPT = re.compile(r"^\S+@[\w.-]+:\S*[$#]\s")
_ROCBLAS = re.compile(r"Winning GEMM solution|rocblas|hipblaslt", re.I)
_WARNING = re.compile(r"(?i)\bwarning\b\s*[:!]|^\s*\[\s*W")
_INFO = re.compile(r"^\s*(?:Loaded MLIR backend plugin|Saving benchmark binary|Benchmark MXR files|Built \d+ solutions|"
                   r"Run with solution|\[\s*I)")
_SHAPE_LINE = re.compile(r"^\s*\w+_type, \{[\d, ]*\}, \{[\d, ]*\}\s*$")
_BYTES_OK = set("0123456789, \t")

_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
_WHAT = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)$")
_NOTE_OP = re.compile(r"(?i)^\s*note:\s*see current operation:\s*(?P<op>.*)$")
_DIAG = re.compile(r"^\s*(?P<loc>loc\(.*?\)|<unknown>(?::\d+){1,2}|[^\s:]+:\d+:\d+)\s*:\s*"
                   r"(?P<sev>error|warning|note|remark)\s*:\s*(?P<msg>.*)$")
_ERR_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("no_valid_tuned", re.compile(r"No valid tuned compilation for (?P<op>\S+) with (?P<key>.*)")),
    ("no_solutions", re.compile(r"No solutions provided for (?P<op>\S+) with (?P<key>.*)")),
    ("invalid_mlir", re.compile(r"Invalid MLIR created")),
    ("backend_failed", re.compile(r"(?i)backend compilation failed")),
    ("compile_exception", re.compile(r"Exception in (?P<op>[\w:]+)\s*:")),
    ("terminate", re.compile(r"terminate called (?:after throwing an instance of '(?P<type>[^']*)'|"
                             r"without an active exception|recursively)")),
    ("gpu_fault", re.compile(r"Memory access fault by GPU|HSA_STATUS_ERROR|GPU core dump|Page not present")),
    ("hip_error", re.compile(r"\bhipError\w+|\bHIP (?:runtime )?error", re.I)),
    ("crash", re.compile(r"\b(?:Segmentation fault|Bus error|Floating point exception|Illegal instruction)\b|"
                         r"^\s*(?:Aborted|Killed)\b|\(core dumped\)")),
    ("test_failed", re.compile(r"^\s*\[\s*FAILED\s*\]")),
    ("mlirtrace_failure", re.compile(r"^\s*mlirtrace: solution (?P<sol>\S+) failed at (?P<stage>[^:]+):")),
    ("fatal", re.compile(r"\bfatal error\b|\bFATAL\b", re.I)),
    ("error", re.compile(r"(?:^|[^\w-])error\s*:", re.I)),
    ("error", re.compile(r"^\s*(?:error|Error|ERROR)\b(?!\s*(?:=|-\s*check))")),
]
_ERR_CONTEXT = re.compile(r"^\s*(?:MLIR Fused Kernel:|Module:|Input Shapes:|Problem: no config provided)\s*$")
_REFINE = ("no_valid_tuned", "no_solutions", "invalid_mlir", "backend_failed")
_LOC = re.compile(r"(?P<file>[^\s:]+\.(?:cpp|hpp|cc|cxx|c|h|py)):(?P<no>\d+):\s*(?:(?P<func>\w+):\s)?")

_LOOKAHEAD = 12
_WINDOW = 32


def _braces(s: str) -> int:
    """``{`` minus ``}`` outside double-quoted strings and ``//`` comments."""
    d = 0
    for i, c in unquoted(s):
        if c == "/" and s.startswith("//", i):
            break
        if c == "{":
            d += 1
        elif c == "}":
            d -= 1
    return d


def _balanced_end(s: str, i: int, open_c: str, close_c: str) -> int:
    """Index just past the bracket closing ``s[i]`` (counting ``{}`` too), or -1."""
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth == 0:
                return j + 1 if c == close_c else -1
    return -1


_SHAPE_TAIL = re.compile(r"^\s*->\s*(?P<type>\w+)\s*,\s*(?P<lens>\{[^{}]*\})\s*,\s*(?P<strides>\{[^{}]*\})\s*"
                         r"(?:,\s*target_id=(?P<tid>\d+))?\s*$")


def _lenient_line(t: str) -> tuple[Instruction, bool, str | None] | None:
    """An instruction line the ir parser refuses but whose structure is whole, read loosely.

    ``name = op[attrs](inputs) -> type, {lens}, {strides}[, target_id=N]`` with balanced brackets;
    attribute values are kept as text (e.g. ``shape=float_type, {1, 2}, {2, 1}`` of hip::allocate),
    an unknown element type leaves the shape out.  None when the line is truly malformed.
    """
    from ..ir.dtypes import BY_MIGRAPHX
    from ..ir.shape import Shape

    m = _INS.match(t)
    if not m:
        return None
    op, rest = m.group("op"), m.group("rest").rstrip()
    ins = Instruction(m.group("name"), "@param" if op == "@param:" else op)
    note = None
    i = 0
    if op == "@param:":
        pm = re.match(r"[^\s,]+", rest)
        if not pm:
            return None
        ins.param, i = pm.group(0), pm.end()
    elif op == "@literal":
        if rest.startswith("{"):
            i = _balanced_end(rest, 0, "{", "}")
            if i < 0:
                return None
        note = "literal values kept out"
    else:
        if rest.startswith("["):
            k = _balanced_end(rest, 0, "[", "]")
            if k < 0:
                return None
            body = rest[1:k - 1]
            for part in re.split(r",(?=\s*[A-Za-z_]\w*=)", body):
                if "=" in part:
                    key, v = part.split("=", 1)
                    v = v.strip()
                    ins.attrs[key.strip()] = int(v) if re.fullmatch(r"-?\d+", v) else v
                elif part.strip():
                    return None
            i = k
        if rest.startswith("(", i):
            k = _balanced_end(rest, i, "(", ")")
            if k < 0:
                return None
            ins.inputs = [x.strip() for x in rest[i + 1:k - 1].split(",") if x.strip()]
            i = k
    tail = rest[i:]
    has_tid = False
    if tail.strip():
        sm = _SHAPE_TAIL.match(tail)
        if sm:
            has_tid = sm.group("tid") is not None
            if sm.group("type") in BY_MIGRAPHX:
                try:
                    lens = [int(x) for x in re.findall(r"-?\d+", sm.group("lens"))]
                    strides = [int(x) for x in re.findall(r"-?\d+", sm.group("strides"))]
                    ins.shape = Shape.of(sm.group("type"), lens, strides)
                except Exception:
                    note = f"shape {sm.group('type')}, {sm.group('lens')}, {sm.group('strides')} kept out"
            else:
                note = f"type {sm.group('type')} not supported"
        elif re.fullmatch(r"\s*,\s*target_id=\d+\s*", tail):
            has_tid = True
        else:
            return None
    return ins, has_tid, note


def _strong_stop(t: str) -> bool:
    """Lines that never come in the middle of a printed MLIR module or module dump: another part begins.

    (Warnings, errors and other stderr lines may interleave; benchmarking lines and module text cannot.)
    """
    return bool(_BENCH_HDR.match(t) or _PROBLEM.match(t) or _SOLUTION.match(t) or _FASTEST.match(t)
                or _SKIPPED.search(t) or _MODULE_HDR.match(t) or _ins_candidate(t) or _TRACEBACK.match(t))


def _indent(t: str) -> int:
    return len(t) - len(t.lstrip())


def _is_bytes_line(t: str) -> bool:
    return t.count(",") >= 15 and set(t) <= _BYTES_OK and any(ch.isdigit() for ch in t)


def _ins_candidate(t: str) -> re.Match | None:
    m = _INS.match(t)
    if not m:
        return None
    name, op, rest = m.group("name"), m.group("op"), m.group("rest")
    if name.startswith("@") or ":" in name or op.startswith("@") or "->" in rest or "target_id" in rest:
        return m
    return None


def _name_prefix(full: str) -> str:
    return full.rsplit(":", 1)[0] if ":" in full else ""


def _mlir_layer(want: Any) -> Any:
    if want is False or want is None:
        return None
    if want is not True:
        return want if hasattr(want, "parse_mlir") else None
    try:
        mod = importlib.import_module("pytest_mlirtrace.mlir")
    except Exception:
        return None
    return mod if hasattr(mod, "parse_mlir") else None


class _Parser:
    def __init__(self, text: str, source: str, layer: Any):
        self.lines, n_phys = _logical_lines(text)
        self.n = len(self.lines)
        self.p = TraceLogParts(source=source, n_lines=n_phys, mlir_layer=layer is not None)
        self.layer = layer
        self.bench: BenchmarkBlock | None = None          # open block
        self.closed_bench: BenchmarkBlock | None = None   # just closed by "Fastest solution"
        self.last_error: ErrorPart | None = None
        self.last_error_idx = -10
        self.last_mlir_idx = -10
        self.bytes_idx = -10
        self.pending_solution: Solution | None = None

    # ---------------------------------------------------------------- driver --
    def run(self) -> TraceLogParts:
        i = 0
        while i < self.n:
            try:
                i = self.step(i)
            except Exception as e:  # a bug here must not lose the log: keep the line, note it, go on
                L = self.lines[i]
                self.p.errors_found.append(LogError(L.no, f"internal error while reading this line: "
                                                          f"{type(e).__name__}: {e}"))
                self.p.other.append(OtherLine(L.no, L.text, "unread"))
                i += 1
        self._close_bench()
        for stage in (self._classify_mlir, self._link):
            try:
                stage()
            except Exception as e:  # pragma: no cover - defensive
                self.p.errors_found.append(LogError(0, f"internal error in {stage.__name__}: "
                                                       f"{type(e).__name__}: {e}"))
        self.p.errors_found.sort(key=lambda e: e.line)
        return self.p

    def step(self, i: int) -> int:
        L = self.lines[i]
        t = L.text
        if _BLANK.match(t):
            self.p.blank_lines += 1
            return i + 1
        if _COMMENT.match(t):
            self.p.other.append(OtherLine(L.no, t, "comment"))
            return i + 1
        if _TRACEBACK.match(t):
            return self.take_traceback(i)
        if _ALIAS.match(t):
            return self.take_aliases(i)
        if _MLIR_START.match(t):
            return self.take_mlir(i, i)
        if _MODULE_HDR.match(t) or _ins_candidate(t):
            return self.take_dump(i)
        if _STRAY_CLOSE.match(t):
            self.p.errors_found.append(LogError(L.no, "unbalanced braces: '}' outside any MLIR module"))
            self.p.other.append(OtherLine(L.no, t, "stray_brace"))
            return i + 1
        if _FRAGMENT.match(t) and not self._single_claims(t):
            return self.take_fragment(i)
        self.single(i)
        return i + 1

    def _single_claims(self, t: str) -> bool:
        return bool(_BENCH_HDR.match(t) or _SOLUTION.match(t) or _FASTEST.match(t) or _PROBLEM.match(t)
                    or _KTIME.match(t) or any(p.search(t) for _, p in _ERR_PATTERNS[:8]))

    # ------------------------------------------------------------ one line --
    def single(self, i: int, inside: str | None = None) -> None:
        L = self.lines[i]
        t = L.text
        if _BLANK.match(t):
            self.p.blank_lines += 1
            return
        if _COMMENT.match(t):
            self.p.other.append(OtherLine(L.no, t, "comment", inside))
            return
        if self.bench_line(i):
            return
        if self.error_line(i):
            return
        if _is_bytes_line(t):
            self.bytes_line(i)
            return
        m = _KTIME.match(t)
        if m:
            self.p.kernel_timings.append(KernelTiming(L.no, m.group("name").split("::")[-1], float(m.group("t")), t))
            return
        m = _MLIR_HASH.match(t)
        if m and self.p.mlir_modules and i - self.last_mlir_idx <= 2:
            self.p.mlir_modules[-1].hash = m.group("h")
            self.p.other.append(OtherLine(L.no, t, "mlir_hash", inside))
            return
        self.p.other.append(OtherLine(L.no, t, self._other_kind(L), inside))

    def _other_kind(self, L: _Line) -> str:
        t = L.text
        if _DRIVER.match(t):
            return "driver"
        if _PROMPT.match(t):
            return "prompt"
        if _TIME.match(t) or _NOBIN.match(t):
            return "time"
        if _ROCBLAS.search(t):
            return "rocblas"
        if _WARNING.search(t):
            return "warning"
        if _INFO.match(t):
            return "info"
        if _MODULE_HDR.match(t):
            return "module_header"
        if _SHAPE_LINE.match(t):
            return "shape"
        if L.html:
            return "html"
        return "text"

    # ------------------------------------------------------------ benchmarks --
    def _new_bench(self, L: _Line) -> BenchmarkBlock:
        self._close_bench()
        b = BenchmarkBlock(index=len(self.p.benchmarks), start_line=L.no, end_line=L.no)
        self.p.benchmarks.append(b)
        self.bench = b
        self.closed_bench = None
        return b

    def _close_bench(self) -> None:
        self.bench = None
        self.pending_solution = None

    def bench_line(self, i: int) -> bool:
        L = self.lines[i]
        t = L.text
        m = _BENCH_HDR.match(t)
        if m:
            b = self._new_bench(L)
            b.op, b.n_configs, b.header_line = m.group("op"), int(m.group("n")), L.no
            b.from_database = "tuning database" in m.group("tail")
            return True
        m = _PROBLEM.match(t)
        if m and "no config provided" not in t:
            b = self.bench
            if b is None or b.problem is not None or b.solutions:
                b = self._new_bench(L)
            key = m.group("key").strip()
            b.problem = parse_problem_key(key) or ProblemKey(raw=key)
            b.problem_line = L.no
            b.end_line = L.no
            return True
        m = _FASTEST.match(t)
        if m:
            b = self.bench
            if b is None or b.fastest is not None:
                b = self._new_bench(L)
            b.fastest, b.fastest_line, b.end_line = parse_perf_config(m.group("cfg")), L.no, L.no
            self._close_bench()
            self.closed_bench = b
            return True
        m = _SOLUTION.match(t)
        if m and not t.lstrip().lower().startswith("fastest"):
            b = self.bench or self._new_bench(L)
            cfg = m.group("cfg").strip()
            detail = None
            mm = re.match(r"^(?P<cfg>\S+)\s+(?P<tail>(?:mlir|span)\s.*)$", cfg)
            if mm:
                cfg, detail = mm.group("cfg"), mm.group("tail")
            s = Solution(line=L.no, config=parse_perf_config(cfg), detail=detail)
            b.solutions.append(s)
            b.end_line = L.no
            self.pending_solution = s
            return True
        m = _SKIPPED.search(t)
        if m:
            b = self.closed_bench if (self.closed_bench is not None and self.closed_bench.skipped is None
                                      and self.bench is None) else None
            if b is None:
                b = self.bench if (self.bench is not None and self.bench.skipped is None) else self._new_bench(L)
                b.op = b.op or m.group("op")
            b.skipped, b.skipped_line, b.end_line = int(m.group("n")), L.no, L.no
            self.closed_bench = None
            if b is self.bench:
                self._close_bench()
            return True
        s = self.pending_solution
        if s is not None and self.bench is not None:
            m = _TIME.match(t)
            if m:
                s.status, s.result_line = "timed", L.no
                try:
                    s.time_ms = float(m.group("t"))
                except ValueError:
                    s.time_ms = None
                self.bench.end_line = L.no
                self.pending_solution = None
                return True
            if _NOBIN.match(t):
                s.status, s.result_line = "no_binary", L.no
                self.bench.end_line = L.no
                self.pending_solution = None
                return True
            m = _FAILED_SOL.match(t)
            if m:
                s.status, s.result_line, s.detail = "failed", L.no, m.group("status")
                self.bench.end_line = L.no
                self.pending_solution = None
                return True
        return False

    # --------------------------------------------------------------- errors --
    def _add_error(self, i: int, kind: str, origin: str, message: str) -> ErrorPart:
        L = self.lines[i]
        e = ErrorPart(index=len(self.p.errors), line=L.no, end_line=L.no, kind=kind, origin=origin,
                      message=message.strip(), text=[L.text])
        self._fill_error(e, e.message)
        if self.bench is not None and self.pending_solution is not None:
            # printed while a solution was being benchmarked: that solution is the suspect
            e.bench, e.solution = self.bench.index, self.pending_solution.config.raw
        self.p.errors.append(e)
        self.last_error, self.last_error_idx = e, i
        return e

    def _fill_error(self, e: ErrorPart, msg: str) -> None:
        lm = _LOC.search(msg)
        if lm:
            e.location = f"{lm.group('file').rsplit('/', 1)[-1]}:{lm.group('no')}"
            e.function = lm.group("func") or e.function
        if "Error: " in msg:
            e.detail = msg.rsplit("Error: ", 1)[1].strip()
        for kind, pat in _ERR_PATTERNS:
            if kind not in _REFINE:
                continue
            m = pat.search(msg)
            if m:
                e.kind = kind
                gd = m.groupdict()
                if gd.get("op"):
                    e.op = gd["op"]
                if gd.get("key"):
                    e.problem = parse_problem_key(gd["key"]) or e.problem
                break
        m = re.search(r"Exception in (?P<op>[\w:]+)\s*:", msg)
        if m and not e.op:
            e.op = m.group("op")

    def error_line(self, i: int) -> bool:
        L = self.lines[i]
        t = L.text
        near = self.last_error is not None and i - self.last_error_idx <= 3
        m = _WHAT.match(t)
        if m:
            e = self.last_error
            if near and e is not None and e.origin == "terminate" and len(e.text) == 1:
                e.text.append(t)
                e.end_line = L.no
                e.message = m.group("msg").strip()
                self._fill_error(e, e.message)
                self.last_error_idx = i
                return True
            self._add_error(i, "error", "what", m.group("msg"))
            return True
        m = _NOTE_OP.match(t)
        if m:
            if near and self.last_error is not None:
                e = self.last_error
                e.context.append((L.no, t))
                e.end_line = L.no
                om = re.match(r'\s*(?:%[\w.#:-]+(?:\s*,\s*%[\w.#:-]+)*\s*=\s*)?"?(?P<op>[A-Za-z_][\w.]*)"?', m.group("op"))
                if om:
                    e.mlir_op = om.group("op")
                self.last_error_idx = i
            else:
                self.p.other.append(OtherLine(L.no, t, "diagnostic_note"))
            return True
        if _ERR_CONTEXT.match(t):
            if near and self.last_error is not None:
                self.last_error.context.append((L.no, t))
                self.last_error.end_line = L.no
                self.last_error_idx = i
            else:
                self.p.other.append(OtherLine(L.no, t, "error_context"))
            return True
        m = _DIAG.match(t)
        if m:
            sev = m.group("sev")
            if sev == "error":
                e = self._add_error(i, "mlir_diagnostic", "diagnostic", m.group("msg"))
                e.location = m.group("loc")
                self._fill_error(e, m.group("msg"))
                if e.kind not in _REFINE:
                    e.kind = "mlir_diagnostic"
            elif sev == "note" and near and self.last_error is not None:
                self.last_error.context.append((L.no, t))
                self.last_error.end_line = L.no
                self.last_error_idx = i
            else:
                self.p.other.append(OtherLine(L.no, t, "warning" if sev == "warning" else "diagnostic_note"))
            return True
        for kind, pat in _ERR_PATTERNS:
            m = pat.search(t)
            if not m:
                continue
            origin = ("terminate" if kind == "terminate" else
                      "exception_in" if re.search(r"Exception in [\w:]+\s*:", t) else "line")
            e = self._add_error(i, kind, origin, t)
            if kind == "terminate":
                e.exception_type = m.groupdict().get("type")
            if kind == "mlirtrace_failure":
                e.detail = m.group("stage")
            return True
        return False

    def take_traceback(self, i: int) -> int:
        e = self._add_error(i, "traceback", "traceback", self.lines[i].text)
        j = i + 1
        while j < self.n:
            t = self.lines[j].text
            if re.match(r"^\s*(?:During handling of the above exception|The above exception was the direct cause)",
                        t) or _TRACEBACK.match(t) or (t[:1] in (" ", "\t") and t.strip()):
                e.text.append(t)
                j += 1
                continue
            if _BLANK.match(t) and j + 1 < self.n and re.match(
                    r"^\s*(?:During handling|The above exception|Traceback)", self.lines[j + 1].text):
                e.text.append(t)
                j += 1
                continue
            if re.match(r"^[A-Za-z_][\w.]*(?::\s|:$|$)", t):
                e.text.append(t)
                e.message = t.strip()
                e.exception_type = t.split(":", 1)[0].strip()
                self._fill_error(e, e.message)
                if e.kind not in _REFINE:
                    e.kind = "traceback"
                j += 1
            break
        e.end_line = self.lines[j - 1].no
        if e.message.startswith("Traceback"):
            self.p.errors_found.append(LogError(e.line, "Python traceback without its exception line (log cut?)"))
        self.last_error_idx = j - 1
        return j

    # ---------------------------------------------------------- code objects --
    def bytes_line(self, i: int) -> None:
        L = self.lines[i]
        vals = [int(x) for x in re.split(r"[,\s]+", L.text) if x.isdigit()]
        data = bytes(v for v in vals if v <= 255)
        if self.p.code_objects and self.bytes_idx == i - 1:
            co = self.p.code_objects[-1]
            co.end_line = L.no
            co.data += data
        else:
            co = CodeObjectDump(index=len(self.p.code_objects), start_line=L.no, end_line=L.no)
            co.data = data
            self.p.code_objects.append(co)
        self.bytes_idx = i
        co.n_bytes = len(co.data)
        strs = [s.decode("ascii") for s in re.findall(rb"[\x20-\x7e]{4,}", co.data)]
        co.strings = strs
        names = []
        for s in strs:
            for k in re.findall(r"\b(mlir_\w+|\w+_kernel)\b", s):
                if k not in names:
                    names.append(k)
        co.kernel_names = names

    # ---------------------------------------------------------- module dumps --
    def take_dump(self, i: int) -> int:
        from ..ir.text import parse_instruction_line

        start = i
        header = None
        m = _MODULE_HDR.match(self.lines[i].text)
        if m:
            header = (self.lines[i].no, m.group("name"))
            i += 1
        rows: list[tuple] = []        # (kind, _Line, full name, Instruction | None, has_tid, error)
        names: set[str] = set()
        prefix: str | None = None
        interleaved: list[int] = []
        j = i
        while j < self.n:
            L = self.lines[j]
            t = L.text
            if _BLANK.match(t) or _MODULE_HDR.match(t):
                break
            cand = _ins_candidate(t)
            if cand is not None:
                try:
                    full, ins, tid = parse_instruction_line(t)
                    ok, err = True, None
                except Exception as e:  # ValueError, DTypeError, ...
                    ok, err = False, str(e)
                if ok:
                    p = _name_prefix(full)
                    if rows and ((prefix is not None and p != prefix) or full in names):
                        break
                    if prefix is None:
                        prefix = p
                    rows.append(("ok", L, full, ins, tid, None))
                    names.add(full)
                    j += 1
                    if ins.op == "@return":
                        break
                    continue
                full = cand.group("name")
                if rows and full in names:
                    break
                lenient = _lenient_line(t)
                if lenient is not None:     # well formed, but more than the ir text parser reads
                    rows.append(("lenient", L, full, lenient[0], lenient[1], lenient[2] or err))
                else:
                    rows.append(("bad", L, full, self._lenient_ins(cand), None, err))
                names.add(full)
                if prefix is None:
                    prefix = _name_prefix(full)
                j += 1
                continue
            if rows and not _strong_stop(t) and self._dump_continues(j, prefix, names):
                interleaved.append(L.no)
                self.single(j, inside=f"module {len(self.p.module_dumps)}")
                j += 1
                continue
            break
        if not rows:
            L = self.lines[start]
            self.p.other.append(OtherLine(L.no, L.text, "module_header"))
            return start + 1
        self._finish_dump(start, j, header, rows, prefix or "", interleaved)
        return j

    @staticmethod
    def _lenient_ins(m: re.Match) -> Instruction:
        op = m.group("op")
        rest = m.group("rest")
        ins = Instruction(m.group("name"), "@param" if op == "@param:" else op)
        if op == "@param:":
            ins.param = re.split(r"[\s,]", rest.strip(), maxsplit=1)[0]
        im = re.match(r"^(?:\[[^\]]*\]?)?\((?P<inputs>[^)]*)\)?", rest)
        if im:
            ins.inputs = [x.strip() for x in im.group("inputs").split(",") if x.strip()]
        return ins

    def _dump_continues(self, j: int, prefix: str | None, names: set[str]) -> bool:
        from ..ir.text import parse_instruction_line

        for k in range(j + 1, min(self.n, j + 6)):
            t = self.lines[k].text
            if _BLANK.match(t) or _MLIR_START.match(t) or (_strong_stop(t) and not _ins_candidate(t)):
                return False
            if _ins_candidate(t):
                try:
                    full, _, _ = parse_instruction_line(t)
                except Exception:
                    return True
                return _name_prefix(full) == (prefix or "") and full not in names
        return False

    def _finish_dump(self, start: int, end: int, header, rows, prefix: str, interleaved: list[int]) -> None:
        from ..ir.text import TextParseError, parse_module

        idx = len(self.p.module_dumps)
        lines_in = ([self.lines[start]] if header else []) + [r[1] for r in rows]
        text = "\n".join(L.text for L in lines_in) + "\n"
        d = ModuleDump(index=idx, start_line=self.lines[start].no, end_line=rows[-1][1].no, text=text,
                       header_line=header[0] if header else None, interleaved=interleaved,
                       instruction_lines=[r[1].no for r in rows if r[0] == "ok"])
        bad_names = set()
        for kind, L, full, ins, tid, err in rows:
            if kind == "bad":
                d.malformed.append(L.no)
                bad_names.add(full)
                self.p.errors_found.append(LogError(L.no, f"malformed instruction line in module dump {idx}: {err}"))
            elif kind == "lenient":
                d.unsupported.append(f"line {L.no}: {ins.op} read loosely: {err.split(' (known')[0]}")
        # undefined inputs (a dump whose first lines are missing, or a lost line)
        defined: set[str] = set()
        undefined: list[tuple[int, str]] = []
        for kind, L, full, ins, tid, err in rows:
            if ins is not None:
                for x in ins.inputs:
                    if x not in defined and x not in bad_names:
                        undefined.append((L.no, x))
            defined.add(full)
        if undefined:
            miss = sorted({x for _, x in undefined}, key=lambda s: [x for _, x in undefined].index(s))
            self.p.errors_found.append(LogError(
                undefined[0][0], f"module dump {idx} uses {', '.join(miss)} which the dump does not define "
                                 f"(its first lines missing, or a line lost)"))
        ok_rows = [r for r in rows if r[0] == "ok"]
        mod = None
        if not d.malformed and not undefined and len(ok_rows) == len(rows):
            try:
                mod = parse_module(text, source=self.p.source, verify=False)
            except TextParseError as e:
                d.parse_error = str(e).split("\n")[0]
                at = lines_in[e.line - 1].no if 0 < e.line <= len(lines_in) else d.start_line
                self.p.errors_found.append(LogError(at, f"module dump {idx}: {d.parse_error}"))
            except Exception as e:
                d.parse_error = f"{type(e).__name__}: {e}"
        if mod is None:
            mod = self._lenient_module(rows, prefix)
        d.module = mod
        d.name = (header[1] if header else None) or (mod.name if mod is not None else None) or (prefix or None)
        if mod is not None:
            try:
                d.unsupported.extend(f"op {op} has no shape rule here" for op in mod.unsupported_ops())
            except Exception:
                pass
        self.p.module_dumps.append(d)

    @staticmethod
    def _lenient_module(rows, prefix: str) -> Module | None:
        pre = prefix + ":" if prefix else ""

        def strip(n: str) -> str:
            return n[len(pre):] if pre and n.startswith(pre) else n

        mod = Module(name=prefix or None, target_id=all(r[4] for r in rows if r[0] == "ok") and
                     any(r[0] == "ok" for r in rows))
        seen = set()
        for kind, L, full, ins, tid, err in rows:
            if ins is None or kind == "bad":
                continue
            ins.name = strip(full)
            ins.inputs = [strip(x) for x in ins.inputs]
            if ins.name in seen:
                continue
            seen.add(ins.name)
            mod.instructions.append(ins)
        return mod if mod.instructions else None

    # ---------------------------------------------------------------- MLIR --
    def take_aliases(self, i: int) -> int:
        j = i
        while j < self.n and (_ALIAS.match(self.lines[j].text) or _BLANK.match(self.lines[j].text)):
            j += 1
        if j < self.n and _MLIR_START.match(self.lines[j].text):
            return self.take_mlir(i, j)
        for k in range(i, j):
            L = self.lines[k]
            if _BLANK.match(L.text):
                self.p.blank_lines += 1
            else:
                self.p.other.append(OtherLine(L.no, L.text, "mlir_alias"))
        return j

    def _looks_log(self, t: str) -> bool:
        """A line that is some other part of a log (so not a continued MLIR line)."""
        return bool(_COMMENT.match(t) or _ins_candidate(t) or _BENCH_HDR.match(t) or _PROBLEM.match(t)
                    or _SOLUTION.match(t) or _FASTEST.match(t) or _TIME.match(t) or _NOBIN.match(t)
                    or _SKIPPED.search(t) or _WHAT.match(t) or _NOTE_OP.match(t) or _DIAG.match(t)
                    or _KTIME.match(t) or _DRIVER.match(t) or _WARNING.search(t) or _INFO.match(t)
                    or _is_bytes_line(t) or _TRACEBACK.match(t) or re.match(r"^\[", t)
                    or any(p.search(t) for _, p in _ERR_PATTERNS))

    def _mlir_continues(self, j: int, func_ok: bool = False, cont_ok: bool = False) -> bool:
        """After a non-MLIR (or blank) line at ``j``: does the block go on a few lines later?

        ``func_ok``: the block is a module at its top level, where a ``func.func`` goes on with it.
        """
        for k in range(j + 1, min(self.n, j + 1 + _LOOKAHEAD)):
            t = self.lines[k].text
            if _BLANK.match(t):
                continue
            if func_ok and re.match(r"^\s*func\.func\b", t):
                return True
            if _MLIR_START.match(t) or _ALIAS.match(t) or _strong_stop(t):
                return False
            if _MLIR_BODY.match(t):
                return True
            if cont_ok and not (_MLIR_CONT.match(t) and not self._looks_log(t)):
                return False
        return False

    def take_fragment(self, i: int) -> int:
        j = i
        while j < self.n and _MLIR_BODY.match(self.lines[j].text) and not _MLIR_START.match(self.lines[j].text) \
                and not _BLANK.match(self.lines[j].text):
            L = self.lines[j]
            self.p.other.append(OtherLine(L.no, L.text, "mlir_fragment"))
            j += 1
        j = max(j, i + 1)
        self.p.errors_found.append(LogError(self.lines[i].no, "MLIR operations outside any module or func "
                                                              "(its 'module {' / 'func.func' line is missing)"))
        return j

    def take_mlir(self, first: int, i: int) -> int:
        body: list[_Line] = [self.lines[k] for k in range(first, i) if not _BLANK.match(self.lines[k].text)]
        for k in range(first, i):
            if _BLANK.match(self.lines[k].text):
                self.p.blank_lines += 1
        idx = len(self.p.mlir_modules)
        bare = bool(re.match(r"^\s*func\.func\b", self.lines[i].text))
        first_indent = _indent(self.lines[i].text)
        module_levels = {1}          # brace depths at which a module's body (where funcs live) is open
        depth = 0
        opened = False
        complete = False
        interleaved: list[int] = []
        j = i
        while j < self.n:
            L = self.lines[j]
            t = L.text
            if j > i:
                top = not bare and opened and depth in module_levels
                if _BLANK.match(t):
                    if self._mlir_continues(j, top):
                        self.p.blank_lines += 1
                        j += 1
                        continue
                    break
                if _MLIR_START.match(t):
                    # a func inside this module, or a module nested deeper (rocMLIR's mhal host/device
                    # modules), goes on; any other start means this block was cut
                    inner_func = (not bare and opened and depth in module_levels
                                  and re.match(r"^\s*func\.func\b", t))
                    nested = (not bare and opened and depth >= 1 and re.match(r"^\s*module\b", t)
                              and _indent(t) > first_indent)
                    if not inner_func and not nested:
                        break
                    if nested:
                        module_levels.add(depth + 1)
                if not _MLIR_BODY.match(t):
                    if (not opened and not bare) or _strong_stop(t):
                        break
                    if not self._looks_log(t) and _MLIR_CONT.match(t) and self._mlir_continues(j, top, True):
                        pass    # an op or signature continued on an indented line: MLIR text
                    elif self._mlir_continues(j, top):
                        interleaved.append(L.no)
                        self.single(j, inside=f"mlir {idx}")
                        j += 1
                        continue
                    else:
                        break
            body.append(L)
            depth += _braces(t)
            if depth > 0:
                opened = True
            j += 1
            if opened and depth <= 0:
                complete = True
                break
            if not opened and bare and not re.search(r",\s*$|\(\s*$", t) and j < self.n and \
                    not _MLIR_BODY.match(self.lines[j].text):
                break    # a func.func declaration without a body
        if not opened and bare:
            sig = "\n".join(x.text for x in body)
            complete = sig.count("(") == sig.count(")") and "{" not in sig
        text = "\n".join(x.text for x in body)
        part = MLIRPart(index=idx, start_line=body[0].no, end_line=body[-1].no, text=text,
                        complete=complete, bare_func=bare, interleaved=interleaved)
        part.log_lines = [x.no for x in body]
        if not complete:
            missing = max(depth, 1)
            nxt = self.lines[j].no if j < self.n else None
            where = f"the log moves on at line {nxt}" if nxt is not None else "the log ends"
            part.missing_braces = missing
            self.p.errors_found.append(LogError(part.start_line, f"MLIR module {idx} is not closed: {missing} '}}' "
                                                                 f"missing ({where}; truncated or unbalanced braces)"))
        elif depth < 0:
            self.p.errors_found.append(LogError(part.end_line, f"unbalanced braces in MLIR module {idx}: "
                                                               f"{-depth} '}}' too many"))
        self.p.mlir_modules.append(part)
        self.last_mlir_idx = j - 1
        return j

    @staticmethod
    def _log_pos(part: MLIRPart, msg: str, source: str | None = None) -> str:
        """The mlir layer says "at 3:5" / "<source>:3:5" (of the MLIR text): say which log line that is."""
        lines = part.log_lines
        if not lines:
            return msg

        def line(k: str) -> int | None:
            n = int(k)
            return lines[n - 1] if 0 < n <= len(lines) else None

        def sub_at(m: re.Match) -> str:
            n = line(m.group(1))
            return f"at log line {n}:{m.group(2)}" if n else m.group(0)

        msg = re.sub(r"\bat (\d+):(\d+)\b", sub_at, msg)
        if source:
            def sub_src(m: re.Match) -> str:
                n = line(m.group(1))
                return f"{source}:{n}:{m.group(2)}" if n else m.group(0)

            msg = re.sub(re.escape(source) + r":(\d+):(\d+)", sub_src, msg)
        return msg

    def _classify_mlir(self) -> None:
        for part in self.p.mlir_modules:
            try:
                self._classify_one(part)
            except Exception as e:  # pragma: no cover - defensive
                part.runnable = False
                part.why_not = f"could not classify: {type(e).__name__}: {e}"
                part.unsupported = [part.why_not]

    def _classify_one(self, part: MLIRPart) -> None:
        part.scan = scan_mlir(part.text)
        sc = part.scan
        if sc.mentions_rock or "rock" in sc.dialects:
            part.kind = "rock"
        elif "memref" in sc.type_kinds:
            part.kind = "lowered"
        elif "migraphx" in sc.dialects or sc.type_kinds & {"shaped", "tensor"}:
            part.kind = "migraphx"
        else:
            part.kind = "unknown"
        reasons: list[str] = []
        if not part.complete:
            reasons.append(f"truncated MLIR ({part.missing_braces} '}}' missing)")
        layer_ok = False
        bad_str = _unterminated_string(part.text)
        if bad_str is not None:
            at = part.log_lines[bad_str - 1] if 0 < bad_str <= len(part.log_lines) else part.start_line
            reasons.append(f"unterminated string literal (log line {at})")
            self.p.errors_found.append(LogError(at, f"MLIR module {part.index}: unterminated string literal"))
        if self.layer is not None and part.complete and bad_str is None:
            # (an unterminated string is kept from the layer: xDSL's string lexer backtracks exponentially on it)
            try:
                parsed = self.layer.parse_mlir(part.text, self.p.source)
                part.parsed = list(parsed) if parsed is not None else []
                layer_ok = True
                part.checked_by = "mlir"
            except Exception as e:
                msg = self._log_pos(part, str(e).strip().split("\n")[0], self.p.source)
                part.parse_error = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
        reasons.extend(scan_reasons(sc, with_ops=not layer_ok))
        if layer_ok:
            for pf in part.parsed or []:
                for u in _as_list(getattr(pf, "unsupported", None)):
                    reasons.append(self._log_pos(part, _reason(u)))
                inv = getattr(pf, "invalid", None)
                if isinstance(inv, str) and inv.strip():
                    reasons.append(self._log_pos(part, f"invalid: {inv.strip()}"))
        if part.parse_error and not reasons:
            reasons.append(f"the mlir layer cannot parse it ({part.parse_error})")
        seen: list[str] = []
        for r in reasons:
            if r not in seen:
                seen.append(r)
        part.unsupported = seen
        part.runnable = not seen
        part.why_not = "; ".join(seen) if seen else None
        for f in sc.funcs:
            for d in derived_problems(f):
                if d not in part.problems:
                    part.problems.append(d)

    # --------------------------------------------------------------- links --
    # Linking looks at the parts near each MLIR module (a window of _WINDOW parts on each side), so that
    # a log with thousands of modules links in linear time.
    def _link(self) -> None:
        import bisect

        mlirs = self.p.mlir_modules
        dumps = self.p.module_dumps
        self._mlir_starts = [m.start_line for m in mlirs]
        self._mlir_ends = [m.end_line for m in mlirs]
        dump_ends = [d.end_line for d in dumps]
        self._bench_starts = [b.start_line for b in self.p.benchmarks]
        self._error_starts = [e.line for e in self.p.errors]
        dump_sigs: dict[int, list] = {}
        fsigs = {m.index: [(f, _norm_ops(f.migraphx_ops()),
                            [(t.lens, t.dtype) if t.lens is not None else None for t in f.args]) for f in m.funcs]
                 for m in mlirs}
        taken: dict[int, int] = {}     # dump index -> the mlir index it matched structurally
        for m in mlirs:
            ln = Link(mlir=m.index)
            self.p.links[m.index] = ln
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
        for k, t in enumerate(self.p.kernel_timings):
            timings_by_name.setdefault(t.name, []).append(k)
        # a code object goes with the last MLIR module of its kernel's name printed before it
        # (or the first one after it, when none was printed before)
        by_name: dict[str, list[MLIRPart]] = {}
        for m in mlirs:
            for nm in set(m.func_names):
                by_name.setdefault(nm, []).append(m)
        name_starts = {nm: [x.start_line for x in ms] for nm, ms in by_name.items()}
        co_by_mlir: dict[int, set[int]] = {}
        for co in self.p.code_objects:
            for nm in co.kernel_names:
                ms = by_name.get(nm)
                if not ms:
                    continue
                k = bisect.bisect_right(name_starts[nm], co.start_line) - 1
                co_by_mlir.setdefault(ms[max(k, 0)].index, set()).add(co.index)
        for m in mlirs:
            ln = self.p.links[m.index]
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
        import bisect

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
        import bisect

        pos = bisect.bisect_left(starts, m.start_line)
        return parts[max(0, pos - _WINDOW):pos + _WINDOW]

    def _link_bench(self, m: MLIRPart, ln: Link) -> None:
        arch = m.arch
        near = self._near(self.p.benchmarks, self._bench_starts, m)
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
        for e in self._near(self.p.errors, self._error_starts, m):
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


# ================================================================ helpers ==
def _as_list(u: Any) -> list[Any]:
    if u is None or u is False or u is True:
        return []
    if isinstance(u, str):
        return [u] if u.strip() else []
    if isinstance(u, dict):
        return [f"{k}: {v}" if v else str(k) for k, v in u.items()]
    try:
        return list(u)
    except TypeError:
        return [u]


def _reason(u: Any) -> str:
    s = str(u).strip()
    if " " in s:
        return s
    if "." in s:
        return f"op {s} not supported"
    return f"{s} not supported"


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


def _unterminated_string(text: str) -> int | None:
    """The 1-based line of ``text`` where a ``"`` string is left open (MLIR strings never span lines)."""
    for no, line in enumerate(text.split("\n"), 1):
        if '"' not in line:
            continue
        q = False
        i = 0
        while i < len(line):
            c = line[i]
            if q and c == "\\":
                i += 2
                continue
            if c == '"':
                q = not q
            elif not q and line.startswith("//", i):
                break
            i += 1
        if q:
            return no
    return None


def _dist(m: MLIRPart, a: int, b: int) -> int:
    if b < m.start_line:
        return m.start_line - b
    if a > m.end_line:
        return a - m.end_line
    return 0


# ==================================================================== API ==
def parse_log(text: str, source: str = "<log>", *, mlir_layer: Any = True) -> TraceLogParts:
    """Split a MIGraphX / rocMLIR trace log into its parts; never raises for any text.

    ``mlir_layer``: True to use :mod:`pytest_mlirtrace.mlir` when it imports (else the built-in
    scanner alone classifies the MLIR), False to leave it out, or an object with ``parse_mlir``
    (and optionally ``emit_mlir``) to use instead.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        text = str(text)
    return _Parser(text, source, _mlir_layer(mlir_layer)).run()
