"""mlirtrace: trace, tune and reproduce fused-op compiles (MIGraphX / rocMLIR style) on OpenCL.

The public surface: the pytest plugin (its options, the ``mlirtrace`` and ``mlirtrace_session`` fixtures, the
``@pytest.mark.mlirtrace`` marker, the ``pytest_mlirtrace_failure`` hook), the ``mlirtrace`` command,
:mod:`pytest_mlirtrace.strategies` (Hypothesis strategies) and :mod:`pytest_mlirtrace.reproduce` (what
reproducer scripts import). Everything under ``pytest_mlirtrace._internal`` is internal.
"""
__version__ = "0.1.0"
