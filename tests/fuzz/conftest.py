"""Fault-finding acceptance: `mlirtrace fuzz` run as a subprocess (slow ones run with -m slow)."""

import pytest


def pytest_collection_modifyitems(items):
    """Every slow fuzz here must find its fault within a time budget: marked ``alone`` (.ci/run runs these
    one at a time, -n 0, so that no other test takes their cores)."""
    for item in items:
        if item.get_closest_marker("slow") is not None and "tests/fuzz/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.alone)
