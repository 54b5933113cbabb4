"""Layer ``engine``: load a fused op from any text, compile, benchmark (quick list or full space), check
against the oracle, keep the fastest in the tuning database; spans and events; run options as values."""
from .database import MemoryDatabase, TuningDatabase
from .events import (BenchmarkStarted, CompileFailed, Event, FastestChosen, ModuleLowered, RunFinished,
                     SolutionBenchmarking, SolutionFinished, SolutionsBuilt, Verified)
from .problem_key import parse_problem_key, problem_key
from .session import load_module
from .span import Span, mlir_hash, short_hash
from .tuner import BenchRow, CompiledResult, Lowered, Pipeline, RunOptions, RunResult, TuneResult

__all__ = ["TuningDatabase", "MemoryDatabase", "Event", "ModuleLowered", "BenchmarkStarted", "SolutionsBuilt",
           "SolutionBenchmarking", "SolutionFinished", "CompileFailed", "FastestChosen", "Verified",
           "RunFinished", "problem_key", "parse_problem_key", "Span", "mlir_hash", "short_hash", "Pipeline",
           "CompiledResult", "RunResult", "TuneResult", "BenchRow", "Lowered", "RunOptions", "load_module"]
