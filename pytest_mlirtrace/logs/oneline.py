"""One line on its own: a benchmark or error line, code-object bytes, a kernel timing, an MLIR hash, or
any other line (kept, with a kind: comment, driver, prompt, warning, info, ...)."""
from __future__ import annotations

from .blocks import bench_line, bytes_line
from .errors import error_line
from .lines import (BLANK, COMMENT, DRIVER, ENV_LINE, INFO, KTIME, LABEL, MLIR_HASH, MODULE_HDR, NOBIN, PERF_INS,
                    PERF_SUM, PROMPT, ROCBLAS, RUN_INS, RUN_TIME, SHAPE_LINE, TIME, WARNING, Line, is_bytes_line)
from .parts import KernelTiming, OtherLine
from .reader import Reader


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
