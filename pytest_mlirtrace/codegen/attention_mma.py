"""Attention and gemm-gemm on NVIDIA tensor cores (an attention solution with MatrixCore=1).

Both gemms are ``mma.sync`` m16n8k16 with f32 accumulators (the instructions, and their emulation for tests on
any device, come from :mod:`.mma`, the one place with inline PTX).  A work-group takes ``RowsPerBlock``
query rows, one 32-wide warp per 16 of them, and walks the keys ``KeysPerBlock`` at a time:

* Q: the block's rows, computed element by element from the first gemm's row operand (views, pointwise ops)
  and rounded to the operand type, are staged in local memory once; each warp then keeps its 16 rows as
  ``ldmatrix`` A fragments in registers for the whole walk (the head dim rounded up to 16, zeros past it).
* per step: the step's K rows (``Ks[key][k]``) and V rows (``Vs[key][d]``) are staged in local memory the
  same way; a warp computes its 16 x KeysPerBlock scores S = Q K^T (B fragments of K by ``ldmatrix``:
  a key's row is a column of K^T), then on each score fragment element (row m, key n1) the ops between the
  first gemm and the softmax (scales, biases, masks: the score DAG, the dot's value rounded to its type as
  the oracle rounds it).  Keys past the end (the last step, a causal row's diagonal) score -inf.
* online softmax on the fragments: a row's 16 x 8 tile elements sit in the four work-items of a quad, so the
  row maximum of a step is the work-item's, then its quad's (two ``shfl_xor``); the accumulators and the
  running sum are rescaled by exp(old max - new max) when it grows; the exponentials are the probabilities
  P.  The running sums stay per work-item and meet in the quad at the end.  A gemm-gemm (no softmax)
  takes the score DAG's value as P.
* O += P V: the P fragments of two adjacent 16x8 score tiles are exactly one 16x16 A fragment (the
  accumulator layout of m16n8 is the operand layout of m16k16), packed to V's type; V's B fragments come by
  ``ldmatrix.trans``.
* end: O / sum (the softmax's division), then the ops after the second gemm, element by element, guarded at
  the M and D edges; the log-sum-exp outputs once per row.

Rows past M are clamped for loads and dropped at the store.  Planted faults as in :mod:`.attention`:
``causal_edge``, ``softmax_no_rescale``, ``attention_d_edge``.
"""
from __future__ import annotations

from .cgen import DagEmitter, round_to, store_value
from .errors import NotApplicable
from .kernel import Ctx, emit_output, render
from .mma import EMU_FLOATS, EMULATED, ldmatrix_functions, mma_function, shuffle_functions, tile_index
from .solution import MMA_DTYPES


def _vars(dag, root: int, through_dots: bool) -> set[str]:
    """The index variables the leaves under ``root`` read (not those inside inline dots unless
    ``through_dots``)."""
    seen, out, stack = set(), set(), [root]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        n = dag.nodes[i]
        if n.offset is not None:
            out |= set(n.offset.vars())
        if n.kind != "dot" or through_dots:
            stack.extend(n.args)
    return out


def _dots(dag, root: int) -> list[int]:
    return [i for i in dag.reachable([root]) if dag.nodes[i].kind == "dot"]


def lower_attention_mma(ctx: Ctx, sol, faults):
    an = ctx.an
    p = an.problem
    dag, h = ctx.dag, ctx.helpers
    M, N1, D = p.m, an.info["N1"], an.info["D"]
    BR, BC, U = sol.RowsPerBlock, sol.DPerThread, sol.Unroll
    softmax = an.info["softmax"]
    dots = _dots(dag, an.a_root)
    if len(dots) != 1:
        raise NotApplicable(f"MatrixCore=1: the scores hold {len(dots)} gemms, expected one")
    dot = dots[0]
    dn = dag.nodes[dot]
    K, kv = int(dn.value), dn.op
    q_root, k_root, v_root = dn.args[0], dn.args[1], an.b_root
    for tag, root in (("Q", q_root), ("K", k_root), ("V", v_root)):
        if dag.nodes[root].dtype.name != p.dtype or p.dtype not in MMA_DTYPES:
            raise NotApplicable(f"MatrixCore=1: operand {tag} is {dag.nodes[root].dtype.name}, expected the "
                                f"problem's {p.dtype} ({' or '.join(MMA_DTYPES)})")
        if _dots(dag, root):
            raise NotApplicable(f"MatrixCore=1: operand {tag} holds a gemm of its own")
    allowed = (({"gb", "m", kv}, q_root, "Q", False), ({"gb", "n1", kv}, k_root, "K", False),
               ({"gb", "n1", "d"}, v_root, "V", False), ({"gb", "m", "n1"}, an.a_root, "the scores", False))
    for ok, root, tag, deep in allowed:
        extra = _vars(dag, root, deep) - ok
        if extra:
            raise NotApplicable(f"MatrixCore=1: {tag} read(s) index {', '.join(sorted(extra))} (staged tiles "
                                f"take {', '.join(sorted(ok))})")
    emulated = ctx.mma == EMULATED
    KP, DP = -(-K // 16) * 16, -(-D // 16) * 16
    WG = sol.work_group_size()
    warps = WG // 32
    ex_mma = f", emu + warp * {EMU_FLOATS}, lane" if emulated else ""
    ex_ld = ", emi + warp * 32, lane" if emulated else ""
    ex_sh = ", shx + warp * 32, lane" if emulated else ""

    def leaf(i, n):
        return ctx.load(n, render(n.offset, {}, {}))

    def stage(root: int, buf: str, rows: int, width: int, ext: int, row_var: str, row_c: str, col_var: str,
              col_ext: int, prefix: str) -> list[str]:
        """Tile ``buf`` (``rows`` x ``width`` 16-bit values, rows padded): element (r, c) is ``root`` at
        ``row_var`` = ``row_c`` + r (clamped to ``ext``) and ``col_var`` = c (zero from ``col_ext`` on)."""
        em = DagEmitter(dag, h, leaf, 1, prefix=prefix)
        v = em.emit(root)
        body = [f"for (int c_ = tid; c_ < {rows * width}; c_ += {WG}) {{",
                f"  const int r_ = c_ / {width}, k_ = c_ % {width};",
                f"  const int {row_var} = MINI({row_c} + r_, {ext - 1});",
                f"  const int {col_var} = MINI(k_, {col_ext - 1});"]
        body += ["  " + x for x in em.lines]
        bits = store_value(h, dag.nodes[root].dtype, v)
        body.append(f"  {buf}[{tile_index('r_', 'k_', width)}] = (k_ < {col_ext}) ? {bits} : (ushort)0;")
        body.append("}")
        return body

    L: list[str] = []
    L.append(f"__local ushort KQs[{max(BR, BC) * (KP + 8)}] __attribute__((aligned(16)));")
    L.append(f"__local ushort Vs[{BC * (DP + 8)}] __attribute__((aligned(16)));")
    if emulated:
        L.append(f"__local float emu[{warps * EMU_FLOATS}];")
        L.append(f"__local int emi[{WG}];")
        L.append(f"__local float shx[{WG}];")
    L.append("const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;")
    L.append("const int gb = get_global_id(2);")
    L.append(f"const int m0 = get_group_id(0) * {BR};")
    # ---- Q: staged once, kept as A fragments
    L += stage(q_root, "KQs", BR, KP, M, "m", "m0", kv, K, "q_")
    L.append("barrier(CLK_LOCAL_MEM_FENCE);")
    L.append(f"uint qf[{KP // 16}][4];")
    L.append("#pragma unroll")
    L.append(f"for (int kk = 0; kk < {KP // 16}; ++kk) {{")
    L.append("  const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = kk * 16 + (lane >> 4) * 8;")
    L.append(f"  ldsm_x4(qf[kk], &KQs[0], {tile_index('r', 'c', KP)}{ex_ld});")
    L.append("}")
    L.append("barrier(CLK_LOCAL_MEM_FENCE);")
    L.append(f"float o[{DP // 8}][4];")
    L.append("#pragma unroll")
    L.append(f"for (int j = 0; j < {DP // 8}; ++j) {{ o[j][0] = 0.f; o[j][1] = 0.f; o[j][2] = 0.f; o[j][3] = 0.f; }}")
    L.append("float mx0 = -INFINITY, mx1 = -INFINITY, sm0 = 0.f, sm1 = 0.f;")
    causal = an.info.get("causal")
    if causal is not None:
        # [fault hook] causal_edge: a row stops one key early, dropping the diagonal
        edge = causal if "causal_edge" not in faults else causal - 1
        L.append(f"const int n1end = MINI({N1}, m0 + {BR - 1} + {edge + 1});")   # the block's last row's end
    else:
        L.append(f"const int n1end = {N1};")
    L.append(f"for (int nb = 0; nb < n1end; nb += {BC}) {{")
    body: list[str] = []
    body += stage(k_root, "KQs", BC, KP, N1, "n1", "nb", kv, K, "k_")
    body += stage(v_root, "Vs", BC, DP, N1, "n1", "nb", "d", D, "v_")
    body.append("barrier(CLK_LOCAL_MEM_FENCE);")
    # ---- S = Q K^T: B fragments of K by ldmatrix (a key's row of K is a column of K^T)
    body.append(f"float s[{BC // 8}][4];")
    body.append("#pragma unroll")
    body.append(f"for (int j = 0; j < {BC // 8}; ++j) {{ s[j][0] = 0.f; s[j][1] = 0.f; s[j][2] = 0.f; s[j][3] = 0.f; }}")
    body.append("#pragma unroll")
    body.append(f"for (int kk = 0; kk < {KP // 16}; ++kk) {{")
    body.append(f"  #pragma unroll {U}")
    body.append(f"  for (int j = 0; j < {BC // 8}; j += 2) {{")
    body.append("    const int r = j * 8 + (lane >> 4) * 8 + (lane & 7), c = kk * 16 + ((lane >> 3) & 1) * 8;")
    body.append("    uint kf[4];")
    body.append(f"    ldsm_x4(kf, &KQs[0], {tile_index('r', 'c', KP)}{ex_ld});")
    body.append(f"    mma_m16n8k16(s[j], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], kf[0], kf[1]{ex_mma});")
    body.append(f"    mma_m16n8k16(s[j + 1], qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3], kf[2], kf[3]{ex_mma});")
    body.append("  }")
    body.append("}")
    # ---- the score DAG on each element: row m, key n1
    em = DagEmitter(dag, h, leaf, 1, prefix="x_")
    em.names[dot] = "sd"
    x = em.emit(an.a_root)
    cut = "-INFINITY" if softmax else "0.0f"
    body.append("#pragma unroll")
    body.append(f"for (int q = 0; q < {BC // 2}; ++q) {{")
    body.append("  const int j = q >> 2, e = q & 3;")
    body.append("  const int mr = m0 + warp * 16 + g + (e >> 1) * 8, nr = nb + j * 8 + t * 2 + (e & 1);")
    body.append(f"  const int m = MINI(mr, {M - 1}), n1 = MINI(nr, {N1 - 1});")
    body.append(f"  const float sd = {round_to(h, dn.dtype, 's[j][e]')};")
    body += ["  " + y for y in em.lines]
    keep = f"nr < {N1}"
    if causal is not None:
        keep += f" && nr <= mr + {edge}"
    body.append(f"  s[j][e] = ({keep}) ? (float)({x}) : {cut};")
    body.append("}")
    if softmax:
        body += _online_softmax(BC, DP, ex_sh, "softmax_no_rescale" not in faults)
    # ---- O += P V: two score tiles are one A fragment; V's B fragments by ldmatrix.trans
    pack = store_value(h, dag.nodes[v_root].dtype, "s[2 * kk + {j}][{e}]")
    body.append(f"#pragma unroll {U}")
    body.append(f"for (int kk = 0; kk < {BC // 16}; ++kk) {{")
    words = []
    for j, e in ((0, 0), (0, 2), (1, 0), (1, 2)):
        lo, hi = pack.format(j=j, e=e), pack.format(j=j, e=e + 1)
        words.append(f"(uint){lo} | ((uint){hi} << 16)")
    body.append("  const uint a0 = " + words[0] + ", a1 = " + words[1] + ";")
    body.append("  const uint a2 = " + words[2] + ", a3 = " + words[3] + ";")
    body.append("  #pragma unroll")
    body.append(f"  for (int j = 0; j < {DP // 8}; j += 2) {{")
    body.append("    const int k = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, n = (j + (lane >> 4)) * 8;")
    body.append("    uint vf[4];")
    body.append(f"    ldsm_x4_trans(vf, &Vs[0], {tile_index('k', 'n', DP)}{ex_ld});")
    body.append(f"    mma_m16n8k16(o[j], a0, a1, a2, a3, vf[0], vf[1]{ex_mma});")
    body.append(f"    mma_m16n8k16(o[j + 1], a0, a1, a2, a3, vf[2], vf[3]{ex_mma});")
    body.append("  }")
    body.append("}")
    body.append("barrier(CLK_LOCAL_MEM_FENCE);")      # the next step's staging overwrites both tiles
    L += ["  " + y for y in body]
    L.append("}")
    L += _epilogue(ctx, an, D, DP, softmax, ex_sh, faults, leaf)
    attrs = f"__attribute__((reqd_work_group_size({WG}, 1, 1)))"
    decode = h.need("h2f" if p.dtype == "f16" else "bf2f") if emulated else ""
    prelude = mma_function(p.dtype, emulated, decode) + ldmatrix_functions(emulated) + shuffle_functions(emulated)
    return L, (-(-M // BR) * WG, 1, p.g), (WG, 1, 1), attrs, prelude


def _online_softmax(BC: int, DP: int, ex_sh: str, rescale: bool) -> list[str]:
    """The step's row maxima (work-item, then quad), the rescale of the accumulators and running sums, and
    the exponentials in place of the scores.  Rows g (elements 0, 1) and g + 8 (elements 2, 3)."""
    L = ["float bm0 = -INFINITY, bm1 = -INFINITY;",
         "#pragma unroll",
         f"for (int j = 0; j < {BC // 8}; ++j) {{",
         "  bm0 = fmax(bm0, fmax(s[j][0], s[j][1]));",
         "  bm1 = fmax(bm1, fmax(s[j][2], s[j][3]));",
         "}"]
    for b in ("bm0", "bm1"):
        for mask in (1, 2):
            L.append(f"{b} = fmax({b}, shfl_xor({b}, {mask}{ex_sh}));")
    L += ["const float mn0 = fmax(mx0, bm0), mn1 = fmax(mx1, bm1);",
          "const float cr0 = (mn0 == -INFINITY) ? 1.0f : exp(mx0 - mn0);",
          "const float cr1 = (mn1 == -INFINITY) ? 1.0f : exp(mx1 - mn1);",
          "mx0 = mn0; mx1 = mn1;",
          "float ps0 = 0.f, ps1 = 0.f;",
          "#pragma unroll",
          f"for (int j = 0; j < {BC // 8}; ++j) {{",
          "  s[j][0] = (mn0 == -INFINITY) ? 0.0f : exp(s[j][0] - mn0);",
          "  s[j][1] = (mn0 == -INFINITY) ? 0.0f : exp(s[j][1] - mn0);",
          "  s[j][2] = (mn1 == -INFINITY) ? 0.0f : exp(s[j][2] - mn1);",
          "  s[j][3] = (mn1 == -INFINITY) ? 0.0f : exp(s[j][3] - mn1);",
          "  ps0 += s[j][0] + s[j][1];",
          "  ps1 += s[j][2] + s[j][3];",
          "}",
          "sm0 = sm0 * cr0 + ps0;",
          "sm1 = sm1 * cr1 + ps1;"]
    if rescale:      # [fault hook] softmax_no_rescale: the accumulators keep their old scale
        L += ["#pragma unroll",
              f"for (int j = 0; j < {DP // 8}; ++j) {{",
              "  o[j][0] *= cr0; o[j][1] *= cr0; o[j][2] *= cr1; o[j][3] *= cr1;",
              "}"]
    return L


def _epilogue(ctx: Ctx, an, D: int, DP: int, softmax: bool, ex_sh: str, faults, leaf) -> list[str]:
    """O / sum, the ops after the second gemm at (m, d), the log-sum-exp outputs once per row."""
    dag, h = ctx.dag, ctx.helpers
    M = an.problem.m
    L: list[str] = []
    if softmax:
        for b in ("sm0", "sm1"):
            for mask in (1, 2):
                L.append(f"{b} += shfl_xor({b}, {mask}{ex_sh});")

    def acc_value(w, l):
        return "ov"

    def subst(ll):
        return {}, {}

    def store(ll, target, val):
        return f"{target} = {val};"
    L.append("#pragma unroll")
    L.append(f"for (int q = 0; q < {DP // 2}; ++q) {{")
    L.append("  const int j = q >> 2, e = q & 3;")
    L.append("  const int m = m0 + warp * 16 + g + (e >> 1) * 8, d = j * 8 + t * 2 + (e & 1);")
    guard = f"m >= {M}" if "attention_d_edge" in faults else f"m >= {M} || d >= {D}"   # [fault hook]
    L.append(f"  if ({guard}) continue;")
    L.append("  const float ov = o[j][e] / ((e >> 1) ? sm1 : sm0);" if softmax else "  const float ov = o[j][e];")
    L += ["  " + s for s in emit_output(ctx, acc_value, 1, {}, subst, subst, store, "o", only_primary=True)]
    L.append("}")
    if an.extra_outputs:
        L.append("if (t == 0) {")
        L.append("  for (int hh = 0; hh < 2; ++hh) {")
        L.append("    const int m = m0 + warp * 16 + g + hh * 8;")
        L.append(f"    if (m >= {M}) continue;")
        L.append("    const float mx = hh ? mx1 : mx0, sm = hh ? sm1 : sm0;")
        for j, x in enumerate(an.extra_outputs, start=1):
            def lse_leaf(i, n):
                if n.kind == "acc":
                    v = "mx" if dag.nodes[i].op == an.info["max_name"] else "sm"
                    return round_to(h, n.dtype, v)
                return leaf(i, n)
            el = DagEmitter(dag, h, lse_leaf, 1, prefix=f"l{j}_")
            val = el.emit(x.root)
            L += ["    " + s for s in el.lines]
            L.append(f"    out{j}[{render(x.offset, {}, {})}] = {store_value(h, x.dtype, val)};")
        L.append("  }")
        L.append("}")
    return L


__all__ = ["lower_attention_mma"]
