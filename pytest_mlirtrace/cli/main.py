"""``mlirtrace`` command line: one module per subcommand, each with ``add_parser`` and ``run``."""
from __future__ import annotations

import argparse
import importlib
import sys

# subcommand -> module under pytest_mlirtrace.cli (each defines add_parser(subparsers) and run(args) -> int)
COMMANDS = {
    "show": "show",
    "compile": "compile_cmd",
    "tune": "tune_cmd",
    "run": "run_cmd",
    "fuzz": "fuzz_cmd",
    "import-trace": "import_trace_cmd",
    "devices": "devices_cmd",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mlirtrace", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, modname in COMMANDS.items():
        mod = importlib.import_module(f"pytest_mlirtrace.cli.{modname}")
        sp = mod.add_parser(sub, name)
        sp.set_defaults(_run=mod.run)
    return p


def main(argv: list[str] | None = None) -> int:
    from ..runtime import DeviceError

    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except DeviceError as e:
        # no device, or a worker that can't start or import: nothing was judged, so nothing is a finding
        print(f"mlirtrace: environment: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("mlirtrace: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
