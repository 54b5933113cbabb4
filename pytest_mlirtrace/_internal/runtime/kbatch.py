"""Several generated kernels as one OpenCL program: one compiler front-end run instead of one each.

Why: PoCL parses its OpenCL C headers (``opencl-c.h``, some 20 000 lines) for every program it builds, twice
(preprocessing, then compiling), and keeps no precompiled header: a program of one small kernel takes ~0.1 s
on a CPU core of which ~0.09 s is those headers (``benchmarks/bench_builds.py``).  Ten kernels in one program
take ~0.1 s + ~0.01 s each.  A quick tune builds dozens of solutions of one problem and a fuzz example
several, so a worker builds them together.

What :func:`combine` accepts, and how it keeps each kernel the same as built alone:

* the sources are split into top-level pieces (preprocessor lines, and declarations ending at a ``;`` or a
  closing brace at depth 0; comments are dropped, string and character literals skipped);
* every source must have the same preprocessor lines (``#define MINI(...)``, pragmas) in the same order, all
  before its first declaration: a macro means one thing in the whole program, so no piece can read another
  source's definition;
* each source has exactly one ``__kernel`` piece, and the kernel's name is written once in it
  (``void NAME(``): it is renamed ``NAME__kb<i>``, the name the worker launches;
* every other piece (helper functions, ``__constant`` tables, the tensor-core prelude) is kept once when
  sources repeat it character for character.  Two different pieces that define the same name make the
  program fail to build; the worker then builds each source alone (so a combined program never changes
  what a kernel means: it builds as it would alone, or not at all).

Anything else (no kernel, two kernels, a name that cannot be found) returns None: build them one by one.
Standard library only: the worker loads this module by file path.
"""
from __future__ import annotations

import re

__all__ = ["combine", "alias"]


def alias(kernel: str, i: int) -> str:
    """The name kernel ``kernel`` of the ``i``-th source has in a combined program."""
    return f"{kernel}__kb{i}"


def _pieces(src: str) -> list[tuple[str, str]] | None:
    """[(kind, text)], kind "pp" (a preprocessor line) or "decl"; None when the text does not split
    cleanly (an unbalanced brace, an unterminated literal or comment)."""
    out: list[tuple[str, str]] = []
    cur: list[str] = []
    depth = 0
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if line_start and depth == 0 and not "".join(cur).strip():
            j = i
            while j < n and src[j] in " \t":
                j += 1
            if j < n and src[j] == "#":          # a preprocessor line (with its continuations)
                k = j
                while True:
                    e = src.find("\n", k)
                    e = n if e < 0 else e
                    if e > k and src[e - 1] == "\\":
                        k = e + 1
                        continue
                    break
                if any(k == "decl" for k, _ in out):
                    return None                  # a macro defined between declarations: keep it alone
                out.append(("pp", src[j:e].strip()))
                cur = []
                i = e + 1
                line_start = True
                continue
        line_start = False
        if c == "/" and src.startswith("//", i):
            e = src.find("\n", i)
            i = n if e < 0 else e           # the newline itself is kept
            continue
        if c == "/" and src.startswith("/*", i):
            e = src.find("*/", i + 2)
            if e < 0:
                return None
            cur.append(" ")
            i = e + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                if src[j] == "\\":
                    j += 1
                elif src[j] == "\n":
                    return None
                j += 1
            if j >= n:
                return None
            cur.append(src[i:j + 1])
            i = j + 1
            continue
        cur.append(c)
        if c == "\n":
            line_start = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:       # the end of a function body; a table's initializer goes on to its ';'
                rest = src[i + 1:src.find("\n", i + 1) if src.find("\n", i + 1) >= 0 else n]
                if not rest.strip().startswith(";"):
                    out.append(("decl", "".join(cur).strip()))
                    cur = []
        elif c == ";" and depth == 0:
            out.append(("decl", "".join(cur).strip()))
            cur = []
        i += 1
    if depth != 0 or "".join(cur).strip():
        return None
    return out


def combine(items: list[tuple[str, str]]) -> str | None:
    """One program text holding the kernels of ``items`` ((source, kernel name) each), the ``i``-th kernel
    renamed :func:`alias` (kernel, i); None when they cannot share one program (see the module's text)."""
    if len(items) < 2:
        return None
    pp_lines: list[str] | None = None
    seen: set[str] = set()
    body: list[str] = []
    for i, (src, kernel) in enumerate(items):
        pieces = _pieces(src)
        if pieces is None or not re.fullmatch(r"[A-Za-z_]\w*", kernel or ""):
            return None
        pp = [t for k, t in pieces if k == "pp"]
        if pp_lines is None:
            pp_lines = pp
        elif pp != pp_lines:
            return None
        kernels = [t for k, t in pieces if k == "decl" and re.search(r"\b__kernel\b|\bkernel\s+void\b", t)]
        if len(kernels) != 1:
            return None
        call = re.compile(r"\bvoid\s+" + re.escape(kernel) + r"\s*\(")
        if len(call.findall(kernels[0])) != 1 or len(re.findall(r"\b" + re.escape(kernel) + r"\b", kernels[0])) != 1:
            return None
        for k, t in pieces:
            if k != "decl":
                continue
            if t is kernels[0]:
                body.append(call.sub(f"void {alias(kernel, i)}(", t))
            elif t not in seen:
                seen.add(t)
                body.append(t)
    return "\n".join(pp_lines or []) + "\n" + "\n".join(body) + "\n"
