"""``mlirtrace`` command line: one module per subcommand, each with ``add_parser`` and ``run``.

Every command follows the exit-code contract (:class:`~pytest_mlirtrace._internal.vocab.exit_codes.ExitCode`) and
prints no Python traceback: a user error is one ``mlirtrace: ...`` line, and an error inside mlirtrace
itself is ``mlirtrace: internal error: ...`` with the file its traceback was saved to
(``MLIRTRACE_DEBUG=1`` prints it instead), exit status 1.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback

from ..config import environment
from ..vocab.exit_codes import ExitCode

# subcommand -> module under pytest_mlirtrace._internal.cli (each defines add_parser(subparsers) and run(args) -> int)
COMMANDS = {
    "show": "show",
    "compile": "compile_cmd",
    "tune": "tune_cmd",
    "run": "run_cmd",
    "fuzz": "fuzz_cmd",
    "import-trace": "import_trace_cmd",
    "devices": "devices_cmd",
    "tuning-db": "tuning_db_cmd",
    "reduce": "reduce_cmd",
    "repro": "repro_cmd",
    "report": "report_cmd",
}

ENV_DEBUG = environment.DEBUG


DESCRIPTION = """\
Compile, tune, run and fuzz MIGraphX-style fused ops (a migraphx module or its MLIR) on an OpenCL device,
check them against a numpy oracle, and write a reproducer and a ticket for every distinct failure."""

EPILOG = """\
examples:
  mlirtrace tune examples/seed_transpose_reshape_dot_add_f32.txt     quick-tune the seed's fused op
  mlirtrace run MODULE.mlir --solution 16,32,8,4,16,16,0,4           run one solution, check it
  mlirtrace fuzz --budget 300                                        look for compiler bugs for 5 minutes
  python reproducers/<signature>.py                                  replay one failure (exit 0: fixed)
  mlirtrace reduce reproducers/<signature>.py                        make a failure small
  mlirtrace repro run reproducers                                    rerun them all: fixed / reproduces
  mlirtrace report reproducers -o report.html                        one HTML page: findings, tuning charts

exit status: 0 ok / fixed, 1 a failure found or reproduced, 2 bad usage or input, 3 not supported,
4 no usable device, 5 a test's own assertion (the kernel is right), 6 fails differently, 130 interrupted.
COMMAND --help says more."""

_DISTRIBUTIONS = ("pytest-mlirtrace", "numpy", "pyopencl", "pocl-binary-distribution", "xdsl", "pytest", "hypothesis")


def version_text() -> str:
    """mlirtrace's version and those of what it runs on (package metadata only: nothing is imported)."""
    from importlib.metadata import PackageNotFoundError, version

    def v(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"
    own, *rest = _DISTRIBUTIONS
    return f"mlirtrace {v(own)} (" + ", ".join(f"{d} {v(d)}" for d in rest) + f"; python {sys.version.split()[0]})"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI's parser; with ``command`` (one of COMMANDS), only that command's module is imported and
    the others are bare names (each command's imports cost up to 0.3 s; ``main`` knows the command first)."""
    p = argparse.ArgumentParser(prog="mlirtrace", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, modname in COMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name)
            continue
        mod = importlib.import_module(f"pytest_mlirtrace._internal.cli.{modname}")
        sp = mod.add_parser(sub, name)
        sp.set_defaults(_run=mod.run)
    return p


def _command_of(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names, when its first word is one (else None: the whole parser is built)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _debug() -> bool:
    """``MLIRTRACE_DEBUG`` set (to anything but 0): tracebacks of internal errors are printed."""
    return environment.value(ENV_DEBUG) not in ("", "0")


def _internal_error(exc: BaseException, argv, debug: bool = False) -> int:
    """Report a bug in mlirtrace without a raw traceback: one line, and where the traceback was saved
    (``debug``: the traceback printed instead)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    first = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    print(f"mlirtrace: internal error: {first}", file=sys.stderr)
    if debug:
        print(text, file=sys.stderr, end="")
        return ExitCode.FAILURE
    try:
        from .. import fs

        path = os.path.join(fs.cache_dir(), "crashes", f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt")
        fs.atomic_write(path, f"mlirtrace {' '.join(map(str, argv or sys.argv[1:]))}\n\n{text}")
        print(f"mlirtrace: the traceback is in {path} (please attach it to a bug report; "
              f"{ENV_DEBUG}=1 prints it)", file=sys.stderr)
    except Exception:  # noqa: BLE001 - nowhere to save it: show it rather than lose it
        print(text, file=sys.stderr, end="")
    return ExitCode.FAILURE


def main(argv: list[str] | None = None) -> int:
    from ..runtime import DeviceError

    debug = _debug()        # read where the command starts, as its settings are
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_command_of(words)).parse_args(words)
    try:
        return int(args._run(args) or 0)
    except DeviceError as e:
        # no device, or a worker that can't start or import: nothing was judged, so nothing is a finding
        print(f"mlirtrace: environment: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("mlirtrace: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except MemoryError:
        print("mlirtrace: environment: out of host memory (a lower --max-bytes refuses such modules up front)",
              file=sys.stderr)
        return ExitCode.ENVIRONMENT
    except Exception as e:  # noqa: BLE001 - a bug of ours: reported, never a raw traceback
        return _internal_error(e, argv, debug)


if __name__ == "__main__":
    sys.exit(main())
