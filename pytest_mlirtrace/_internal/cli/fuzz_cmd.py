"""``mlirtrace fuzz --budget SECONDS``: Hypothesis-driven fuzzing of fused ops against the numpy oracle.

Draws fused modules (gemm, conv, pointwise, reduce, softmax) and applicable solutions, compiles and runs
each case in isolated workers, shrinks every new kind of failure to a small case and writes one
reproducer + ticket per failure signature. Exit status: 1 when a new failure was found, 0
otherwise, 2 for usage errors.
"""
from __future__ import annotations

import argparse
import textwrap

from ..config import environment
from .common import CLIError, add_store_option, run_guarded, settings


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _kinds(text: str) -> list[str]:
    from ..strategies import ALL_KINDS

    out = [k.strip() for k in text.replace(",", " ").split() if k.strip()]
    bad = [k for k in out if k not in ALL_KINDS]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(bad) or text!r}; "
                                         f"choose from {', '.join(ALL_KINDS)}")
    return out


def _faults_epilog() -> str:
    from ..vocab.faults import FAULTS

    width = max(map(len, FAULTS))
    rows = []
    for k, v in FAULTS.items():      # the first sentence of each, wrapped under its name
        first = v.split(". ")[0].rstrip(".") + "."
        rows.append(textwrap.fill(first, 110, initial_indent=f"  {k:<{width}}  ",
                                  subsequent_indent=" " * (width + 4)))
    return (f"planted faults ({environment.INJECT}=NAME[,NAME...]: the fuzz must find them; each finding is then\n"
            "checked with the fault off):\n" + "\n".join(rows)
            + "\n\nexit status: 1 a new failure found, 0 none, 2 bad usage, 4 no usable device.")


def add_parser(sub, name):
    from ..fuzz.options import DEFAULT_DATABASE
    from ..strategies import ALL_KINDS

    p = sub.add_parser(name, help="fuzz fused ops x solutions against the numpy oracle",
                       description=__doc__.splitlines()[0].split(": ", 1)[1],
                       epilog=_faults_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=_positive_float, required=True, metavar="SECONDS",
                   help="wall-clock time to spend (shrinking and writing included)")
    p.add_argument("--seed", type=int, default=None, help="seed of the search (default: random)")
    p.add_argument("--device", default=None,
                   help="OpenCL device: pocl (default), nvidia, gpu, cpu, P:D or a name substring")
    p.add_argument("--repro-dir", default=None, metavar="DIR",
                   help="where reproducers and tickets go (default: reproducers, or reproducers in a --store "
                        "directory)")
    p.add_argument("--kinds", type=_kinds, action="extend", default=None, metavar="KIND",
                   help=f"graph kinds to draw, comma or space separated: {', '.join(ALL_KINDS)} (default: all)")
    p.add_argument("--max-dim", type=_positive_int, default=16, metavar="N", help="largest dim (default 16)")
    p.add_argument("--max-elements", type=_positive_int, default=4096, metavar="N",
                   help="most elements of any tensor of a drawn graph (default 4096); raise it for long "
                        "reductions and big dots")
    p.add_argument("--values", choices=("unit", "wide", "extreme"), default="wide",
                   help="input values: unit (inputs in [-1, 1], guards keep intermediates small), wide (default: "
                        "the main input scaled by literals up to 1000, so softmax, exp and reductions see large "
                        "magnitudes), extreme (also the dtype's limits and subnormals; overflows to inf and NaN "
                        "are checked against the oracle)")
    p.add_argument("--build", choices=("full", "fast"), default="full",
                   help="how kernels are built: full (default: the code generator's build options, as tune and "
                        "run build them) or fast (the same kernels with the compiler's optimisations off, "
                        "-cl-opt-disable: about twice the cases a second on PoCL; a bug that only the "
                        "optimiser brings out is not seen, and a reproducer builds as its case was built)")
    p.add_argument("--no-long-reductions", action="store_true",
                   help="don't draw long reductions (K of a dot, reduce and softmax axes up to --max-elements "
                        "with the other dims small)")
    p.add_argument("--database", default=None, metavar="DIR",
                   help=f"Hypothesis example database (default {DEFAULT_DATABASE}, or fuzz-db in a --store "
                        "directory; with a redis:// store it is read and written together with the fleet's); "
                        "'none' for none")
    add_store_option(p)
    p.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                   help="parallel lanes (default: min(2, CPUs))")
    p.add_argument("--campaigns", type=_positive_int, default=None, metavar="N",
                   help="Hypothesis campaigns run at once, each in its own thread with its share of the lanes "
                        "(default: one per lane with --build fast, else 1; at most the lanes; 1: one campaign, each "
                        "example's solutions dealt out to all lanes)")
    p.add_argument("--timeout", type=_positive_float, default=10.0, metavar="SECONDS",
                   help="seconds before a build or run counts as hung (default 10)")
    p.add_argument("--compile-timeout", type=_positive_float, default=60.0, metavar="SECONDS",
                   help="seconds a build, or the driver's compile at a kernel's first launch, may take before "
                        "it counts as hung (default 60; timed apart from --timeout)")
    p.add_argument("--shrink-budget", type=_positive_float, default=None, metavar="SECONDS",
                   help="most time to spend shrinking one failure (default: max(15, 35%% of the budget))")
    p.add_argument("--solutions", type=_positive_int, default=None, metavar="N",
                   help="most solutions (perf configs) checked on each drawn module (default: 2 x lanes); "
                        "each lane builds its share as one program")
    p.add_argument("--seeds", type=_positive_int, default=2, metavar="N",
                   help="random inputs each compiled kernel is checked on (default 2)")
    p.add_argument("--max-findings", type=_positive_int, default=None, metavar="N",
                   help="stop once N reproducers are written (default: use the whole budget)")
    p.add_argument("--no-verify", action="store_true",
                   help="don't run each reproducer once in a fresh process before writing it")
    p.add_argument("--no-odd-configs", action="store_true",
                   help="draw solutions from the tuning space only (default: half the cases add a perf config "
                        "beyond it, in a legacy or v1-v4 form, which must be refused with a reason or run right)")
    p.add_argument("--write-grace", type=_positive_float, default=30.0, metavar="SECONDS",
                   help="after the budget, time left for running what was found alone in fresh processes "
                        "before it is written (then it is written unchecked, with a note; default 30)")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="also write the summary as JSON to FILE (cases, rate, findings with their timings)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    p.add_argument("--json", action="store_true", help="print the JSON report (what --report writes) on stdout "
                                                       "instead of the summary; progress stays on stderr")
    return p


def local_paths(args, spec) -> tuple[str, str | None]:
    """(reproducer directory, example database or None) of the command: as given, else under a directory
    store, else the defaults (``reproducers``, ``.mlirtrace/fuzz-db``); ``--database none`` for none."""
    from ..fuzz.options import DEFAULT_DATABASE
    from ..store import local_path

    db = args.database if args.database is not None else local_path(spec, "fuzz-db", None) or DEFAULT_DATABASE
    return (local_path(spec, "reproducers", args.repro_dir) or "reproducers",
            None if str(db).lower() in ("none", "", "off") else db)


def _run(args) -> int:
    from hypothesis.errors import InvalidArgument

    from .. import codegen
    from ..fuzz import FuzzOptions, run_and_report
    from ..strategies import SUPPORTED_KINDS

    st = settings(args)         # a bad setting (an unknown planted fault) is a usage error naming its source
    spec = st.store
    repro_dir, database = local_paths(args, spec)
    o = FuzzOptions(budget_s=args.budget, inject=st.inject, seed=args.seed, device=st.device, repro_dir=repro_dir,
                    store=spec, machine=st.machine,
                    kinds=tuple(dict.fromkeys(args.kinds)) if args.kinds else SUPPORTED_KINDS,
                    max_dim=args.max_dim, max_elements=args.max_elements, values=args.values,
                    long_reductions=not args.no_long_reductions, database=database, jobs=args.jobs or 0,
                    timeout_s=args.timeout, compile_timeout_s=args.compile_timeout,
                    shrink_budget_s=args.shrink_budget, seeds_per_case=args.seeds,
                    max_findings=args.max_findings, verify=not args.no_verify, odd_solutions=not args.no_odd_configs,
                    write_grace_s=args.write_grace, build=args.build, max_solutions=args.solutions or 0,
                    campaigns=args.campaigns or 0)
    try:
        return run_and_report(o, quiet=args.quiet, report_path=args.report, as_json=args.json)
    except codegen.FaultError as e:
        raise CLIError(f"{environment.INJECT}: {e}") from None
    except (ValueError, InvalidArgument) as e:     # InvalidArgument: a strategy's eager check of a setting
        raise CLIError(str(e)) from None


def run(args) -> int:
    return run_guarded(_run, args)
