"""Hypothesis, as the plugin sees it: the example running now, and what Hypothesis said about a failing one.

Hypothesis attaches what it reports for the final (shrunk) example -- its ``Falsifying example:
test(m=2)`` line and the test's ``note()`` texts -- to the exception as ``__notes__``. A fixture failure
is raised with ``pytrace=False`` (the message only), so pytest's report would not show them: the plugin
puts them in the ``mlirtrace: Hypothesis example`` section and the pytest-html extras.

Hypothesis is only looked at when the test process has imported it: nothing here imports it.
"""
from __future__ import annotations

import sys


def current_example():
    """The Hypothesis example running now (its build context), or None outside one."""
    control = sys.modules.get("hypothesis.control")
    if control is None:
        return None
    try:
        return control.current_build_context()
    except Exception:   # noqa: BLE001 - InvalidArgument: no example is running
        return None


def is_hypothesis_test(node) -> bool:
    return bool(getattr(getattr(node, "obj", None), "is_hypothesis_test", False))


def example_notes(*excs) -> list[str]:
    """The notes of the first of ``excs`` that has any (Hypothesis's ``Falsifying example`` line and the
    ``note()`` texts of that example, in order); [] when none has."""
    for exc in excs:
        notes = getattr(exc, "__notes__", None)
        if isinstance(notes, (list, tuple)) and notes:
            return [str(n) for n in notes]
    return []
