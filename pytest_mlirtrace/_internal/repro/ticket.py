"""Ticket bodies (markdown, ready to file) and the INDEX.md table."""
from __future__ import annotations

import re

from ..config import environment
from ..vocab import Status
from .evidence import LAYER_WORDS
from .handoff import handoff_markdown
from .markdown import fence, one_line

OCCURRENCES_RE = re.compile(r"^\*\*Occurrences:\*\* .*$", re.MULTILINE)
KIND_WORDS = {Status.BUILD_ERROR: "build error", Status.CRASH: "crash", Status.HANG: "hang",
              Status.WRONG: "wrong results", Status.SLOW: "too slow", Status.ASSERTION: "test assertion",
              Status.LAUNCH_ERROR: "launch error", Status.LOWERING_ERROR: "lowering error",
              Status.IMPORTED: "imported from a trace log"}
__all__ = ["KIND_WORDS", "fence", "one_line", "render_ticket", "render_index", "update_occurrences", "title",
           "planted_note", "failing_solutions"]


def failing_solutions(data: dict) -> list[str]:
    """The solutions recorded failing this way, the reproducer's (``data['solution']``) first."""
    sols = [s for s in (data.get("solutions") or []) if s]
    return sols or ([data["solution"]] if data.get("solution") else [])


def title(data: dict) -> str:
    sym = re.search(r"-(.+)-[0-9a-f]{8}$", data["signature"])
    symbol = sym.group(1) if sym else "module"
    sols = failing_solutions(data)
    with_ = (f"with {len(sols)} solutions" if len(sols) > 1 else
             f"with solution {sols[0] if sols else '(none)'}")
    return f"[mlirtrace] {data['kind']}: {symbol} {with_} on {data['device_key']}"


def planted_note(data: dict) -> list[str]:
    """What the ticket says of a fault that was switched on when it failed."""
    inj = data.get("inject")
    if not inj:
        return []
    planted = data.get("planted")
    if planted is True:
        text = (f"> Planted bug: it fails with the seeded fault `{environment.INJECT}={inj}` and passed with the "
                "fault switched off. Used to test the tooling; not a compiler bug.")
    elif planted is False:
        text = (f"> Recorded with the seeded fault `{environment.INJECT}={inj}` switched on, but it fails with the "
                "fault switched off too: **a real bug**, not the planted one.")
    else:
        text = (f"> Recorded with the seeded fault `{environment.INJECT}={inj}` switched on; whether the fault caused "
                f"it was not checked (run the reproducer without {environment.INJECT} to find out).")
    return [text, ""]


def solutions_lines(data: dict) -> list[str]:
    sols, passed = failing_solutions(data), [p for p in (data.get("passed") or []) if p]
    out = [f"**Failing solutions ({len(sols)}; the reproducer runs the first):** "
           + (", ".join(f"`{s}`" for s in sols) or "(none)") + "  "]
    out.append(f"**Solutions that passed on the same module ({len(passed)}):** "
               + (", ".join(f"`{p}`" for p in passed) if passed else "none recorded") + "  ")
    return out


def occurrences_line(entry: dict) -> str:
    first, last = one_line(entry.get("first_origin", "")) or "?", one_line(entry.get("last_origin", "")) or "?"
    where = f"first: {first}" + (f"; last: {last}" if entry.get("count", 1) > 1 else "")
    hits = entry.get("hits") or {}
    if hits:    # a fleet's store: which machines and devices hit it, how often
        where += "; hit on: " + ", ".join(f"{one_line(k)} x{v}" for k, v in sorted(hits.items()))
    return f"**Occurrences:** {entry.get('count', 1)} ({where})"


def render_ticket(data: dict, entry: dict, script_rel: str, mlir_rel: str | None = None) -> str:
    kind = data["kind"]
    out = [f"# {title(data)}", ""]
    out += [f"**Failure kind:** {kind} ({KIND_WORDS.get(kind, kind)}), at the {data['stage']} stage  ",
            f"**Signature:** `{data['signature']}`  ",
            f"**Solution (perf config):** `{data['solution'] or '(none)'}`  "] + solutions_lines(data) + [
            f"**Device:** {one_line(data.get('device_description') or data['device_key'])}  ",
            occurrences_line(entry), ""]
    out += planted_note(data)
    sus = data.get("suspect")
    if sus:
        out += ["## Suspected layer", "", f"**{LAYER_WORDS.get(sus['layer'], sus['layer'])}**", ""]
        out += [f"- {one_line(e)}" for e in sus.get("evidence", [])] + [""]
    out += ["## Problem key", "", fence(data["problem_key"], "text"), ""]
    out += ["## Error", "", fence(data["error"], "text"), ""]
    if data.get("mismatch") and data["mismatch"] != data["error"]:
        out += ["## Mismatch against the numpy oracle", "", fence(data["mismatch"], "text"), ""]
    if kind == Status.HANG and data.get("timeout_s") is not None:
        out += [f"No result within the timeout of {data['timeout_s']:g} s.", ""]
    if kind == Status.SLOW and data.get("max_ms") is not None:
        t = data.get("time_ms")
        out += [f"Measured {t:.4g} ms; the bound is {data['max_ms']:.4g} ms.", ""] if t is not None else []
    if data.get("build_log"):
        out += ["## Build log", "", fence(data["build_log"], "text"), ""]
    out += ["## MLIR", "", fence(data["mlir_text"], "mlir"), ""]
    out += ["## migraphx module", "", fence(data["module_text"], "text"), ""]
    if data.get("bench_table"):
        out += ["## Benchmark table", "", fence(data["bench_table"], "text"), ""]
    if data.get("kernel_source"):
        out += ["<details><summary>Kernel source (OpenCL C, "
                f"{data.get('kernel_name') or 'kernel'})</summary>", "", fence(data["kernel_source"], "c"), "",
                "</details>", ""]
    std = ("`--standalone` (numpy + pyopencl only: builds the recorded kernel, compares with the recorded "
           "oracle outputs)" if data.get("standalone") else
           f"no standalone path: {data.get('standalone_reason') or 'no kernel'}")
    out += ["## How to reproduce", "", fence(
        f"python {script_rel}                  # re-lowers the MLIR with the solution (needs pytest_mlirtrace)\n"
        f"python {script_rel} --show-kernel    # ... and prints the kernel source\n"
        f"python {script_rel} --all-solutions  # runs every recorded solution (failing and passing), reports each\n"
        f"python {script_rel} --standalone     # numpy + pyopencl only", "sh"), "",
        f"Exit status 0 once fixed, 1 while the failure reproduces (2: bad usage, 3: not supported here, "
        f"4: cannot run here, 5: only the original test can judge, 6: fails differently). "
        f"Inputs: `ir.random_inputs(module, seed={data['seed']})`. Standalone: {std}.", ""]
    if mlir_rel:
        out += handoff_markdown(data, mlir_rel)
    v = data.get("versions", {})
    out += ["## Environment", ""] + [f"- {k}: {val}" for k, val in v.items()]
    out += [f"- device: {one_line(data.get('device_description') or data['device'])}",
            f"- recorded from: {one_line(data.get('origin') or '?')}", ""]
    return "\n".join(out)


def update_occurrences(ticket: str, entry: dict) -> str:
    line = occurrences_line(entry)
    if OCCURRENCES_RE.search(ticket):
        return OCCURRENCES_RE.sub(lambda _m: line, ticket, count=1)
    return ticket.rstrip("\n") + "\n\n" + line + "\n"


def render_index(entries: list[dict]) -> str:
    out = ["# mlirtrace reproducers", "",
           "| signature | kind | count | first origin | last origin | reproducer | ticket |",
           "|---|---|---:|---|---|---|---|"]
    for e in entries:
        cells = [f"`{e['signature']}`", e["kind"], str(e["count"]), one_line(e.get("first_origin", "")),
                 one_line(e.get("last_origin", "")), f"[{e['script']}]({e['script']})",
                 f"[{e['ticket']}]({e['ticket']})"]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    return "\n".join(out)

