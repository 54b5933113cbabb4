"""The parts a log's lines make outside module dumps and MLIR modules, and the reader of a line on its own.

* benchmark blocks (``MIGRAPHX_TRACE_BENCHMARKING``) and the code objects level 3 prints: a block opens at
  ``Benchmarking <op>: N configs`` (or at a ``Problem:`` / solution line with no open block), takes the
  ``Problem:`` key, each ``Benchmarking solution: <cfg>`` with its result line (``<t>ms``, ``No binary``,
  ``Failed: <status>``), and closes at ``Fastest solution: <cfg>``; a ``Skipped N configs for <op>`` line
  goes with the block just closed.  Keys and configs are read by :mod:`pytest_mlirtrace._internal.vocab`;
* errors a log reports: ``terminate called`` / ``what():``, ``Exception in gpu::mlir_op: ...``, MLIR
  diagnostics and their notes, "Invalid MLIR created", "MLIR backend compilation failed", "No valid tuned
  compilation", Python tracebacks, crashes, GPU faults ...  An error printed while a solution was being
  benchmarked names that solution as the suspect;
* one line on its own (:func:`single`): a benchmark or error line, code-object bytes, a kernel timing, an
  MLIR hash, or any other line (kept, with a kind: comment, driver, prompt, warning, info, ...).
"""
from __future__ import annotations

import re

from ..vocab import ProblemKey, parse_perf_config, parse_problem_key
from .line_kinds import (
    BENCH_HDR,
    BENCH_TIME,
    BLANK,
    COMMENT,
    DIAG,
    DRIVER,
    ENV_LINE,
    ERR_CONTEXT,
    ERR_PATTERNS,
    FAILED_SOL,
    FASTEST,
    INFO,
    KTIME,
    LABEL,
    LOC,
    MLIR_HASH,
    MODULE_HDR,
    MXR_DUMP,
    NOBIN,
    NOTE_OP,
    PERF_INS,
    PERF_SUM,
    PROBLEM,
    PROMPT,
    REFINE,
    ROCBLAS,
    RUN_INS,
    RUN_TIME,
    SHAPE_LINE,
    SKIPPED,
    SOLUTION,
    TIME,
    TRACEBACK,
    VERIFY_DETAIL,
    VERIFY_FAILED,
    WARNING,
    WHAT,
    Line,
    is_bytes_line,
)
from .parts import BenchmarkBlock, CodeObjectDump, ErrorPart, KernelTiming, LogError, LoggedSolution, OtherLine
from .read_state import Reader

__all__ = ["new_bench", "close_bench", "bench_line", "bytes_line", "add_error", "fill_error", "error_line",
           "take_traceback", "single", "other_kind"]


# ------------------------------------------------------------------------------ benchmark blocks ---
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
    for read in _BENCH_READERS:
        if read(r, L):
            return True
    return False


def _bench_header(r: Reader, L: Line) -> bool:
    """``Benchmarking <op>: N configs``: a new block."""
    m = BENCH_HDR.match(L.text)
    if not m:
        return False
    b = new_bench(r, L)
    b.op, b.n_configs, b.header_line = m.group("op"), int(m.group("n")), L.no
    b.from_database = "tuning database" in m.group("tail")
    return True


def _bench_problem(r: Reader, L: Line) -> bool:
    """``Problem: <key>``: the open block's key (a new block when it has one, or solutions already)."""
    t = L.text
    m = PROBLEM.match(t)
    if not m or "no config provided" in t:
        return False
    b = r.bench
    if b is None or b.problem is not None or b.solutions:
        b = new_bench(r, L)
    key = m.group("key").strip()
    b.problem = parse_problem_key(key) or ProblemKey(raw=key)
    b.problem_line = L.no
    b.end_line = L.no
    return True


def _bench_fastest(r: Reader, L: Line) -> bool:
    """``Fastest solution: <cfg>``: closes the block."""
    m = FASTEST.match(L.text)
    if not m:
        return False
    b = r.bench
    if b is None or b.fastest is not None:
        b = new_bench(r, L)
    b.fastest, b.fastest_line, b.end_line = parse_perf_config(m.group("cfg")), L.no, L.no
    close_bench(r)
    r.closed_bench = b
    return True


def _bench_time(r: Reader, L: Line) -> bool:
    """The fastest or slowest time of a block (the open one, else the one just closed, else the last)."""
    m = BENCH_TIME.match(L.text)
    if not m:
        return False
    b = r.bench or r.closed_bench or (r.parts.benchmarks[-1] if r.parts.benchmarks else None) or new_bench(r, L)
    setattr(b, "fastest_time_ms" if m.group("which") == "Fastest" else "slowest_time_ms", float(m.group("t")))
    b.time_lines.append(L.no)
    b.end_line = max(b.end_line, L.no)
    return True


def _bench_solution(r: Reader, L: Line) -> bool:
    """``Benchmarking solution: <cfg>``: a solution of the block, waiting for its result line."""
    t = L.text
    m = SOLUTION.match(t)
    if not m or t.lstrip().lower().startswith("fastest"):
        return False
    b = r.bench or new_bench(r, L)
    cfg = m.group("cfg").strip()
    detail = None
    mm = re.match(r"^(?P<cfg>\S+)\s+(?P<tail>(?:mlir|span|=>)\s.*)$", cfg)
    if mm:
        cfg, detail = mm.group("cfg"), mm.group("tail")
    s = LoggedSolution(line=L.no, config=parse_perf_config(cfg), detail=detail)
    b.solutions.append(s)
    b.end_line = L.no
    r.pending_solution = s
    return True


def _bench_skipped(r: Reader, L: Line) -> bool:
    """``Skipped N configs for <op>``: goes with the block just closed (else the open one, else a new one)."""
    m = SKIPPED.search(L.text)
    if not m:
        return False
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


def _solution_result(r: Reader, L: Line) -> bool:
    """The result line of the solution being benchmarked: ``<t>ms``, ``No binary`` or ``Failed: <status>``."""
    s, t = r.pending_solution, L.text
    if s is None or r.bench is None:
        return False
    m = TIME.match(t)
    if m:
        s.status = "timed"
        try:
            s.time_ms = float(m.group("t"))
        except ValueError:
            s.time_ms = None
    elif NOBIN.match(t):
        s.status = "no_binary"
    elif m := FAILED_SOL.match(t):
        s.status, s.detail = "failed", m.group("status")
    else:
        return False
    s.result_line = L.no
    r.bench.end_line = L.no
    r.pending_solution = None
    return True


#: the readers of a benchmark block's lines, in the order they are tried
_BENCH_READERS = (_bench_header, _bench_problem, _bench_fastest, _bench_time, _bench_solution, _bench_skipped,
                  _solution_result)


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


# ----------------------------------------------------------------------------- reported errors ---
def add_error(r: Reader, i: int, kind: str, origin: str, message: str) -> ErrorPart:
    """A new error part at line ``i`` (the solution being benchmarked, if any, is its suspect)."""
    L = r.lines[i]
    e = ErrorPart(index=len(r.parts.errors), line=L.no, end_line=L.no, kind=kind, origin=origin,
                  message=message.strip(), text=[L.text])
    fill_error(e, e.message)
    if r.bench is not None and r.pending_solution is not None:
        # printed while a solution was being benchmarked: that solution is the suspect
        e.bench, e.solution = r.bench.index, r.pending_solution.config.raw
    r.parts.errors.append(e)
    r.last_error, r.last_error_idx = e, i
    return e


def fill_error(e: ErrorPart, msg: str) -> None:
    """What ``msg`` says about ``e``: where it was raised, its kind, op and problem key."""
    lm = LOC.search(msg)
    if lm:
        e.location = f"{lm.group('file').rsplit('/', 1)[-1]}:{lm.group('no')}"
        e.function = lm.group("func") or e.function
    if "Error: " in msg:
        e.detail = msg.rsplit("Error: ", 1)[1].strip()
    for kind, pat in ERR_PATTERNS:
        if kind not in REFINE:
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


def error_line(r: Reader, i: int) -> bool:
    """Read line ``i`` if it is (part of) an error the log reports; whether it was."""
    L = r.lines[i]
    for read in _ERROR_READERS:
        if read(r, i, L):
            return True
    return False


def _near(r: Reader, i: int) -> bool:
    """Is line ``i`` at most three lines after the last error?"""
    return r.last_error is not None and i - r.last_error_idx <= 3


def _more_context(r: Reader, i: int, L: Line) -> None:
    """Line ``i`` is context of the last error."""
    r.last_error.context.append((L.no, L.text))
    r.last_error.end_line = L.no
    r.last_error_idx = i


def _continued_message(r: Reader, i: int, L: Line) -> bool:
    """The message goes on on the next line ("... Invalid MLIR created:" / "error: ..."): one error, not two."""
    t, prev = L.text, r.last_error
    if not (prev is not None and i - r.last_error_idx == 1 and prev.message.rstrip().endswith(":")
            and prev.origin != "traceback" and not _starts_error(t)):
        return False
    prev.text.append(t)
    prev.message = f"{prev.message} {t.strip()}"
    prev.end_line = L.no
    fill_error(prev, prev.message)
    r.last_error_idx = i
    return True


def _verify_failed(r: Reader, i: int, L: Line) -> bool:
    m = VERIFY_FAILED.match(L.text)
    if not m:
        return False
    e = add_error(r, i, "verify_failed", "verify", L.text)
    e.op = m.group("name")
    return True


def _verify_detail(r: Reader, i: int, L: Line) -> bool:
    """A line of the verify failure just before (``Mismatch at ...`` is its detail)."""
    t = L.text
    if not (VERIFY_DETAIL.match(t) and _near(r, i) and r.last_error is not None
            and r.last_error.kind == "verify_failed"):
        return False
    e = r.last_error
    e.text.append(t)
    e.context.append((L.no, t))
    e.end_line = L.no
    if t.strip().startswith("Mismatch at"):
        e.detail = t.strip()
    r.last_error_idx = i
    return True


def _mxr_dump(r: Reader, i: int, L: Line) -> bool:
    """The program a failure wrote (the last error's dump, when within six lines of it)."""
    t = L.text
    m = MXR_DUMP.match(t)
    if not m:
        return False
    e = r.last_error
    if e is not None and e.dump is None and i - r.last_error_idx <= 6:
        e.dump, e.dump_line = m.group("path"), L.no
        e.context.append((L.no, t))
        e.end_line = max(e.end_line, L.no)
        r.last_error_idx = i
    else:
        r.parts.other.append(OtherLine(L.no, t, "mxr_dump"))
    return True


def _what(r: Reader, i: int, L: Line) -> bool:
    """``what(): <msg>``: the message of a ``terminate called`` just before, else an error of its own."""
    t = L.text
    m = WHAT.match(t)
    if not m:
        return False
    e = r.last_error
    if _near(r, i) and e is not None and e.origin == "terminate" and len(e.text) == 1:
        e.text.append(t)
        e.end_line = L.no
        e.message = m.group("msg").strip()
        fill_error(e, e.message)
        r.last_error_idx = i
        return True
    add_error(r, i, "error", "what", m.group("msg"))
    return True


def _note_op(r: Reader, i: int, L: Line) -> bool:
    """A diagnostic's note naming the op: context of the error just before (its MLIR op), else a note."""
    t = L.text
    m = NOTE_OP.match(t)
    if not m:
        return False
    if _near(r, i) and r.last_error is not None:
        _more_context(r, i, L)
        om = re.match(r'\s*(?:%[\w.#:-]+(?:\s*,\s*%[\w.#:-]+)*\s*=\s*)?"?(?P<op>[A-Za-z_][\w.]*)"?', m.group("op"))
        if om:
            r.last_error.mlir_op = om.group("op")
    else:
        r.parts.other.append(OtherLine(L.no, t, "diagnostic_note"))
    return True


def _error_context(r: Reader, i: int, L: Line) -> bool:
    if not ERR_CONTEXT.match(L.text):
        return False
    if _near(r, i) and r.last_error is not None:
        _more_context(r, i, L)
    else:
        r.parts.other.append(OtherLine(L.no, L.text, "error_context"))
    return True


def _diagnostic(r: Reader, i: int, L: Line) -> bool:
    """An MLIR diagnostic: an error of its own, a note of the error just before, or a warning/note line."""
    t = L.text
    m = DIAG.match(t)
    if not m:
        return False
    sev = m.group("sev")
    if sev == "error":
        e = add_error(r, i, "mlir_diagnostic", "diagnostic", m.group("msg"))
        e.location = m.group("loc")
        fill_error(e, m.group("msg"))
        if e.kind not in REFINE:
            e.kind = "mlir_diagnostic"
    elif sev == "note" and _near(r, i) and r.last_error is not None:
        _more_context(r, i, L)
    else:
        r.parts.other.append(OtherLine(L.no, t, "warning" if sev == "warning" else "diagnostic_note"))
    return True


def _error_pattern(r: Reader, i: int, L: Line) -> bool:
    """A line one of the error patterns knows (``terminate called``, ``Exception in ...``, ...)."""
    t = L.text
    for kind, pat in ERR_PATTERNS:
        m = pat.search(t)
        if not m:
            continue
        origin = ("terminate" if kind == "terminate" else
                  "exception_in" if re.search(r"Exception in [\w:]+\s*:", t) else "line")
        e = add_error(r, i, kind, origin, t)
        if kind == "terminate":
            e.exception_type = m.groupdict().get("type")
        if kind == "mlirtrace_failure":
            e.detail = m.group("stage")
        return True
    return False


#: the readers of an error's lines, in the order they are tried
_ERROR_READERS = (_continued_message, _verify_failed, _verify_detail, _mxr_dump, _what, _note_op, _error_context,
                  _diagnostic, _error_pattern)


_NEW_ERROR = [p for k, p in ERR_PATTERNS if k not in ("error", "fatal")]


def _starts_error(t: str) -> bool:
    """Does ``t`` begin an error of its own (not a line of the one before)?"""
    return bool(BLANK.match(t) or TRACEBACK.match(t) or WHAT.match(t) or VERIFY_FAILED.match(t)
                or MXR_DUMP.match(t) or DIAG.match(t) or NOTE_OP.match(t) or ERR_CONTEXT.match(t)
                or re.search(r"Exception in [\w:]+\s*:", t) or any(p.search(t) for p in _NEW_ERROR))


def take_traceback(r: Reader, i: int) -> int:
    """A Python traceback from line ``i`` to its exception line; the index of the line after it."""
    e = add_error(r, i, "traceback", "traceback", r.lines[i].text)
    j = i + 1
    while j < r.n:
        t = r.lines[j].text
        if re.match(r"^\s*(?:During handling of the above exception|The above exception was the direct cause)",
                    t) or TRACEBACK.match(t) or (t[:1] in (" ", "\t") and t.strip()):
            e.text.append(t)
            j += 1
            continue
        if BLANK.match(t) and j + 1 < r.n and re.match(
                r"^\s*(?:During handling|The above exception|Traceback)", r.lines[j + 1].text):
            e.text.append(t)
            j += 1
            continue
        if re.match(r"^[A-Za-z_][\w.]*(?::\s|:$|$)", t):
            e.text.append(t)
            e.message = t.strip()
            e.exception_type = t.split(":", 1)[0].strip()
            fill_error(e, e.message)
            if e.kind not in REFINE:
                e.kind = "traceback"
            j += 1
        break
    e.end_line = r.lines[j - 1].no
    if e.message.startswith("Traceback"):
        r.parts.errors_found.append(LogError(e.line, "Python traceback without its exception line (log cut?)"))
    r.last_error_idx = j - 1
    return j


# ---------------------------------------------------------------------------- a line on its own ---
def single(r: Reader, i: int, inside: str | None = None) -> None:
    """Read logical line ``i`` on its own; ``inside`` names the block it interrupted (``"mlir 0"``)."""
    L = r.lines[i]
    t = L.text
    if BLANK.match(t):
        r.parts.blank_lines += 1
        return
    if COMMENT.match(t):
        r.parts.other.append(OtherLine(L.no, t, "comment", inside))
        return
    if bench_line(r, i):
        return
    if error_line(r, i):
        return
    if is_bytes_line(t):
        bytes_line(r, i)
        return
    m = KTIME.match(t)
    if m:
        r.parts.kernel_timings.append(KernelTiming(L.no, m.group("name").split("::")[-1], float(m.group("t")), t))
        return
    m = MLIR_HASH.match(t)
    if m and r.parts.mlir_modules and i - r.last_mlir_idx <= 2:
        r.parts.mlir_modules[-1].hash = m.group("h")
        r.parts.other.append(OtherLine(L.no, t, "mlir_hash", inside))
        return
    r.parts.other.append(OtherLine(L.no, t, other_kind(L), inside))


def other_kind(L: Line) -> str:
    """The kind of a line no reader claims."""
    t = L.text
    if DRIVER.match(t):
        return "driver"
    if PERF_INS.match(t):
        return "perf_instruction"      # migraphx-driver perf: an instruction and its time
    if PERF_SUM.match(t):
        return "perf_summary"          # migraphx-driver perf: time per op
    if RUN_INS.match(t):
        return "run_instruction"       # MIGRAPHX_TRACE_EVAL
    if RUN_TIME.match(t):
        return "run_time"
    if LABEL.match(t):
        return "label"                 # "ref:", "gpu:", "Verify: add", "[ RUN ] test"
    if ENV_LINE.match(t):
        return "environment"
    if PROMPT.match(t):
        return "prompt"
    if TIME.match(t) or NOBIN.match(t):
        return "time"
    if ROCBLAS.search(t):
        return "rocblas"
    if WARNING.search(t):
        return "warning"
    if INFO.match(t):
        return "info"
    if MODULE_HDR.match(t):
        return "module_header"
    if SHAPE_LINE.match(t):
        return "shape"
    if L.html:
        return "html"
    return "text"
