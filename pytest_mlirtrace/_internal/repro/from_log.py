"""Reproducers from a real MIGraphX log: every MLIR module it printed is run here -- with the logged
solution where it maps onto our perf-config fields, else the best of a quick tune (or the default) --
and written out as a reproducer + ticket; what cannot run is listed with its reason, never dropped."""
from __future__ import annotations

import json
import os
import sys

from .. import codegen
from ..codegen import LoweringError
from ..engine import SizeLimitError, parse_solution
from ..engine.session import func_text
from ..ir import IRError
from ..logs import parse_log
from ..mlir import module_difference
from ..vocab import ExitCode, Status
from .record import FailureRecord
from .writer import ReproWriter


def _logged_solution(parts, link):
    """The solution the log names for this MLIR: the fastest of its benchmark block, or the one it died on."""
    if link is None:
        return None
    if link.error is not None:
        err = parts.errors[link.error]
        if getattr(err, "solution", None):
            return str(err.solution)
    if link.bench is not None:
        b = parts.benchmarks[link.bench]
        if b.fastest is not None:
            return b.fastest.raw
        if b.solutions:
            return b.solutions[-1].config.raw if hasattr(b.solutions[-1].config, "raw") else str(b.solutions[-1].config)
    return None


def _map_solution(pipe, low, raw: str | None):
    """(our Solution or None, why it did or didn't map)."""

    if not raw:
        return None, "the log names no solution"
    try:
        sol = parse_solution(low.problem, raw)      # any perf-config form (vocab.parse_perf_config)
        codegen.check_applicable(low.problem, sol, pipe.device)
        return sol, f"logged solution {raw} maps onto our {low.problem.kind} fields"
    except (codegen.SolutionError, codegen.NotApplicable) as e:
        return None, f"logged solution {raw} does not map: {e}"


def _module_for(parts, link, func_module):
    """The logged migraphx module (names as MIGraphX printed them) when it is the same program."""

    if link is None or link.module is None:
        return func_module
    dump = parts.module_dumps[link.module]
    m = getattr(dump, "module", None)
    if m is None or m.unsupported_ops():
        return func_module
    try:
        m.verify()
        if module_difference(m, func_module) is None:
            return m
    except Exception:  # noqa: BLE001 - a dump we can't verify stays a dump; the MLIR is what runs
        pass
    return func_module


def import_log(text: str, log: str, out: str, make_session, *, no_tune: bool = False, stdout=None,
               stderr=None) -> int:
    """Import the log ``text`` (named ``log``) into ``out``: parts.json, a reproducer + ticket per runnable
    MLIR module, import-report.json; what it does is printed to ``stdout`` (errors of the log to
    ``stderr``); ``import-lines.json`` accounts for every other part and line. ``make_session()`` gives the
    TraceSession to run on, made only when there is MLIR to run.
    A module the code generator does not support (or one over the session's ``max_bytes``) is listed as
    not runnable with the reason, and the rest is imported.
    The exit status (``vocab.ExitCode``): 0 all that could run ran right (what could not is listed), 1 one
    failed here, 2 nothing MIGraphX printed was found."""

    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parts = _read_log(text, log, out, stdout, stderr)
    if not _found_anything(parts):
        _write_accounting(parts, out)
        print(f"mlirtrace: {log}: nothing MIGraphX printed was found in it", file=stderr)
        return ExitCode.USAGE
    if not parts.mlir_modules:
        print("no MLIR module in this log: nothing to reproduce (its parts are in parts.json)", file=stdout)

    imp = _MlirImport(parts, log, make_session(), ReproWriter(out), stdout, no_tune)
    for part in parts.mlir_modules:
        imp.mlir_part(part)
    with open(os.path.join(out, "import-report.json"), "w") as f:
        json.dump(imp.report, f, indent=1)
    dump_runs, dump_failed = _run_dumps(parts, log, imp.s, imp.writer, stdout)
    _write_accounting(parts, out, dump_runs)
    return ExitCode.FAILURE if imp.failed or dump_failed else ExitCode.OK


def _read_log(text: str, log: str, out: str, stdout, stderr):
    """The parts of the log (its errors told on ``stderr``, its summary on ``stdout``), written to parts.json."""
    parts = parse_log(text, source=log)
    for err in parts.errors_found:
        print(f"{log}:{err.line}: {err.message}", file=stderr)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "parts.json"), "w") as f:
        f.write(parts.to_json())
    print(parts.summary().rstrip(), file=stdout)
    return parts


def _found_anything(parts) -> bool:
    """Did the log print anything of MIGraphX's? What migraphx-driver prints counts too (a perf summary,
    per-instruction times): a log of only that is read, reported and accounted for (exit 0), with nothing to
    reproduce."""
    driver = {"driver", "perf_instruction", "perf_summary", "run_instruction", "run_time", "module_header"}
    return bool(parts.mlir_modules or parts.module_dumps or parts.benchmarks or parts.errors or parts.code_objects
                or parts.kernel_timings or any(o.kind in driver for o in parts.other))


def _why_not(e: Exception) -> str:
    """Why a module whose lowering or run raised ``e`` is not runnable."""
    return (f"not supported: {e}" if isinstance(e, LoweringError) else
            f"too large: {e}" if isinstance(e, SizeLimitError) else
            f"invalid: {e}" if isinstance(e, IRError) else
            f"not supported here: the code generator stopped with {type(e).__name__}: {e}")


class _MlirImport:
    """The MLIR modules of a log's ``parts`` run on the session ``s``, each written as a reproducer + ticket;
    ``report``: one entry per module (or func), ``failed``: how many failed here."""

    def __init__(self, parts, log: str, s, writer: ReproWriter, stdout, no_tune: bool):
        self.parts, self.log, self.s, self.writer = parts, log, s, writer
        self.stdout, self.no_tune = stdout, no_tune
        self.failed = 0
        self.report: list[dict] = []

    def mlir_part(self, part) -> None:
        """Each func of the logged MLIR module ``part`` run and written (or listed with why not)."""
        where = f"{self.log}:{part.start_line}-{part.end_line}"
        link = self.parts.links.get(part.index)
        if not part.runnable or not part.modules:
            why = part.why_not or "the mlir layer could not read it"
            print(f"MLIR {part.index} ({where}) {part.name or '?'}: not runnable: {why}", file=self.stdout)
            self.report.append({"mlir": part.index, "runnable": False, "why_not": why})
            return
        funcs = [p for p in part.parsed if p.module is not None]
        for func, fmod in zip(funcs, part.modules, strict=False):
            try:
                module = _module_for(self.parts, link, fmod)
                # the func's own MLIR when the module printed several (the span and reproducer name that one)
                text = part.text if len(funcs) == 1 else func_text(part.text, func.name, where)
                res, how = self._run(link, module, text)
            except (KeyboardInterrupt, SystemExit, MemoryError):
                raise
            except Exception as e:  # noqa: BLE001 - one module that cannot run never loses the log's report
                why = _why_not(e)
                print(f"MLIR {part.index} ({where}) @{func.name}: not runnable: {why}", file=self.stdout)
                self.report.append({"mlir": part.index, "func": func.name, "runnable": False, "why_not": why})
                continue
            self._write(part, link, where, func, res, how)

    def _run(self, link, module, text: str):
        """(the run of ``module`` with the logged solution, else the best of a quick tune or the default;
        where its solution came from)."""
        pipe = self.s.pipeline
        low = pipe.lower_module(module, mlir_text=text)
        raw = _logged_solution(self.parts, link)
        sol, how = _map_solution(pipe, low, raw)
        if sol is None:
            if self.no_tune:
                sol, _ = pipe.best_known(low)
                how += "; using the default solution"
            else:
                tuned = pipe.tune(module, mlir_text=text)
                sol = tuned.best.solution if tuned.best is not None else None
                how += "; using the best of a quick tune" if sol is not None else "; no solution passed a tune"
        return pipe.run(module, solution=sol, mlir_text=text), how

    def _write(self, part, link, where: str, func, res, how: str) -> None:
        """The reproducer + ticket of a func's run ``res``, told and reported."""
        s, origin = self.s, f"import-trace {where}"
        if res.ok:
            logged_err = self.parts.errors[link.error].message if link and link.error is not None else ""
            rec = FailureRecord(Status.IMPORTED, res.compiled.span, "run",
                                f"imported from {where}; runs correctly on {s.device.key_name}"
                                + (f"; the log reported: {logged_err}" if logged_err else ""),
                                seed=res.seed, origin=origin, time_ms=res.time_ms)
        else:
            self.failed += 1
            rec = FailureRecord.from_run(res, origin=origin, device_info=s.device)
        w = self.writer.write(rec)
        state = "ok" if res.ok else f"FAILED ({res.status})"
        print(f"MLIR {part.index} ({where}) @{func.name}: {state} with solution {res.compiled.span.solution} "
              f"({how}); reproducer {w.script_path}", file=self.stdout)
        if link is not None:
            print(f"    linked: module dump {link.module} ({link.module_reason}), "
                  f"benchmark block {link.bench} ({link.bench_reason}), error {link.error}", file=self.stdout)
        self.report.append({"mlir": part.index, "func": func.name, "runnable": True, "status": res.status,
                            "solution": res.compiled.span.solution, "solution_source": how,
                            "reproducer": str(w.script_path), "signature": w.signature})


def _run_dumps(parts, log: str, s, writer, stdout) -> tuple[dict[int, dict], int]:
    """Run each module dump that no MLIR module printed with it and that runs as printed (its default
    solution, checked against the oracle); a reproducer for each. {dump index: what happened}, failures."""
    from ..ir.text import not_runnable
    from .record import FailureRecord

    linked = {ln.module for ln in parts.links.values() if ln.module is not None}
    out: dict[int, dict] = {}
    failed = 0
    for d in parts.module_dumps:
        if d.index in linked or not d.runnable or d.module is None or not_runnable(d.module):
            continue
        where = f"{log}:{d.start_line}-{d.end_line}"
        try:
            module = d.module.copy()
            module.verify()
            low = s.pipeline.lower_module(module)
            sol, _ = s.pipeline.best_known(low)
            res = s.pipeline.run(module, solution=sol)
        except (KeyboardInterrupt, SystemExit, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - a dump that cannot run is listed with why, the import goes on
            why = f"{type(e).__name__}: {e}".split("\n")[0]
            out[d.index] = {"ran": False, "why_not": why}
            print(f"module dump {d.index} ({where}): not run: {why}", file=stdout)
            continue
        origin = f"import-trace {where}"
        if res.ok:
            rec = FailureRecord(Status.IMPORTED, res.compiled.span, "run",
                                f"module dump imported from {where}; runs correctly on {s.device.key_name}",
                                seed=res.seed, origin=origin, time_ms=res.time_ms)
        else:
            failed += 1
            rec = FailureRecord.from_run(res, origin=origin, device_info=s.device)
        w = writer.write(rec)
        out[d.index] = {"ran": True, "status": res.status, "solution": res.compiled.span.solution,
                        "reproducer": str(w.script_path)}
        print(f"module dump {d.index} ({where}): {'ok' if res.ok else f'FAILED ({res.status})'} with solution "
              f"{res.compiled.span.solution}; reproducer {w.script_path}", file=stdout)
    return out, failed


def _write_accounting(parts, out: str, dump_runs: dict | None = None) -> None:
    """``import-lines.json``: what each part of the log became -- every module dump with why it cannot run
    as printed, the count of lines of each kind, and every line no reader knows, with its line number."""
    from ..ir.text import not_runnable

    dumps = []
    for d in parts.module_dumps:
        why = list(d.unsupported)
        if d.module is not None and not why:
            why = not_runnable(d.module)
        entry = {"module_dump": d.index, "lines": [d.start_line, d.end_line], "name": d.name,
                 "runnable": not why and d.runnable, "why_not": why or None}
        entry.update((dump_runs or {}).get(d.index, {}))
        dumps.append(entry)
    acc = {"log": parts.source, "n_lines": parts.n_lines, "counts": parts.counts(), "other_kinds": parts.other_kinds(),
           "module_dumps": dumps,
           "unrecognised": [{"line": o.line, "text": o.text} for o in parts.unrecognised()],
           "problems": [e.to_dict() for e in parts.errors_found]}
    with open(os.path.join(out, "import-lines.json"), "w") as f:
        json.dump(acc, f, indent=1)
