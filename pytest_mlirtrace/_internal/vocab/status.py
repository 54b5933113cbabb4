"""Statuses: how one compile/run of a solution ended, and the kinds of finding mlirtrace reports.

Each word is defined (and documented) once, here; the layers keep their own groups of them:
:data:`JOB_STATUSES` (a kernel job in a worker: ``runtime``), :data:`FAILURES` (a solution through the
pipeline: ``engine``), :data:`FINDING_KINDS` (a failure record: ``repro``).
"""
from __future__ import annotations

from enum import Enum

__all__ = ["Status", "JOB_STATUSES", "FAILURES", "FINDING_KINDS"]


class Status(str, Enum):
    """One status word; a ``str``, so it compares equal to (and prints as) its value."""

    def __new__(cls, value: str, doc: str) -> Status:
        obj = str.__new__(cls, value)
        obj._value_ = value
        obj.__doc__ = doc
        return obj

    # ---- how a run ends ---------------------------------------------------------
    OK = ("ok", "built, ran to the end and, where checked, matched the numpy oracle")
    BUILD_ERROR = ("build_error", "the OpenCL compiler refused the kernel (or a build left no kernel)")
    CRASH = ("crash", "the worker process died building or running the kernel, the kernel faulted on the device, "
                      "or it wrote past the end of an output (into the guard zone after it)")
    HANG = ("hang", "the kernel did not finish within the timeout; its worker was killed")
    LAUNCH_ERROR = ("launch_error", "the kernel built but the OpenCL runtime refused to enqueue or run it")
    WRONG = ("wrong", "the kernel ran but its output does not match the numpy oracle")
    LOWERING_ERROR = ("lowering_error", "the code generator could not lower the module with this solution "
                                        "(or the solution does not apply to it on this device)")
    # ---- kinds of finding only --------------------------------------------------
    SLOW = ("slow", "correct, but slower than the time the test allows (max_ms)")
    ASSERTION = ("assertion", "a test's own assertion failed after an mlirtrace run")
    IMPORTED = ("imported", "a module from a real trace log (import-trace), recorded whether or not it fails here")

    @property
    def doc(self) -> str:
        return self.__doc__ or ""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: what a kernel job in a worker process ends as
JOB_STATUSES: tuple[Status, ...] = (Status.OK, Status.BUILD_ERROR, Status.CRASH, Status.HANG, Status.LAUNCH_ERROR)
#: how one solution can fail in the compile/benchmark/run pipeline
FAILURES: tuple[Status, ...] = (Status.BUILD_ERROR, Status.CRASH, Status.HANG, Status.LAUNCH_ERROR, Status.WRONG,
                                Status.LOWERING_ERROR)
#: the kinds of a failure record (one finding)
FINDING_KINDS: tuple[Status, ...] = FAILURES + (Status.SLOW, Status.ASSERTION, Status.IMPORTED)
