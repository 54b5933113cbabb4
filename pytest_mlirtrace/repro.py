"""Deprecated: the import of the reproducer scripts written before :mod:`pytest_mlirtrace.reproduce` existed
(``from pytest_mlirtrace.repro import run``). Kept so that those scripts keep running with today's library:
the same call, the same exit status. New scripts import :mod:`pytest_mlirtrace.reproduce`; no warning is
printed (it would land in the output of every old script)."""
from __future__ import annotations

from .reproduce import run

__all__ = ["run"]
