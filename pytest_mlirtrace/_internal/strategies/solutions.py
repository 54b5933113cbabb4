"""Hypothesis strategies for solutions (perf configs) of a problem, and for whole fuzz cases.

:func:`solutions` draws from the applicable space (``codegen.space``) plus edge cases; every drawn
solution passes ``codegen.check_applicable`` on the given limits. The draw shrinks toward the
problem's default solution, then the edge cases, then the space in its order.

Edge cases (each kept only when applicable on the limits):

* gemm: the smallest tiles (1x1 output tile, KPerBlock 1, with and without local tiles), small
  local-memory tiles shared by several work-items (2x2 .. 16x4 work-groups), the
  largest tiles of the space, tiles bigger than the problem (MPerBlock/NPerBlock up to 4x the next
  power of two of m/n, KPerBlock bigger than k), the widest VectorWidth that fits n, an unroll of 1;
  there is no split-k field in this code generator's gemm perf config, so there is no split-k edge;
  a convolution is a gemm problem (``problem.kind == "gemm"``, its key a conv key) and takes the same
  edges over its implicit gemm's m (output channels per group), n (batch x output pixels) and k (input
  channels per group x kernel positions): tiles and vectors that straddle an image row or a channel;
* pointwise: BlockSize 1, the device's maximum work-group, more elements per work-item than the
  tensor has, the widest vector that fits;
* reduce/softmax: one work-item per reduction, more threads per reduction than elements, more groups
  per block than reductions, the widest vector that fits.
"""
from __future__ import annotations

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .. import codegen
from ..vocab import format_perf_config
from .graph_builder import ALL_KINDS
from .graphs import fused_graphs


def _check_problem(problem) -> None:
    if not isinstance(problem, codegen.Problem):
        raise InvalidArgument(f"problem={problem!r} must be a codegen.Problem (codegen.problem_of(module))")


def _check_limits(limits) -> None:
    if limits is not None and not hasattr(limits, "max_work_group_size"):
        raise InvalidArgument(f"limits={limits!r} must be None (the code generator's defaults), a device or a "
                              "codegen.DeviceLimits")


def _check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be True or False")


def _pow2_at_least(x: int) -> int:
    p = 1
    while p < max(1, x):
        p *= 2
    return p


def _widest_vector(n: int) -> int:
    vw = 1
    for w in codegen.solution.VECTOR_WIDTHS:
        if w <= n:
            vw = w
    return vw


def _max_wg(limits) -> int:
    return int(getattr(limits, "max_work_group_size", 0) or codegen.DEFAULT_LIMITS.max_work_group_size)


def _gemm_edges(p, _limits) -> list[str]:
    vw = _widest_vector(p.n)
    out = ["1,1,1,1,1,1,0,1", "1,1,4,1,1,1,0,4", "1,1,1,1,1,1,1,1", f"1,{vw},1,1,{vw},{vw},0,1",
           # small local-memory tiles with several work-items per group (barriers matter)
           "2,2,2,1,1,1,1,2", "4,4,4,1,1,1,1,4", f"8,{2 * vw},8,2,{vw},{vw},1,8", f"16,{4 * vw},8,4,{vw},{vw},1,4"]
    bm, bn = 4 * _pow2_at_least(p.m), 4 * _pow2_at_least(p.n)
    bk = 2 * _pow2_at_least(p.k)
    for mt, nt, lt in ((min(8, bm), max(vw, min(16, bn)), 0), (min(4, bm), max(vw, min(4, bn)), 1)):
        nt -= nt % vw
        if nt < vw:
            nt = vw
        mb, nb = bm - bm % mt, max(nt, bn - bn % nt)
        out.append(f"{mb},{nb},{min(bk, 64)},{mt},{nt},{vw},{lt},{1}")
        out.append(f"{mb},{nb},8,{mt},{nt},{vw},{lt},8")
    return out


def _pointwise_edges(p, limits) -> list[str]:
    vw = _widest_vector(p.reduce_len)
    mw = _max_wg(limits)
    big = _pow2_at_least(max(1, p.elements))
    return ["1,1,1", f"1,1,{vw}", f"{min(mw, 1024)},1,1", f"{min(mw, 256)},8,{vw}",
            f"{min(mw, max(1, big))},{min(big, 64)},1"]


def _reduce_edges(p, _limits) -> list[str]:
    vw = _widest_vector(p.reduce_len)
    tpg = min(256, 2 * _pow2_at_least(p.reduce_len))
    gpb = min(64, 2 * _pow2_at_least(p.outer))
    return ["1,1,1,1", f"1,1,{vw},1", f"1,{tpg},1,1", f"{gpb},1,1,4", f"1,{tpg},{vw},4",
            f"{max(1, 1024 // tpg)},{tpg},1,1"]


def _attention_edges(p, limits) -> list[str]:
    D = dict(p.attn).get("head_dim_v", dict(p.attn).get("gemmO", 1))
    rb = min(_max_wg(limits), _pow2_at_least(p.m))
    # a DPerThread that does not divide D (the last work-item of a row has fewer columns), one that does,
    # all of D in one work-item; rows per block not dividing m
    odd = next((t for t in (3, 5, 7, 6, 4, 2) if t < D and D % t), 1)
    return ["1,1,1", f"1,{D},1", f"{rb},{odd},1", f"{rb},{odd},8", f"3,{max(1, D // 2)},4", f"{rb},1,1"]


def edge_solutions(problem, limits=None) -> list:
    """The edge-case solutions of ``problem`` that are applicable on ``limits`` (no duplicates)."""
    _check_problem(problem)
    _check_limits(limits)
    texts = {"gemm": _gemm_edges, "pointwise": _pointwise_edges,
             "attention": _attention_edges}.get(problem.kind, _reduce_edges)(problem, limits)
    out, seen = [], set()
    for t in texts:
        try:
            s = codegen.Solution.parse(problem.kind, t)
        except codegen.SolutionError:
            continue
        if s.values in seen or not codegen.is_applicable(problem, s, limits):
            continue
        seen.add(s.values)
        out.append(s)
    return out


def _limits_key(limits):
    if limits is None:
        return None
    return tuple(getattr(limits, a, None) for a in ("max_work_group_size", "local_mem_size", "compute_units",
                                                    "kind", "name", "key_name"))


_CACHE: dict = {}


def solution_list(problem, limits=None, edge_cases: bool = True) -> list:
    """Default solution first, then edge cases, then the rest of the applicable space (cached)."""
    _check_problem(problem)
    _check_limits(limits)
    _check_flag("edge_cases", edge_cases)
    key = (problem, _limits_key(limits), edge_cases)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = _solution_list(problem, limits, edge_cases)
        while len(_CACHE) > 2048:
            _CACHE.pop(next(iter(_CACHE)))
    return list(hit)


def _solution_list(problem, limits, edge_cases) -> list:
    out, seen = [], set()

    def add(s):
        if s is not None and s.values not in seen and codegen.is_applicable(problem, s, limits):
            seen.add(s.values)
            out.append(s)

    try:
        add(codegen.default_solution(problem, limits))
    except codegen.NotApplicable:
        pass
    if edge_cases:
        for s in edge_solutions(problem, limits):
            add(s)
    for s in codegen.space(problem, limits):
        add(s)
    return out


def solutions(problem, limits=None, edge_cases: bool = True) -> st.SearchStrategy:
    """Applicable solutions of ``problem`` (a ``codegen.Problem``) on ``limits`` (a device or
    ``codegen.DeviceLimits``; None: the code generator's defaults). Shrinks toward the default.
    Bad arguments raise ``hypothesis.errors.InvalidArgument`` when this is called."""
    sols = solution_list(problem, limits, edge_cases)
    if not sols:
        return st.nothing()
    return st.sampled_from(sols)


#: the kernel kind (``codegen.KINDS``) each graph kind lowers to: a convolution is an implicit gemm
KERNEL_KIND = {"pointwise": "pointwise", "reduce": "reduce", "softmax": "softmax", "gemm": "gemm", "conv": "gemm",
               "attention": "attention"}
#: what the code generator lowers
SUPPORTED_KINDS = tuple(k for k in ALL_KINDS if KERNEL_KIND.get(k) in codegen.KINDS)


#: field values an odd perf config is drawn from: powers of two, their neighbours and sums, as real logs carry
ODD_FIELD_VALUES = (1, 2, 4, 8, 16, 32, 64, 3, 5, 6, 7, 12, 24, 48, 96, 128, 256)
#: the printed forms of a perf config: mlirtrace's/legacy (no prefix) and rocMLIR's versioned ones
ODD_FORMS = ("", "v1:", "v2:", "v3:", "v4:")


def odd_perf_config(kind: str, base, changes, form: int, extra: int) -> str:
    """A perf config for a ``kind`` kernel beyond its space: the values of ``base`` (a solution of the space)
    with ``changes`` -- (field index, index into :data:`ODD_FIELD_VALUES`) pairs -- made (a value from the
    field's whole range, which may break the space's invariants), ``extra`` fields more (1) or fewer (-1), in
    the printed form ``ODD_FORMS[form]``. The code generator must refuse it with a reason or run it right."""
    vals = list(base)
    optional = codegen.OPTIONAL_TAIL.get(kind, 0)
    while optional and vals and vals[-1] == 0:     # as the solution prints: an 8-field gemm when MatrixCore is 0
        vals.pop()
        optional -= 1
    for i, v in changes:
        vals[i % len(vals)] = ODD_FIELD_VALUES[v % len(ODD_FIELD_VALUES)]
    if kind == "gemm":
        vals[6] = vals[6] % 2             # LocalTiles: 0 or 1 (other values: refused, tried by unit tests)
    vals = vals + [vals[-1]] if extra > 0 else vals[:-1] if extra < 0 else vals
    # the fields through vocab's writer; the version prefix put before them as is: an odd config may have more
    # fields than its version allows, which format_perf_config(vals, version) refuses
    return ODD_FORMS[form % len(ODD_FORMS)] + format_perf_config(vals)


def fused_cases(kinds=SUPPORTED_KINDS, dtypes=("f32", "f16"), max_rank: int = 4, max_dim: int = 64,
                max_elements: int = 1 << 14, ops=None, max_epilogue: int = 3, limits=None, edge_cases: bool = True,
                max_solutions: int = 1, odd_solutions: bool = False, **graph_kw) -> st.SearchStrategy:
    """``(module, solution, seed)`` triples: a module from :func:`fused_graphs`, an applicable solution
    of its problem (from :func:`solution_list`: default first, edge cases, the space; the pick is an
    index modulo the list's length, so it shrinks toward the default) and a seed for
    ``ir.random_inputs``. Modules the code generator does not support (``codegen.NotSupported``,
    e.g. attention) are filtered out.

    With ``max_solutions > 1`` the second item is a list of 1..max_solutions distinct solutions
    (the fuzzer checks them in parallel).

    With ``odd_solutions`` half the cases carry one more solution as a perf-config *string*
    (:func:`odd_perf_config`: beyond the space, any printed form); it shrinks away first (to no odd one).

    Bad arguments (these and :func:`fused_graphs`'s, ``graph_kw`` included) raise
    ``hypothesis.errors.InvalidArgument`` when this is called.
    """
    _check_limits(limits)
    _check_flag("edge_cases", edge_cases)
    _check_flag("odd_solutions", odd_solutions)
    if isinstance(max_solutions, bool) or not isinstance(max_solutions, int) or max_solutions < 1:
        raise InvalidArgument(f"max_solutions={max_solutions!r} must be an integer >= 1")
    graphs = fused_graphs(kinds=kinds, dtypes=dtypes, max_rank=max_rank, max_dim=max_dim,
                          max_elements=max_elements, ops=ops, max_epilogue=max_epilogue, **graph_kw)

    @st.composite
    def cases(draw):
        # A fixed number of draws whatever the case: how many solutions (less one: its simplest value 0 means
        # one), max_solutions picks (the first that many used), the seed, then the module. A shrink begins by
        # setting each small draw to 0, first to last, so "1 solution" is the first thing tried, and moves
        # nothing else (a list of picks would shift the seed and the module when it shrinks): a failing case
        # drops to its one failing solution before the module shrinks, so each later step builds one kernel.
        pick = st.integers(0, 2 ** 16 - 1)
        extra = draw(st.integers(0, max_solutions - 1)) if max_solutions > 1 else 0
        picks = [draw(pick) for _ in range(max(1, max_solutions))][:1 + extra]
        seed = draw(st.integers(0, 2 ** 16 - 1))
        module = draw(graphs)
        try:
            problem = codegen.problem_of(module)
        except codegen.LoweringError:
            reject()
        sols = solution_list(problem, limits, edge_cases)
        if not sols:
            reject()
        chosen = list({sols[i % len(sols)].values: sols[i % len(sols)] for i in picks}.values())
        # after the module (nothing before it shifts when the shrink drops them), drawn only when the flag is
        # on: the flag shrinks to "no odd solution" and the rest goes with it
        if odd_solutions and draw(st.integers(0, 1)):     # one or two fields of a solution of the space changed
            nv = len(ODD_FIELD_VALUES) - 1
            form, extra = draw(st.integers(0, len(ODD_FORMS) - 1)), draw(st.sampled_from((0, 0, 0, 0, 0, 0, 1, -1)))
            base = sols[draw(st.integers(0, 2 ** 16 - 1)) % len(sols)].values
            changes = [(draw(st.integers(0, 7)), draw(st.integers(0, nv))) for _ in range(draw(st.integers(1, 2)))]
            text = odd_perf_config(problem.kind, base, changes, form, extra)
            chosen = [text] if max_solutions == 1 else chosen[:max_solutions - 1] + [text]
        return module, (chosen if max_solutions > 1 else chosen[0]), seed

    return cases()


__all__ = ["solutions", "solution_list", "edge_solutions", "fused_cases", "odd_perf_config", "SUPPORTED_KINDS",
           "KERNEL_KIND"]
