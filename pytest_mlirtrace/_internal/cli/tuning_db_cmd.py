"""``mlirtrace tuning-db export|import FILE``: tuned results to and from MIGraphX's own files."""
from __future__ import annotations

from ..config import environment
from .common import CLIError, add_device_options, run_guarded, settings


def add_parser(sub, name):
    p = sub.add_parser(name, help="export or import tuning results in MIGraphX's formats",
                       description="Move tuned results between mlirtrace's tuning database "
                                   f"({environment.TUNING_DB}) "
                                   "and MIGraphX's files: the MIGRAPHX_MLIR_TUNING_DB TSV (arch, CUs, problem, perf "
                                   "config) or the MIGRAPHX_PROBLEM_CACHE JSON.")
    p.add_argument("action", choices=("export", "import"))
    p.add_argument("file")
    p.add_argument("--format", choices=("tsv", "problem-cache"), default=None,
                   help="the file's format (default: problem-cache for a .json file, else tsv)")
    add_device_options(p)
    return p


def run(args) -> int:
    return run_guarded(_run, args)


def _run(args) -> int:
    from ..engine.database import TuningDatabase
    from ..engine.migraphx_db import (
        TuningFileError,
        export_problem_cache,
        export_tuning_tsv,
        import_problem_cache,
        import_tuning_tsv,
    )

    st = settings(args)
    db = TuningDatabase(st.tuning_db)
    fmt = args.format or ("problem-cache" if args.file.lower().endswith(".json") else "tsv")
    if args.action == "export":
        try:
            n = (export_problem_cache if fmt == "problem-cache" else export_tuning_tsv)(db, args.file)
        except OSError as e:
            raise CLIError(f"{args.file}: cannot write: {e.strerror or e}") from None
        print(f"exported {n} tuned problem(s) from {db.path} to {args.file} ({fmt})")
        return 0
    from ..runtime import resolve_device
    device = resolve_device(st.device)
    try:
        if fmt == "problem-cache":
            n, skipped = import_problem_cache(args.file, db, device.spec)
        else:
            n, skipped = import_tuning_tsv(args.file, db, device.spec), 0
    except FileNotFoundError:
        raise CLIError(f"{args.file}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{args.file}: a directory, expected a file") from None
    except (TuningFileError, UnicodeDecodeError) as e:
        raise CLIError(str(e)) from None
    print(f"imported {n} tuned problem(s) into {db.path} for device {device.spec}"
          + (f" ({skipped} other entries skipped)" if skipped else ""))
    return 0
