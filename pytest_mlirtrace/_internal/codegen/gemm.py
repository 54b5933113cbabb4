"""GEMM fusions: one dot / quant_dot with views and pointwise ops before it and a pointwise epilogue.

Two kernel shapes, picked by the solution's LocalTiles field:

* LocalTiles=0 (CPU style): each work-item owns an MPerThread x NPerThread register tile, reads A
  as scalars and B as VectorWidth-wide vectors straight from global memory, K runs in chunks of
  KPerBlock (unrolled by Unroll) over which every K index map is affine, plus a remainder loop.
  PoCL turns the composed scalar loads into one vector load and the ``acc += a * b`` into FMAs.
* LocalTiles=1 (GPU style): a work-group stages MPerBlock x KPerBlock of A and KPerBlock x NPerBlock
  of B in local memory (converted to float once), then every work-item accumulates its register tile
  from local memory; rows are blocked per work-item, column vectors interleaved across work-items.

Edges: rows are clamped for loads and guarded for stores; the last column vector of a row is
shifted back inside the row (LocalTiles=0) or the staged tile is clamped (LocalTiles=1); the K tail
is a remainder loop (0) or a zero-filled partial tile (1).  Work-items whose whole tile lies
inside the output take a fast epilogue (vector ops, unconditional stores), the rest a guarded
scalar loop.
"""
from __future__ import annotations

from . import expr as E
from .analysis import Analysis
from .cgen import LaneOffsets, lane, vt
from .gemm_operands import Operand, edge_element, scalar_operand, vector_operand
from .kernel import Ctx, emit_output, render
from .mma import lower_gemm_mma


def lower_gemm(ctx: Ctx, sol, faults) -> tuple[list[str], tuple, tuple, str, str]:
    """(body, global size, local size, attributes, prelude: text before the kernel)."""
    an: Analysis = ctx.an
    ctx.faults = frozenset(faults) if an.problem.conv else frozenset()   # [fault hook] conv_pad_edge
    if sol.matrix_core:
        return lower_gemm_mma(ctx, an, sol, faults)
    if sol.LocalTiles:
        return (*_local(ctx, an, sol, faults), "")
    return (*_direct(ctx, an, sol, faults), "")


def _acc_types(an: Analysis):
    quant = an.problem.op in ("quant_dot", "quant_convolution")
    return ("int" if quant else "float"), quant


def _zero_vector(ctx: Ctx, acc_t: str, w: int) -> str:
    """0 of the accumulator type; 16-wide through an inline helper taking the vector, because clang gives a
    function 512-bit registers only when it passes such a vector to a call (its min-legal-vector-width);
    without it LLVM splits every float16 op into two 256-bit halves on AVX-512 CPUs.  Devices with
    narrower vectors (``vector_bits``) split them anyway: no helper there."""
    if w < 16 or (ctx.helpers.vector_bits and ctx.helpers.vector_bits < 32 * w):
        return "0"
    return f"{ctx.helpers.need('keep', w)}(({vt(acc_t, w)})(0))" if acc_t == "float" else "0"


def _update(ctx: Ctx, an: Analysis, faults, i: int, NV: int, VW: int, acc_t: str) -> str:
    """Row ``i``'s accumulators += ``av`` * the B vectors (``acc{i}_{j}``, ``VW`` lanes each)."""
    narrow = {"f16": "rh", "bf16": "rbf"}.get(an.problem.dtype)
    if "narrow_accumulator" in faults and narrow and acc_t == "float":
        # [fault hook] narrow_accumulator: every partial sum rounded to the operands' 16-bit type
        r = ctx.helpers.need(narrow, VW)
        return " ".join(f"acc{i}_{j} = {r}(acc{i}_{j} + av * bv{j});" for j in range(NV))
    return " ".join(f"acc{i}_{j} += av * bv{j};" for j in range(NV))


# ====================================================================== direct
def _direct(ctx: Ctx, an: Analysis, sol, faults):
    p = an.problem
    M, N, K = p.m, p.n, p.k
    MT, NT, VW, KB, U = sol.MPerThread, sol.NPerThread, sol.VectorWidth, sol.KPerBlock, sol.Unroll
    NV = NT // VW
    TX, TY = sol.NPerBlock // NT, sol.MPerBlock // MT
    acc_t, quant = _acc_types(an)
    V = vt(acc_t, VW)
    A = Operand(ctx, an.a_root, "m", K, KB, "a", faults, p.transA, K)
    B = Operand(ctx, an.b_root, "n", K, KB, "b", faults, p.transB, N)
    oob = "oob_write_n_edge" in faults
    L: list[str] = []
    L.append("const int gb = get_global_id(2);")
    L.append(f"const int m0 = get_global_id(1) * {MT};")
    L.append(f"const int n0 = get_global_id(0) * {NT};")
    # (oob_write_n_edge: the work-items past the N edge are not retired either)
    L.append(f"if (m0 >= {M}) return;" if oob else f"if (m0 >= {M} || n0 >= {N}) return;")
    for i in range(MT):
        L.append(f"const int r{i} = MINI(m0 + {i}, {M - 1});")
    for j in range(NV):
        L.append(f"const int c{j} = n0 + {j * VW};" if oob else f"const int c{j} = MINI(n0 + {j * VW}, {N - VW});")
    gbv = {"gb": "gb"}
    mvar, nvar = E.var("mm", M), E.var("nn", N)
    # precomputed row / column parts of the separable leaves
    for li in A.leaves:
        off, rp, kp, mixed, mode = A.plan[li]
        if not mixed:
            for i in range(MT):
                L.append(f"const int a{li}_{i} = {render(rp, {'m': mvar}, {'mm': f'r{i}', **gbv})};")
    for li in B.leaves:
        off, rp, kp, mixed, mode = B.plan[li]
        if mixed:
            continue
        s = E.coeff(rp, "n")
        for j in range(NV):
            if s is not None:
                L.append(f"const int b{li}_{j} = {render(rp, {'n': nvar}, {'nn': f'c{j}', **gbv})};")
            else:
                for ll in range(VW):
                    L.append(f"const int b{li}_{j}_{ll} = {render(rp, {'n': nvar + ll}, {'nn': f'c{j}', **gbv})};")
    zero = _zero_vector(ctx, acc_t, VW)
    for i in range(MT):
        L.append(" ".join(f"{V} acc{i}_{j} = {zero};" for j in range(NV)))

    kvar = E.var("kx", K)

    def kexpr(op: Operand, li: int, where: str) -> str:
        off, rp, kp, mixed, (mode, s) = op.plan[li]
        if mode == "affine":
            return "0" if s == 0 else f"{s}*k"
        if mode == "chunk" and where == "main":
            # parenthesised: the k part is one value shared by every row's load. Written
            # ``a_i + kbase + s*kk`` instead, PoCL's LLVM re-adds kbase per row (the seed op ran
            # 1.25x slower than the same dot on a contiguous A; benchmarks/bench_views.py)
            return f"(k{op.tag}{li} + {s}*kk)" if s else f"k{op.tag}{li}"
        return render(kp, {"k": kvar}, {"kx": "k", **gbv})

    def body(where: str, arow_lane: int | None = None) -> list[str]:
        out: list[str] = []
        bvals = []
        for j in range(NV):
            def b_offs(li, j=j):
                off, rp, kp, mixed, mode = B.plan[li]
                if mixed:
                    return [render(off, {"n": nvar + ll, "k": kvar}, {"nn": f"c{j}", "kx": "k", **gbv})
                            for ll in range(VW)]
                ke = kexpr(B, li, where)
                s = E.coeff(rp, "n")
                if s is not None:
                    return LaneOffsets(f"b{li}_{j} + {ke}", s, VW)
                return [f"b{li}_{j}_{ll} + {ke}" for ll in range(VW)]
            v = vector_operand(ctx, B, b_offs, acc_t, VW, f"bt{j}_", out)
            out.append(f"const {V} bv{j} = {v};")
            bvals.append(f"bv{j}")
        for i in range(MT):
            def a_off(li, i=i):
                off, rp, kp, mixed, mode = A.plan[li]
                if mixed:
                    return render(off, {"m": mvar, "k": kvar}, {"mm": f"r{i}", "kx": "k", **gbv})
                return f"a{li}_{i} + {kexpr(A, li, where)}"
            sub: list[str] = []
            if arow_lane is not None:
                av = f"ar{i}.{lane(arow_lane)}"
            else:
                av = scalar_operand(ctx, A, a_off, acc_t, f"at{i}_", sub)
            upd = _update(ctx, an, faults, i, NV, VW, acc_t)
            out.append("{ " + " ".join(sub) + (" " if sub else "") + f"const {acc_t} av = {av}; {upd} }}")
        return out

    chunk_bases = []
    for op in (A, B):
        for li in op.leaves:
            off, rp, kp, mixed, (mode, s) = op.plan[li]
            if mode == "chunk":
                chunk_bases.append(f"const int k{op.tag}{li} = {render(kp, {'k': kvar}, {'kx': 'k0', **gbv})};")
    L.append("int k0 = 0;")
    # f16/bf16 A read straight along k: convert a whole KPerBlock row chunk at once (one vector
    # conversion instead of KPerBlock scalar ones) when the chunk loop is fully unrolled
    a_node = ctx.dag.nodes[A.root]
    a_row_vec = (U == KB and KB in (2, 4, 8, 16) and a_node.kind == "load" and a_node.dtype.name in ("f16", "bf16")
                 and not A.plan[A.root][3] and A.plan[A.root][4][0] in ("affine", "chunk")
                 and A.plan[A.root][4][1] == 1)
    if K >= KB:
        L.append(f"for (; k0 + {KB} <= {K}; k0 += {KB}) {{")
        L += ["  " + x for x in chunk_bases]
        if a_row_vec:
            li = A.root
            for i in range(MT):
                ke = "k0" if A.plan[li][4][0] == "affine" else f"k{A.tag}{li}"
                offs = LaneOffsets(f"a{li}_{i} + {ke}", 1, KB)
                L.append(f"  const {vt('float', KB)} ar{i} = {ctx.load_lanes(a_node, offs)};")
            for t in range(KB):
                L.append(f"  {{ const int kk = {t}; const int k = k0 + kk;")
                L += ["    " + x for x in body("main", arow_lane=t)]
                L.append("  }")
        else:
            if U > 1:
                L.append(f"  #pragma unroll {U}")
            L.append(f"  for (int kk = 0; kk < {KB}; ++kk) {{")
            L.append("    const int k = k0 + kk;")
            L += ["    " + x for x in body("main")]
            L.append("  }")
        L.append("}")
    if K % KB == 0 and K >= KB:
        pass  # no remainder: the chunk loop covers K (the tail faults cannot fire here)
    elif "infinite_loop" in faults:
        # the remainder loop unrolled by two, ending on != (never reached when k - k0 is odd)
        L.append(f"for (uint ku = (uint)k0; ku != {K}u; ku += 2u) {{")
        for half in (0, 1):
            L.append(f"  {{ const int k = MINI((int)ku + {half}, {K - 1});")
            L += ["    " + x for x in body("tail")]
            L.append("  }")
        L.append("}")
    else:
        kend = K - 1 if "k_tail_off_by_one" in faults else K
        L.append(f"for (int k = k0; k < {kend}; ++k) {{")
        L += ["  " + x for x in body("tail")]
        L.append("}")

    # ----- epilogue
    L += _epilogue(ctx, an, sol, faults, acc_t, local=False)
    attrs = f"__attribute__((reqd_work_group_size({TX}, {TY}, 1)))"
    gx = -(-N // sol.NPerBlock) * TX
    gy = -(-M // sol.MPerBlock) * TY
    return L, (gx, gy, p.g), (TX, TY, 1), attrs


def _epilogue(ctx: Ctx, an: Analysis, sol, faults, acc_t: str, local: bool) -> list[str]:
    """Spill the register tile, then a fast vector loop (tile inside the output) or a guarded scalar loop."""
    p = an.problem
    M, N = p.m, p.n
    MT, NT, VW = sol.MPerThread, sol.NPerThread, sol.VectorWidth
    NV = NT // VW
    TX = sol.NPerBlock // NT
    V = vt(acc_t, VW)
    oob = "oob_write_n_edge" in faults
    gbv = {"gb": "gb"}
    mvar, nvar = E.var("mm", M), E.var("nn", N)
    L: list[str] = [f"{V} tv[{MT * NV}];"]
    for i in range(MT):
        L.append(" ".join(f"tv[{i * NV + j}] = acc{i}_{j};" for j in range(NV)))
    if local:
        fast = f"bm0 + {sol.MPerBlock} <= {M} && bn0 + {sol.NPerBlock} <= {N}"
        colexpr = f"bn0 + j * {TX * VW} + tx * {VW}"
    else:
        fast = f"m0 + {MT} <= {M} && n0 + {NT} <= {N}"
        colexpr = f"n0 + j * {VW}"
    only_fast = (M % sol.MPerBlock == 0 and N % sol.NPerBlock == 0) if local else (M % MT == 0 and N % NT == 0)
    L.append("{" if only_fast else f"if ({fast}) {{")
    L.append("  #pragma unroll 1")
    L.append(f"  for (int q = 0; q < {MT * NV}; ++q) {{")
    L.append(f"    const int row = m0 + q / {NV}, j = q % {NV};")
    L.append(f"    const int col = {colexpr};")
    L.append(f"    const {V} v = tv[q];")

    def acc_value(_w, ln):
        return "v" if (ln is None or VW == 1) else f"v.{lane(ln)}"

    def lane_subst(ll):
        return {"m": mvar, "n": nvar + ll}, {"mm": "row", "nn": "col", **gbv}

    def store(_ll, target, val):
        return f"{target} = {val};"
    L += ["    " + x for x in emit_output(ctx, acc_value, VW, lane_subst, lane_subst, store, "f")]
    L.append("  }")
    if only_fast:
        L.append("}")
        return L
    L.append("} else {")
    L.append(f"  const __private {acc_t}* ts = (const __private {acc_t}*)tv;")
    L.append("  #pragma unroll 1")
    L.append(f"  for (int q = 0; q < {MT * NT}; ++q) {{")
    L.append(f"    const int row = m0 + q / {NT}, j = (q % {NT}) / {VW}, l = q % {VW};")
    L.append(f"    if (row >= {M}) continue;")
    if local:
        L.append(f"    const int col = {colexpr} + l;")
        if not oob:
            L.append(f"    if (col >= {N}) continue;")
        L.append(f"    const int colc = MINI(col, {N - 1});")
    elif oob:
        L.append(f"    const int col = {colexpr} + l, colc = col;")
    else:
        L.append(f"    const int cs = {colexpr}, col = MINI(cs, {N - VW}) + l, colc = col;")
        L.append("    if (col < cs) continue;")

    L += ["    " + x for x in edge_element(ctx, M, N, "ts[q]")]
    L.append("  }")
    L.append("}")
    return L


# ====================================================================== local
def _local(ctx: Ctx, an: Analysis, sol, faults):
    p = an.problem
    M, N, K = p.m, p.n, p.k
    MT, NT, VW, KB, U = sol.MPerThread, sol.NPerThread, sol.VectorWidth, sol.KPerBlock, sol.Unroll
    MB, NB = sol.MPerBlock, sol.NPerBlock
    NV = NT // VW
    TX, TY = NB // NT, MB // MT
    WG = TX * TY
    acc_t, quant = _acc_types(an)
    V = vt(acc_t, VW)
    A = Operand(ctx, an.a_root, "m", K, KB, "a", faults, p.transA, K)
    B = Operand(ctx, an.b_root, "n", K, KB, "b", faults, p.transB, N)
    gbv = {"gb": "gb"}
    mvar, nvar, kvar = E.var("mm", M), E.var("nn", N), E.var("kx", K)
    L: list[str] = []
    # A's rows are padded by 4 (keeps float4 alignment, spreads the transposing stores over banks)
    L.append(f"__local {acc_t} As[{KB}][{MB + 4}] __attribute__((aligned(64)));")
    L.append(f"__local {acc_t} Bs[{KB}][{NB}] __attribute__((aligned(64)));")
    L.append("const int tx = get_local_id(0), ty = get_local_id(1);")
    L.append(f"const int tid = ty * {TX} + tx;")
    L.append("const int gb = get_global_id(2);")
    L.append(f"const int bm0 = get_group_id(1) * {MB};")
    L.append(f"const int bn0 = get_group_id(0) * {NB};")
    zero = _zero_vector(ctx, acc_t, VW)
    for i in range(MT):
        L.append(" ".join(f"{V} acc{i}_{j} = {zero};" for j in range(NV)))
    inf = "infinite_loop" in faults
    if inf:
        kend = (K + 1) & ~1
        L.append(f"for (uint k0u = 0; k0u != {kend}u; k0u += {KB}u) {{")
        L.append("  const int k0 = (int)k0u;")
    else:
        L.append(f"for (int k0 = 0; k0 < {K}; k0 += {KB}) {{")
    kcut = f"{K - 1}" if "k_tail_off_by_one" in faults else f"{K}"
    L.append(f"  const int full = k0 + {KB} <= {K};")
    # ---- stage A: MB x KB elements, consecutive work-items along A's fastest storage dim
    for tag, op, rows, trans in (("A", A, MB, p.transA), ("B", B, NB, p.transB)):
        per = -(-rows * KB // WG)
        if per > 1:
            L.append("  #pragma unroll")
        L.append(f"  for (int e = 0; e < {per}; ++e) {{")
        L.append(f"    const int idx = tid + e * {WG};")
        if (rows * KB) % WG:
            L.append(f"    if (idx < {rows * KB}) {{")
        k_fast = (not trans) if tag == "A" else trans
        if k_fast:
            L.append(f"    const int kk = idx % {KB}, rr = idx / {KB};")
        else:
            L.append(f"    const int rr = idx % {rows}, kk = idx / {rows};")
        base = "bm0" if tag == "A" else "bn0"
        ext = M if tag == "A" else N
        L.append(f"    const int row = MINI({base} + rr, {ext - 1});")
        L.append(f"    const int k = MINI(k0 + kk, {K - 1});")
        var = mvar if tag == "A" else nvar
        rv = "m" if tag == "A" else "n"
        rn = "mm" if tag == "A" else "nn"
        sub: list[str] = []
        val = scalar_operand(ctx, op, lambda li, op=op, var=var, rv=rv, rn=rn:
                              render(op.plan[li][0], {rv: var, "k": kvar}, {rn: "row", "kx": "k", **gbv}),
                              acc_t, f"s{tag}_", sub)
        L += ["    " + x for x in sub]
        dst = "As[kk][rr]" if tag == "A" else "Bs[kk][rr]"
        L.append(f"    {dst} = (full || k0 + kk < {kcut}) ? {val} : ({acc_t})0;")
        if (rows * KB) % WG:
            L.append("    }")
        L.append("  }")
    if "missing_barrier" not in faults:
        L.append("  barrier(CLK_LOCAL_MEM_FENCE);")
    if U > 1:
        L.append(f"  #pragma unroll {U}")
    L.append(f"  for (int kk = 0; kk < {KB}; ++kk) {{")
    for j in range(NV):
        if VW == 1:
            L.append(f"    const {V} bv{j} = Bs[kk][{j * TX * VW} + tx];")
        else:
            L.append(f"    const {V} bv{j} = *(__local const {V}*)&Bs[kk][{j * TX * VW} + tx * {VW}];")
    if MT % 4 == 0 and acc_t == "float":
        for q in range(MT // 4):
            L.append(f"    const float4 a4_{q} = *(__local const float4*)&As[kk][ty * {MT} + {4 * q}];")
        avs = [f"a4_{i // 4}.s{i % 4}" for i in range(MT)]
    else:
        avs = [f"As[kk][ty * {MT} + {i}]" for i in range(MT)]
    for i in range(MT):
        upd = _update(ctx, an, faults, i, NV, sol.VectorWidth, acc_t)
        L.append(f"    {{ const {acc_t} av = {avs[i]}; {upd} }}")
    L.append("  }")
    L.append("  barrier(CLK_LOCAL_MEM_FENCE);")
    L.append("}")

    # ---- epilogue: rows blocked per work-item, column vectors interleaved over work-items
    L.append(f"const int m0 = bm0 + ty * {MT};")
    L += _epilogue(ctx, an, sol, faults, acc_t, local=True)
    attrs = f"__attribute__((reqd_work_group_size({TX}, {TY}, 1)))"
    gx = -(-N // NB) * TX
    gy = -(-M // MB) * TY
    return L, (gx, gy, p.g), (TX, TY, 1), attrs
