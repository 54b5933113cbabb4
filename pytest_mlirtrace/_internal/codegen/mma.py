"""GEMM fusions on NVIDIA tensor cores (a gemm solution with MatrixCore 1 or 2): the one place with inline PTX.

OpenCL C has no tensor-core builtins, but NVIDIA's OpenCL compiler takes inline PTX (``asm volatile``), and
``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}`` and ``ldmatrix`` are PTX (sm_80 and later).
``solution.check_applicable`` offers these solutions only where the device's ``mma`` names such an architecture,
so no other device ever sees this text.

The kernel (``MPerBlock x NPerBlock`` of C per work-group, one 32-wide warp per ``MPerThread x NPerThread``
of it, f32 accumulators in registers):

* staging: every K step of ``KPerBlock``, the work-items bring A's ``MPerBlock x KPerBlock`` tile and B's
  ``KPerBlock x NPerBlock`` tile into local memory as 16-bit values: A as ``As[m][k]``, B as ``Bs[k][n]``, two
  buffers of each, so that one barrier a step is enough; rows padded by 8 elements (:func:`tile_index`). Each
  element is the operand's DAG (views, pointwise ops before the dot) computed as in the FMA kernels and rounded to
  the operand type; a plain load of that type is copied bit for bit, ``VectorWidth`` elements at a time where it is
  contiguous and aligned.  The next tile is read from global memory into registers while the current one is
  multiplied, then stored into the other buffer -- except a plain load copied 8 elements (16 bytes) at a time in the
  tile's own layout (A with k fastest, B with n fastest): that goes by ``cp.async`` straight into the other buffer,
  with no registers, and lands before the step's barrier.
* mma: per 16-deep step, a warp reads its fragments -- MatrixCore=1: A as 32-bit words of ``As``, B from
  two 16-bit values of ``Bs``; MatrixCore=2: ``ldmatrix`` (``.trans`` for B) -- and issues one ``mma.sync``
  per 16x8 tile of C.
* emulated (``DeviceLimits.mma == "emulated"``, for tests on any device): the PTX functions are replaced
  by the same exchanges through local memory (cp.async by a plain copy); everything else is the text the
  GPU runs.
* edges: rows and columns past M and N are clamped for loads and dropped at the store; the K tail is a
  zero-filled partial tile.
* epilogue: the fused pointwise ops after the dot, on two adjacent columns at a time inside the output,
  element by element (guarded) at its edges.
"""
from __future__ import annotations

from . import expr as E
from .analysis import Analysis
from .cgen import store_value
from .errors import NotApplicable
from .gemm_operands import Operand, edge_element, scalar_operand
from .kernel import Ctx, emit_output, render
from .solution import MMA_DTYPES

PAD = 8           # 16-bit elements added to each local-memory row (keeps rows 16-byte aligned, spreads banks)


def tile_index(r: str, c: str, width: int) -> str:
    """C expression: where element (``r``, ``c``) of a local tile ``width`` 16-bit values wide is kept.  Rows
    are padded by 8 elements (16 bytes): a row is then an odd number of 16-byte chunks long, so the 8 rows
    ``ldmatrix`` reads at one chunk fall in the 8 different 16-byte banks of a 128-byte line.  (XOR-swizzled
    chunks in unpadded rows, the other usual layout, ran 7-11% slower on the H200: BENCHMARKS.md.)"""
    return f"({r}) * {width + PAD} + ({c})"


#: ``DeviceLimits.mma`` value that asks for the emulated instruction (any OpenCL device; for tests)
EMULATED = "emulated"
EMU_FLOATS = 16 * 16 + 16 * 8     # one warp's A and B of one mma, in local memory


def ldmatrix_functions(emulated: bool = False) -> str:
    """``ldsm_x4`` / ``ldsm_x4_trans``: four 8x8 matrices of 16-bit values from local memory into a warp's
    fragment registers (PTX ``ldmatrix``); work-item ``l`` gives the address ``base + off`` of row ``l % 8`` of
    matrix ``l / 8``.  Register q of work-item (g, t) = ``lane >> 2, lane & 3`` holds row g, columns 2t and
    2t+1 of matrix q (``.trans``: rows 2t and 2t+1 of column g).  ``emulated``: the rows' offsets go through
    a warp's local scratch ``s`` instead."""
    if emulated:
        body = []
        for name, lo, hi in (("ldsm_x4", "s[q * 8 + g] + t * 2", "s[q * 8 + g] + t * 2 + 1"),
                             ("ldsm_x4_trans", "s[q * 8 + t * 2] + g", "s[q * 8 + t * 2 + 1] + g")):
            body.append(
                f"inline void {name}(uint *r, __local const ushort *base, int off, __local int *s, int lane) {{\n"
                "  const int g = lane >> 2, t = lane & 3;\n"
                "  s[lane] = off;\n"
                "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                f"  for (int q = 0; q < 4; ++q) r[q] = (uint)base[{lo}] | ((uint)base[{hi}] << 16);\n"
                "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                "}\n")
        return "/* ldmatrix emulated: the rows' offsets meet in local memory */\n" + "".join(body)
    body = []
    for name, trans in (("ldsm_x4", ""), ("ldsm_x4_trans", ".trans")):
        body.append(
            f"inline void {name}(uint *r, __local const ushort *base, int off) {{\n"
            f'  asm volatile("ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{%0,%1,%2,%3}}, [%4];"\n'
            '               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])'
            ' : "r"((uint)(ulong)(base + off)) : "memory");\n'
            "}\n")
    return "".join(body)


def async_copy_functions(emulated: bool = False) -> str:
    """``cp_async16(dst, src, n)``: 16 bytes from global to local memory without passing through registers
    (PTX ``cp.async.cg``, sm_80 and later), zeros where ``n`` is 0; ``cp_async_wait()``: this work-item's
    copies have landed (a barrier then shows them to the work-group).  ``emulated``: a plain copy."""
    if emulated:
        return ("/* cp.async emulated: a plain copy */\n"
                "inline void cp_async16(__local ushort *dst, __global const ushort *src, int n) {\n"
                "  for (int i = 0; i < 8; ++i) dst[i] = n ? src[i] : (ushort)0;\n"
                "}\n"
                "inline void cp_async_wait(void) {}\n")
    return (
        "inline void cp_async16(__local ushort *dst, __global const ushort *src, int n) {\n"
        '  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"\n'
        '               :: "r"((uint)(ulong)dst), "l"((ulong)src), "r"(n) : "memory");\n'
        "}\n"
        'inline void cp_async_wait(void) { asm volatile("cp.async.wait_all;" ::: "memory"); }\n')


def shuffle_functions(emulated: bool = False) -> str:
    """``shfl_xor(v, mask)``: the float of the warp's work-item ``lane ^ mask`` (PTX ``shfl.sync.bfly``; the
    four work-items of a quad share a row of an mma tile).  ``emulated``: through a warp's local scratch ``s``
    (32 floats)."""
    if emulated:
        return ("/* shfl.sync emulated: the warp's values meet in local memory */\n"
                "inline float shfl_xor(float v, int mask, __local float *s, int lane) {\n"
                "  s[lane] = v;\n"
                "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                "  const float r = s[lane ^ mask];\n"
                "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                "  return r;\n"
                "}\n")
    return ("inline float shfl_xor(float v, int mask) {\n"
            "  uint r;\n"
            '  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"\n'
            '               : "=r"(r) : "r"(as_uint(v)), "r"(mask));\n'
            "  return as_float(r);\n"
            "}\n")


def mma_function(dtype: str, emulated: bool = False, decode: str = "") -> str:
    """The device function doing one m16n8k16 (D += A x B, f32 accumulators): ``mma.sync`` through inline
    PTX, or, ``emulated``, the same fragment exchange through a warp's local scratch (``decode``: the helper
    turning a 16-bit value into a float), so that the rest of the kernel can be checked on any device."""
    if dtype not in MMA_DTYPES:       # the operand types applicability allows; PTX spells them the same
        raise NotApplicable(f"mma.sync takes {' or '.join(MMA_DTYPES)} operands, not {dtype}")
    t = dtype
    if emulated:
        return (
            "/* m16n8k16 emulated (no tensor cores): the warp's fragments meet in local memory */\n"
            "inline void mma_m16n8k16(float *d, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1,\n"
            "                         __local float *s, int lane) {\n"
            "  const int g = lane >> 2, t = lane & 3;\n"
            "  __local float *A = s, *B = s + 256;\n"
            "  const uint av[4] = {a0, a1, a2, a3};\n"
            "  for (int r = 0; r < 4; ++r) for (int h = 0; h < 2; ++h)\n"
            f"    A[(g + (r & 1) * 8) * 16 + (r >> 1) * 8 + t * 2 + h] = {decode}((ushort)(av[r] >> (16 * h)));\n"
            "  for (int h = 0; h < 2; ++h) {\n"
            f"    B[(t * 2 + h) * 8 + g] = {decode}((ushort)(b0 >> (16 * h)));\n"
            f"    B[(t * 2 + 8 + h) * 8 + g] = {decode}((ushort)(b1 >> (16 * h)));\n"
            "  }\n"
            "  barrier(CLK_LOCAL_MEM_FENCE);\n"
            "  for (int e = 0; e < 4; ++e) {\n"
            "    const int r = g + (e >> 1) * 8, c = t * 2 + (e & 1);\n"
            "    float sum = 0.f;\n"
            "    for (int k = 0; k < 16; ++k) sum += A[r * 16 + k] * B[k * 8 + c];\n"
            "    d[e] += sum;\n"
            "  }\n"
            "  barrier(CLK_LOCAL_MEM_FENCE);\n"
            "}\n")
    return (
        "/* D (16x8 f32) += A (16x16, row) x B (16x8, col): PTX's m16n8k16 fragment layout, a warp at a time */\n"
        "inline void mma_m16n8k16(float *d, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1) {\n"
        f'  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {{%0,%1,%2,%3}}, '
        '{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"\n'
        '               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])\n'
        '               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));\n'
        "}\n")


def aligned_contiguous(off: E.Lin, fast: str, w: int) -> bool:
    """Are the ``w`` elements at ``fast`` = s .. s+w-1 (s a multiple of ``w``) consecutive in storage, from
    a multiple of ``w``?  True when ``off`` is ``fast`` (alone or as ``fast % d``, ``d`` a multiple of ``w``)
    plus terms that are multiples of ``w`` and constant over such a run (``fast / d``, other variables)."""
    if w == 1:
        return True
    if off.const % w:
        return False
    step = 0                       # how much one step of ``fast`` inside the run moves the offset
    for a, c in off.terms:
        if isinstance(a, E.Var):
            if a.name == fast:
                step += c
            elif c % w:
                return False
            continue
        if fast not in E.atom_vars(a):
            if c % w:
                return False
            continue
        if not isinstance(a, (E.FDiv, E.FMod)) or a.d % w or a.arg.const \
                or a.arg.terms != ((E.Var(fast, _extent(a.arg, fast)), 1),):
            return False
        if isinstance(a, E.FMod):
            step += c
        elif c % w:
            return False
    return step == 1


def _extent(e: E.Lin, name: str) -> int:
    for a, _ in e.terms:
        if isinstance(a, E.Var) and a.name == name:
            return a.extent
    return -1


class _Stage:
    """How one operand's tile reaches local memory: which work-item reads which elements, in registers
    between the global read and the local store."""

    def __init__(self, ctx: Ctx, an: Analysis, sol, tag: str, faults):
        p = an.problem
        self.ctx, self.tag = ctx, tag
        self.root = an.a_root if tag == "A" else an.b_root
        self.rows = sol.MPerBlock if tag == "A" else sol.NPerBlock      # m (A) or n (B) extent of the tile
        self.KB, self.K = sol.KPerBlock, p.k
        self.ext = p.m if tag == "A" else p.n
        self.rvar = "m" if tag == "A" else "n"
        self.rname = "mm" if tag == "A" else "nn"
        self.base = "bm0" if tag == "A" else "bn0"
        # k is the fastest storage dim of A unless transA, of B only if transB
        self.k_fast = (not p.transA) if tag == "A" else p.transB
        self.WG = sol.work_group_size()
        node = ctx.dag.nodes[self.root]
        self.dtype = node.dtype
        if self.dtype.name != p.dtype:
            raise NotApplicable(f"MatrixCore={sol.MatrixCore}: operand {tag} is {self.dtype.name}, the problem's "
                                f"type is {p.dtype}")
        # the FMA kernels' operand plan: the leaves' offsets, with the planted faults that change them
        self.op = Operand(ctx, self.root, self.rvar, p.k, self.KB, tag.lower(), faults,
                           p.transA if tag == "A" else p.transB, p.k if tag == "A" else p.n)
        # a plain load of the operand's type is copied bit for bit
        off = self.op.plan[self.root][0] if node.kind == "load" else None
        self.plain = off is not None
        w = sol.VectorWidth
        along = self.KB if self.k_fast else self.rows
        fast_ext = self.K if self.k_fast else self.ext
        fast = "k" if self.k_fast else self.rvar
        if not (self.plain and along % w == 0 and fast_ext % w == 0 and aligned_contiguous(off, fast, w)):
            w = 1
        self.w = w
        # 16-byte chunks laid out in the tile as in storage go by cp.async, straight into local memory
        self.direct = w == 8 and self.k_fast == (tag == "A")
        self.chunks = self.rows * self.KB // w            # w-wide chunks in the tile
        self.per = -(-self.chunks // self.WG)              # chunks per work-item

    def regs(self) -> list[str]:
        if self.direct:
            return []
        t = "ushort" if self.w == 1 else f"ushort{self.w}"
        return [f"{t} s{self.tag}{e};" for e in range(self.per)]

    def _chunk(self, e: int) -> tuple[bool, str, str]:
        """Work-item chunk ``e``: (is it the last, partial round; C declaring its index ``c``; C declaring its
        tile coordinates ``kk`` and ``rr``, its first element's)."""
        w, KB, rows = self.w, self.KB, self.rows
        guard = bool(self.chunks % self.WG) and e == self.per - 1
        if self.k_fast:
            coords = f"  const int kk = (c % {KB // w}) * {w}, rr = c / {KB // w};"
        else:
            coords = f"  const int rr = (c % {rows // w}) * {w}, kk = c / {rows // w};"
        return guard, f"  const int c = tid + {e * self.WG};", coords

    def load(self, k0: str, kcut: str, buf: str) -> list[str]:
        """Read the tile starting at k = ``k0`` (zero past ``kcut``): into the registers, or, ``direct``, by
        cp.async into local buffer ``buf`` (landed at the next ``cp_async_wait``)."""
        w = self.w
        L: list[str] = []
        for e in range(self.per):
            guard, index, coords = self._chunk(e)
            L += ["{", index] + ([f"  if (c < {self.chunks}) {{"] if guard and self.direct else []) + [coords]
            if self.k_fast or w == 1:
                L.append(f"  const int row = MINI({self.base} + rr, {self.ext - 1});")
            else:       # w rows from an aligned start: clamp the start (the extent is a multiple of w)
                L.append(f"  const int row = MINI({self.base} + rr, {self.ext - w});")
            if self.k_fast and w > 1:
                L.append(f"  const int k = MINI({k0} + kk, {self.K - w});")
            else:
                L.append(f"  const int k = MINI({k0} + kk, {self.K - 1});")
            inside = f"{k0} + kk < {kcut}"
            if self.direct:
                L.append(f"  cp_async16(&{self._dst(buf, 'rr', 'kk')}, {self._pointer()}, ({inside}) ? 16 : 0);")
                L += ["  }"] if guard else []
                L.append("}")
                continue
            val = self._value(L)
            zero = "(ushort)0" if w == 1 else f"(ushort{w})(0)"
            if guard:
                L.append(f"  s{self.tag}{e} = (c < {self.chunks} && {inside}) ? {val} : {zero};")
            else:
                L.append(f"  s{self.tag}{e} = ({inside}) ? {val} : {zero};")
            L.append("}")
        return L

    def _names(self):
        return {self.rvar: E.var(self.rname, self.ext), "k": E.var("kx", self.K)}, \
            {self.rname: "row", "kx": "k", "gb": "gb"}

    def _pointer(self) -> str:
        """C pointer to this work-item's chunk of a plain load."""
        ptr = self.ctx.pnames[self.ctx.dag.nodes[self.root].param]
        return f"{ptr} + ({render(self.op.plan[self.root][0], *self._names())})"

    def _value(self, L: list[str]) -> str:
        """C expression of this work-item's chunk as 16-bit bits (``ushort`` or ``ushortN``)."""
        ctx, op = self.ctx, self.op
        subst, names = self._names()
        if self.plain:
            if self.w == 1:
                ptr = ctx.pnames[ctx.dag.nodes[self.root].param]
                return f"{ptr}[{render(op.plan[self.root][0], subst, names)}]"
            return f"*(__global const ushort{self.w} *)({self._pointer()})"
        sub: list[str] = []
        v = scalar_operand(ctx, op, lambda li: render(op.plan[li][0], subst, names),
                            "float", f"s{self.tag}_", sub)
        L += ["  " + x for x in sub]
        return store_value(ctx.helpers, self.dtype, v)

    def store(self, buf: str) -> list[str]:
        """Registers -> local tile buffer ``buf`` (A's (m, k) or B's (k, n)); nothing when ``direct``."""
        w = self.w
        L: list[str] = []
        if self.direct:
            return L
        for e in range(self.per):
            guard, index, coords = self._chunk(e)
            L += ["{", index] + ([f"  if (c < {self.chunks}) {{"] if guard else []) + [coords]
            v = f"s{self.tag}{e}"
            contiguous_dst = self.k_fast == (self.tag == "A")     # As is k-major in a row, Bs n-major
            if w == 1:
                L.append(f"  {self._dst(buf, 'rr', 'kk')} = {v};")
            elif contiguous_dst:
                L.append(f"  *(__local ushort{w} *)&{self._dst(buf, 'rr', 'kk')} = {v};")
            else:
                for ll in range(w):
                    r, k = ("rr", f"kk + {ll}") if self.k_fast else (f"rr + {ll}", "kk")
                    L.append(f"  {self._dst(buf, r, k)} = {v}.s{'0123456789abcdef'[ll]};")
            if guard:
                L.append("  }")
            L.append("}")
        return L

    def _dst(self, buf: str, r: str, k: str) -> str:
        if self.tag == "A":
            return f"As[{buf}][{tile_index(r, k, self.KB)}]"
        return f"Bs[{buf}][{tile_index(k, r, self.rows)}]"


def lower_gemm_mma(ctx: Ctx, an: Analysis, sol, faults):
    p = an.problem
    M, N, K = p.m, p.n, p.k
    MB, NB, KB = sol.MPerBlock, sol.NPerBlock, sol.KPerBlock
    WM, WN = sol.MPerThread, sol.NPerThread
    TI, TJ = WM // 16, WN // 8
    warps_n = NB // WN
    WG = sol.work_group_size()
    A, B = _Stage(ctx, an, sol, "A", faults), _Stage(ctx, an, sol, "B", faults)
    emulated = ctx.mma == EMULATED
    ldsm = sol.MatrixCore == 2
    extra = f", emu + warp * {EMU_FLOATS}, lane" if emulated else ""
    extra_ld = ", emi + warp * 32, lane" if emulated else ""
    kcut = f"{K - 1}" if "k_tail_off_by_one" in faults else f"{K}"
    L: list[str] = []
    # two buffers of each tile: the next K step is stored into one while the other is multiplied
    L.append(f"__local ushort As[2][{MB * (KB + PAD)}] __attribute__((aligned(16)));")
    L.append(f"__local ushort Bs[2][{KB * (NB + PAD)}] __attribute__((aligned(16)));")
    if emulated:
        L.append(f"__local float emu[{WG // 32 * EMU_FLOATS}];")
        if ldsm:
            L.append(f"__local int emi[{WG}];")
    L.append("const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;")
    L.append(f"const int wm = warp / {warps_n}, wn = warp % {warps_n};")
    L.append("const int gb = get_global_id(2);")
    L.append(f"const int bm0 = get_group_id(1) * {MB}, bn0 = get_group_id(0) * {NB};")
    L.append(f"float acc[{TI}][{TJ}][4];")
    L.append("#pragma unroll")
    L.append(f"for (int i = 0; i < {TI}; ++i)")
    L.append("  #pragma unroll")
    L.append(f"  for (int j = 0; j < {TJ}; ++j) {{ acc[i][j][0] = 0.f; acc[i][j][1] = 0.f; "
             "acc[i][j][2] = 0.f; acc[i][j][3] = 0.f; }")
    direct = A.direct or B.direct
    L += A.regs() + B.regs()
    L += A.load("0", kcut, "0") + B.load("0", kcut, "0")
    L += A.store("0") + B.store("0")
    if direct:
        L.append("cp_async_wait();")
    L.append("barrier(CLK_LOCAL_MEM_FENCE);")
    if "infinite_loop" in faults:      # [fault hook] infinite_loop: the K loop ends on != past an odd K
        L.append(f"for (uint k0u = 0, cur = 0; k0u != {(K + 1) & ~1}u; k0u += {KB}u, cur ^= 1) {{")
        L.append("  const int k0 = (int)k0u;")
    else:
        L.append(f"for (int k0 = 0, cur = 0; k0 < {K}; k0 += {KB}, cur ^= 1) {{")
    L.append(f"  const int more = k0 + {KB} < {K};")
    L.append("  if (more) {")     # the other buffer was last read before the barrier that ended the step before
    L += ["    " + x for x in A.load(f"(k0 + {KB})", kcut, "cur ^ 1") + B.load(f"(k0 + {KB})", kcut, "cur ^ 1")]
    L.append("  }")
    L.append(f"  #pragma unroll {sol.Unroll}")
    L.append(f"  for (int kk = 0; kk < {KB}; kk += 16) {{")
    L.append(f"    uint a[{TI}][4], b[{TJ}][2];")
    L.append("    #pragma unroll")
    L.append(f"    for (int i = 0; i < {TI}; ++i) {{")
    if ldsm:        # matrix q = lane / 8: rows +8 for q odd, columns +8 for q >= 2 (a0..a3)
        L.append(f"      const int r = wm * {WM} + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, "
                 "c = kk + (lane >> 4) * 8;")
        L.append(f"      ldsm_x4(a[i], &As[cur][0], {tile_index('r', 'c', KB)}{extra_ld});")
    else:
        L.append(f"      const int r = wm * {WM} + i * 16 + g, c = kk + t * 2;")
        for q, (dr, dc) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
            L.append(f"      a[i][{q}] = *(__local const uint *)&As[cur][{tile_index(f'r + {dr}', f'c + {dc}', KB)}];")
    L.append("    }")
    L.append("    #pragma unroll")
    if ldsm:        # two 16x8 B tiles per ldmatrix: matrix q = lane / 8 is k +8 for q odd, tile j+1 for q >= 2
        L.append(f"    for (int j = 0; j < {TJ}; j += 2) {{")
        L.append("      const int k = kk + (lane & 7) + ((lane >> 3) & 1) * 8, "
                 f"n = wn * {WN} + (j + (lane >> 4)) * 8;")
        L.append("      uint q[4];")
        L.append(f"      ldsm_x4_trans(q, &Bs[cur][0], {tile_index('k', 'n', NB)}{extra_ld});")
        L.append("      b[j][0] = q[0]; b[j][1] = q[1]; b[j + 1][0] = q[2]; b[j + 1][1] = q[3];")
    else:
        L.append(f"    for (int j = 0; j < {TJ}; ++j) {{")
        L.append(f"      const int n = wn * {WN} + j * 8 + g, k = kk + t * 2;")
        for q, (lo, hi) in enumerate((("k", "k + 1"), ("k + 8", "k + 9"))):
            L.append(f"      b[j][{q}] = (uint)Bs[cur][{tile_index(lo, 'n', NB)}] | "
                     f"((uint)Bs[cur][{tile_index(hi, 'n', NB)}] << 16);")
    L.append("    }")
    L.append("    #pragma unroll")
    L.append(f"    for (int i = 0; i < {TI}; ++i)")
    L.append("      #pragma unroll")
    L.append(f"      for (int j = 0; j < {TJ}; ++j)")
    L.append("        mma_m16n8k16(acc[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]"
             f"{extra});")
    L.append("  }")
    if not (A.direct and B.direct):
        L.append("  if (more) {")
        L += ["    " + x for x in A.store("cur ^ 1") + B.store("cur ^ 1")]
        L.append("  }")
    if direct:
        L.append("  cp_async_wait();")
    if "missing_barrier" not in faults:
        L.append("  barrier(CLK_LOCAL_MEM_FENCE);")
    L.append("}")
    L += _epilogue(ctx, an, sol, faults)
    attrs = f"__attribute__((reqd_work_group_size({WG}, 1, 1)))"
    gx = -(-N // NB) * WG
    gy = -(-M // MB)
    decode = ctx.helpers.need("h2f" if p.dtype == "f16" else "bf2f") if emulated else ""
    prelude = mma_function(p.dtype, emulated, decode) + (ldmatrix_functions(emulated) if ldsm else "") + \
        (async_copy_functions(emulated) if direct else "")
    return L, (gx, gy, p.g), (WG, 1, 1), attrs, prelude


def _epilogue(ctx: Ctx, an: Analysis, sol, faults) -> list[str]:
    """Accumulator (i, j, e) of a work-item is C[row0 + i*16 + g + 8*(e/2)][col0 + j*8 + 2*t + e%2]."""
    p = an.problem
    M, N = p.m, p.n
    MB, NB, WM, WN = sol.MPerBlock, sol.NPerBlock, sol.MPerThread, sol.NPerThread
    TI, TJ = WM // 16, WN // 8
    oob = "oob_write_n_edge" in faults
    gbv = {"gb": "gb"}
    mvar, nvar = E.var("mm", M), E.var("nn", N)
    L: list[str] = [f"const int wr0 = bm0 + wm * {WM} + g, wc0 = bn0 + wn * {WN} + t * 2;"]

    def store(_ll, target, val):
        return f"{target} = {val};"

    only_fast = M % MB == 0 and N % NB == 0
    L.append("{" if only_fast else f"if (bm0 + {MB} <= {M} && bn0 + {NB} <= {N}) {{")
    L.append("  #pragma unroll")
    L.append(f"  for (int q = 0; q < {TI * TJ * 2}; ++q) {{")
    L.append(f"    const int i = q / {TJ * 2}, j = (q / 2) % {TJ}, h = q % 2;")
    L.append("    const int row = wr0 + i * 16 + h * 8, col = wc0 + j * 8;")
    L.append("    const float2 v = (float2)(acc[i][j][2 * h], acc[i][j][2 * h + 1]);")

    def acc2(_w, ln):
        return "v" if ln is None else f"v.s{ln}"

    def lanes(ll):
        return {"m": mvar, "n": nvar + ll}, {"mm": "row", "nn": "col", **gbv}
    L += ["    " + x for x in emit_output(ctx, acc2, 2, lanes, lanes, store, "f")]
    L.append("  }")
    L.append("}")
    if only_fast:
        return L
    L[-1] = "} else {"
    L.append("  #pragma unroll")
    L.append(f"  for (int q = 0; q < {TI * TJ * 4}; ++q) {{")
    L.append(f"    const int i = q / {TJ * 4}, j = (q / 4) % {TJ}, e = q % 4;")
    L.append("    const int row = wr0 + i * 16 + (e / 2) * 8, col = wc0 + j * 8 + e % 2;")
    L.append(f"    if (row >= {M}) continue;")
    if not oob:
        L.append(f"    if (col >= {N}) continue;")
    L.append(f"    const int colc = MINI(col, {N - 1});")
    L += ["    " + x for x in edge_element(ctx, M, N, "acc[i][j][e]")]
    L.append("  }")
    L.append("}")
    return L


__all__ = ["lower_gemm_mma", "mma_function", "ldmatrix_functions", "async_copy_functions", "shuffle_functions",
           "tile_index", "EMULATED", "EMU_FLOATS", "PAD"]
