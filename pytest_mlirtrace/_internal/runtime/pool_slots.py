"""A pool's places for its worker processes: one :class:`Slot` per worker, replaced when it dies, and what
the slot's worker holds (the inputs it was sent); stopping them all (:func:`shutdown_slots`)."""
from __future__ import annotations

import threading

from .workerproc import WorkerProc

__all__ = ["Slot", "shutdown_slots"]


class Slot:
    """A place for one worker; the worker is replaced when it dies."""

    def __init__(self, index: int):
        self.index = index
        self.lock = threading.Lock()
        self.worker: WorkerProc | None = None
        self.runs_waiting = 0       # runs waiting for this worker: builds let them go first
        # input keys sent to the worker of serial ``sent_serial`` (it may have dropped some since: it says so)
        self.sent_inputs: set[str] = set()
        self.sent_serial = -1

    def inputs_held(self) -> set[str]:
        """The input keys this slot's worker was sent (emptied when the worker is another one)."""
        serial = self.worker.serial if self.worker is not None else -1
        if serial != self.sent_serial:
            self.sent_inputs, self.sent_serial = set(), serial
        return self.sent_inputs


def shutdown_slots(slots: list, grace: float = 1.0) -> bool:
    """Stop the slots' workers. A Ctrl-C meanwhile (the user pressing it again while the program exits)
    only hurries the rest along: they are killed without waiting, and True is returned instead of the
    KeyboardInterrupt propagating (this runs from ``atexit``, where it would print a traceback)."""
    interrupted = False
    for s in slots:
        w, s.worker = s.worker, None
        if w is None:
            continue
        try:
            if interrupted:
                w.kill(0)
            else:
                w.shutdown(grace)
        except KeyboardInterrupt:
            interrupted = True
            try:
                w.kill(0)
            except BaseException:  # noqa: BLE001 - yet another Ctrl-C: the OS reaps what is left
                pass
        except Exception:
            pass
    return interrupted
