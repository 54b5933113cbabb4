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

from .attention_outputs import output_at, row_outputs
from .cgen import DagEmitter, round_to, store_value
from .errors import NotApplicable
from .kernel import Ctx, render
from .mma import (
    EMU_FLOATS,
    EMULATED,
    PAD,
    aligned_contiguous,
    async_copy_functions,
    ldmatrix_functions,
    mma_function,
    shuffle_functions,
    tile_index,
)
from .solution import MMA_DTYPES


def _vars(dag, root: int) -> set[str]:
    """The index variables the leaves under ``root`` read (not those inside an inline dot: its operands are
    checked apart)."""
    seen, out, stack = set(), set(), [root]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        n = dag.nodes[i]
        if n.offset is not None:
            out |= set(n.offset.vars())
        if n.kind != "dot":
            stack.extend(n.args)
    return out


def _dots(dag, root: int) -> list[int]:
    return [i for i in dag.reachable([root]) if dag.nodes[i].kind == "dot"]


class _Tile:
    """One operand's local tile: ``rows`` x ``width`` 16-bit values (rows padded), element (r, c) being the
    operand's DAG ``root`` at ``row_var`` = row0 + r (clamped below ``ext``) and ``col_var`` = c (zero from
    ``col_ext`` on).  A plain load of the operand's type whose 8 elements along ``col_var`` are consecutive and
    aligned in storage (``direct``) goes by ``cp.async``, 16 bytes at a time; anything else is computed element
    by element (views, pointwise ops, masks) and stored."""

    def __init__(self, ctx: Ctx, root: int, rows: int, width: int, ext: int, row_var: str,
                 col_var: str, col_ext: int, wg: int, prefix: str):
        self.ctx, self.root, self.rows, self.width = ctx, root, rows, width
        self.base = "0"         # C expression: where the tile starts in ``smem``
        self.ext, self.row_var, self.col_var, self.col_ext, self.wg, self.prefix = \
            ext, row_var, col_var, col_ext, wg, prefix
        node = ctx.dag.nodes[root]
        self.direct = node.kind == "load" and col_ext % 8 == 0 and aligned_contiguous(node.offset, col_var, 8)

    def stage(self, row0: str, only_direct: bool = False, only_staged: bool = False) -> list[str]:
        """C statements filling the tile from ``row0`` (``only_direct`` / ``only_staged``: nothing unless
        the tile is / is not ``direct``)."""
        if (only_direct and not self.direct) or (only_staged and self.direct):
            return []
        ctx, h = self.ctx, self.ctx.helpers
        width, rows, wg = self.width, self.rows, self.wg
        if self.direct:
            node = ctx.dag.nodes[self.root]
            ptr = ctx.pnames[node.param]
            chunks = width // 8
            return [f"for (int c_ = tid; c_ < {rows * chunks}; c_ += {wg}) {{",
                    f"  const int r_ = c_ / {chunks}, k_ = (c_ % {chunks}) * 8;",
                    f"  const int {self.row_var} = MINI({row0} + r_, {self.ext - 1});",
                    f"  const int {self.col_var} = MINI(k_, {self.col_ext - 8});",
                    f"  cp_async16(&smem[{self.base} + {tile_index('r_', 'k_', width)}], {ptr} + "
                    f"({render(node.offset, {}, {})}), (k_ < {self.col_ext}) ? 16 : 0);",
                    "}"]
        em = DagEmitter(ctx.dag, h, lambda _i, n: ctx.load(n, render(n.offset, {}, {})), 1, prefix=self.prefix)
        v = em.emit(self.root)
        body = [f"for (int c_ = tid; c_ < {rows * width}; c_ += {wg}) {{",
                f"  const int r_ = c_ / {width}, k_ = c_ % {width};",
                f"  const int {self.row_var} = MINI({row0} + r_, {self.ext - 1});",
                f"  const int {self.col_var} = MINI(k_, {self.col_ext - 1});"]
        body += ["  " + x for x in em.lines]
        bits = store_value(h, ctx.dag.nodes[self.root].dtype, v)
        body.append(f"  smem[{self.base} + {tile_index('r_', 'k_', width)}] = "
                    f"(k_ < {self.col_ext}) ? {bits} : (ushort)0;")
        body.append("}")
        return body


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
    allowed = (({"gb", "m", kv}, q_root, "Q"), ({"gb", "n1", kv}, k_root, "K"),
               ({"gb", "n1", "d"}, v_root, "V"), ({"gb", "m", "n1"}, an.a_root, "the scores"))
    for ok, root, tag in allowed:
        extra = _vars(dag, root) - ok
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

    def leaf(_i, n):
        return ctx.load(n, render(n.offset, {}, {}))

    k = _Tile(ctx, k_root, BC, KP, N1, "n1", kv, K, WG, "k_")
    v = _Tile(ctx, v_root, BC, DP, N1, "n1", "d", D, WG, "v_")
    ahead = k.direct or v.direct          # the next step's tiles by cp.async while this one is multiplied
    nbuf = 2 if ahead else 1
    # one local array: the step's K tiles, then its V tiles (two of each with ``ahead``); Q's rows before the
    # walk where they fit (its fragments go to registers before the first tiles are staged)
    k.base, v.base = f"cur * {BC * (KP + PAD)}", f"{nbuf * BC * (KP + PAD)} + cur * {BC * (DP + PAD)}"
    q = _Tile(ctx, q_root, BR, KP, M, "m", kv, K, WG, "q_")
    total = max(BR * (KP + PAD), nbuf * BC * (KP + DP + 2 * PAD))
    L: list[str] = []
    L.append(f"__local ushort smem[{total}] __attribute__((aligned(16)));")
    if emulated:
        L.append(f"__local float emu[{warps * EMU_FLOATS}];")
        L.append(f"__local int emi[{WG}];")
        L.append(f"__local float shx[{WG}];")
    L.append("const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;")
    L.append("const int gb = get_global_id(2);")
    L.append(f"const int m0 = get_group_id(0) * {BR};")
    # ---- Q: staged once, kept as A fragments
    L += q.stage("m0")
    if q.direct:
        L.append("cp_async_wait();")
    L.append("barrier(CLK_LOCAL_MEM_FENCE);")
    L.append(f"uint qf[{KP // 16}][4];")
    L.append("#pragma unroll")
    L.append(f"for (int kk = 0; kk < {KP // 16}; ++kk) {{")
    L.append("  const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = kk * 16 + (lane >> 4) * 8;")
    L.append(f"  ldsm_x4(qf[kk], &smem[0], {tile_index('r', 'c', KP)}{ex_ld});")
    L.append("}")
    L.append("barrier(CLK_LOCAL_MEM_FENCE);")      # Q's rows are read: the tiles may take their place
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
    if ahead:       # the first step's tiles
        L.append("{")
        L.append("  const int cur = 0;")
        L += ["  " + y for y in k.stage("0", only_direct=True) + v.stage("0", only_direct=True)]
        L.append("}")
    L.append(f"#pragma unroll {U}")
    L.append(f"for (int nb = 0, cur = 0; nb < n1end; nb += {BC}{', cur ^= 1' if ahead else ''}) {{")
    body: list[str] = []
    if ahead:
        # this step's copies have landed and every warp is done with the other buffers (the step before)
        body.append("cp_async_wait();")
        body.append("barrier(CLK_LOCAL_MEM_FENCE);")
        body.append(f"if (nb + {BC} < n1end) {{")
        body.append("  const int cur_ = cur;")
        body.append("  {")
        body.append("    const int cur = cur_ ^ 1;")
        body += ["    " + y for y in k.stage(f"nb + {BC}", only_direct=True) + v.stage(f"nb + {BC}", only_direct=True)]
        body.append("  }")
        body.append("}")
    rest = k.stage("nb", only_staged=ahead) + v.stage("nb", only_staged=ahead)
    if not ahead:
        body.append("barrier(CLK_LOCAL_MEM_FENCE);")       # every warp is done with the tiles of the step before
    if rest:
        body += rest
        body.append("barrier(CLK_LOCAL_MEM_FENCE);")
    # ---- S = Q K^T: B fragments of K by ldmatrix (a key's row of K is a column of K^T)
    body.append(f"float s[{BC // 8}][4];")
    body.append("#pragma unroll")
    body.append(f"for (int j = 0; j < {BC // 8}; ++j) "
                "{ s[j][0] = 0.f; s[j][1] = 0.f; s[j][2] = 0.f; s[j][3] = 0.f; }")
    body.append("#pragma unroll")
    body.append(f"for (int kk = 0; kk < {KP // 16}; ++kk) {{")
    body.append("  #pragma unroll")
    body.append(f"  for (int j = 0; j < {BC // 8}; j += 2) {{")
    body.append("    const int r = j * 8 + (lane >> 4) * 8 + (lane & 7), c = kk * 16 + ((lane >> 3) & 1) * 8;")
    body.append("    uint kf[4];")
    body.append(f"    ldsm_x4(kf, &smem[0], {k.base} + {tile_index('r', 'c', KP)}{ex_ld});")
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
    body.append("#pragma unroll")         # the fragments are registers: every index a constant
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
    body.append(f"    ldsm_x4_trans(vf, &smem[0], {v.base} + {tile_index('k', 'n', DP)}{ex_ld});")
    body.append(f"    mma_m16n8k16(o[j], a0, a1, a2, a3, vf[0], vf[1]{ex_mma});")
    body.append(f"    mma_m16n8k16(o[j + 1], a0, a1, a2, a3, vf[2], vf[3]{ex_mma});")
    body.append("  }")
    body.append("}")
    L += ["  " + y for y in body]
    L.append("}")
    L += _epilogue(ctx, an, D, DP, softmax, ex_sh, faults, leaf)
    attrs = f"__attribute__((reqd_work_group_size({WG}, 1, 1)))"
    decode = h.need("h2f" if p.dtype == "f16" else "bf2f") if emulated else ""
    prelude = mma_function(p.dtype, emulated, decode) + ldmatrix_functions(emulated) + \
        shuffle_functions(emulated) + (async_copy_functions(emulated) if q.direct or ahead else "")
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
    M = an.problem.m
    L: list[str] = []
    if softmax:
        for b in ("sm0", "sm1"):
            for mask in (1, 2):
                L.append(f"{b} += shfl_xor({b}, {mask}{ex_sh});")

    L.append("#pragma unroll")
    L.append(f"for (int q = 0; q < {DP // 2}; ++q) {{")
    L.append("  const int j = q >> 2, e = q & 3;")
    L.append("  const int m = m0 + warp * 16 + g + (e >> 1) * 8, d = j * 8 + t * 2 + (e & 1);")
    guard = f"m >= {M}" if "attention_d_edge" in faults else f"m >= {M} || d >= {D}"   # [fault hook]
    L.append(f"  if ({guard}) continue;")
    L.append("  const float ov = o[j][e] / ((e >> 1) ? sm1 : sm0);" if softmax else "  const float ov = o[j][e];")
    L += ["  " + s for s in output_at(ctx)]
    L.append("}")
    if an.extra_outputs:        # once per row: by the quad's first work-item, for its rows g and g + 8
        L.append("if (t == 0) {")
        L.append("  for (int hh = 0; hh < 2; ++hh) {")
        L.append("    const int m = m0 + warp * 16 + g + hh * 8;")
        L.append(f"    if (m >= {M}) continue;")
        L.append("    const float mx = hh ? mx1 : mx0, sm = hh ? sm1 : sm0;")
        L += ["    " + s for s in row_outputs(ctx, leaf)]
        L.append("  }")
        L.append("}")
    return L


__all__ = ["lower_attention_mma"]
