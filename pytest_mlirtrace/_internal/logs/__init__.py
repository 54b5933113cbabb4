"""Layer ``logs``: reading real MIGraphX / rocMLIR trace logs (``mlirtrace import-trace LOG``).

A log from ``MIGRAPHX_TRACE_MLIR``, ``MIGRAPHX_TRACE_BENCHMARKING`` (levels 1-3) or
``MIGRAPHX_TRACE_COMPILE`` mixes, line by line, module dumps, MLIR modules, benchmarking blocks, errors
and everything else; :func:`parse_log` splits it into typed parts and links each MLIR module to its
module dump, benchmark block and error.  It never raises for bad input: what is damaged (a truncated
MLIR module, a malformed instruction line, unbalanced braces) becomes a :class:`LogError` in
``errors_found`` and the rest of the log still imports.  Line numbers are 1-based lines of the text given.

One job per module:

* :mod:`.line_kinds` -- logical lines (HTML-rendered and flattened logs split) and the line recognisers;
* :mod:`.parts` -- the typed parts (:class:`TraceLogParts` and what it holds);
* :mod:`.read_state` -- the state of one read; :mod:`.parse` -- the driver, :func:`parse_log`;
* :mod:`.line_parts` -- a line on its own; :mod:`.line_parts` -- benchmark blocks and code objects;
  :mod:`.line_parts` -- errors the log reports; :mod:`.module_dumps` -- module dumps;
* :mod:`.mlir_modules` -- MLIR modules: their extent, and why one cannot run; :mod:`.mlir_scan` -- a
  forgiving scan of MLIR text (no parser: that is the ``mlir`` layer's job);
* :mod:`.linking` -- linking MLIR modules to dumps, blocks and errors.

Problem keys and perf configs are the shared words of :mod:`pytest_mlirtrace._internal.vocab`, re-exported here.
"""
from ..vocab import PerfConfig, ProblemKey, parse_perf_config, parse_problem_key
from .parse import parse_log
from .parts import (
                    BenchmarkBlock,
                    CodeObjectDump,
                    ErrorPart,
                    KernelTiming,
                    Link,
                    LogError,
                    LoggedSolution,
                    MLIRPart,
                    ModuleDump,
                    OtherLine,
                    TraceLogParts,
)

__all__ = ["parse_log", "TraceLogParts", "LogError", "ModuleDump", "MLIRPart", "BenchmarkBlock", "LoggedSolution",
           "ErrorPart", "Link", "OtherLine", "CodeObjectDump", "KernelTiming", "ProblemKey", "PerfConfig",
           "parse_problem_key", "parse_perf_config"]
