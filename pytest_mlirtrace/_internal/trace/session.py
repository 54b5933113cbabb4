"""A traced pipeline: what front ends (CLI, pytest fixture, fuzzer) use to compile, tune and run.

It always records every event in a :class:`TraceLog` and prints the MIGraphX-style dumps the
:class:`TraceConfig` asks for (env vars by default).
"""
from __future__ import annotations

from ..engine import Pipeline, RunOptions, load_module
from .config import TraceConfig
from .recorder import TraceLog
from .text_sink import TextSink


class TraceSession:
    def __init__(self, device=None, *, config: TraceConfig | None = None, stream=None, log: TraceLog | None = None,
                 **pipeline_kw):
        self.config = config if config is not None else TraceConfig.from_env()
        self.log = log if log is not None else TraceLog()
        self.sink = TextSink(self.config, stream)
        self.pipeline = Pipeline(device, listeners=[self.log, self.sink], **pipeline_kw)

    @property
    def device(self):
        return self.pipeline.device

    def compile(self, source, solution=None, *, options: RunOptions | None = None):
        m, text = load_module(source)
        return self.pipeline.configured(options).compile_solution(m, solution, mlir_text=text)

    def tune(self, source, *, options: RunOptions | None = None, **kw):
        m, text = load_module(source)
        return self.pipeline.configured(options).tune(m, mlir_text=text, **kw)

    def run(self, source, *, options: RunOptions | None = None, **kw):
        m, text = load_module(source)
        return self.pipeline.configured(options).run(m, mlir_text=text, **kw)
