"""Layer 6, ``trace``: structured trace events (always recorded) and MIGraphX-style text sinks."""
from .config import TraceConfig
from .recorder import TraceLog
from .session import TraceSession, load_module
from .logparse import (BenchmarkBlock, CodeObjectDump, ErrorPart, KernelTiming, Link, LogError, MLIRPart,
                       ModuleDump, OtherLine, PerfConfig, ProblemKey, Solution, TraceLogParts, parse_log,
                       parse_perf_config, parse_problem_key)
from .text_sink import TextSink

__all__ = ["TraceConfig", "TraceLog", "TextSink", "TraceSession", "load_module", "parse_log", "TraceLogParts",
           "LogError", "ModuleDump", "MLIRPart", "BenchmarkBlock", "Solution", "ErrorPart", "Link", "OtherLine",
           "CodeObjectDump", "KernelTiming", "ProblemKey", "PerfConfig", "parse_problem_key", "parse_perf_config"]
