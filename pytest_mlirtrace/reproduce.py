"""The public module that reproducer scripts import: all of ``pytest_mlirtrace`` a written reproducer
relies on, kept stable across releases (the scripts outlive the version that wrote them).

A reproducer (``mlirtrace`` writes one per failure signature) is its recorded data plus::

    from pytest_mlirtrace.reproduce import run
    sys.exit(run(PAYLOAD, sys.argv[1:], standalone=run_standalone))

* :func:`run` -- reproduce the recorded failure with this package (the MLIR re-lowered with the recorded
  solution, or ``--solution``, or ``--all-solutions``; checked against the oracle) as the command line asks;
  the exit status (``vocab.ExitCode``: 0 fixed, 1 reproduced, 2 bad usage, 3 not supported here, 4 cannot run,
  5 needs the original test, 6 fails differently);
* :func:`prepare_opencl` -- the OpenCL environment fix for the pip-installed PoCL (ICD file, CPU name, cache
  directory), which the script's standalone path (numpy + pyopencl only) calls before ``import pyopencl``.

The rest of the package (``pytest_mlirtrace._internal``) is internal to it: a script imports nothing else.
"""
from __future__ import annotations

from collections.abc import Callable

from ._internal.runtime import ensure_opencl_env

__all__ = ["run", "prepare_opencl"]


def run(payload: str | dict, argv=None, standalone: Callable[..., dict] | None = None) -> int:
    """Reproduce the failure recorded in ``payload`` (a script's ``PAYLOAD``, or the decoded dict) as the
    command line ``argv`` asks (default: ``sys.argv[1:]``); the exit status. ``standalone(data, device,
    timeout, kernel_file)`` runs the recorded kernel for ``--standalone`` (a script passes its own)."""
    # the compiler is imported here, not with the module: the standalone path's child process imports this
    # module for prepare_opencl() alone
    from ._internal.repro.runner import run as run_payload

    return run_payload(payload, argv, standalone=standalone)


def prepare_opencl() -> None:
    """Set up the OpenCL environment for the pip-installed PoCL before ``pyopencl`` is imported (nothing
    when the user's own OpenCL set-up is to be used)."""
    ensure_opencl_env()
