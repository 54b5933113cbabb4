"""Internal: everything behind mlirtrace's public surface, with no promise of a stable API.

The public surface is small: the pytest plugin's options, fixtures (``mlirtrace``, ``mlirtrace_session``),
marker (``@pytest.mark.mlirtrace``) and hook (``pytest_mlirtrace_failure``); the ``mlirtrace`` command;
:mod:`pytest_mlirtrace.strategies` (Hypothesis strategies); :mod:`pytest_mlirtrace.reproduce` (what reproducer
scripts import). Everything here may change between releases, as ``_pytest`` for pytest and
``hypothesis.internal`` for Hypothesis. The layers, bottom up: ``vocab``, ``config``, ``ir``, ``mlir``,
``codegen``, ``runtime``, ``engine``, ``trace``, ``logs``, ``repro``, ``store``, ``strategies``, ``fuzz``,
``report``, ``plugin`` and ``cli`` (docs/ARCHITECTURE.md).
"""
