"""Which layer a finding points at, and the evidence: the kernel source mlirtrace generated, or the
OpenCL compiler (PoCL's LLVM, a GPU driver) that built it.

Both are compiler bugs worth a ticket, filed with different people.  The evidence comes from the
failure itself and, for a kernel that built and then ran wrong (wrong numbers, crash, hang, launch
error), from running the *same source* again, isolated, built other ways:

* a compiler that crashes, hangs or stops with an internal error while building is suspect whatever
  the source (a compiler must answer bad source with a diagnostic);
* a build error with an ordinary diagnostic points at the source;
* a kernel that fails as built but computes the right result with optimisations off (or without the
  generator's build options) points at the compiler's optimiser;
* one that fails the same way with optimisations off points at the source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..vocab import Status
from .rerun import rerun_of

COMPILER = "opencl-compiler"
SOURCE = "kernel-source"
GENERATOR = "code-generator"
UNDETERMINED = "undetermined"
LAYER_WORDS = {COMPILER: "the OpenCL compiler (it built the kernel: PoCL's LLVM or the driver)",
               SOURCE: "the kernel source (mlirtrace's code generator wrote it)",
               GENERATOR: "mlirtrace's code generator (no kernel was produced)",
               UNDETERMINED: "undetermined"}
# the same source, built other ways: (build options, what that is)
VARIANTS = (("-cl-opt-disable", "optimisations off"), ("", "no build options"))
_INTERNAL = re.compile(r"LLVM ERROR|error in backend|Assertion .* failed|internal compiler error|Stack dump|"
                       r"UNREACHABLE|Cannot (?:select|emit)|PLEASE submit a bug report", re.IGNORECASE)
_RERUN_KINDS = (Status.WRONG, Status.CRASH, Status.HANG, Status.LAUNCH_ERROR)


@dataclass
class Suspect:
    layer: str
    evidence: list[str] = field(default_factory=list)

    @property
    def words(self) -> str:
        return LAYER_WORDS.get(self.layer, self.layer)

    def to_dict(self) -> dict:
        return {"layer": self.layer, "evidence": list(self.evidence)}


def assess(rec, rerun=None) -> Suspect:
    """The suspected layer of ``rec`` (a FailureRecord).  ``rerun(build_options) -> (status, detail)``
    runs the recorded kernel again built with other options (default: :func:`rerun_isolated`)."""
    kind, stage = rec.kind, rec.stage
    if kind == Status.LOWERING_ERROR:
        return Suspect(GENERATOR, [f"the code generator refused or failed to lower the module: {rec.first_line}"])
    if kind not in (Status.BUILD_ERROR, *_RERUN_KINDS):
        return Suspect(UNDETERMINED, [f"a {kind} finding: no compiler verdict to weigh"])
    if stage == "build" or kind == Status.BUILD_ERROR:
        log = "\n".join(x for x in (rec.build_log, rec.error) if x)
        if kind in (Status.CRASH, Status.HANG):
            what = "crashed" if kind == Status.CRASH else "did not finish"
            return Suspect(COMPILER, [f"the OpenCL compiler {what} while building the kernel: {rec.first_line}",
                                      "a compiler must answer any source with a binary or a diagnostic"])
        m = _INTERNAL.search(log)
        if m:
            return Suspect(COMPILER, [f"the build stopped with an internal compiler error ({m.group(0)!r} in the "
                                      "build log), not a diagnostic about the source"])
        return Suspect(SOURCE, [f"the compiler rejected the source with a diagnostic: {rec.first_line}"])
    if not rec.span.kernel_source.strip():
        return Suspect(UNDETERMINED, ["no kernel source was recorded to run again"])
    if rerun is None:
        if rec.device_info is None:
            return Suspect(UNDETERMINED, ["the device it failed on was not recorded: not run again"])
        rerun = lambda opts: rerun_isolated(rec, opts)   # noqa: E731
    ev = [f"as generated and built: {kind} at the {stage} stage"]
    outcomes = []
    for opts, what in VARIANTS:
        try:
            status, detail = rerun(opts)
        except Exception as e:   # noqa: BLE001 - evidence is best effort; the finding stands
            return Suspect(UNDETERMINED, ev + [f"could not run it again ({what}): {type(e).__name__}: {e}"])
        outcomes.append(status)
        ev.append(f"the same source built with `{_opts(opts)}` ({what}): "
                  + ("right result" if status == Status.OK else f"{status}" + (f": {detail}" if detail else "")))
    if Status.OK in outcomes:
        ev.append("the same source is right when built another way: the compiler's translation of it is suspected")
        return Suspect(COMPILER, ev)
    if all(o == kind for o in outcomes):
        ev.append("it fails the same way with optimisations off: the source itself is suspected")
        return Suspect(SOURCE, ev)
    ev.append("the failure changes with the build options: the compiler is suspected")
    return Suspect(COMPILER, ev)


def _opts(opts) -> str:
    return opts if opts else "(none)"


def rerun_isolated(rec, build_options: str) -> tuple[str, str]:
    """Run the recorded module, solution and seed again (in worker processes: the record's runner, else a
    pipeline on its device) with its faults and the kernel built with ``build_options``; (status, first line
    of what went wrong)."""
    res = rerun_of(rec)(rec, inject=rec.inject or "", build_options=build_options)
    if res is None:
        raise TimeoutError("no time left to run it again")
    return res.status, (res.detail or "").strip().splitlines()[0] if res.detail else ""
