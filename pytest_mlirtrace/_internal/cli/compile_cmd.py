"""``mlirtrace compile FILE [--solution S]``: lower and build one solution, print its span."""
from __future__ import annotations

from ..vocab.exit_codes import ExitCode
from .common import add_device_options, add_module_options, open_module, run_guarded, solution_usage


def add_parser(sub, name):
    p = sub.add_parser(name, help="lower and build one solution of a fused op",
                       description="Lower FILE (MIGraphX text or MLIR) for one solution and build the kernel.")
    p.add_argument("file")
    p.add_argument("--solution", "-s", default=None,
                   help="perf config, e.g. 32,64,8,4,4,4,1,1 (default: the default one)")
    p.add_argument("--show-kernel", action="store_true", help="print the OpenCL C source")
    add_module_options(p)
    add_device_options(p)
    return p


def _run(args) -> int:
    module, mlir_text, s = open_module(args)
    with solution_usage(args):
        c = s.pipeline.compile_solution(module, args.solution, mlir_text=mlir_text)
    sp = c.span
    print(f"module:   {module.symbol_name()}")
    print(f"device:   {sp.device}")
    print(f"problem:  {sp.problem_key}")
    print(f"solution: {sp.solution}")
    print(f"span:     {sp.hash}")
    print(f"status:   {c.status}" + (f" ({c.build_s:.2f}s build)" if c.ok else f": {c.error}"))
    if c.build_log.strip() and not c.ok:
        print("build log:\n" + c.build_log.rstrip())
    if args.show_kernel and sp.kernel_source:
        print(sp.kernel_source)
    return ExitCode.OK if c.ok else ExitCode.FAILURE


def run(args) -> int:
    return run_guarded(_run, args)
