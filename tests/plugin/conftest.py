"""Fixtures of the plugin's end-to-end tests."""
from __future__ import annotations

import numpy  # noqa: F401  - imported before any inline run: pytester's sys.modules snapshot would
import pytest  # drop what an inner run imports, and numpy's core cannot be loaded twice in a process

import pytest_mlirtrace._internal.plugin.facade  # noqa: F401  (the whole stack: ir .. repro)

from .plugin_helpers import DOT_K4, DOT_T, NASTY_MLIR, PLANTING_CONFTEST


@pytest.fixture
def inner(pytester, tmp_path, monkeypatch):
    """A pytester dir with the modules importable as ``mods`` and the planting conftest."""
    monkeypatch.setenv("MLIRTRACE_TUNING_DB", str(tmp_path / "tuning.json"))
    monkeypatch.delenv("MLIRTRACE_INJECT", raising=False)
    monkeypatch.delenv("MIGRAPHX_TRACE_MLIR", raising=False)
    monkeypatch.delenv("MIGRAPHX_TRACE_BENCHMARKING", raising=False)
    pytester.makepyfile(mods=f"DOT_T = {DOT_T!r}\nDOT_K4 = {DOT_K4!r}\nNASTY_MLIR = {NASTY_MLIR!r}\n")
    pytester.makeconftest(PLANTING_CONFTEST)
    return pytester
