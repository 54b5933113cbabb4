"""What a reproducer script runs when ``pytest_mlirtrace`` is importable: ``run(PAYLOAD, argv)``.

A generated reproducer (``reproducer_template.py`` with its payload spliced in) is data plus one call:
its ``main()`` hands the payload and the command line to :func:`run`, so the package path (re-lower the
recorded MLIR with the recorded solution, or ``--solution``, or every solution, and check it against the
oracle) is the library's code of the day it runs, not a copy frozen into the script the day it was
written. The script keeps only the standalone path (the recorded kernel with numpy + pyopencl, for a
machine without this package); ``--standalone`` runs the script's own, which it passes in.

The command line, the dumps, the printed result and the verdict exist once, in the template (the
standalone path needs them on its own); :func:`run` uses the package's copy of them
(``reproducer_template.reproduce``) and adds what only the package path has: the injected fault, the
re-lowered kernel, bad ``--solution`` usage, the table and verdict of ``--all-solutions``.

Exit status (vocab.ExitCode): 0 fixed, 1 reproduced, 2 bad usage, 3 not supported here, 4 cannot run,
5 needs the original test (an assertion), 6 fails differently.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable

import pytest_mlirtrace

from .. import runtime
from ..config import environment, inject_now, resolve
from ..engine import TuningDatabase
from ..trace import TraceConfig, TraceSession
from ..vocab import Status
from . import reproducer_template as tmpl
from .reproducer_template import EXIT_DIFFERENT, EXIT_FIXED, EXIT_REPRODUCED, EXIT_USAGE, section

__all__ = ["run", "run_package", "all_solutions_verdict"]


def run(payload: str | dict, argv=None, standalone: Callable[..., dict] | None = None) -> int:
    """Reproduce the failure recorded in ``payload`` (a script's ``PAYLOAD``, or the decoded dict) as the
    command line ``argv`` asks (default: ``sys.argv[1:]``); the exit status.
    ``standalone(data, device, timeout, kernel_file)`` runs the recorded kernel for ``--standalone``
    (a script passes its own; default: the template's ``run_standalone``)."""
    data = tmpl.load_payload(payload) if isinstance(payload, str) else payload
    return tmpl.reproduce(data, sys.argv[1:] if argv is None else list(argv), package=run_package,
                          standalone=standalone)


def run_package(data: dict, args) -> dict:
    """Re-lower the recorded MLIR with the solution (or tune every one) and check it against the oracle:
    the result ``reproduce`` prints, with the package path's ``notes`` (and ``verdict``, where it is the
    package path's own)."""
    res = _run_package(data, args)
    if res["status"] == "cannot_run":
        return res
    notes = [f"{environment.INJECT}={res['inject']} (from the environment)"] if res.get("inject") else []
    if args.show_kernel and res.get("kernel_source") is not None:
        notes.append("kernel source now: the same as recorded" if res["kernel_source"] == data["kernel_source"]
                     else section("kernel source now (re-lowered)", res["kernel_source"]))
    if res["status"] == "usage":
        res["verdict"] = (EXIT_USAGE, "BAD USAGE: " + res["error"])
    elif args.all_solutions:
        res["verdict"] = all_solutions_verdict(data, res)
    return dict(res, notes=notes)


def all_solutions_verdict(data: dict, res: dict) -> tuple[int, str]:
    """Fixed when every solution matches the oracle; reproduced when a solution recorded failing still
    fails the recorded way; else fails differently."""
    if res["status"] == Status.OK:
        return EXIT_FIXED, "FIXED: every solution matches the oracle"
    kind, still = data["kind"], res.get("still_failing", [])
    if still:
        return EXIT_REPRODUCED, (f"REPRODUCED: {kind} with {len(still)} of the {len(recorded_failing(data))} "
                                 f"solution(s) recorded failing; {res.get('error', '')}")
    return EXIT_DIFFERENT, (f"FAILS DIFFERENTLY: {res.get('error', '')}; none of the solutions recorded failing "
                            f"fails as recorded ({kind})")


def recorded_failing(data: dict) -> list[str]:
    return [s for s in (data.get("solutions") or [data["solution"]]) if s]


def _run_package(data: dict, args) -> dict:
    timeout = args.timeout or data.get("timeout_s") or tmpl.DEFAULT_TIMEOUT_S
    scratch = tempfile.mkdtemp(prefix="mlirtrace-repro-")
    try:
        # the planted faults as this process was started with (a reproducer's run starts here)
        inject = inject_now()
        # one kernel to build and run: one worker process (tuning every solution: the default, parallel builds);
        # the first worker resolves the device spec
        # (a reproducer is a front end: --device, else the recorded device, else the device setting)
        pool = runtime.WorkerPool(args.device or data.get("device_key") or resolve().device,
                                  workers=None if args.all_solutions else 1, timeout_s=timeout)
        # the kernel is built as it was when it failed (a fuzz run with --build fast: optimisations off)
        recorded = (data.get("standalone") or {}).get("build_options") or None
        session = TraceSession(pool.device, config=TraceConfig.from_env(), timeout_s=timeout, pool=pool,
                               database=TuningDatabase(os.path.join(scratch, "tuning.json")),
                               build_options=recorded, inject=inject)
    except Exception as e:   # noqa: BLE001 - no device, no OpenCL
        return {"status": "cannot_run", "error": f"{type(e).__name__}: {e}"}
    dev = session.device
    base = {"device": f"{getattr(dev, 'name', dev)} ({getattr(dev, 'key_name', '')})",
            "package": getattr(pytest_mlirtrace, "__version__", "?")}
    if inject:
        base["inject"] = inject
    if args.all_solutions:
        return dict(base, **_all_solutions(session, data))
    try:
        res = session.run(data["mlir_text"], solution=args.solution or data["solution"], seed=int(data["seed"]),
                          repeats=5 if data["kind"] == Status.SLOW else 1)
    except Exception as e:   # noqa: BLE001 - a solution that does not parse, an MLIR that no longer verifies
        if args.solution and type(e).__name__ == "SolutionError":
            return dict(base, status="usage", error=f"--solution {args.solution}: {e}")
        if type(e).__name__ in ("SolutionError", "NotApplicable"):
            # the recorded solution is refused now, by a rule that says why: what a tuner skips cannot fail
            return dict(base, status="refused", error=f"{type(e).__name__}: {e}")
        if type(e).__name__ == "NotSupported":
            return dict(base, status="not_supported", error=f"{e}")
        return dict(base, status=Status.LOWERING_ERROR, error=f"{type(e).__name__}: {e}")
    c = res.compiled
    return dict(base, status=res.status, error=res.detail or c.error or "", time_ms=res.time_ms,
                problem_key=c.span.problem_key, solution=c.span.solution, kernel_source=c.span.kernel_source,
                build_log=c.build_log or "")


def _all_solutions(session, data: dict) -> dict:
    """Every recorded solution (failing first, then those that passed), each run once; with fewer than two
    recorded, the problem's quick list too."""
    failing, passed = recorded_failing(data), [p for p in (data.get("passed") or []) if p]
    sols = failing + [p for p in passed if p not in failing]
    if len(sols) < 2:
        tr = session.tune(data["mlir_text"], mode="quick", use_database=False)
        sols += [r.solution for r in tr.rows if r.solution not in sols]
    rows = []
    for sol in sols:
        try:
            res = session.run(data["mlir_text"], solution=sol, seed=int(data["seed"]))
            rows.append((sol, res.status, res.time_ms, res.detail or ""))
        except Exception as e:   # noqa: BLE001 - a solution that no longer applies
            rows.append((sol, Status.LOWERING_ERROR, None, f"{type(e).__name__}: {e}"))
    w = max([len("solution")] + [len(r[0]) for r in rows])
    lines = [f"  {'solution':<{w}}  {'status':<14} {'time_ms':>10}  {'recorded':<8}  detail"]
    for sol, status, t, detail in rows:
        was = "failed" if sol in failing else "passed" if sol in passed else "-"
        ts = f"{t:.4f}" if t is not None else "-"
        lines.append(f"  {sol:<{w}}  {status:<14} {ts:>10}  {was:<8}  {detail.splitlines()[0] if detail else ''}")
    bad = [r for r in rows if r[1] != Status.OK]
    still = [r[0] for r in rows if r[0] in failing and r[1] == data["kind"]]
    return {"status": Status.OK if not bad else "failures", "table": "\n".join(lines),
            "error": f"{len(bad)} of {len(rows)} solutions fail" if bad else "", "still_failing": still,
            "recorded_status": next((r[1] for r in rows if r[0] == data["solution"]), "?")}
