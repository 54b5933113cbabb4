"""Hooks the ``mlirtrace`` plugin calls, for other plugins and conftest.py files to implement.

Registered by ``pytest_addhooks`` in ``plugin.py``; importing this module imports nothing heavy.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_mlirtrace_failure(record, report, written):
    """A test that used the ``mlirtrace`` fixture failed and the plugin has recorded one distinct failure.

    Called once per distinct failure (one signature) of the failing phase, in the test's own process
    (an xdist worker's, under xdist), right after the reproducer was written and the report's
    ``mlirtrace: ...`` sections and junit properties were added; expected failures (xfail) give no call.

    :param record: the :class:`pytest_mlirtrace._internal.repro.FailureRecord` (``record.kind``: ``wrong``,
        ``crash``, ``hang``, ``build_error``, ``slow``, ``assertion``, ...; ``record.span``: module, MLIR,
        problem key, solution, kernel source).
    :param report: the ``pytest.TestReport`` of the failing phase (sections may still be added to it).
    :param written: the :class:`pytest_mlirtrace._internal.repro.WrittenRepro` (``script_path``, ``ticket_path``,
        ``signature``, ``new``, ``count``), or ``None`` when reproducers are off or writing it failed.

    An exception raised here does not lose the test's report: the plugin adds a
    ``mlirtrace: failure hook`` section saying what failed.
    """
