"""Layer ``codegen``: lower a fused module to ONE OpenCL C kernel for ONE solution (perf config).

It imports only :mod:`..ir` and :mod:`..vocab` (and numpy).  What it lowers:

* gemm: one ``dot`` / ``quant_dot`` (i8 x i8 -> i32) whose operands come from parameters through
  views (transpose, reshape, (multi)broadcast, slice, contiguous, squeeze/unsqueeze) and optional
  pointwise ops, then a pointwise epilogue (any ``ir.POINTWISE_OPS``; extra inputs through views;
  invertible views -- transpose/reshape/squeeze/unsqueeze -- may also follow the dot).  Batched:
  ``g`` = product of the batch dims.
* pointwise: any view graph + pointwise ops with broadcasting.
* reduce (``reduce_sum/max/min/mean`` on any axes) and ``softmax``, with pointwise ops before and
  after (the result may also be broadcast back over the input, ``x - reduce_max(x)``).
* anything else raises :class:`NotSupported` naming the instruction (e.g. the attention-like
  ``dot -> softmax -> dot``).

Views are never materialised: every index map is folded into quasi-affine index arithmetic
(:mod:`.expr`), affine where it can be (``64*m + k``) and div/mod where a reshape splits a strided
dim (the seed's ``64*m + 24576*(k/64) + k%64``); GEMM K loops run in chunks over which the map is
affine.  f16/bf16 are storage only (ushort bits, converted with integer arithmetic, computed in
float); so are fp8 / fp4 / e8m0 (uchar bits, decoded to float where they are read; a gemm of them, scaled
or not, is first decomposed into converts and scale muls fused into an f32 gemm's loads: :mod:`.decompose`);
after every instruction the value is rounded to that instruction's type, like the oracle.

Public API::

    problem_of(module) -> Problem                  .key(): "-t f16 -out_datatype f16 -transA false ..."
    analyse(module) -> Analysis                    the problem plus the folded element DAGs
    Solution.parse(kind, text) -> Solution         SolutionError names the bad field; str() round-trips
    Solution.of(kind, *values, **fields); FIELDS[kind]: the field names in print order; OPTIONAL_TAIL[kind]:
    how many of the last fields a text may leave out (as 0; gemm's MatrixCore)
    DeviceLimits(max_work_group_size, local_mem_size, compute_units, kind, name)  (PoCL defaults)
    check_applicable(problem, solution, limits)    raises NotApplicable(reason)
    space(problem, limits) / quick_list(problem, limits) / default_solution(problem, limits)
    lower(module, solution=None, limits=None, *, inject=None) -> KernelSpec
    pack_inputs(spec, {param: logical array}) -> [storage arrays]; output_buffers(spec);
    unpack_outputs(spec, [output arrays]) -> [logical arrays in module.returns() order]
    FAULTS: planted-bug name -> when it fires (``inject="a,b"``; unknown names raise FaultError)
    BUILD_OPTIONS / FAST_BUILD_OPTIONS: the OpenCL build options of every kernel / with optimisations off

Solution fields are documented in :mod:`.solution`.
"""
from ..vocab.faults import FAULTS, parse_inject
from .analysis import Analysis
from .errors import FaultError, LoweringError, NotApplicable, NotSupported, SolutionError
from .kernel import BUILD_OPTIONS, FAST_BUILD_OPTIONS
from .kinds import analyse, problem_of
from .lower import lower
from .problem import KINDS, Problem
from .solution import (
                       DEFAULT_LIMITS,
                       FIELDS,
                       OPTIONAL_TAIL,
                       DeviceLimits,
                       Solution,
                       check_applicable,
                       default_solution,
                       is_applicable,
                       quick_list,
                       space,
)
from .spec import ArgBinding, KernelSpec, output_buffers, pack_input, pack_inputs, unpack_outputs

__all__ = [
    "lower", "problem_of", "analyse", "Analysis", "Problem", "KINDS", "Solution", "FIELDS", "DeviceLimits",
    "DEFAULT_LIMITS", "check_applicable", "is_applicable", "space", "quick_list", "default_solution",
    "KernelSpec", "ArgBinding", "pack_inputs", "pack_input", "unpack_outputs", "output_buffers", "FAULTS",
    "parse_inject", "LoweringError", "NotSupported", "SolutionError", "NotApplicable", "FaultError",
    "BUILD_OPTIONS", "FAST_BUILD_OPTIONS", "OPTIONAL_TAIL",
]
