"""Which trace dumps are on: MIGraphX's env vars, or the pytest/CLI option that sets both."""
from __future__ import annotations

import os
from dataclasses import dataclass


def _level(value: str | None) -> int:
    if value is None or value.strip() == "":
        return 0
    v = value.strip().lower()
    if v in ("on", "true", "yes"):
        return 1
    if v in ("off", "false", "no"):
        return 0
    try:
        return max(0, int(v))
    except ValueError:
        raise ValueError(f"trace level must be a number (0-3), got {value!r}") from None


@dataclass(frozen=True)
class TraceConfig:
    mlir: int = 0           # MIGRAPHX_TRACE_MLIR: module + MLIR before the first compile
    benchmarking: int = 0   # MIGRAPHX_TRACE_BENCHMARKING: problem key + each solution before it is benchmarked

    @property
    def on(self) -> bool:
        return bool(self.mlir or self.benchmarking)

    @staticmethod
    def from_env(env=None) -> TraceConfig:
        env = os.environ if env is None else env
        return TraceConfig(_level(env.get("MIGRAPHX_TRACE_MLIR")), _level(env.get("MIGRAPHX_TRACE_BENCHMARKING")))

    @staticmethod
    def from_level(level: int | str | None, env=None) -> TraceConfig:
        """``--mlir-trace=LEVEL`` turns both dumps on at LEVEL; the env vars can raise either."""
        base = TraceConfig.from_env(env)
        lv = _level(str(level)) if level is not None else 0
        return TraceConfig(max(base.mlir, lv), max(base.benchmarking, lv))
