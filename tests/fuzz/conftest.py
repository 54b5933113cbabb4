"""Fault-finding acceptance: `mlirtrace fuzz` run as a subprocess."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` here run only when asked for (``-m slow``, or MLIRTRACE_SLOW=1)."""
    markexpr = config.getoption("-m") or ""
    if "slow" in markexpr or os.environ.get("MLIRTRACE_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if item.get_closest_marker("slow") and _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
