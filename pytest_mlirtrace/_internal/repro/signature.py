"""What makes two failures the same bug -- the one definition, at three grains:

* :func:`signature` -- *the same bug*: failure kind + normalised MLIR + the first line of the error with the
  run-to-run noise (numbers, addresses, paths, the solution's own text) scrubbed out (+ the planted faults,
  unless shown not to be the cause). One reproducer and one ticket per signature. The solution is not part
  of it: the solutions that fail one module in the same way are one bug, listed in its ticket;
* :func:`shrunk_case_key` -- *the same cause* of two **shrunk** cases whose signatures differ (exact MLIR:
  dtypes, sizes): the ops a shrink kept and which sizes had to stay above 1. The fuzz tells bugs of one way
  apart with it;
* :func:`failure_way` -- *the same way of failing*, the coarsest: kind, problem kind, normalised error
  (not the error for wrong results). The fuzz shrinks one failure per way at a time.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter

from ..codegen import problem_of
from ..ir import parse_module
from ..mlir import normalise_mlir
from ..vocab import Status

__all__ = ["signature", "signature_of", "normalise_error", "normalise_mlir_text", "symbol_of", "first_line",
           "shrunk_case_key", "same_shrunk_case", "explained_by", "failure_way"]

_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.+@%-]*[A-Za-z_][\w.+@%-]*)+/?")
_NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])|\b(?:nan|inf)\b", re.IGNORECASE)
_WS = re.compile(r"\s+")
_FUNC = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@\"?([\w$.\-]+)")
_COMMENT = re.compile(r"//[^\n]*")


def first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def normalise_error(error: str, solution: str = "") -> str:
    """The first non-empty line of ``error`` with the solution's text (``solution``), addresses, paths and
    numbers replaced by tokens."""
    line = first_line(error)
    if solution and solution.strip():
        line = line.replace(solution.strip(), "SOLUTION")
    line = _HEX.sub("ADDR", line)
    line = _PATH.sub("PATH", line)
    line = _NUM.sub("N", line)
    return _WS.sub(" ", line).strip()


def normalise_mlir_text(mlir_text: str) -> str:
    """``mlir.normalise_mlir`` when the text parses, else the text without ``//`` comments and with every
    run of whitespace collapsed."""
    try:
        return normalise_mlir(mlir_text)
    except Exception:   # noqa: BLE001 - unparsable MLIR still gets a signature
        pass
    return _WS.sub(" ", _COMMENT.sub("", mlir_text or "")).strip()


def symbol_of(mlir_text: str = "", module_text: str = "") -> str:
    """The fused function's name (``mlir_dot_add``): from the MLIR, else from the migraphx module."""
    m = _FUNC.search(_COMMENT.sub("", mlir_text or ""))
    name = m.group(1) if m else ""
    if not name and module_text:
        try:
            name = parse_module(module_text).symbol_name()
        except Exception:   # noqa: BLE001
            name = ""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
    return (name or "module")[:48]


def signature_of(kind: str, mlir_text: str, error: str, module_text: str = "", inject: str = "",
                 solution: str = "") -> str:
    """``<kind>-<symbol>-<8 hex>`` of kind + normalised MLIR (else module text) + normalised first error line
    (``solution``: only scrubbed out of it). A planted fault (``config.environment.INJECT``) counts as a
    different compiler, so it is part of the hash when there is one (real failures have none)."""
    h = hashlib.sha256()
    parts = [kind, normalise_mlir_text(mlir_text) if mlir_text else _WS.sub(" ", module_text).strip(),
             normalise_error(error, solution)]
    if inject:
        parts.append("inject=" + ",".join(sorted(x.strip() for x in inject.split(",") if x.strip())))
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return f"{kind}-{symbol_of(mlir_text, module_text)}-{h.hexdigest()[:8]}"


def signature(rec, *, faults: bool = True) -> str:
    """Short stable id of a :class:`FailureRecord`, e.g. ``wrong-mlir_dot_add-1a2b3c4d``: the same for
    every solution that fails the module the same way. A fault that was on but is known not to be the
    cause (``rec.planted is False``: it fails with the fault off too) is left out of it; ``faults=False``
    leaves the faults out whatever is known (within one fuzz run, which has one fault setting, they tell
    no two failures apart)."""
    s = rec.span
    inject = rec.inject if faults and getattr(rec, "planted", None) is not False else ""
    return signature_of(rec.kind, s.mlir_text, rec.error, s.module_text, inject, solution=s.solution)


# ---- coarser: the cause of a shrunk case, the way of failing -------------------------------------------
def _norm_ops(module) -> tuple:
    return tuple(o[len("quant_"):] if o.startswith("quant_") else o for o in module.ops())


def shrunk_case_key(module) -> tuple:
    """What tells two *shrunk* cases of one way apart as two bugs: the ops left (``quant_`` forms as their
    float op) and which of the problem's sizes had to stay above 1 (m, n, k for a gemm or conv, the reduction
    length, the output size). Shrinking keeps only what a failure needs, so one bug shrinks to one key from
    wherever it started -- though its signatures (exact MLIR: dtypes, sizes) may differ -- and two bugs that
    need different ops or sizes get two. (Two bugs that need the same ops and sizes are taken for one.)"""
    ops = _norm_ops(module)
    try:
        p = problem_of(module)
        sizes = (p.kind, p.m > 1, p.n > 1, p.k > 1, p.reduce_len > 1, p.elements > 1)
    except Exception:   # noqa: BLE001 - no problem: the ops alone
        sizes = ()
    return ops, sizes


def explained_by(module, keys) -> bool:
    """Could a bug of one of ``keys`` (:func:`shrunk_case_key`) be behind a failure of ``module``? Yes when
    the module has every op that bug's shrunk case needed."""
    have = Counter(_norm_ops(module))
    return any(not (Counter(kops) - have) for kops, _ in keys)


def same_shrunk_case(module, keys) -> bool:
    """Is the shrunk case ``module`` the cause of one of ``keys``? Yes when it has the same ops as that one's
    shrunk case and every size that had to stay above 1 there is above 1 here (a shrink that stopped short
    on a size). A case with an op more is another bug: better a second reproducer of one bug than a second
    bug hidden behind the first."""
    ops, sz = shrunk_case_key(module)
    for kops, ksz in keys:
        if Counter(kops) != Counter(ops):
            continue
        if ksz and sz and (ksz[0] != sz[0] or any(k and not h for k, h in zip(ksz[1:], sz[1:], strict=False))):
            continue
        return True
    return False


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}")


def failure_way(kind: str, problem_kind: str, error: str, solution: str = "") -> str:
    """How a case failed, coarse enough that the variants of one bug are one way: the failure kind, the
    problem kind (``Problem.key_kind``: a convolution is not a gemm, though it runs on the gemm kernels, so a
    gemm failure found first does not hide a conv one) and (not for wrong results) the error's first line
    without numbers, names, lists."""
    if kind == Status.WRONG:
        return f"{Status.WRONG}/{problem_kind}"
    return f"{kind}/{problem_kind}/{_QUOTED.sub('Q', normalise_error(error or kind, solution))}"
