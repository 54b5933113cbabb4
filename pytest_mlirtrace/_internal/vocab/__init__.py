"""Layer ``vocab``: the words every layer shares, each defined, written and read in one place.

* :mod:`.problem_key` -- problem keys in rocMLIR's forms (gemm, conv, attention; mlirtrace's pointwise,
  reduce, softmax): :func:`format_problem_key`, :func:`parse_problem_key`, :class:`ProblemKey`;
* :mod:`.perf_config` -- perf configs (legacy unprefixed, ``v1:``..``v4:``, ``attn:v1:``):
  :func:`parse_perf_config`, :func:`format_perf_config`, :class:`PerfConfig`;
* :mod:`.status` -- run statuses and finding kinds: :class:`Status` and its groups;
* :mod:`.exit_codes` -- the exit-code contract of every command and reproducer: :class:`ExitCode`.

It imports only the standard library, so every layer (``runtime`` included) may import it.
"""
from .exit_codes import ExitCode
from .perf_config import MAX_FIELDS, PerfConfig, PerfConfigError, format_perf_config, parse_perf_config
from .problem_key import KEY_FIELDS, ProblemKey, ProblemKeyError, format_problem_key, parse_problem_key
from .status import FAILURES, FINDING_KINDS, JOB_STATUSES, Status

__all__ = ["ProblemKey", "ProblemKeyError", "KEY_FIELDS", "format_problem_key", "parse_problem_key",
           "PerfConfig", "PerfConfigError", "MAX_FIELDS", "format_perf_config", "parse_perf_config",
           "Status", "JOB_STATUSES", "FAILURES", "FINDING_KINDS", "ExitCode"]
