"""Module dumps: MIGraphX module text in a log (``@4 = transpose[...](@3) -> half_type, {..}, {..}``, with or
without ``target_id`` and ``mlir_main:pointwise4:`` name prefixes, maybe after a ``module: "main"`` header).

A dump is parsed with :func:`pytest_mlirtrace._internal.ir.text.parse_module` where it can be; a line the ir parser
refuses but whose structure is whole is read loosely (and the dump marked as not runnable, with the
reason); a truly malformed line becomes a :class:`LogError`.  Other log lines printed in the middle of
a dump are read on their own and the dump goes on.
"""
from __future__ import annotations

import re

from ..ir import Instruction, Module, Shape, TextParseError, parse_module
from ..ir.dtypes import BY_MIGRAPHX
from ..ir.text import not_runnable, parse_instruction_line
from .line_kinds import BLANK, INS, MLIR_START, MODULE_HDR, balanced_end, ins_candidate, name_prefix, strong_stop
from .line_parts import single
from .parts import LogError, ModuleDump, OtherLine
from .read_state import Reader

_SHAPE_TAIL = re.compile(r"^\s*->\s*(?P<type>\w+)\s*,\s*(?P<lens>\{[^{}]*\})\s*,\s*(?P<strides>\{[^{}]*\})\s*"
                         r"(?:,\s*target_id=(?P<tid>\d+))?\s*$")


def _lenient_line(t: str) -> tuple[Instruction, bool, str | None] | None:
    """An instruction line the ir parser refuses but whose structure is whole, read loosely.

    ``name = op[attrs](inputs) -> type, {lens}, {strides}[, target_id=N]`` with balanced brackets;
    attribute values are kept as text (e.g. ``shape=float_type, {1, 2}, {2, 1}`` of hip::allocate),
    an unknown element type leaves the shape out.  None when the line is truly malformed.
    """
    m = INS.match(t)
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
            i = balanced_end(rest, 0, "}")
            if i < 0:
                return None
        note = "literal values kept out"
    else:
        if rest.startswith("["):
            k = balanced_end(rest, 0, "]")
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
            k = balanced_end(rest, i, ")")
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


def take_dump(r: Reader, i: int) -> int:
    """Read the module dump that begins at logical line ``i``; the index of the line after it."""
    start = i
    header = None
    m = MODULE_HDR.match(r.lines[i].text)
    if m:
        header = (r.lines[i].no, m.group("name"))
        i += 1
    rows: list[tuple] = []        # (kind, Line, full name, Instruction | None, has_tid, error)
    names: set[str] = set()
    prefix: str | None = None
    interleaved: list[int] = []
    j = i
    while j < r.n:
        L = r.lines[j]
        t = L.text
        if BLANK.match(t) or MODULE_HDR.match(t):
            break
        cand = ins_candidate(t)
        if cand is not None:
            try:
                full, ins, tid = parse_instruction_line(t)
                ok, err = True, None
            except Exception as e:  # ValueError, DTypeError, ...
                ok, err = False, str(e)
            if ok:
                p = name_prefix(full)
                # MIGraphX before 2023-05 printed main:@3 but bare parameters: a parameter keeps the dump going
                # a parameter's name is its own (x:0) or the prefix and its own (main:pointwise0:x0)
                own = ins.op == "@param" and full == ins.param
                param_ok = own or (ins.op == "@param" and p == prefix)
                if rows and ((prefix is not None and p != prefix and not param_ok) or full in names):
                    break
                if prefix is None and not own:
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
                rows.append(("bad", L, full, _lenient_ins(cand), None, err))
            names.add(full)
            if prefix is None:
                prefix = name_prefix(full)
            j += 1
            continue
        if rows and not strong_stop(t) and _dump_continues(r, j, prefix, names):
            interleaved.append(L.no)
            single(r, j, inside=f"module {len(r.parts.module_dumps)}")
            j += 1
            continue
        break
    if not rows:
        L = r.lines[start]
        r.parts.other.append(OtherLine(L.no, L.text, "module_header"))
        return start + 1
    _finish_dump(r, start, header, rows, prefix or "", interleaved)
    return j


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


def _dump_continues(r: Reader, j: int, prefix: str | None, names: set[str]) -> bool:
    for k in range(j + 1, min(r.n, j + 6)):
        t = r.lines[k].text
        if BLANK.match(t) or MLIR_START.match(t) or (strong_stop(t) and not ins_candidate(t)):
            return False
        if ins_candidate(t):
            try:
                full, _, _ = parse_instruction_line(t)
            except Exception:
                return True
            return name_prefix(full) == (prefix or "") and full not in names
    return False


def _finish_dump(r: Reader, start: int, header, rows, prefix: str, interleaved: list[int]) -> None:
    idx = len(r.parts.module_dumps)
    lines_in = ([r.lines[start]] if header else []) + [row[1] for row in rows]
    text = "\n".join(L.text for L in lines_in) + "\n"
    d = ModuleDump(index=idx, start_line=r.lines[start].no, end_line=rows[-1][1].no, text=text,
                   header_line=header[0] if header else None, interleaved=interleaved,
                   instruction_lines=[row[1].no for row in rows if row[0] == "ok"])
    bad_names = set()
    for kind, L, full, ins, _tid, err in rows:
        if kind == "bad":
            d.malformed.append(L.no)
            bad_names.add(full)
            r.parts.errors_found.append(LogError(L.no, f"malformed instruction line in module dump {idx}: {err}"))
        elif kind == "lenient":
            d.unsupported.append(f"line {L.no}: {ins.op} read loosely: {err.split(' (known')[0]}")
    # undefined inputs (a dump whose first lines are missing, or a lost line)
    defined: set[str] = set()
    undefined: list[tuple[int, str]] = []
    for _kind, L, full, ins, _tid, _err in rows:
        if ins is not None:
            for x in ins.inputs:
                if x not in defined and x not in bad_names:
                    undefined.append((L.no, x))
        defined.add(full)
    if undefined:
        miss = sorted({x for _, x in undefined}, key=lambda s: [x for _, x in undefined].index(s))
        r.parts.errors_found.append(LogError(
            undefined[0][0], f"module dump {idx} uses {', '.join(miss)} which the dump does not define "
                             f"(its first lines missing, or a line lost)"))
    ok_rows = [row for row in rows if row[0] == "ok"]
    mod = None
    if not d.malformed and not undefined and len(ok_rows) == len(rows):
        try:
            mod = parse_module(text, source=r.parts.source, verify=False)
        except TextParseError as e:
            d.parse_error = str(e).split("\n")[0]
            at = lines_in[e.line - 1].no if 0 < e.line <= len(lines_in) else d.start_line
            r.parts.errors_found.append(LogError(at, f"module dump {idx}: {d.parse_error}"))
        except Exception as e:
            d.parse_error = f"{type(e).__name__}: {e}"
    if mod is None:
        mod = _lenient_module(rows, prefix)
    d.module = mod
    d.name = (header[1] if header else None) or (mod.name if mod is not None else None) or (prefix or None)
    if mod is not None:
        try:
            d.unsupported.extend(not_runnable(mod))
        except Exception:
            pass
    r.parts.module_dumps.append(d)


def _lenient_module(rows, prefix: str) -> Module | None:
    pre = prefix + ":" if prefix else ""

    def strip(n: str) -> str:
        return n[len(pre):] if pre and n.startswith(pre) else n

    mod = Module(name=prefix or None, target_id=all(row[4] for row in rows if row[0] == "ok") and
                 any(row[0] == "ok" for row in rows))
    seen = set()
    for kind, _L, full, ins, _tid, _err in rows:
        if ins is None or kind == "bad":
            continue
        ins.name = strip(full)
        ins.inputs = [strip(x) for x in ins.inputs]
        if ins.name in seen:
            continue
        seen.add(ins.name)
        mod.instructions.append(ins)
    return mod if mod.instructions else None
