"""A log's lines and what each kind of line looks like.

:func:`logical_lines` turns the text into :class:`Line` objects (ANSI colours dropped; an HTML-rendered
log, whose lines were joined with ``<br />``, and a flattened error message split into logical lines
that keep the number of the physical line they came from).  The recognisers below say what a line is;
the small helpers answer the questions every reader asks (does a block stop here? is this an
instruction line?).
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..vocab import Status
from .mlir_scan import unquoted


# ================================================================= lexing ==
@dataclass
class Line:
    no: int        # physical line number (1-based)
    text: str
    html: bool = False


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_HTML_HINT = re.compile(r"<br\s*/?>|&(?:nbsp|lt|gt|amp|quot|#\d+);|</?(?:summary|details)\b", re.I)
_HTML_BREAK = re.compile(r"<br\s*/?>|</?(?:summary|details|p|div|pre|li|ul|ol|tr|table)(?:\s[^<>]*)?>", re.I)
_HTML_TAG = re.compile(r"</?(?:code|b|i|em|strong|span|tt|td|th|a)(?:\s[^<>]*)?>", re.I)
_FLAT_MARKERS = re.compile(r"\s(?=MLIR Fused Kernel:)|(?<=MLIR Fused Kernel:)\s")


def logical_lines(text: str) -> tuple[list[Line], int]:
    phys = text.split("\n")
    if phys and phys[-1] == "":
        phys.pop()
    out: list[Line] = []
    for no, raw in enumerate(phys, 1):
        line = raw.rstrip("\r")
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        if COMMENT.match(line):
            out.append(Line(no, line))
        elif _HTML_HINT.search(line):
            for piece in _HTML_BREAK.split(line):
                piece = html.unescape(_HTML_TAG.sub("", piece)).replace("\xa0", " ")
                out.extend(Line(no, p, True) for p in _flat_split(piece))
        else:
            out.extend(Line(no, p) for p in _flat_split(line))
    return out, len(phys)


def _flat_split(line: str) -> list[str]:
    """A flattened error message: the key, "MLIR Fused Kernel:" and the module on one line."""
    if "MLIR Fused Kernel:" not in line or len(line) < 40:
        return [line]
    parts = [p for p in _FLAT_MARKERS.split(line)]
    return parts if len(parts) > 1 else [line]


# ============================================================ recognisers ==
BLANK = re.compile(r"^\s*$")
COMMENT = re.compile(r"^\s*#(?![\w.$-]+\s*=)")
ALIAS = re.compile(r"^\s*#[\w.$-]+\s*=(?!\s*@(?:param|literal|return)\b)")
# + MLIR's generic form
MLIR_START = re.compile(r'^\s*(?:module\b(?!:)[^{}]*\{|func\.func\b|"builtin\.module"\s*\(\s*\)\s*\(\{)')
MLIR_BODY = re.compile(r'''^\s*(?:
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
MLIR_CONT = re.compile(r'^(?:\s+\S|[:!<({\[,"=])')
MODULE_HDR = re.compile(r'^\s*module:\s*"?(?P<name>[^"]*?)"?\s*$')
INS = re.compile(r"^\s*(?P<name>[A-Za-z0-9_@$.#][\w@$.:#-]*) = "
                 r"(?P<op>@param:|@literal|@return|[A-Za-z_][\w:]*)(?P<rest>.*)$")
STRAY_CLOSE = re.compile(r"^\s*\}[\s}]*$")
FRAGMENT = re.compile(r'^\s*%[\w.$#-]+(?::\d+)?(?:\s*,\s*%[\w.$#-]+)*\s*=\s*"?[A-Za-z_]\w*\.\w')

_PREFIX = r"^\s*(?:\[[^\]]{1,40}\]\s*)?"
BENCH_HDR = re.compile(_PREFIX + r"Benchmarking\s+(?P<op>\S+?)\s*:\s*(?P<n>\d+)\s+configs?\b(?P<tail>.*)$")
PROBLEM = re.compile(_PREFIX + r"Problem\s*:\s*(?P<key>.*)$")
SOLUTION = re.compile(_PREFIX + r"(?:Benchmarking\s+)?[Ss]olution\s*:\s*(?P<cfg>.*)$")
FASTEST = re.compile(_PREFIX + r"Fastest solution\s*:\s*(?P<cfg>.*)$")
BENCH_TIME = re.compile(_PREFIX + r"(?P<which>Fastest|Slowest) time\s*:\s*"
                        r"(?P<t>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:ms)?\s*$")
# migraphx-driver verify / verify_args: a failed comparison and the lines that describe it
VERIFY_FAILED = re.compile(_PREFIX + r"FAILED:\s*(?P<name>\S.*?)\s*$")
VERIFY_DETAIL = re.compile(_PREFIX + r"(?:RMS Error:|error:\s*[-+]?[\d.]+(?:[eE][-+]?\d+)?\s*$|Max diff:|"
                           r"Mismatch at \d+:|"
                           r"ref:\s*\S|target:\s*\S|Ref data is all zeros|Target data is all zeros|"
                           r"Non finite number found)")
MXR_DUMP = re.compile(_PREFIX + r"Dump:\s*\"?(?P<path>[^\"]*\.mxr)\"?\s*$")
# migraphx-driver perf / trace lines around a printed program
PERF_INS = re.compile(r"^(?P<ins>\S+ = .*\S): (?P<t>[\d.]+(?:[eE][-+]?\d+)?)ms, (?P<pct>-?\d+)%\s*$")
PERF_SUM = re.compile(r"^\s*(?P<name>[@\w:.]+): (?P<t>[\d.]+(?:[eE][-+]?\d+)?)ms(?: / \d+ = [\d.eE+-]+ms)?, -?\d+%\s*$")
RUN_INS = re.compile(r"^\s*Run instruction: (?P<ins>.*)$")
RUN_TIME = re.compile(r"^\s*Time: [\d.eE+-]+ms(?:, [\d.eE+-]+ms)*\s*$")
LABEL = re.compile(r"^\s*(?:Verify: \S.*|ref:|gpu:|cpu:|fpga:|target:|\[\s*(?:RUN|OK|COMPLETE)\s*\].*)\s*$")
ENV_LINE = re.compile(r"^\s*(?:[A-Z][A-Z0-9_]*=\S*\s*)+$")
TIME = re.compile(r"^\s*(?P<t>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)\s*ms\s*$")
NOBIN = re.compile(r"^\s*No binary\s*$")
FAILED_SOL = re.compile(r"^\s*Failed:\s*(?P<status>\S+)")
SKIPPED = re.compile(r"Skipped\s+(?P<n>\d+)\s+configs?\s+for\s+(?P<op>\S+)")
MLIR_HASH = re.compile(r"^\s*mlir hash:\s*(?P<h>\w+)")
KTIME = re.compile(r"^\s*(?P<name>[A-Za-z_][\w]*(?:::[\w.-]+)+)\s*:\s*(?P<t>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*ms\b")
DRIVER = re.compile(r"^\s*(?:Running \[ MIGraphX Version|Compiling \.\.\.|Reading: |Allocating params|"
                    r"Running performance report|Summary:|Batch size:|Rate:|Total time:|"
                    r"Total instructions time:|Overhead time:|Overhead:|Compiled |MIGraphX Version)")
PROMPT = re.compile(r"^\S+@[\w.-]+:\S*[$#]\s|^\s*\$\s+\S")     # user@host:dir$ cmd, or "$ cmd" as pasted
ROCBLAS = re.compile(r"Winning GEMM solution|rocblas|hipblaslt", re.I)
WARNING = re.compile(r"(?i)\bwarning\b\s*[:!]|^\s*\[\s*W")
INFO = re.compile(r"^\s*(?:Loaded MLIR backend plugin|Saving benchmark binary|Benchmark MXR files|Built \d+ solutions|"
                  r"Run with solution|\[\s*I)")
SHAPE_LINE = re.compile(r"^\s*\w+_type, \{[\d, ]*\}, \{[\d, ]*\}\s*$")
_BYTES_OK = set("0123456789, \t")

TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):")
WHAT = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)$")
NOTE_OP = re.compile(r"(?i)^\s*note:\s*see current operation:\s*(?P<op>.*)$")
DIAG = re.compile(r"^\s*(?P<loc>loc\(.*?\)|<unknown>(?::\d+){1,2}|[^\s:]+:\d+:\d+)\s*:\s*"
                  r"(?P<sev>error|warning|note|remark)\s*:\s*(?P<msg>.*)$")
ERR_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("no_valid_tuned", re.compile(r"No valid tuned compilation for (?P<op>\S+) with (?P<key>.*)")),
    ("no_solutions", re.compile(r"No solutions provided for (?P<op>\S+) with (?P<key>.*)")),
    ("invalid_mlir", re.compile(r"Invalid MLIR created")),
    ("backend_failed", re.compile(r"(?i)backend compilation failed")),
    ("compile_exception", re.compile(r"Exception in (?P<op>[\w:]+)\s*:")),
    ("terminate", re.compile(r"terminate called (?:after throwing an instance of '(?P<type>[^']*)'|"
                             r"without an active exception|recursively)")),
    ("gpu_fault", re.compile(r"Memory access fault by GPU|HSA_STATUS_ERROR|GPU core dump|Page not present")),
    ("hip_error", re.compile(r"\bhipError\w+|\bHIP (?:runtime )?error", re.I)),
    (Status.CRASH, re.compile(r"\b(?:Segmentation fault|Bus error|Floating point exception|Illegal instruction)\b|"
                         r"^\s*(?:Aborted|Killed)\b|\(core dumped\)")),
    ("test_failed", re.compile(r"^\s*\[\s*FAILED\s*\]")),
    ("mlirtrace_failure", re.compile(r"^\s*mlirtrace: solution (?P<sol>\S+) failed at (?P<stage>[^:]+):")),
    ("fatal", re.compile(r"\bfatal error\b|\bFATAL\b", re.I)),
    ("error", re.compile(r"(?:^|[^\w-])error\s*:", re.I)),
    ("error", re.compile(r"^\s*(?:error|Error|ERROR)\b(?!\s*(?:=|-\s*check))")),
]
ERR_CONTEXT = re.compile(r"^\s*(?:MLIR Fused Kernel:|Module:|Input Shapes:|Problem: no config provided)\s*$")
REFINE = ("no_valid_tuned", "no_solutions", "invalid_mlir", "backend_failed")
LOC = re.compile(r"(?P<file>[^\s:]+\.(?:cpp|hpp|cc|cxx|c|h|py)):(?P<no>\d+):\s*(?:(?P<func>\w+):\s)?")


# ================================================================ helpers ==
def braces(s: str) -> int:
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


def balanced_end(s: str, i: int, close_c: str) -> int:
    """Index just past the bracket ``close_c`` closing the one at ``s[i]`` (counting ``{}`` too), or -1."""
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


def strong_stop(t: str) -> bool:
    """Lines that never come in the middle of a printed MLIR module or module dump: another part begins.

    (Warnings, errors and other stderr lines may interleave; benchmarking lines and module text cannot.)
    """
    return bool(BENCH_HDR.match(t) or PROBLEM.match(t) or SOLUTION.match(t) or FASTEST.match(t)
                or SKIPPED.search(t) or MODULE_HDR.match(t) or ins_candidate(t) or TRACEBACK.match(t)
                or VERIFY_FAILED.match(t) or BENCH_TIME.match(t))


def indent(t: str) -> int:
    return len(t) - len(t.lstrip())


def is_bytes_line(t: str) -> bool:
    return t.count(",") >= 15 and set(t) <= _BYTES_OK and any(ch.isdigit() for ch in t)


def ins_candidate(t: str) -> re.Match | None:
    if PERF_INS.match(t):          # an instruction with its time (migraphx-driver perf): not module text
        return None
    m = INS.match(t)
    if not m:
        return None
    name, op, rest = m.group("name"), m.group("op"), m.group("rest")
    if name.startswith("@") or ":" in name or op.startswith("@") or "->" in rest or "target_id" in rest:
        return m
    return None


def name_prefix(full: str) -> str:
    return full.rsplit(":", 1)[0] if ":" in full else ""


def single_claims(t: str) -> bool:
    return bool(BENCH_HDR.match(t) or SOLUTION.match(t) or FASTEST.match(t) or PROBLEM.match(t)
                or KTIME.match(t) or any(p.search(t) for _, p in ERR_PATTERNS[:8]))


def looks_log(t: str) -> bool:
    """A line that is some other part of a log (so not a continued MLIR line)."""
    return bool(COMMENT.match(t) or ins_candidate(t) or BENCH_HDR.match(t) or PROBLEM.match(t)
                or SOLUTION.match(t) or FASTEST.match(t) or TIME.match(t) or NOBIN.match(t)
                or SKIPPED.search(t) or WHAT.match(t) or NOTE_OP.match(t) or DIAG.match(t)
                or KTIME.match(t) or DRIVER.match(t) or WARNING.search(t) or INFO.match(t)
                or is_bytes_line(t) or TRACEBACK.match(t) or re.match(r"^\[", t)
                or any(p.search(t) for _, p in ERR_PATTERNS))
