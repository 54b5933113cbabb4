"""MLIR modules in a log: finding where each one starts and ends, and judging whether it can run here.

A module is ``module {`` ... ``}`` (or a bare ``func.func``, maybe after ``#map = ...`` aliases) in the
migraphx dialect with ``tensor<>`` or ``!migraphx.shaped<>`` types, or lowered (rock dialect, memrefs),
which is kept and classified.  Braces are counted outside strings and comments; stderr lines printed in
the middle of a module are read on their own and the module goes on; a module the log cuts is kept
and reported.  Each module is then scanned (:mod:`.mlir_scan`), parsed by the ``mlir`` layer when
one is given, and given every reason it cannot run.
"""
from __future__ import annotations

import re
from typing import Any

from ..ir.dtypes import BY_MLIR
from .line_kinds import ALIAS, BLANK, MLIR_BODY, MLIR_CONT, MLIR_START, Line, braces, indent, looks_log, strong_stop
from .line_parts import single
from .linking import derived_problems
from .mlir_scan import MLIRScan, scan_mlir
from .parts import LogError, MLIRPart, OtherLine, TraceLogParts
from .read_state import Reader

_LOOKAHEAD = 12


def take_aliases(r: Reader, i: int) -> int:
    """``#map = ...`` alias lines: the start of an MLIR module when one follows, else other lines."""
    j = i
    while j < r.n and (ALIAS.match(r.lines[j].text) or BLANK.match(r.lines[j].text)):
        j += 1
    if j < r.n and MLIR_START.match(r.lines[j].text):
        return take_mlir(r, i, j)
    for k in range(i, j):
        L = r.lines[k]
        if BLANK.match(L.text):
            r.parts.blank_lines += 1
        else:
            r.parts.other.append(OtherLine(L.no, L.text, "mlir_alias"))
    return j


def _mlir_continues(r: Reader, j: int, func_ok: bool = False, cont_ok: bool = False) -> bool:
    """After a non-MLIR (or blank) line at ``j``: does the block go on a few lines later?

    ``func_ok``: the block is a module at its top level, where a ``func.func`` goes on with it.
    """
    for k in range(j + 1, min(r.n, j + 1 + _LOOKAHEAD)):
        t = r.lines[k].text
        if BLANK.match(t):
            continue
        if func_ok and re.match(r"^\s*func\.func\b", t):
            return True
        if MLIR_START.match(t) or ALIAS.match(t) or strong_stop(t):
            return False
        if MLIR_BODY.match(t):
            return True
        if cont_ok and not (MLIR_CONT.match(t) and not looks_log(t)):
            return False
    return False


def take_fragment(r: Reader, i: int) -> int:
    """MLIR operations with no module or func around them (a log that lost those lines)."""
    j = i
    while j < r.n and MLIR_BODY.match(r.lines[j].text) and not MLIR_START.match(r.lines[j].text) \
            and not BLANK.match(r.lines[j].text):
        L = r.lines[j]
        r.parts.other.append(OtherLine(L.no, L.text, "mlir_fragment"))
        j += 1
    j = max(j, i + 1)
    r.parts.errors_found.append(LogError(r.lines[i].no, "MLIR operations outside any module or func "
                                                        "(its 'module {' / 'func.func' line is missing)"))
    return j


def take_mlir(r: Reader, first: int, i: int) -> int:
    """Read the MLIR module starting at ``i`` (its aliases from ``first``); the index after it."""
    body: list[Line] = [r.lines[k] for k in range(first, i) if not BLANK.match(r.lines[k].text)]
    for k in range(first, i):
        if BLANK.match(r.lines[k].text):
            r.parts.blank_lines += 1
    idx = len(r.parts.mlir_modules)
    bare = bool(re.match(r"^\s*func\.func\b", r.lines[i].text))
    first_indent = indent(r.lines[i].text)
    module_levels = {1}          # brace depths at which a module's body (where funcs live) is open
    depth = 0
    opened = False
    complete = False
    interleaved: list[int] = []
    j = i
    while j < r.n:
        L = r.lines[j]
        t = L.text
        if j > i:
            top = not bare and opened and depth in module_levels
            if BLANK.match(t):
                if _mlir_continues(r, j, top):
                    r.parts.blank_lines += 1
                    j += 1
                    continue
                break
            if MLIR_START.match(t):
                # a func inside this module, or a module nested deeper (rocMLIR's mhal host/device
                # modules), goes on; any other start means this block was cut
                inner_func = (not bare and opened and depth in module_levels
                              and re.match(r"^\s*func\.func\b", t))
                nested = (not bare and opened and depth >= 1 and re.match(r"^\s*module\b", t)
                          and indent(t) > first_indent)
                if not inner_func and not nested:
                    break
                if nested:
                    module_levels.add(depth + 1)
            if not MLIR_BODY.match(t):
                if (not opened and not bare) or strong_stop(t):
                    break
                if not looks_log(t) and MLIR_CONT.match(t) and _mlir_continues(r, j, top, True):
                    pass    # an op or signature continued on an indented line: MLIR text
                elif _mlir_continues(r, j, top):
                    interleaved.append(L.no)
                    single(r, j, inside=f"mlir {idx}")
                    j += 1
                    continue
                else:
                    break
        body.append(L)
        depth += braces(t)
        if depth > 0:
            opened = True
        j += 1
        if opened and depth <= 0:
            complete = True
            break
        if not opened and bare and not re.search(r",\s*$|\(\s*$", t) and j < r.n and \
                not MLIR_BODY.match(r.lines[j].text):
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
        nxt = r.lines[j].no if j < r.n else None
        where = f"the log moves on at line {nxt}" if nxt is not None else "the log ends"
        part.missing_braces = missing
        r.parts.errors_found.append(LogError(part.start_line, f"MLIR module {idx} is not closed: {missing} '}}' "
                                                              f"missing ({where}; truncated or unbalanced braces)"))
    elif depth < 0:
        r.parts.errors_found.append(LogError(part.end_line, f"unbalanced braces in MLIR module {idx}: "
                                                            f"{-depth} '}}' too many"))
    r.parts.mlir_modules.append(part)
    r.last_mlir_idx = j - 1
    return j


def _not_lowered(module) -> str | None:
    """Why the code generator refuses ``module`` (it parsed and verified), or None when it lowers it."""
    from ..codegen import LoweringError, problem_of
    try:
        problem_of(module)
    except LoweringError as e:
        return f"not supported by the code generator: {e}"
    return None


# ---------------------------------------------------------- classification --
def classify_mlir(parts: TraceLogParts, layer: Any = None) -> None:
    """Scan each MLIR module, parse it with ``layer`` where given, and say whether (and why not) it runs."""
    for part in parts.mlir_modules:
        try:
            _classify_one(parts, layer, part)
        except Exception as e:  # pragma: no cover - defensive
            part.runnable = False
            part.why_not = f"could not classify: {type(e).__name__}: {e}"
            part.unsupported = [part.why_not]


def _classify_one(parts: TraceLogParts, layer: Any, part: MLIRPart) -> None:
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
        parts.errors_found.append(LogError(at, f"MLIR module {part.index}: unterminated string literal"))
    if layer is not None and part.complete and bad_str is None:
        # (an unterminated string is kept from the layer: xDSL's string lexer backtracks exponentially on it)
        try:
            parsed = layer.parse_mlir(part.text, parts.source)
            part.parsed = list(parsed) if parsed is not None else []
            layer_ok = True
            part.checked_by = "mlir"
        except Exception as e:
            msg = _log_pos(part, str(e).strip().split("\n")[0], parts.source)
            part.parse_error = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    reasons.extend(scan_reasons(sc, with_ops=not layer_ok))
    if layer_ok:
        for pf in part.parsed or []:
            for u in _as_list(getattr(pf, "unsupported", None)):
                reasons.append(_log_pos(part, _reason(u)))
            inv = getattr(pf, "invalid", None)
            if isinstance(inv, str) and inv.strip():
                reasons.append(_log_pos(part, f"invalid: {inv.strip()}"))
            module = getattr(pf, "module", None) if getattr(pf, "ok", False) else None
            if module is not None:
                why = _not_lowered(module)
                if why:
                    reasons.append(f"@{pf.name}: {why}")
    if part.parse_error and not reasons:
        reasons.append(f"the mlir layer cannot parse it ({part.parse_error})")
    seen: list[str] = []
    for why in reasons:
        if why not in seen:
            seen.append(why)
    part.unsupported = seen
    part.runnable = not seen
    part.why_not = "; ".join(seen) if seen else None
    for f in sc.funcs:
        for d in derived_problems(f):
            if d not in part.problems:
                part.problems.append(d)


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


def type_reason(dt: str) -> str | None:
    """Why an element type cannot be run here, or None when it can."""
    if dt in BY_MLIR:
        return None
    if dt.startswith("f8") or dt.lower().startswith("fp8"):
        return f"fp8 type {dt}"
    if dt.startswith("f4") or dt.startswith("f6"):
        return f"fp4/fp6 type {dt}"
    if re.fullmatch(r"[su]?i4|ui4", dt):
        return f"int4 type {dt}"
    return f"type {dt} not supported"


def supported_migraphx_ops() -> frozenset[str]:
    """The migraphx ops a module may use and still run here: those the code generator lowers."""
    from ..codegen.problem import LOWERED_OPS
    return frozenset(LOWERED_OPS) | {"literal"}


def scan_reasons(sc: MLIRScan, *, with_ops: bool = True) -> list[str]:
    """Why the scanned MLIR cannot be run here (empty list: nothing against it).

    ``with_ops=False`` leaves out the migraphx op check (when the ``mlir`` layer judged the ops).
    """
    out: list[str] = []
    if not sc.funcs:
        out.append("no func.func in the MLIR text")
    if sc.mentions_rock or "rock" in sc.dialects:
        out.append("rock dialect (lowered) MLIR")
    elif "memref" in sc.type_kinds:
        out.append("lowered MLIR (memref types)")
    seen = set()
    okops = supported_migraphx_ops()
    for f in sc.funcs:
        for o in f.ops:
            if o.name in seen:
                continue
            seen.add(o.name)
            if o.dialect == "func" or o.name == "func.return":
                continue
            if o.dialect == "migraphx":
                if with_ops and o.short not in okops:
                    out.append(f"op {o.name} not supported")
            elif o.dialect == "rock":
                out.append(f"op {o.name} not supported (rock dialect)")
            else:
                out.append(f"op {o.name} not supported ({o.dialect or 'unknown'} dialect)")
    for dt in sorted(sc.dtypes):
        r = type_reason(dt)
        if r:
            out.append(r)
    return out


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
