"""Old import path of the pipeline's names (now :mod:`.pipeline`, :mod:`.results`, :mod:`.oracle`), kept for
importers outside ``engine`` until they import ``pytest_mlirtrace.engine``'s face."""
from .oracle import oracle_tolerances
from .pipeline import CUT_FACTOR, CUT_ONCE_FACTOR, Pipeline, parse_solution
from .results import BenchRow, CompiledResult, Lowered, RunOptions, RunResult, SizeLimitError, TuneResult

__all__ = ["Pipeline", "parse_solution", "oracle_tolerances", "CUT_FACTOR", "CUT_ONCE_FACTOR", "BenchRow",
           "CompiledResult", "Lowered", "RunOptions", "RunResult", "SizeLimitError", "TuneResult"]
