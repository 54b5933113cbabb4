"""The worker process's script: ``python worker.py --serve SPEC`` (one OpenCL context, a request loop) or
``--list`` (the devices), started by :mod:`.pool` / :mod:`.device` (:data:`.device.WORKER_SCRIPT`).

The worker imports the modules it needs (:mod:`.worker_server`, :mod:`.worker_programs`, :mod:`.worker_runs`,
:mod:`.device`, :mod:`.opencl_env`, ``config.environment``, ``fs``, ``vocab``) from the files around this
one, without running the ``__init__`` of the package, of ``runtime`` or of ``config`` (they import the pool,
the settings, ...), and whether or not the package is installed where this interpreter looks: a worker
starts in about the time of ``import pyopencl`` plus context creation.
"""
from __future__ import annotations

import importlib
import os
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))


def _package_by_path() -> str:
    """Make the package importable from the files around this one, its heavy ``__init__`` modules left out
    (the packages above ``runtime`` -- ``pytest_mlirtrace._internal`` -- included); the dotted name of the
    package that holds ``runtime``."""
    layers = os.path.dirname(_HERE)
    chain = [layers]                         # the package directories from the top one down to ``layers``
    while os.path.isfile(os.path.join(os.path.dirname(chain[0]), "__init__.py")):
        chain.insert(0, os.path.dirname(chain[0]))
    names = []
    for path in chain:
        names.append(os.path.basename(path))
        _stand_in(".".join(names), path)
    top = ".".join(names)
    _stand_in(f"{top}.runtime", _HERE)
    _stand_in(f"{top}.config", os.path.join(layers, "config"))
    return top


def _stand_in(name: str, path: str) -> None:
    """``name`` as a package whose modules are the files in ``path``, its ``__init__`` not run."""
    if name not in sys.modules:
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        sys.modules[name] = mod


def main(argv: list[str]) -> int:
    if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
        sys.path.pop(0)      # don't let our module names shadow anything
    top = __package__.rpartition(".")[0] if __package__ else _package_by_path()
    return importlib.import_module(f"{top}.runtime.worker_server").main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
