"""Errors a log reports: ``terminate called`` / ``what():``, ``Exception in gpu::mlir_op: ...``, MLIR
diagnostics and their notes, "Invalid MLIR created", "MLIR backend compilation failed", "No valid tuned
compilation", Python tracebacks, crashes, GPU faults ...

An error printed while a solution was being benchmarked names that solution as the suspect.
"""
from __future__ import annotations

import re

from ..vocab.problem_key import parse_problem_key
from .lines import (BLANK, DIAG, ERR_CONTEXT, ERR_PATTERNS, LOC, MXR_DUMP, NOTE_OP, REFINE, TRACEBACK, VERIFY_DETAIL,
                    VERIFY_FAILED, WHAT)
from .parts import ErrorPart, LogError, OtherLine
from .reader import Reader


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
    t = L.text
    near = r.last_error is not None and i - r.last_error_idx <= 3
    prev = r.last_error
    if (prev is not None and i - r.last_error_idx == 1 and prev.message.rstrip().endswith(":")
            and prev.origin != "traceback" and not _starts_error(t)):
        # the message goes on on the next line ("... Invalid MLIR created:" / "error: ..."): one error, not two
        prev.text.append(t)
        prev.message = f"{prev.message} {t.strip()}"
        prev.end_line = L.no
        fill_error(prev, prev.message)
        r.last_error_idx = i
        return True
    m = VERIFY_FAILED.match(t)
    if m:
        e = add_error(r, i, "verify_failed", "verify", t)
        e.op = m.group("name")
        return True
    if VERIFY_DETAIL.match(t) and near and r.last_error is not None and r.last_error.kind == "verify_failed":
        e = r.last_error
        e.text.append(t)
        e.context.append((L.no, t))
        e.end_line = L.no
        if t.strip().startswith("Mismatch at"):
            e.detail = t.strip()
        r.last_error_idx = i
        return True
    m = MXR_DUMP.match(t)
    if m:
        e = r.last_error
        if e is not None and e.dump is None and i - r.last_error_idx <= 6:
            e.dump, e.dump_line = m.group("path"), L.no
            e.context.append((L.no, t))
            e.end_line = max(e.end_line, L.no)
            r.last_error_idx = i
        else:
            r.parts.other.append(OtherLine(L.no, t, "mxr_dump"))
        return True
    m = WHAT.match(t)
    if m:
        e = r.last_error
        if near and e is not None and e.origin == "terminate" and len(e.text) == 1:
            e.text.append(t)
            e.end_line = L.no
            e.message = m.group("msg").strip()
            fill_error(e, e.message)
            r.last_error_idx = i
            return True
        add_error(r, i, "error", "what", m.group("msg"))
        return True
    m = NOTE_OP.match(t)
    if m:
        if near and r.last_error is not None:
            e = r.last_error
            e.context.append((L.no, t))
            e.end_line = L.no
            om = re.match(r'\s*(?:%[\w.#:-]+(?:\s*,\s*%[\w.#:-]+)*\s*=\s*)?"?(?P<op>[A-Za-z_][\w.]*)"?', m.group("op"))
            if om:
                e.mlir_op = om.group("op")
            r.last_error_idx = i
        else:
            r.parts.other.append(OtherLine(L.no, t, "diagnostic_note"))
        return True
    if ERR_CONTEXT.match(t):
        if near and r.last_error is not None:
            r.last_error.context.append((L.no, t))
            r.last_error.end_line = L.no
            r.last_error_idx = i
        else:
            r.parts.other.append(OtherLine(L.no, t, "error_context"))
        return True
    m = DIAG.match(t)
    if m:
        sev = m.group("sev")
        if sev == "error":
            e = add_error(r, i, "mlir_diagnostic", "diagnostic", m.group("msg"))
            e.location = m.group("loc")
            fill_error(e, m.group("msg"))
            if e.kind not in REFINE:
                e.kind = "mlir_diagnostic"
        elif sev == "note" and near and r.last_error is not None:
            r.last_error.context.append((L.no, t))
            r.last_error.end_line = L.no
            r.last_error_idx = i
        else:
            r.parts.other.append(OtherLine(L.no, t, "warning" if sev == "warning" else "diagnostic_note"))
        return True
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
