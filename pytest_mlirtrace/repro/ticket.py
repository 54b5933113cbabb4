"""Ticket bodies (markdown, ready to file) and the INDEX.md table."""
from __future__ import annotations

import re

from .evidence import LAYER_WORDS

OCCURRENCES_RE = re.compile(r"^\*\*Occurrences:\*\* .*$", re.MULTILINE)
KIND_WORDS = {"build_error": "build error", "crash": "crash", "hang": "hang", "wrong": "wrong results",
              "slow": "too slow", "assertion": "test assertion", "launch_error": "launch error",
              "lowering_error": "lowering error", "imported": "imported from a trace log"}


def fence(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    runs = [len(m) for m in re.findall(r"`+", text or "")]
    ticks = "`" * max(3, max(runs, default=0) + 1)
    return f"{ticks}{lang}\n{(text or '').rstrip()}\n{ticks}"


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def title(data: dict) -> str:
    sym = re.search(r"-(.+)-[0-9a-f]{8}$", data["signature"])
    symbol = sym.group(1) if sym else "module"
    return f"[mlirtrace] {data['kind']}: {symbol} with solution {data['solution'] or '(none)'} on {data['device_key']}"


def occurrences_line(entry: dict) -> str:
    first, last = one_line(entry.get("first_origin", "")) or "?", one_line(entry.get("last_origin", "")) or "?"
    where = f"first: {first}" + (f"; last: {last}" if entry.get("count", 1) > 1 else "")
    return f"**Occurrences:** {entry.get('count', 1)} ({where})"


def render_ticket(data: dict, entry: dict, script_rel: str) -> str:
    kind = data["kind"]
    out = [f"# {title(data)}", ""]
    out += [f"**Failure kind:** {kind} ({KIND_WORDS.get(kind, kind)}), at the {data['stage']} stage  ",
            f"**Signature:** `{data['signature']}`  ",
            f"**Solution (perf config):** `{data['solution'] or '(none)'}`  ",
            f"**Device:** {one_line(data.get('device_description') or data['device_key'])}  ",
            occurrences_line(entry), ""]
    if data.get("inject"):
        out += [f"> Recorded with the seeded fault `MLIRTRACE_INJECT={data['inject']}` switched on: this is a "
                "planted bug, used to test the tooling.", ""]
    sus = data.get("suspect")
    if sus:
        out += ["## Suspected layer", "", f"**{LAYER_WORDS.get(sus['layer'], sus['layer'])}**", ""]
        out += [f"- {one_line(e)}" for e in sus.get("evidence", [])] + [""]
    out += ["## Problem key", "", fence(data["problem_key"], "text"), ""]
    out += ["## Error", "", fence(data["error"], "text"), ""]
    if data.get("mismatch") and data["mismatch"] != data["error"]:
        out += ["## Mismatch against the numpy oracle", "", fence(data["mismatch"], "text"), ""]
    if kind == "hang" and data.get("timeout_s") is not None:
        out += [f"No result within the timeout of {data['timeout_s']:g} s.", ""]
    if kind == "slow" and data.get("max_ms") is not None:
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
        f"python {script_rel} --all-solutions  # quick-tunes every solution of the problem, reports each\n"
        f"python {script_rel} --standalone     # numpy + pyopencl only", "sh"), "",
        f"Exit status 0 once fixed, 1 while the failure reproduces (3: fails differently, 4: cannot run). "
        f"Inputs: `ir.random_inputs(module, seed={data['seed']})`. Standalone: {std}.", ""]
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
                 one_line(e.get("last_origin", "")), f"[{e['script']}]({e['script']})", f"[{e['ticket']}]({e['ticket']})"]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    return "\n".join(out)

