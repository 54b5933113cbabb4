"""``mlirtrace_session``: the fixture for ``@given`` tests, with a fresh recorder per example.

The ``mlirtrace`` fixture is function-scoped: one recorder for the whole test, so under ``@given`` every
example would share its log, its spans and its in-memory tuning database (what one example tuned would
pick the solution of the next) — what Hypothesis's ``function_scoped_fixture`` health check warns about.
``mlirtrace_session`` is session-scoped (the health check stays on) and hands out one recorder per
example::

    @given(m=st.integers(2, 9))
    def test_dot(mlirtrace_session, m):
        with mlirtrace_session.for_example() as mlirtrace:   # a fresh recorder for this example
            mlirtrace.run(dot(m))

Each recorder is the ``mlirtrace`` fixture's object (``run``, ``tune``, ``compile``, ``log``, ...) bound
to the test running now, with the test's ``@pytest.mark.mlirtrace`` defaults. The report of a failing
test is made from the recorder(s) of the example(s) whose failure ended it: Hypothesis's final, shrunk
example (each one, when it reports several distinct failures), so one bug writes one reproducer.
"""
from __future__ import annotations

import contextlib

import pytest

from .keys import FACADE_KEY
from .marker import marker_options

KEEP_FAILED = 64          # recorders of failing examples kept for the report (shrinking makes many)


class MlirtraceSession:
    """The ``mlirtrace_session`` fixture's object: :meth:`for_example` gives a new recorder."""

    def __init__(self, state):
        self._state = state

    def __repr__(self) -> str:          # as Hypothesis prints it in a falsifying example
        return "<mlirtrace_session>"

    @contextlib.contextmanager
    def for_example(self):
        """A new recorder (the ``mlirtrace`` fixture's object) for the code inside the ``with`` block,
        bound to the test running now; its failures are reported with that test."""
        item = self._state.current_item
        if item is None:
            raise RuntimeError("mlirtrace_session.for_example() is for a running test (none is running)")
        from .facade import Mlirtrace

        marks, err = marker_options(item)
        if err:
            pytest.fail(err, pytrace=False)
        examples = item.stash.get(FACADE_KEY, None)
        if not isinstance(examples, ExampleFacades):
            examples = item.stash[FACADE_KEY] = ExampleFacades(examples)
        recorder = Mlirtrace(self._state, item, marks=marks)
        examples.add(recorder)
        try:
            yield recorder
        finally:
            recorder.close()


class ExampleFacades:
    """The recorders of one test's examples, seen by the report hook as one: ``spans`` (did any example
    compile something) and ``report_failure`` (the recorders whose calls raised the failure that ended
    the test report it; else the last example's)."""

    def __init__(self, first=None):
        self._failed: list = []
        self._last = None
        if first is not None:           # the test also used the function-scoped ``mlirtrace`` fixture
            self.add(first)

    def add(self, recorder) -> None:
        last = self._last
        if last is not None and last.failures:
            self._failed.append(last)
            del self._failed[:-KEEP_FAILED]
        self._last = recorder

    def _all(self) -> list:
        return self._failed + ([self._last] if self._last is not None else [])

    @property
    def spans(self) -> list:
        return [s for r in self._all() for s in r.spans]

    def report_failure(self, rep, call) -> list:
        hit = [r for r in self._all() if r.raised(call)]
        out = []
        for r in hit or [self._last]:
            if r is not None and r.spans:
                out += r.report_failure(rep, call)
        return out
