"""Problem keys in rocMLIR's style: ``<arch>\\t<num_cu>\\t-t f32 -out_datatype f32 -transA false ...``."""
from __future__ import annotations


def _b(x: bool) -> str:
    return "true" if x else "false"


def problem_key(problem, device) -> str:
    """The tuning key of ``problem`` (codegen's Problem) on ``device`` (anything with key_name, compute_units)."""
    arch = getattr(device, "key_name", str(device))
    cu = getattr(device, "compute_units", 1)
    p = problem
    if p.kind == "gemm":
        body = (f"-t {p.dtype} -out_datatype {p.out_dtype} -transA {_b(p.transA)} -transB {_b(p.transB)} "
                f"-g {p.g} -m {p.m} -n {p.n} -k {p.k}")
    else:
        extra = " ".join(f"-{k} {v}" for k, v in problem_fields(p).items())
        body = f"-op {p.kind} -t {p.dtype} -out_datatype {p.out_dtype}" + (f" {extra}" if extra else "")
    return f"{arch}\t{cu}\t{body}"


def problem_fields(p) -> dict:
    out = {}
    for name in ("elements", "reduce_len", "outer", "g", "m", "n", "k"):
        v = getattr(p, name, None)
        if v is not None and not (p.kind != "gemm" and name in ("g", "m", "n", "k") and not v):
            out[name] = v
    return out


def parse_problem_key(key: str) -> dict:
    """``arch``, ``num_cu``, (``chiplets``) and the ``-flag value`` fields of a key (tabs or spaces)."""
    parts = key.strip().split("\t") if "\t" in key else key.strip().split(None, 2)
    head, rest = parts[:-1], parts[-1]
    out: dict = {"arch": head[0] if head else ""}
    if len(head) >= 2:
        out["num_cu"] = int(head[1]) if head[1].isdigit() else head[1]
    if len(head) >= 3:
        out["chiplets"] = head[2]
    toks = rest.split()
    i = 0
    while i < len(toks):
        if toks[i].startswith("-") and i + 1 < len(toks) and not toks[i + 1].startswith("-"):
            out[toks[i][1:]] = toks[i + 1]
            i += 2
        else:
            out[toks[i].lstrip("-")] = True
            i += 1
    return out
