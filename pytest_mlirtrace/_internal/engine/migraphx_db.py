"""Tuning results in MIGraphX's own files, both ways.

``MIGRAPHX_MLIR_TUNING_DB`` (read by MIGraphX's ``load_tuning_table``): a tab-separated text, one tuned problem
a line: ``arch <TAB> number of CUs <TAB> problem (rocMLIR's flags) <TAB> perf config``.

``MIGRAPHX_PROBLEM_CACHE`` (MIGraphX's ``problem_cache``, saved with ``to_value`` of a map whose keys are
objects): a JSON array of ``[key, solution]`` pairs, the key ``{"name": <op>, "problem": <tuning key>}``; for a
fused MLIR op the name is ``gpu::mlir_op``, the problem the tuning key (``arch\\tCUs\\tflags``) and the solution
the perf config. A ``null`` solution is MIGraphX's "benchmarked, nothing chosen" mark: skipped on import.

mlirtrace's tuning key is the same ``arch\\tCUs\\tflags`` text (``engine.problem_key``), so lines map one to one.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import fs
from ..vocab.perf_config import parse_perf_config

__all__ = ["MLIR_OP_NAME", "TuningFileError", "export_tuning_tsv", "import_tuning_tsv", "export_problem_cache",
           "import_problem_cache"]

MLIR_OP_NAME = "gpu::mlir_op"


class TuningFileError(ValueError):
    """A line or entry of a MIGraphX tuning file that is not what MIGraphX writes (``FILE:LINE: why``)."""


def _rows(db, device: str | None):
    """(tuning key, perf config) of every entry of ``db`` (of ``device`` when given), sorted."""
    out = []
    for k, v in db.entries().items():
        dev, _, key = k.partition("|")
        if device is not None and dev != device:
            continue
        if key.count("\t") >= 2 and isinstance(v, dict) and v.get("solution"):
            out.append((key, str(v["solution"])))
    return sorted(out)


def export_tuning_tsv(db, path: str | Path, device: str | None = None) -> int:
    """Write ``db``'s entries as a ``MIGRAPHX_MLIR_TUNING_DB`` file; the number of lines."""
    rows = _rows(db, device)
    fs.atomic_write(path, "".join(f"{key}\t{sol}\n" for key, sol in rows))
    return len(rows)


def _check_perf(sol: str, where: str) -> None:
    pc = parse_perf_config(sol)
    if pc.error is not None:
        raise TuningFileError(f"{where}: perf config {sol!r}: {pc.error}")


def import_tuning_tsv(path: str | Path, db, device: str) -> int:
    """Store every line of a ``MIGRAPHX_MLIR_TUNING_DB`` file in ``db`` under ``device``; the number stored.
    Raises :class:`TuningFileError` naming the file and line of the first bad line (nothing is stored then)."""
    path = Path(path)
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        f = line.split("\t")
        if len(f) < 4 or not all(x.strip() for x in f[:4]):
            raise TuningFileError(f"{path}:{n}: expected arch<TAB>number of CUs<TAB>problem<TAB>perf config, "
                                  f"got {len(f)} tab-separated field(s)")
        arch, cu, prob, sol = f[0], f[1], "\t".join(f[2:-1]), f[-1].strip()
        if not cu.strip().isdigit():
            raise TuningFileError(f"{path}:{n}: number of CUs {cu!r} is not a number")
        if not prob.strip().startswith("-") and not prob.strip().startswith("conv"):
            raise TuningFileError(f"{path}:{n}: problem {prob[:60]!r} is not in rocMLIR's flag form (-t ...)")
        _check_perf(sol, f"{path}:{n}")
        rows.append((f"{arch}\t{cu.strip()}\t{prob.strip()}", sol))
    for key, sol in rows:
        db.store(key, device, sol, None, imported_from=str(path))
    return len(rows)


def export_problem_cache(db, path: str | Path, device: str | None = None) -> int:
    """Write ``db``'s entries as a ``MIGRAPHX_PROBLEM_CACHE`` JSON file; the number of entries."""
    rows = _rows(db, device)
    data = [[{"name": MLIR_OP_NAME, "problem": key}, sol] for key, sol in rows]
    fs.atomic_write(path, json.dumps(data, indent=4) + "\n")
    return len(rows)


def import_problem_cache(path: str | Path, db, device: str) -> tuple[int, int]:
    """Store the fused-MLIR entries of a ``MIGRAPHX_PROBLEM_CACHE`` file in ``db``: (stored, skipped: other
    ops' entries and null marks). Raises :class:`TuningFileError` for a file MIGraphX would not have written."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise TuningFileError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    if isinstance(data, dict):      # a map with string keys serialises as an object: not a problem cache
        raise TuningFileError(f"{path}: expected a JSON array of [{{name, problem}}, solution] pairs, got an object")
    if not isinstance(data, list):
        raise TuningFileError(f"{path}: expected a JSON array of [{{name, problem}}, solution] pairs")
    rows, skipped = [], 0
    for i, entry in enumerate(data):
        where = f"{path}: entry {i}"
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], dict)):
            raise TuningFileError(f"{where}: expected [{{\"name\": ..., \"problem\": ...}}, solution]")
        key, sol = entry
        if key.get("name") != MLIR_OP_NAME or sol is None:
            skipped += 1
            continue
        prob = key.get("problem")
        if not isinstance(prob, str) or prob.count("\t") < 2 or not isinstance(sol, str):
            raise TuningFileError(f"{where}: a {MLIR_OP_NAME} entry needs a tuning key (arch\\tCUs\\tflags) and a "
                                  "perf config string")
        _check_perf(sol, where)
        rows.append((prob, sol))
    for key, sol in rows:
        db.store(key, device, sol, None, imported_from=str(path))
    return len(rows), skipped
