"""``lower(module, solution, limits)``: one OpenCL C kernel for one solution of a fused module."""
from __future__ import annotations

from ..ir import Module
from ..vocab.faults import ATTENTION_FAULTS, CONV_FAULTS, PARSER_FAULTS, SOLUTION_FAULTS, parse_inject
from .analysis import Analysis
from .attention import lower_attention
from .errors import LoweringError, NotSupported
from .gemm import lower_gemm
from .kernel import BUILD_OPTIONS, Ctx, assemble, c_name
from .kinds import analyse
from .pointwise import lower_pointwise
from .reduce import lower_reduce
from .solution import DEFAULT_LIMITS, Solution, check_applicable, default_solution
from .spec import KernelSpec

_GEMM_ONLY_FAULTS = ("k_tail_off_by_one", "missing_barrier", "oob_write_n_edge", "infinite_loop",
                     "wrong_transpose_stride")


def _planted_here(f: str, an: Analysis, sol: Solution, ctx: Ctx) -> bool:
    """Is fault ``f`` in this kernel (its kind's code, or for the narrower ones: where it can fire)?"""
    if f in PARSER_FAULTS:
        return False
    if f in SOLUTION_FAULTS:
        return sol.kind == "gemm" and bool(sol.NPerBlock % sol.NPerThread or sol.MPerBlock % sol.MPerThread)
    if f == "f2h_truncate":
        return any(n == "f2h" for n, _ in ctx.helpers.used)
    if f == "softmax_no_max":
        return an.kind == "softmax"
    if f == "narrow_accumulator":     # tensor cores keep f32 accumulators in hardware: no place for it
        return an.kind == "gemm" and an.problem.dtype in ("f16", "bf16") and not sol.matrix_core
    return ((an.kind == "gemm" or f not in _GEMM_ONLY_FAULTS) and (an.problem.conv or f not in CONV_FAULTS)
            and (an.kind == "attention" or f not in ATTENTION_FAULTS))


def lower(module: Module, solution: Solution | str | None = None, limits=None, *, inject=None,
          analysis: Analysis | None = None) -> KernelSpec:
    """Lower ``module`` to one kernel for ``solution`` (a :class:`Solution`, a perf-config string or
    None for :func:`default_solution`).

    Raises :class:`NotSupported`/:class:`LoweringError` for modules it cannot lower,
    :class:`SolutionError` for a malformed solution string, :class:`NotApplicable` when the
    solution does not fit the problem or the device, :class:`FaultError` for unknown faults.
    """
    faults = parse_inject(inject)
    limits = limits or DEFAULT_LIMITS
    an = analysis or analyse(module)
    if solution is None:
        solution = default_solution(an.problem, limits)
    elif isinstance(solution, str):
        solution = Solution.parse(an.problem.kind, solution, faults=faults)
    check_applicable(an.problem, solution, limits)
    ctx = Ctx(an)
    ctx.helpers.vector_bits = int(getattr(limits, "vector_bits", 0) or 0)
    ctx.helpers.faults = faults
    ctx.mma = str(getattr(limits, "mma", "") or "")
    prelude = ""
    if an.kind == "gemm":
        body, gsize, lsize, attrs, prelude = lower_gemm(ctx, solution, faults)
    elif an.kind == "pointwise":
        body, gsize, lsize, attrs = lower_pointwise(ctx, solution, faults)
    elif an.kind in ("reduce", "softmax"):
        body, gsize, lsize, attrs = lower_reduce(ctx, solution, faults)
    elif an.kind == "attention":
        body, gsize, lsize, attrs, prelude = lower_attention(ctx, solution, faults)
    else:  # pragma: no cover - analyse only returns the kinds above
        raise NotSupported(f"kernel kind {an.kind!r}")
    active = tuple(sorted(f for f in faults if _planted_here(f, an, solution, ctx)))
    name = c_name(module.symbol_name())
    source = assemble(ctx, module, solution, active, name, attrs, body, prelude)
    if any(int(g) <= 0 for g in gsize):
        raise LoweringError(f"{name}: empty launch grid {gsize}")
    return KernelSpec(source=source, kernel_name=name, args=ctx.args(), global_size=tuple(int(x) for x in gsize),
                      local_size=tuple(int(x) for x in lsize), build_options=BUILD_OPTIONS, solution=solution,
                      problem=an.problem, faults=active)
