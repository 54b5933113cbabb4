"""Planted bugs (``lower(..., inject="a,b")``, ``MLIRTRACE_INJECT``), so the fuzzer can prove it finds real ones.

The catalogue of their names is a word every layer shares (the settings validate them, ``codegen`` plants
them, ``mlir`` plants the parser's); each fault is implemented where it lives.

Each fault changes the generated source only where the bug lives and manifests only
for some shapes / solutions; a run of an unaffected config stays correct.
"""
from __future__ import annotations


class FaultError(ValueError):
    """An unknown fault name in ``inject``."""


FAULTS: dict[str, str] = {
    "k_tail_off_by_one":
        "gemm: the K tail drops the last element of K. Fires when k % KPerBlock != 0 (LocalTiles=0: the "
        "remainder loop stops at k-1; LocalTiles=1: the last, partial tile zero-fills element k-1).",
    "missing_barrier":
        "gemm LocalTiles=1: no barrier between storing the A/B tiles to local memory and reading them. "
        "Fires when a work-group has more than one work-item: on PoCL the work-items of a group run as a "
        "loop, so each reads the tiles before the others have written their part (stale or uninitialised "
        "data -> wrong numbers); on GPUs it is a real race. LocalTiles=0 and 1x1 work-groups are unaffected.",
    "oob_write_n_edge":
        "gemm: the N-edge guards are gone: the edge work-group's work-items past column n are not retired "
        "and nothing shifts or masks the last vectors, so it computes and writes its whole NPerBlock-wide "
        "tile, up to NPerBlock-1 elements past column n -- into the next rows and, on the last rows, past "
        "the end of the output buffer (wrong numbers or a crash). Fires when n % NPerBlock != 0.",
    "infinite_loop":
        "gemm: a K loop ends on '!=' and overshoots, so it never terminates (unsigned index, clamped loads, "
        "no out-of-bounds access): LocalTiles=0: the remainder loop is unrolled by 2, fires when "
        "k % KPerBlock is odd; LocalTiles=1: the tile loop runs to k rounded up to even, fires when that "
        "is not a multiple of KPerBlock (e.g. k=21, KPerBlock=8).",
    "wrong_transpose_stride":
        "gemm: for a transposed operand (transA/transB) the stride of its logical inner dimension is taken "
        "as that dimension's length (the packed, untransposed leading dimension) instead of the real one. "
        "Fires when the operand is transposed and its stride differs from that length (e.g. A^T with m != k).",
    "conv_pad_edge":
        "convolution: the padding's in-bounds test is off by one ('index <= size' instead of '< size', every "
        "spatial dim), so a read just past the input's last row/column counts as inside and takes the clamped "
        "neighbour (the edge element) instead of the padding's 0. Fires when the end padding is reached "
        "(pad_end > 0 and the last output's window covers index size); begin padding, unpadded convs and "
        "non-conv kernels are unaffected.",
    "conv_group_stride":
        "convolution: the input channels' group offset is dropped, so every group reads group 0's channels "
        "(the weights still take their group's). Fires only with group > 1 (grouped and depthwise convs); "
        "group 1 and non-conv kernels (a batched gemm's batch offset included) are unaffected.",
    "softmax_no_rescale":
        "attention: the online softmax does not rescale the accumulators when a row's running maximum grows, "
        "so the values summed before a new maximum keep their old, larger weight (wrong numbers). Fires when a "
        "row's scores are not in decreasing order and differ enough for exp(old max - new max) to matter; "
        "gemm-gemm kernels and a row whose first score is its maximum are unaffected.",
    "attention_d_edge":
        "attention and gemm-gemm: the last work-item of a row stores all its DPerThread columns without the "
        "d < D guard, past the row's end into the next row (or past the output buffer). Fires when D % "
        "DPerThread != 0.",
    "causal_edge":
        "attention with a causal mask: each row's key loop ends one key before the diagonal (the mask is "
        "right, the loop bound that skips the masked keys is off by one), so the diagonal key's score is "
        "dropped. Fires on every causal attention; unmasked attention and gemm-gemm are unaffected.",
    "softmax_no_max":
        "softmax (reduce kernels): exp(x) instead of exp(x - max) -- the running maximum is computed but not "
        "subtracted, so exp overflows to inf (f32: x > 88.7) and the output is inf/inf = NaN, or every exp "
        "underflows to 0 (all x < -103) and the output is 0/0. Fires only for large magnitudes; inputs in "
        "[-1, 1] (and attention's online softmax) are unaffected.",
    "narrow_accumulator":
        "gemm with f16 or bf16 operands: every partial sum of the K loop is rounded to the operands' type "
        "(accumulating in half precision instead of float). The error grows with K: a few hundred products "
        "of values of one sign are off by many ulps; short K and f32 gemms stay within the bound.",
    "f2h_truncate":
        "every float -> f16 conversion in a kernel (stores of f16 outputs, converts, f16 rounding of "
        "intermediate values) rounds toward zero instead of to nearest even: off by one ulp when the dropped "
        "13 bits are at least half an ulp. Subnormal f16 results, bf16 and f32 are unaffected.",
    "odd_perf_config":
        "the gemm perf-config rules 'MPerBlock is a multiple of MPerThread' and 'NPerBlock is a multiple of "
        "NPerThread' are not checked, and the kernel launches MPerBlock / MPerThread by NPerBlock / NPerThread "
        "work-items (rounded down) per tile: the last rows or columns of every tile are never computed (wrong "
        "numbers), or no work-item is launched at all (a block smaller than a thread's tile: an empty grid). "
        "Fires only for configs outside the tuning space (the space, in any printed form, keeps both rules).",
    "parse_transpose_inverse":
        "MLIR parser: a migraphx.transpose's permutation is read as its inverse. Fires for permutations that "
        "are not their own inverse (rank >= 3 with a 3-cycle, e.g. [1, 2, 0]): the result type then no longer "
        "matches (an error) or, for equal dims, the module differs silently. The MIGraphX text parser and the "
        "kernels are unaffected; found by the fuzz's text round trip.",
}

#: faults that only change convolution kernels (implicit gemms); the others change every gemm kernel
CONV_FAULTS = frozenset({"conv_pad_edge", "conv_group_stride"})
#: faults that only change attention / gemm-gemm kernels
ATTENTION_FAULTS = frozenset({"softmax_no_rescale", "attention_d_edge", "causal_edge"})
#: faults outside the kernels' text: the solution rules (odd_perf_config) and the MLIR parser
SOLUTION_FAULTS = frozenset({"odd_perf_config"})
PARSER_FAULTS = frozenset({"parse_transpose_inverse"})


def parse_inject(inject) -> frozenset[str]:
    """``None``/``""`` -> no faults; ``"a,b"`` or an iterable -> the set; unknown names raise :class:`FaultError`."""
    if inject is None:
        return frozenset()
    if isinstance(inject, str):
        names = [x.strip() for x in inject.split(",") if x.strip()]
    else:
        names = [str(x).strip() for x in inject if str(x).strip()]
    bad = [n for n in names if n not in FAULTS]
    if bad:
        raise FaultError(f"unknown fault(s) {', '.join(map(repr, bad))}; known: {', '.join(FAULTS)}")
    return frozenset(names)
