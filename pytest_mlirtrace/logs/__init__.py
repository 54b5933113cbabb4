"""Layer ``logs``: reading real MIGraphX / rocMLIR trace logs (``mlirtrace import-trace LOG``).

A log from ``MIGRAPHX_TRACE_MLIR``, ``MIGRAPHX_TRACE_BENCHMARKING`` (levels 1-3) or
``MIGRAPHX_TRACE_COMPILE`` mixes, line by line, module dumps, MLIR modules, benchmarking blocks, errors
and everything else; :func:`parse_log` splits it into typed parts and links each MLIR module to its
module dump, benchmark block and error.  It never raises for bad input: what is damaged (a truncated
MLIR module, a malformed instruction line, unbalanced braces) becomes a :class:`LogError` in
``errors_found`` and the rest of the log still imports.  Line numbers are 1-based lines of the text given.

One job per module:

* :mod:`.lines` -- logical lines (HTML-rendered and flattened logs split) and the line recognisers;
* :mod:`.parts` -- the typed parts (:class:`TraceLogParts` and what it holds);
* :mod:`.reader` -- the state of one read; :mod:`.parse` -- the driver, :func:`parse_log`;
* :mod:`.oneline` -- a line on its own; :mod:`.blocks` -- benchmark blocks and code objects;
  :mod:`.errors` -- errors the log reports; :mod:`.dumps` -- module dumps;
* :mod:`.mlirparts` -- MLIR modules: their extent, and why one cannot run; :mod:`.mlirscan` -- a
  forgiving scan of MLIR text (no parser: that is the ``mlir`` layer's job);
* :mod:`.link` -- linking MLIR modules to dumps, blocks and errors.

Problem keys and perf configs are the shared words of :mod:`pytest_mlirtrace.vocab`, re-exported here.
"""
from ..vocab.perf_config import PerfConfig, parse_perf_config
from ..vocab.problem_key import ProblemKey, parse_problem_key
from .parse import parse_log
from .parts import (BenchmarkBlock, CodeObjectDump, ErrorPart, KernelTiming, Link, LogError, MLIRPart, ModuleDump,
                    OtherLine, Solution, TraceLogParts)

__all__ = ["parse_log", "TraceLogParts", "LogError", "ModuleDump", "MLIRPart", "BenchmarkBlock", "Solution",
           "ErrorPart", "Link", "OtherLine", "CodeObjectDump", "KernelTiming", "ProblemKey", "PerfConfig",
           "parse_problem_key", "parse_perf_config"]
