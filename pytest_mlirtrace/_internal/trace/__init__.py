"""Layer 6, ``trace``: structured trace events (always recorded) and MIGraphX-style text sinks.

(Reading real MIGraphX logs is :mod:`pytest_mlirtrace._internal.logs`.)
"""
from .config import TraceConfig
from .recorder import TraceLog
from .session import TraceSession, load_module
from .text_sink import TextSink

__all__ = ["TraceConfig", "TraceLog", "TextSink", "TraceSession", "load_module"]
