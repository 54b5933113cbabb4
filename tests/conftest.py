"""The suite under pytest-xdist (setup.cfg's addopts: ``-n auto --dist loadgroup``).

``-n auto`` is at most 4 workers: each runs its own OpenCL worker pool, and a kernel test is mostly PoCL
compiling, one core per worker. Tests sharing a session fixture that takes long to make run on one worker,
so it is made once. ``-n 0`` runs the suite in this one process (for a debugger, say).
"""
from __future__ import annotations

import os

import pytest

MAX_WORKERS = 4
# session fixtures that take long to make (a fixture name -> the xdist group of the tests that use it)
ONE_WORKER = {"inputs": "report-inputs"}     # tests/report: real tunes, replays and a fuzz, ~40 s


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


@pytest.hookimpl(tryfirst=True)     # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        for fixture, group in ONE_WORKER.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
