"""``mlirtrace reduce REPRO.py``: a written reproducer's module made small while it fails the same way."""
from __future__ import annotations

import sys
from pathlib import Path

from ..vocab.exit_codes import ExitCode
from .common import CLIError, add_device_options, run_guarded, settings


def add_parser(sub, name):
    p = sub.add_parser(name, help="reduce a reproducer's module while it keeps failing the same way",
                       description="Drop ops, shrink sizes and move the solution toward the default, each step run "
                                   "isolated and kept only when the case still fails in the same class (kind and "
                                   "normalised error); write the reduced reproducer and ticket beside the original.")
    p.add_argument("file", metavar="REPRO.py", help="a reproducer mlirtrace wrote")
    p.add_argument("--budget", type=float, default=300.0, metavar="SECONDS",
                   help="most time to spend (default 300); what held by then is written")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the summary")
    add_device_options(p)
    return p


def run(args) -> int:
    return run_guarded(_run, args)


def _run(args) -> int:
    from .. import codegen, engine, repro
    from ..repro.reduce import Reducer, size_of
    from ..repro.writer import read_payload

    script = Path(args.file)
    try:
        data = read_payload(script)
    except FileNotFoundError:
        raise CLIError(f"{script}: no such file") from None
    except IsADirectoryError:
        raise CLIError(f"{script}: a directory, expected a reproducer (REPRO.py)") from None
    except (ValueError, KeyError, SyntaxError, UnicodeDecodeError):
        raise CLIError(f"{script}: not a reproducer mlirtrace wrote (no PAYLOAD in it)") from None
    st = settings(args)
    module, _ = engine.load_module(data.get("module_text") or data["mlir_text"])
    inject = data.get("inject") or None
    timeout = float(data.get("timeout_s") or st.timeout_s or 30.0)
    pipe = engine.Pipeline(st.device, inject=inject, timeout_s=timeout, database=engine.MemoryDatabase())
    seed = int(data.get("seed") or 0)

    def run_case(m, sol):
        return pipe.run(m, solution=sol, seed=seed)

    def default(m):
        return codegen.default_solution(codegen.problem_of(m), pipe.device)

    def progress(step, red):
        if not args.quiet:
            ops, el = size_of(red.module)
            print(f"reduce {red.elapsed_s:5.0f}s  run {red.runs:3d}  "
                  f"{'held ' if step.held else 'no   '} {step.what}  (now {ops} ops, {el} elements)", file=sys.stderr)

    try:
        r = Reducer(data, run_case, default, budget_s=args.budget, progress=progress)
    except ValueError as e:
        raise CLIError(f"{script}: {e}") from None
    red = r.reduce(module, data["solution"])
    if red.result is None:
        print(f"{script}: the original case does not fail the recorded way here ({red.steps[0].detail}); "
              f"recorded: {r.want}")
        return ExitCode.DIFFERENT
    (o_ops, o_el), (n_ops, n_el) = size_of(module), size_of(red.module)
    if not red.held:
        print(f"{script}: nothing could be reduced ({red.runs} runs): every step changed the failure or passed")
        return ExitCode.OK
    rec = repro.FailureRecord.from_run(red.result, origin=f"reduce {script.name}", timeout_s=timeout,
                                       inject=inject or "", device_info=pipe.device)
    w = repro.ReproWriter(script.parent).write(rec)
    lines = ["", "## Reduced", "", f"From `{script.name}` ({data['signature']}) by `mlirtrace reduce`, in "
             f"{red.runs} isolated runs ({red.elapsed_s:.0f} s{', budget spent' if red.out_of_budget else ''}): "
             f"{o_ops} ops and {o_el} parameter elements before, {n_ops} and {n_el} after; solution "
             f"`{data['solution']}` -> `{red.solution}`. Failure class kept: `{r.want}`.", "",
             "Reductions that held, in order:", ""] + [f"1. {s.what}" for s in red.held] + [""]
    w.ticket_path.write_text(w.ticket_path.read_text(encoding="utf-8").rstrip() + "\n" + "\n".join(lines),
                             encoding="utf-8")
    print(f"reduced: {o_ops} ops / {o_el} elements -> {n_ops} ops / {n_el} elements, solution {red.solution}, "
          f"{len(red.held)} of {len(red.steps)} steps held, {red.runs} runs in {red.elapsed_s:.1f}s")
    print(f"  {w.script_path}\n  {w.ticket_path}")
    return ExitCode.OK
