"""``@pytest.mark.mlirtrace(device=, timeout=, max_ms=, solution=, trace=)``: one test's defaults for its
fixture calls, checked (a bad argument fails the test before its body runs)."""
from __future__ import annotations

import pytest

__all__ = ["MARKER_HELP", "MARK_ERROR_KEY", "marker_options"]

MARK_ERROR_KEY = pytest.StashKey[str]()     # a bad mark's message: pytest_runtest_call fails the test with it

MARKER_HELP = ("mlirtrace(device=None, timeout=None, max_ms=None, solution=None, trace=None): defaults of this "
               "test's mlirtrace fixture calls: timeout = hang timeout in seconds of every call (a call's "
               "timeout_s wins), max_ms = run()'s max_ms, solution = run()'s and compile()'s solution, trace = "
               "the trace level 0-3 of its calls, device = must be the session's device (--mlir-device)")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v > 0


_MARK_CHECKS = {
    "device": (lambda v: isinstance(v, str) and v.strip() != "", "a device spec (text, as --mlir-device takes)"),
    "timeout": (_number, "a positive number of seconds"),
    "max_ms": (_number, "a positive number of milliseconds"),
    "solution": (lambda v: isinstance(v, str) and v.strip() != "", "a solution (perf-config text)"),
    "trace": (lambda v: isinstance(v, int) and 0 <= int(v) <= 3, "a trace level 0-3"),
}


def marker_options(node) -> tuple[dict, str | None]:
    """The ``mlirtrace`` marks of ``node`` merged (the closest mark wins per argument; ``None``: not given),
    and the message of the first bad argument, or None."""
    opts: dict = {}
    for mark in node.iter_markers("mlirtrace"):
        if mark.args:
            return {}, (f"@pytest.mark.mlirtrace takes keyword arguments only ({', '.join(_MARK_CHECKS)}); "
                        f"got positional {', '.join(map(repr, mark.args))}")
        for k, v in mark.kwargs.items():
            if k not in _MARK_CHECKS:
                return {}, (f"@pytest.mark.mlirtrace: unknown argument {k}={v!r}; known: "
                            f"{', '.join(_MARK_CHECKS)}")
            if v is None:
                continue
            ok, expected = _MARK_CHECKS[k]
            if not ok(v):
                return {}, f"@pytest.mark.mlirtrace({k}={v!r}): expected {expected}, got {type(v).__name__}"
            opts.setdefault(k, v)
    return opts, None
