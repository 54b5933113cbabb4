"""Layer ``engine``: load a fused op from any text, compile, benchmark (quick list or full space), check
against the oracle, keep the fastest in the tuning database; spans and events; run options as values.

* :mod:`.pipeline` -- :class:`Pipeline`: compile, tune, run; :mod:`.results` -- what it returns
  (and :class:`RunOptions`, :class:`SizeLimitError`);
* :mod:`.kernel_job` -- a lowered kernel as the runtime's job; :mod:`.oracle` -- the numpy oracle's verdict
  on the host and handed to the device;
* :mod:`.database` -- the tuning database (a file, or in memory); :mod:`.migraphx_db` -- MIGraphX's
  tuning files;
* :mod:`.session` -- loading a module from any text; :mod:`.span`, :mod:`.events`, :mod:`.problem_key`.
"""
from .database import Database, MemoryDatabase, TuningDatabase
from .events import (
                     BenchmarkStarted,
                     CompileFailed,
                     Event,
                     FastestChosen,
                     ModuleLowered,
                     RunFinished,
                     SolutionBenchmarking,
                     SolutionFinished,
                     SolutionsBuilt,
                     Verified,
)
from .oracle import oracle_tolerances
from .pipeline import CUT_FACTOR, CUT_ONCE_FACTOR, Pipeline, parse_solution
from .problem_key import parse_problem_key, problem_key
from .results import BenchRow, CompiledResult, Lowered, RunOptions, RunResult, SizeLimitError, TuneResult
from .session import load_module
from .span import Span, mlir_hash, short_hash

__all__ = ["TuningDatabase", "MemoryDatabase", "Database", "Event", "ModuleLowered", "BenchmarkStarted",
           "SolutionsBuilt", "SolutionBenchmarking", "SolutionFinished", "CompileFailed", "FastestChosen",
           "Verified", "RunFinished", "problem_key", "parse_problem_key", "Span", "mlir_hash", "short_hash",
           "Pipeline", "CompiledResult", "RunResult", "TuneResult", "BenchRow", "Lowered", "RunOptions",
           "load_module", "SizeLimitError", "parse_solution", "oracle_tolerances", "CUT_FACTOR",
           "CUT_ONCE_FACTOR"]
