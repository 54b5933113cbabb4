"""A recorded case run again in this process: its module, solution and seed through a pipeline (the case
runs in that pipeline's worker processes), with the faults and build options asked for.

The planted check (:mod:`.findings`: does it pass with the faults off?) and the evidence (:mod:`.evidence`:
does it fail built other ways?) both run a case again this way. Who runs it is a *rerun* function,
``rerun(rec, inject=..., build_options=...) -> RunResult`` (None: it could not run now): a front end's
pipeline (:func:`on_pipeline`), the record's own (``FailureRecord.runner``: a fuzz lane), else a pipeline
made on the device the case failed on (:func:`on_recorded_device`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..codegen import SolutionError
from ..engine import MemoryDatabase, Pipeline, RunOptions, load_module
from .record import FailureRecord

__all__ = ["Rerun", "Refused", "module_of", "run_again", "on_pipeline", "on_recorded_device", "rerun_of"]


class Refused(Exception):
    """The recorded solution is refused by the solution rules as the case runs again (a perf config that only
    a planted fault let through): a tuner skips it, so it cannot fail -- as a reproducer script says too."""


class Rerun(Protocol):
    def __call__(self, rec: FailureRecord, *, inject: str, build_options: str | None = None):
        ...


def module_of(rec: FailureRecord):
    """The module the recorded kernel was lowered from: the migraphx module text (its parameter names
    are the kernel's), else the MLIR."""
    if rec.span.module_text.strip():
        try:
            return load_module(rec.span.module_text)[0]
        except Exception:   # noqa: BLE001
            pass
    return load_module(rec.span.mlir_text)[0]


def run_again(pipeline, rec: FailureRecord, *, inject: str, build_options: str | None = None):
    """``rec``'s module, solution and seed run on ``pipeline`` (a view of it: the record's hang limit, the
    faults ``inject`` -- "" for none --, a throwaway tuning database), the kernel built with
    ``build_options`` (None: the pipeline's); the engine's RunResult."""
    view = pipeline.configured(RunOptions(inject=inject, timeout_s=rec.timeout_s, database=MemoryDatabase()))
    try:
        return view.run(module_of(rec), solution=rec.span.solution or None, seed=rec.seed,
                        mlir_text=rec.span.mlir_text or None, build_options=build_options)
    except SolutionError as e:
        # the rules refuse the perf config with these faults (a fault let it through); whether it applies
        # to the device does not depend on the faults, so it failed that way with them too
        raise Refused(f"SolutionError: {e}") from None


def on_pipeline(pipeline) -> Rerun:
    """The rerun function of a front end's pipeline (a TraceSession's, a lane's)."""
    def rerun(rec: FailureRecord, *, inject: str, build_options: str | None = None):
        return run_again(pipeline, rec, inject=inject, build_options=build_options)
    return rerun


def on_recorded_device(rec: FailureRecord, *, inject: str, build_options: str | None = None):
    """Run ``rec`` again on a pipeline of its own on the device it failed on (the process's worker pool for
    that device), with the recorded hang limit."""
    pipe = Pipeline(rec.device_info, inject=inject, timeout_s=float(rec.timeout_s or 30.0), database=MemoryDatabase())
    return run_again(pipe, rec, inject=inject, build_options=build_options)


def rerun_of(rec: FailureRecord, default: Callable | None = None) -> Rerun:
    """Who runs ``rec`` again: its own runner, else ``default``, else a pipeline on its recorded device."""
    return rec.runner or default or on_recorded_device
