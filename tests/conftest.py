"""The suite under pytest-xdist (setup.cfg's addopts: ``-n auto``).

``-n auto`` is at most 4 workers: each runs its own OpenCL worker pool, and a kernel test is mostly PoCL
compiling, one core per worker. A session fixture that takes long to make is made once for all the workers
(tests/report/conftest.py: under a file lock in the run's shared temporary directory, as pytest-xdist's
documentation shows; its ``loadgroup`` does not group with pytest 9.2, whose nodes keep their id elsewhere).
``-n 0`` runs the suite in this one process (for a debugger, say).
"""
from __future__ import annotations

import os

MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):  # noqa: ARG001 - the hook's signature
    return max(1, min(MAX_WORKERS, os.cpu_count() or 1))
