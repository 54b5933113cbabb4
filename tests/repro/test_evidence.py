"""Tickets say which layer is suspected (the kernel source mlirtrace generated, or the OpenCL compiler),
with the evidence: what the failure itself shows, and the same source run again built other ways."""
from __future__ import annotations

import os

import pytest

from pytest_mlirtrace._internal import ir, runtime
from pytest_mlirtrace._internal.engine import MemoryDatabase, Pipeline, Span
from pytest_mlirtrace._internal.repro import FailureRecord, ReproWriter
from pytest_mlirtrace._internal.repro.evidence import COMPILER, GENERATOR, SOURCE, UNDETERMINED, assess

KERNEL = "__kernel void k(__global float *y) { y[0] = 1.0f; }"


def rec(kind, stage="run", error="boom", build_log="", kernel=KERNEL, device=True):
    span = Span("x = @param:x -> float_type, {4}, {1}\n", "func.func @mlir_relu() {}\n", "pocl-cpu\t2\t-op x",
                "4,1,4", kernel, "pocl-cpu", "k")
    return FailureRecord(kind, span, stage, error, build_log=build_log, inject="",
                         device_info=object() if device else None)


def never(_opts):
    raise AssertionError("a build-stage verdict needs no re-run")


@pytest.mark.parametrize("kind,log,layer", [
    ("crash", "", COMPILER),
    ("hang", "", COMPILER),
    ("build_error", "LLVM ERROR: Cannot emit physreg copy instruction", COMPILER),
    ("build_error", "<source>:3:5: error: use of undeclared identifier 'q'", SOURCE),
])
def test_build_stage_verdicts(kind, log, layer):
    s = assess(rec(kind, stage="build", build_log=log, error="build failed: " + (log or kind)), rerun=never)
    assert s.layer == layer, s
    assert s.evidence


def test_a_source_right_with_optimisations_off_points_at_the_compiler():
    seen = []

    def rerun(opts):
        seen.append(opts)
        return ("ok", "") if opts == "-cl-opt-disable" else ("wrong", "output 0: 3/4 elements differ")
    s = assess(rec("wrong"), rerun=rerun)
    assert s.layer == COMPILER
    assert seen == ["-cl-opt-disable", ""]
    assert any("`-cl-opt-disable` (optimisations off): right result" in e for e in s.evidence)
    assert any("`(none)` (no build options): wrong: output 0: 3/4 elements differ" in e for e in s.evidence)


def test_a_source_that_fails_the_same_way_unoptimised_points_at_the_source():
    s = assess(rec("crash"), rerun=lambda _opts: ("crash", "worker killed by signal 11 (SIGSEGV)"))
    assert s.layer == SOURCE and "the source itself is suspected" in s.evidence[-1]


def test_a_failure_that_changes_with_the_options_points_at_the_compiler():
    s = assess(rec("wrong"), rerun=lambda opts: ("crash", "") if opts else ("wrong", ""))
    assert s.layer == COMPILER and "changes with the build options" in s.evidence[-1]


def test_no_device_no_kernel_and_a_failed_rerun_leave_it_undetermined():
    assert assess(rec("wrong", device=False)).layer == UNDETERMINED
    assert assess(rec("wrong", kernel=""), rerun=never).layer == UNDETERMINED

    def broken(_opts):
        raise RuntimeError("no worker")
    s = assess(rec("wrong"), rerun=broken)
    assert s.layer == UNDETERMINED and "RuntimeError: no worker" in s.evidence[-1]
    assert assess(rec("lowering_error", stage="build"), rerun=never).layer == GENERATOR
    assert assess(rec("slow"), rerun=never).layer == UNDETERMINED


def _transpose_dot():
    m = ir.Module()
    a = m.add_param("a", "f32", [1, 5, 3])
    b = m.add_param("b", "f32", [1, 5, 4])
    m.add_return(m.add("dot", m.add("transpose", a, permutation=[0, 2, 1]), b))
    return m


def test_a_real_finding_is_run_again_and_its_ticket_says_the_source(tmp_path):
    """A planted source bug (the kernel reads A with a wrong stride) fails built any way: the ticket
    blames the kernel source and shows the re-runs."""
    dev = runtime.resolve_device(os.environ.get("MLIRTRACE_TEST_DEVICE", "pocl-cpu"))
    pipe = Pipeline(dev, inject="wrong_transpose_stride", database=MemoryDatabase())
    res = pipe.run(_transpose_dot(), solution="4,4,4,4,4,4,0,4", seed=3)
    assert res.status == "wrong", res.detail
    r = FailureRecord.from_run(res, origin="t.py::x", inject="wrong_transpose_stride", device_info=dev,
                               timeout_s=30.0)
    w = ReproWriter(tmp_path).write(r)
    ticket = w.ticket_path.read_text()
    assert "## Suspected layer" in ticket
    assert "**the kernel source (mlirtrace's code generator wrote it)**" in ticket
    assert "built with `-cl-opt-disable` (optimisations off): wrong" in ticket
    assert "built with `(none)` (no build options): wrong" in ticket
