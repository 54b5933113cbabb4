"""MIGraphX's trace variables, checked when pytest starts.

``MIGRAPHX_TRACE_MLIR`` and ``MIGRAPHX_TRACE_BENCHMARKING`` keep MIGraphX's meaning and are read by the
trace layer when the fixture first starts its session; a value it cannot read would only show up then,
as a failure of every test that uses the fixture. Checked here instead, they give one usage error that
names the variable, as ``--mlir-trace`` and ``mlir_trace`` do. The words accepted are the trace layer's
(``trace/config.py``): a number (MIGraphX's levels, 0-3), ``on``/``true``/``yes``, ``off``/``false``/``no``.
Standard library only (this runs in every pytest process).
"""
from __future__ import annotations

from collections.abc import Mapping

from ..config import SettingError

VARIABLES = ("MIGRAPHX_TRACE_MLIR", "MIGRAPHX_TRACE_BENCHMARKING")
_WORDS = ("on", "true", "yes", "off", "false", "no")


def check_trace_env(env: Mapping[str, str]) -> None:
    """Raise :class:`SettingError` naming the first of :data:`VARIABLES` that holds no trace level."""
    for var in VARIABLES:
        raw = env.get(var)
        if raw is None or raw.strip() == "" or raw.strip().lower() in _WORDS:
            continue
        try:
            int(raw.strip())
        except ValueError:
            raise SettingError(f"{var}={raw}: expected a trace level 0-3 (or on / off)") from None
