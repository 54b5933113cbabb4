"""The exit-code contract: one meaning per number, the same for every ``mlirtrace`` command, the
pytest run's environment stop, and every generated reproducer.

=====  ===================  =======================================================================
 code  name                 meaning
=====  ===================  =======================================================================
  0    ``OK``               nothing wrong: the command did its work / the reproducer's failure is fixed
  1    ``FAILURE``          a compiler failure was found (run, tune, fuzz) or reproduced (a reproducer)
  2    ``USAGE``            bad input or usage: a file that does not parse (``FILE:LINE:COL: message``),
                            an unknown option value, a limit exceeded (``--max-bytes``)
  3    ``NOT_SUPPORTED``    the input is valid but mlirtrace cannot handle it here (which op, and why)
  4    ``ENVIRONMENT``      no usable device, an OpenCL worker that cannot start or import what it needs
  5    ``NEEDS_TEST``       a reproducer of a test's own assertion: the kernel matches the oracle, only
                            the original test can judge whether its assertion still fails
  6    ``DIFFERENT``        a reproducer that fails, but not the way it was recorded (another bug, or a
                            changed one: read its output)
 130   ``INTERRUPTED``      stopped by Ctrl-C
=====  ===================  =======================================================================

The generated reproducer (``repro/reproducer_template.py``) runs without this package and keeps its own
copy of the numbers; a test checks the two agree.
"""
from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1
    USAGE = 2
    NOT_SUPPORTED = 3
    ENVIRONMENT = 4
    NEEDS_TEST = 5
    DIFFERENT = 6
    INTERRUPTED = 130
