"""Solutions (perf configs): their fields per kernel kind, parsing, applicability and the spaces.

A solution prints like rocMLIR's perf configs, comma separated integers:

gemm ``MPerBlock,NPerBlock,KPerBlock,MPerThread,NPerThread,VectorWidth,LocalTiles,Unroll``
    MPerBlock, NPerBlock  output tile of one work-group (rows x cols); the work-group has
                          (NPerBlock/NPerThread) x (MPerBlock/MPerThread) work-items
    KPerBlock             depth of one K step: the local-memory tile depth (LocalTiles=1) or the
                          chunk over which the K index map is affine and the inner loop runs (LocalTiles=0)
    MPerThread, NPerThread  register tile of one work-item (MPerThread x NPerThread accumulators)
    VectorWidth           width of the float vectors along N (accumulators, B loads, C stores): 1,2,4,8,16
    LocalTiles            1: stage A/B tiles through local memory with barriers (GPU style);
                          0: every work-item reads A and B straight from global memory (CPU style)
    Unroll                unroll factor of the inner k loop (divides KPerBlock)
    MatrixCore            0: FMA arithmetic (the default; a config of 8 fields has it 0, and a solution with
                          it 0 prints as 8 fields, so every older config and database entry reads the same);
                          1: NVIDIA tensor cores through inline PTX ``mma.sync.m16n8k16`` (``codegen/mma.py``),
                          for f16 and bf16 operands with f32 accumulators, on devices whose ``mma`` names
                          sm_80 or later, each work-item reading its fragments from local memory;
                          2: the same with the fragments read by ``ldmatrix`` (NPerThread a multiple of 16).
                          With MatrixCore=1 or 2 the fields read:
                          MPerThread x NPerThread  the tile of C one warp (32 work-items) computes, as
                                                   (MPerThread/16) x (NPerThread/8) mma tiles; the work-group
                                                   is 32 * (MPerBlock/MPerThread) * (NPerBlock/NPerThread)
                                                   work-items along x
                          KPerBlock                depth of the local-memory tiles, a multiple of 16
                          VectorWidth              16-bit elements one work-item loads at once when it stages
                                                   an operand that is a plain load, contiguous and aligned
                                                   along its fastest dimension (1, 2, 4 or 8; else 1 is used)
                          LocalTiles               1 (the tiles are always staged in local memory)
                          Unroll                   unroll factor of the loop over the KPerBlock/16 mma steps

pointwise ``BlockSize,ElementsPerThread,VectorWidth``
    BlockSize             work-group size
    ElementsPerThread     vectors one work-item computes
    VectorWidth           elements per vector (consecutive along the output's inner dimension)

reduce / softmax ``GroupsPerBlock,ThreadsPerGroup,VectorWidth,Unroll``
    GroupsPerBlock        reductions (output rows) one work-group computes
    ThreadsPerGroup       work-items sharing one reduction (power of two; combined through local memory)
    VectorWidth           elements one work-item reads per step (vector along the reduced index)
    Unroll                unroll factor of the per-work-item reduction loop

attention (gemm-gemm and attention) ``RowsPerBlock,DPerThread,Unroll``
    RowsPerBlock          rows (one per work-item) of one work-group; they walk the same K and V columns
    DPerThread            output columns one work-item accumulates (private accumulators); a row's
                          scores are computed once per work-item, so fewer columns mean more parallel
                          work-items and more recomputation of the first gemm
    Unroll                unroll factor of the loop over a work-item's output columns
    MatrixCore            0: FMA arithmetic (the default; left out when printed, as gemm's);
                          1: NVIDIA tensor cores (``codegen/attention_mma.py``): both gemms by ``mma.sync``
                          m16n8k16 with ``ldmatrix`` fragments, f16/bf16 operands, f32 accumulators, an
                          online softmax on the score fragments.  With MatrixCore=1 the fields read:
                          RowsPerBlock             query rows of one work-group, a multiple of 16: one
                                                   32-wide warp per 16 rows (2 x RowsPerBlock work-items)
                          DPerThread               KeysPerBlock: keys (columns of the first gemm) staged in
                                                   local memory per step, a multiple of 16
                          Unroll                   unroll factor of the loop over the key steps (1 or 2;
                                                   the loops inside a step are unrolled whole: their
                                                   fragments are registers)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..vocab import format_perf_config, parse_perf_config
from .errors import NotApplicable, SolutionError
from .problem import Problem

FIELDS: dict[str, tuple[str, ...]] = {
    "gemm": ("MPerBlock", "NPerBlock", "KPerBlock", "MPerThread", "NPerThread", "VectorWidth", "LocalTiles",
             "Unroll", "MatrixCore"),
    "pointwise": ("BlockSize", "ElementsPerThread", "VectorWidth"),
    "reduce": ("GroupsPerBlock", "ThreadsPerGroup", "VectorWidth", "Unroll"),
    "softmax": ("GroupsPerBlock", "ThreadsPerGroup", "VectorWidth", "Unroll"),
    "attention": ("RowsPerBlock", "DPerThread", "Unroll", "MatrixCore"),
}
MAX_PRIVATE_ACCUMULATORS = 256   # attention: DPerThread
VECTOR_WIDTHS = (1, 2, 4, 8, 16)
MAX_ACCUMULATORS = 256          # MPerThread * NPerThread
MAX_FIELD = 1 << 16
# fields a text may leave out (taking 0) and a solution leaves out when printed while they are 0
OPTIONAL_TAIL = {"gemm": 1, "attention": 1}
MMA_DTYPES = ("f16", "bf16")    # operand types the tensor-core (MatrixCore 1, 2) solutions take
MMA_MAX_ACCUMULATORS = 128      # f32 accumulators one work-item holds: MPerThread * NPerThread / 32
MMA_MAX_HEAD_DIM = 256          # attention on tensor cores: the longest head dim (first gemm's K, output's D)


@dataclass(frozen=True)
class DeviceLimits:
    """What applicability needs to know about a device (runtime's DeviceInfo has the same attributes)."""
    max_work_group_size: int = 4096
    local_mem_size: int = 1 << 20
    compute_units: int = 2
    kind: str = "cpu"
    name: str = "pocl-cpu"
    # widest vector (bits) an OpenCL builtin call may take or return on the device, 0 for any
    # (cgen.Helpers.call); 128 is right for every x86-64 PoCL target, the device probe knows better
    vector_bits: int = 128
    # the matrix-core instructions the device takes ("sm_90": NVIDIA's mma.sync of that compute
    # capability, through inline PTX); "" for none
    mma: str = ""

    @staticmethod
    def pocl() -> DeviceLimits:
        return DeviceLimits()

    @staticmethod
    def nvidia_gpu() -> DeviceLimits:
        return DeviceLimits(1024, 48 * 1024, 132, "gpu", "nvidia-gpu", 0, "sm_90")


DEFAULT_LIMITS = DeviceLimits()


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


@dataclass(frozen=True)
class Solution:
    kind: str
    values: tuple[int, ...]

    def __post_init__(self):
        # a gemm given without its optional last field(s) takes them as 0
        missing = len(FIELDS.get(self.kind, ())) - len(self.values)
        if 0 < missing <= OPTIONAL_TAIL.get(self.kind, 0):
            object.__setattr__(self, "values", tuple(self.values) + (0,) * missing)

    # ---- access ------------------------------------------------------------
    @property
    def fields(self) -> dict[str, int]:
        return dict(zip(FIELDS[self.kind], self.values, strict=False))

    def __getattr__(self, name: str) -> int:
        if name in ("kind", "values") or name.startswith("__"):
            raise AttributeError(name)
        f = FIELDS.get(object.__getattribute__(self, "kind"), ())
        if name in f:
            return object.__getattribute__(self, "values")[f.index(name)]
        raise AttributeError(f"{self.kind} solution has no field {name!r} (fields: {', '.join(f)})")

    def __str__(self) -> str:
        vals = list(self.values)
        for _ in range(OPTIONAL_TAIL.get(self.kind, 0)):
            if vals and vals[-1] == 0:
                vals.pop()
        return format_perf_config(vals)

    @property
    def matrix_core(self) -> bool:
        """A gemm (MatrixCore 1 or 2) or attention (MatrixCore 1) solution on tensor cores."""
        return self.kind in OPTIONAL_TAIL and bool(self.values[-1])

    def describe(self) -> str:
        f = self.fields
        if self.kind in OPTIONAL_TAIL and not f["MatrixCore"]:
            del f["MatrixCore"]          # as str() leaves it out
        if self.matrix_core:
            names = {"MPerThread": "MPerWarp", "NPerThread": "NPerWarp", "DPerThread": "KeysPerBlock"}
            f = {names.get(k, k): v for k, v in f.items()}
        return ", ".join(f"{k}={v}" for k, v in f.items())

    # ---- construction --------------------------------------------------------
    @staticmethod
    def of(kind: str, *values: int, **named: int) -> Solution:
        if kind not in FIELDS:
            raise SolutionError(f"unknown solution kind {kind!r}; expected one of {', '.join(FIELDS)}")
        if named:
            optional = FIELDS[kind][len(FIELDS[kind]) - OPTIONAL_TAIL.get(kind, 0):]
            named = {**{f: 0 for f in optional}, **named}
            missing = [f for f in FIELDS[kind] if f not in named]
            extra = [k for k in named if k not in FIELDS[kind]]
            if extra:
                raise SolutionError(f"{kind} solution has no field(s) {', '.join(extra)}; "
                                    f"fields: {', '.join(FIELDS[kind])}")
            if missing:
                raise SolutionError(f"{kind} solution misses field(s) {', '.join(missing)}")
            values = tuple(named[f] for f in FIELDS[kind])
        return Solution.parse(kind, ",".join(str(v) for v in values))

    @staticmethod
    def parse(kind: str, text: str, faults=frozenset()) -> Solution:
        """Parse a perf-config string; :class:`SolutionError` names the bad field and what was expected.

        The text is split by ``vocab.parse_perf_config``: the legacy comma form mlirtrace writes, or a
        rocMLIR ``vN:`` form (the prefix is read there; the fields must still be this kind's).
        """
        if kind not in FIELDS:
            raise SolutionError(f"unknown solution kind {kind!r}; expected one of {', '.join(FIELDS)}")
        names = FIELDS[kind]
        parts = parse_perf_config(text).fields
        least = len(names) - OPTIONAL_TAIL.get(kind, 0)
        if not least <= len(parts) <= len(names):
            want = f"{least} or {len(names)}" if least < len(names) else f"{len(names)}"
            raise SolutionError(f"{kind} solution {text!r} has {len(parts)} field(s), expected {want}: "
                                f"{','.join(names)}")
        names = names[:len(parts)]
        vals = []
        for i, (name, p) in enumerate(zip(names, parts, strict=False)):
            try:
                v = int(p, 10)
            except ValueError:
                raise SolutionError(f"{kind} solution {text!r}: field {i + 1} ({name}) is {p!r}, "
                                    "expected a positive integer") from None
            if v < 1 and name not in ("LocalTiles", "MatrixCore"):
                raise SolutionError(f"{kind} solution {text!r}: field {i + 1} ({name}) is {v}, "
                                    "expected a positive integer")
            if v > MAX_FIELD:
                raise SolutionError(f"{kind} solution {text!r}: field {i + 1} ({name}) is {v}, "
                                    f"expected at most {MAX_FIELD}")
            vals.append(v)
        sol = Solution(kind, tuple(vals))
        sol._validate(text, faults)
        return sol

    def _validate(self, text: str, faults=frozenset()) -> None:
        f = self.fields

        def bad(name: str, want: str):
            i = FIELDS[self.kind].index(name)
            raise SolutionError(f"{self.kind} solution {text!r}: field {i + 1} ({name}) is {f[name]}, expected {want}")

        if "VectorWidth" in f and f["VectorWidth"] not in VECTOR_WIDTHS:
            bad("VectorWidth", "one of " + ", ".join(map(str, VECTOR_WIDTHS)))
        if self.kind == "gemm":
            if f["LocalTiles"] not in (0, 1):
                bad("LocalTiles", "0 (global loads) or 1 (local-memory tiles)")
            if f["MatrixCore"] not in (0, 1, 2):
                bad("MatrixCore", "0 (FMA), 1 or 2 (NVIDIA mma.sync tensor cores)")
            if f["MatrixCore"]:
                self._validate_mma(bad)
                return
            if f["MPerBlock"] % f["MPerThread"] and "odd_perf_config" not in faults:   # [fault hook]
                bad("MPerBlock", f"a multiple of MPerThread ({f['MPerThread']})")
            if f["NPerBlock"] % f["NPerThread"] and "odd_perf_config" not in faults:   # [fault hook]
                bad("NPerBlock", f"a multiple of NPerThread ({f['NPerThread']})")
            if f["NPerThread"] % f["VectorWidth"]:
                bad("NPerThread", f"a multiple of VectorWidth ({f['VectorWidth']})")
            if f["KPerBlock"] % f["Unroll"]:
                bad("Unroll", f"a divisor of KPerBlock ({f['KPerBlock']})")
        elif self.kind in ("reduce", "softmax"):
            if not _pow2(f["ThreadsPerGroup"]):
                bad("ThreadsPerGroup", "a power of two")
        elif self.kind == "attention":
            if f["MatrixCore"] not in (0, 1):
                bad("MatrixCore", "0 (FMA) or 1 (NVIDIA mma.sync tensor cores)")
            if f["MatrixCore"]:
                if f["RowsPerBlock"] % 16:
                    bad("RowsPerBlock", "a multiple of 16 with MatrixCore=1 (16 query rows per warp)")
                if f["RowsPerBlock"] > 256:
                    bad("RowsPerBlock", "at most 256 with MatrixCore=1 (16 warps)")
                if f["DPerThread"] % 16 or f["DPerThread"] > 128:
                    bad("DPerThread", "KeysPerBlock with MatrixCore=1: a multiple of 16, at most 128")
                if f["Unroll"] > 2:
                    bad("Unroll", "1 or 2 with MatrixCore=1 (the key steps a loop iteration takes)")
                return
            if f["DPerThread"] > MAX_PRIVATE_ACCUMULATORS:
                bad("DPerThread", f"at most {MAX_PRIVATE_ACCUMULATORS} (private accumulators)")

    def _validate_mma(self, bad) -> None:
        f = self.fields
        if f["LocalTiles"] != 1:
            bad("LocalTiles", "1 with MatrixCore=1 (tensor-core tiles are staged in local memory)")
        if f["MPerThread"] % 16:
            bad("MPerThread", "a multiple of 16 with MatrixCore=1 (the rows of a warp's mma tiles)")
        if f["NPerThread"] % 8:
            bad("NPerThread", "a multiple of 8 with MatrixCore=1 (the columns of a warp's mma tiles)")
        if f["MatrixCore"] == 2 and f["NPerThread"] % 16:
            bad("NPerThread", "a multiple of 16 with MatrixCore=2 (ldmatrix reads two 16x8 B tiles at once)")
        if f["MPerBlock"] % f["MPerThread"]:
            bad("MPerBlock", f"a multiple of MPerThread ({f['MPerThread']})")
        if f["NPerBlock"] % f["NPerThread"]:
            bad("NPerBlock", f"a multiple of NPerThread ({f['NPerThread']})")
        if f["KPerBlock"] % 16:
            bad("KPerBlock", "a multiple of 16 with MatrixCore=1 (the k of one mma step)")
        if f["VectorWidth"] > 8:
            bad("VectorWidth", "1, 2, 4 or 8 with MatrixCore=1 (16-bit elements per staging load)")
        if (f["KPerBlock"] // 16) % f["Unroll"]:
            bad("Unroll", f"a divisor of KPerBlock/16 ({f['KPerBlock'] // 16}) with MatrixCore=1")

    # ---- derived -------------------------------------------------------------
    def work_group(self) -> tuple[int, ...]:
        f = self.fields
        if self.matrix_core and self.kind == "attention":
            return (2 * f["RowsPerBlock"], 1, 1)        # a warp of 32 per 16 rows
        if self.matrix_core:
            return (32 * (f["MPerBlock"] // f["MPerThread"]) * (f["NPerBlock"] // f["NPerThread"]), 1, 1)
        if self.kind == "gemm":
            return (f["NPerBlock"] // f["NPerThread"], f["MPerBlock"] // f["MPerThread"], 1)
        if self.kind == "pointwise":
            return (f["BlockSize"], 1, 1)
        if self.kind == "attention":
            return (f["RowsPerBlock"], 1, 1)
        return (f["ThreadsPerGroup"], f["GroupsPerBlock"], 1)

    def work_group_size(self) -> int:
        x, y, z = self.work_group()
        return x * y * z

    def local_bytes(self) -> int:
        """Local memory the kernel declares (attention on tensor cores: see :func:`attention_mma_local_bytes`,
        which needs the head dims; 0 here)."""
        f = self.fields
        if self.matrix_core and self.kind == "attention":
            return 0
        # codegen/mma.py: two of A as [MPerBlock][KPerBlock + 8], of B as [KPerBlock][NPerBlock + 8]
        if self.matrix_core:
            return 4 * (f["MPerBlock"] * (f["KPerBlock"] + 8) + f["KPerBlock"] * (f["NPerBlock"] + 8))
        if self.kind == "gemm":
            if not f["LocalTiles"]:
                return 0
            return 4 * f["KPerBlock"] * (f["MPerBlock"] + 4 + f["NPerBlock"])
        if self.kind in ("reduce", "softmax"):
            return 8 * f["GroupsPerBlock"] * f["ThreadsPerGroup"] if f["ThreadsPerGroup"] > 1 else 0
        return 0


def _limit(limits, name, default):
    return getattr(limits, name, default) if limits is not None else default


def check_applicable(problem: Problem, solution: Solution, limits=None) -> None:
    """Raise :class:`NotApplicable` when ``solution`` cannot run ``problem`` on a device with ``limits``."""
    limits = limits or DEFAULT_LIMITS
    if solution.kind != problem.kind:
        raise NotApplicable(f"a {solution.kind} solution does not apply to a {problem.kind} problem")
    wg = solution.work_group_size()
    max_wg = int(_limit(limits, "max_work_group_size", 4096))
    if wg > max_wg:
        raise NotApplicable(f"work-group of {wg} work-items {solution.work_group()[:2]} exceeds the device "
                            f"maximum {max_wg}")
    lb = solution.local_bytes()
    lm = int(_limit(limits, "local_mem_size", 1 << 20))
    if lb > lm:
        raise NotApplicable(f"needs {lb} bytes of local memory, the device has {lm}")
    f = solution.fields
    if solution.matrix_core and problem.kind == "attention":
        _check_attention_mma(problem, solution, limits)
    elif solution.matrix_core:
        _check_mma(problem, solution, limits)
    elif problem.kind == "gemm":
        if f["MPerThread"] * f["NPerThread"] > MAX_ACCUMULATORS:
            raise NotApplicable(f"register tile MPerThread x NPerThread = {f['MPerThread']}x{f['NPerThread']} "
                                f"exceeds {MAX_ACCUMULATORS} accumulators")
        if f["VectorWidth"] > problem.n:
            raise NotApplicable(f"VectorWidth {f['VectorWidth']} is wider than n = {problem.n} (the N edge is "
                                "handled by shifting the last vector back inside the row)")
        if f["LocalTiles"] and (f["MPerThread"] * f["NPerThread"]) * wg > 4 * 65536:
            raise NotApplicable("work-group register tile too large")
    elif problem.kind == "attention":
        D = dict(problem.attn).get("head_dim_v", dict(problem.attn).get("gemmO", 1))
        if f["DPerThread"] > max(int(D), 1):
            raise NotApplicable(f"DPerThread {f['DPerThread']} is more than the {D} output columns")
        if f["RowsPerBlock"] > max(_ceil_pow2(problem.m), 1) and f["RowsPerBlock"] > 1:
            raise NotApplicable(f"RowsPerBlock {f['RowsPerBlock']} is more than the {problem.m} rows need")
    elif problem.kind == "pointwise":
        if f["VectorWidth"] > problem.reduce_len:
            raise NotApplicable(f"VectorWidth {f['VectorWidth']} is wider than the inner dimension "
                                f"({problem.reduce_len} elements)")
    else:
        if f["VectorWidth"] > problem.reduce_len:
            raise NotApplicable(f"VectorWidth {f['VectorWidth']} is wider than the reduction "
                                f"({problem.reduce_len} elements)")


def mma_arch(limits) -> int:
    """The compute capability (80 for "sm_80") of a device's matrix-core instructions; 0 for none."""
    text = str(_limit(limits, "mma", "") or "")
    if text == "emulated":      # codegen/mma.py's emulation of the instruction (tests, any device)
        return 80
    return int(text[3:]) if text.startswith("sm_") and text[3:].isdigit() else 0


def _check_mma(problem: Problem, solution: Solution, limits) -> None:
    if mma_arch(limits) < 80:
        raise NotApplicable(f"MatrixCore=1 needs NVIDIA mma.sync of sm_80 or later; the device has "
                            f"{_limit(limits, 'mma', '') or 'none'}")
    if problem.op in ("quant_dot", "quant_convolution") or problem.dtype not in MMA_DTYPES:
        raise NotApplicable(f"MatrixCore=1 takes {' or '.join(MMA_DTYPES)} operands, not {problem.dtype}"
                            + (" (quantized)" if problem.op.startswith("quant") else ""))
    f = solution.fields
    if f["MPerThread"] * f["NPerThread"] // 32 > MMA_MAX_ACCUMULATORS:
        raise NotApplicable(f"a warp tile of {f['MPerThread']}x{f['NPerThread']} needs "
                            f"{f['MPerThread'] * f['NPerThread'] // 32} accumulators per work-item, more than "
                            f"{MMA_MAX_ACCUMULATORS}")


def head_dims(problem: Problem) -> tuple[int, int]:
    """An attention problem's first-gemm K (head dim of Q and K) and output columns D (head dim of V)."""
    a = dict(problem.attn)
    return int(problem.k), int(a.get("head_dim_v", a.get("gemmO", 1)))


def attention_mma_local_bytes(problem: Problem, solution: Solution) -> int:
    """codegen/attention_mma.py's local memory at most: two of each step's tiles, KeysPerBlock rows of K + 8
    halves and as many of D + 8 (head dims rounded up to 16), or Q's RowsPerBlock rows of K + 8, which come
    first in the same place, if more."""
    K, D = head_dims(problem)
    kp, dp = -(-K // 16) * 16, -(-D // 16) * 16
    rows, keys = solution.RowsPerBlock, solution.DPerThread
    return 2 * max(rows * (kp + 8), 2 * keys * (kp + dp + 16))


def _check_attention_mma(problem: Problem, solution: Solution, limits) -> None:
    if mma_arch(limits) < 80:
        raise NotApplicable(f"MatrixCore=1 needs NVIDIA mma.sync of sm_80 or later; the device has "
                            f"{_limit(limits, 'mma', '') or 'none'}")
    if problem.dtype not in MMA_DTYPES:
        raise NotApplicable(f"MatrixCore=1 takes {' or '.join(MMA_DTYPES)} operands, not {problem.dtype}")
    K, D = head_dims(problem)
    if max(K, D) > MMA_MAX_HEAD_DIM:
        raise NotApplicable(f"MatrixCore=1 keeps a warp's Q fragments and output rows in registers: head dims "
                            f"{K} and {D}, at most {MMA_MAX_HEAD_DIM}")
    if solution.RowsPerBlock > max(16, _ceil_pow2(problem.m)):
        raise NotApplicable(f"RowsPerBlock {solution.RowsPerBlock} is more than the {problem.m} rows need")
    if solution.DPerThread > max(16, _ceil_pow2(problem.n)):
        raise NotApplicable(f"KeysPerBlock {solution.DPerThread} is more than the {problem.n} keys need")
    lb = attention_mma_local_bytes(problem, solution)
    lm = int(_limit(limits, "local_mem_size", 1 << 20))
    if lb > lm:
        raise NotApplicable(f"needs {lb} bytes of local memory, the device has {lm}")


def is_applicable(problem: Problem, solution: Solution, limits=None) -> bool:
    try:
        check_applicable(problem, solution, limits)
        return True
    except NotApplicable:
        return False


# ------------------------------------------------------------------ spaces --
def _uniq(sols):
    seen, out = set(), []
    for s in sols:
        if s.values not in seen:
            seen.add(s.values)
            out.append(s)
    return out


def _gemm(*v) -> Solution:
    return Solution("gemm", tuple(v))


def _ceil_pow2(x: int) -> int:
    p = 1
    while p < x:
        p *= 2
    return p


def _gemm_space(p: Problem):
    out = []
    # CPU style: register tiles straight from global memory
    for mt in (1, 2, 4, 8, 12, 16):
        for vw, nv in ((1, 1), (4, 1), (8, 1), (8, 2), (16, 1), (16, 2), (16, 4)):
            nt = vw * nv
            if mt * nt > MAX_ACCUMULATORS:
                continue
            for ty, tx in ((1, 1), (4, 1), (8, 1), (2, 2), (1, 4), (16, 1)):
                for kb, u in ((4, 4), (8, 4), (16, 8)):
                    out.append(_gemm(mt * ty, nt * tx, kb, mt, nt, vw, 0, u))
    # GPU style: local-memory tiles
    for mb in (32, 64, 128):
        for nb in (32, 64, 128):
            for mt, nt, vw in ((4, 4, 4), (8, 4, 4), (4, 8, 4), (8, 8, 4), (8, 8, 8), (4, 4, 1)):
                for kb in (8, 16):
                    out.append(_gemm(mb, nb, kb, mt, nt, vw, 1, kb))
    # tensor cores (applicable only where the device has them): warp tiles of mma tiles, local-memory tiles
    for mb in (32, 64, 128, 256):
        for nb in (32, 64, 128, 256):
            for wm, wn in ((16, 16), (32, 32), (32, 64), (64, 32), (64, 64)):
                if mb % wm or nb % wn or (mb // wm) * (nb // wn) > 16:
                    continue
                for kb in (16, 32, 64):
                    for mc in (1, 2):
                        out.append(Solution("gemm", (mb, nb, kb, wm, wn, 8, 1, kb // 16, mc)))
    # never let the tile be far bigger than the problem
    lim_m, lim_n = _ceil_pow2(max(p.m, 1)) * 2, _ceil_pow2(max(p.n, 1)) * 2
    return [s for s in out if s.MPerBlock <= max(lim_m, s.MPerThread) and s.NPerBlock <= max(lim_n, s.NPerThread)]


def _small_gemm(p: Problem):
    vw = 1
    while vw * 2 <= min(p.n, 16):
        vw *= 2
    return [_gemm(1, 1, 4, 1, 1, 1, 0, 4), _gemm(4, vw, 8, 4, vw, vw, 0, 4),
            _gemm(16, 16 * vw if vw > 1 else 16, 8, 1, vw, vw, 1, 8)]


def space(problem: Problem, limits=None) -> list[Solution]:
    """Every applicable solution of ``problem`` on ``limits`` (deterministic order)."""
    if problem.kind == "gemm":
        cands = _gemm_space(problem) + _small_gemm(problem)
    elif problem.kind == "pointwise":
        cands = [Solution("pointwise", (bs, ept, vw)) for bs in (1, 16, 64, 256) for ept in (1, 2, 4, 8)
                 for vw in VECTOR_WIDTHS]
    elif problem.kind == "attention":
        cands = [Solution("attention", (rb, dt, u)) for rb in (1, 4, 16, 32, 64, 128, 256)
                 for dt in (1, 2, 4, 8, 16, 32, 64, 128, 256) for u in (1, 4, 8)]
        # tensor cores (applicable only where the device has them): query rows x keys per step
        cands += [Solution("attention", (rb, kb, u, 1)) for rb in (16, 32, 64, 128) for kb in (16, 32, 64, 128)
                  for u in (1, 2)]
    else:
        cands = [Solution(problem.kind, (gpb, tpg, vw, u)) for gpb in (1, 4, 16, 64) for tpg in (1, 4, 16, 64, 256)
                 for vw in (1, 4, 8, 16) for u in (1, 4) if gpb * tpg <= 1024]
    return [s for s in _uniq(cands) if is_applicable(problem, s, limits)]


# Register-tile (LocalTiles=0) solutions tuned on PoCL (2-core Zen 5, AVX-512) and local-memory-tile
# solutions measured on an H200 through NVIDIA OpenCL (4096^3 f32: 128,128,8,16,8,4,1,8 at 78% of
# cuBLAS; the seed: 64,64,16,4,8,4,1,16).  Each device kind gets a list led by its own style and
# holding the other style's best few, so every list has a fast solution for CPUs and for GPUs.
_CPU_STYLE = [
    "8,32,8,8,32,16,0,4", "32,32,8,8,32,16,0,4", "16,32,8,8,32,16,0,4", "8,64,8,8,32,16,0,4",
    "64,32,8,8,32,16,0,4", "16,64,8,8,32,16,0,4", "12,16,8,12,16,16,0,4", "24,16,8,12,16,16,0,4",
    "48,16,8,12,16,16,0,4", "16,16,8,16,16,16,0,4", "64,16,8,16,16,16,0,4", "4,64,8,4,64,16,0,4",
    "16,64,8,4,64,16,0,4", "2,64,8,2,64,16,0,4", "8,16,8,8,16,16,0,4", "32,16,8,8,16,16,0,4",
    "6,32,8,6,32,16,0,4", "8,32,8,8,32,16,0,8", "12,16,8,12,16,16,0,8", "8,64,8,8,32,16,0,8",
    "8,32,8,8,32,8,0,4", "8,16,8,8,16,8,0,4", "8,8,8,8,8,8,0,4", "4,16,8,4,16,16,0,4",
    "4,8,4,4,8,8,0,4", "4,4,4,4,4,4,0,4", "2,2,4,2,2,2,0,4", "1,1,4,1,1,1,0,4",
]
_GPU_STYLE = [
    "128,128,8,16,8,4,1,8", "128,128,8,8,8,4,1,8", "128,128,8,8,16,4,1,8", "128,64,8,8,8,4,1,8",
    "128,64,16,8,8,4,1,16", "64,64,16,4,8,4,1,16", "64,64,8,4,4,4,1,8", "64,64,8,8,8,4,1,8",
    "128,128,16,8,8,4,1,16", "64,128,8,8,8,4,1,8", "64,64,16,4,4,4,1,16", "128,128,16,8,8,8,1,16",
    "256,128,8,16,8,4,1,8", "128,256,8,8,16,4,1,8", "32,64,8,4,4,4,1,8", "64,32,16,4,4,4,1,16",
    "32,32,8,4,4,4,1,8", "32,32,16,2,4,4,1,16", "64,64,16,8,4,4,1,16", "128,32,16,8,4,4,1,16",
    "32,128,16,4,8,4,1,16", "64,128,16,4,8,4,1,16", "16,64,16,2,4,4,1,16", "32,32,16,2,2,1,1,16",
    "16,16,8,1,1,1,1,8", "8,8,8,1,1,1,1,8",
]
# tensor-core solutions (MatrixCore=1), first in the GPU list: only a device with NVIDIA mma.sync and a
# problem of f16 or bf16 operands keep them (measured on an H200; BENCHMARKS.md "Tensor cores")
_MMA_STYLE = [
    "128,128,32,64,32,8,1,2,2", "128,128,32,32,64,8,1,2,2", "128,128,32,64,64,8,1,2,2",
    "128,256,16,64,64,8,1,1,2", "256,128,16,64,64,8,1,1,2", "128,128,16,64,32,8,1,1,2",
    "64,128,32,32,32,8,1,2,2", "128,64,32,32,32,8,1,2,2", "64,64,32,32,32,8,1,2,2", "32,32,32,16,16,8,1,2,2",
    "128,128,32,64,32,8,1,2,1", "128,128,32,32,64,8,1,2,1", "64,64,32,32,32,8,1,2,1",
]
_QUICK_GEMM = {
    "cpu": _CPU_STYLE + ["64,64,16,4,8,4,1,16", "64,64,8,4,4,4,1,8", "32,32,8,4,4,4,1,8",
                         "128,64,8,8,8,4,1,8", "128,128,8,8,8,4,1,8", "16,16,8,1,1,1,1,8",
                         "32,32,16,2,2,1,1,16", "128,128,8,16,8,4,1,8"],
    "gpu": _MMA_STYLE + _GPU_STYLE + ["8,32,8,8,32,16,0,4", "32,32,8,8,32,16,0,4", "12,16,8,12,16,16,0,4",
                         "8,8,8,8,8,8,0,4", "4,16,8,4,16,16,0,4", "4,8,4,4,8,8,0,4", "4,4,4,4,4,4,0,4",
                         "2,2,4,2,2,2,0,4", "1,1,4,1,1,1,0,4", "16,64,8,4,64,16,0,4"],
}

_QUICK_POINTWISE = ["64,1,16", "64,4,16", "16,4,16", "256,1,4", "256,2,4", "64,2,8", "64,1,1", "256,1,1",
                    "1,8,16", "16,1,4", "64,1,2", "1,1,1"]
_QUICK_ATTENTION = ["16,64,8", "16,32,8", "64,16,8", "64,8,8", "128,8,8", "32,4,4", "64,64,8", "64,128,8",
                    "16,16,4", "4,8,8", "1,1,1", "8,2,1", "256,4,4", "16,128,8", "32,256,8", "1,64,8", "1,16,8",
                    "2,128,8", "2,32,8", "4,64,8", "4,16,4", "1,32,8", "1,8,8", "1,4,4", "1,2,1"]
# attention on tensor cores (MatrixCore=1), first: only a device with NVIDIA mma.sync keeps them
_QUICK_ATTENTION_MMA = ["64,64,1,1", "64,32,1,1", "128,64,1,1", "32,64,1,1", "128,32,1,1", "64,128,1,1",
                        "32,32,1,1", "16,64,1,1", "16,32,1,1", "16,16,1,1", "64,64,2,1", "128,64,2,1"]
_QUICK_REDUCE = ["1,1,16,4", "4,1,16,4", "16,1,16,1", "1,16,16,1", "1,64,4,4", "1,256,4,1", "4,64,4,1",
                 "16,16,1,4", "64,1,1,4", "1,1,1,4", "4,16,4,4", "1,256,1,1", "16,4,8,1", "1,1,4,1"]


def quick_list(problem: Problem, limits=None) -> list[Solution]:
    """A few dozen solutions chosen to contain a fast one on both CPU and GPU (applicable ones only)."""
    kind = problem.kind
    if kind == "gemm":
        dev = "gpu" if _limit(limits, "kind", "cpu") == "gpu" else "cpu"
        raw = [Solution.parse("gemm", s) for s in _QUICK_GEMM[dev]]
        fit = [s for s in raw if is_applicable(problem, s, limits)]
        if len(fit) < 8:
            fit = _uniq(fit + [s for s in _small_gemm(problem) if is_applicable(problem, s, limits)]
                        + [s for s in space(problem, limits)][: 16 - len(fit)])
    else:
        table = {"pointwise": _QUICK_POINTWISE,
                 "attention": _QUICK_ATTENTION_MMA + _QUICK_ATTENTION}.get(kind, _QUICK_REDUCE)
        fit = [Solution.parse(kind, s) for s in table]
        fit = [s for s in fit if is_applicable(problem, s, limits)]
        if not fit:
            fit = space(problem, limits)[:8]
    return _uniq(fit)


def default_solution(problem: Problem, limits=None) -> Solution:
    """A reasonable solution without tuning (the first applicable of a per-device preference list)."""
    limits = limits or DEFAULT_LIMITS
    gpu = _limit(limits, "kind", "cpu") == "gpu"
    big = problem.g * problem.m * problem.n >= 1 << 22
    half = problem.dtype in ("f16", "bf16")
    prefs = {
        ("gemm", False): (["8,64,8,8,32,16,0,8", "8,32,8,8,32,16,0,8"] if half
                          else ["16,32,8,8,32,16,0,4", "8,32,8,8,32,16,0,4"])
        + ["12,16,8,12,16,16,0,4", "8,8,8,8,8,8,0,4", "4,4,4,4,4,4,0,4", "1,1,4,1,1,1,0,4"],
        ("gemm", True): (["128,128,32,64,32,8,1,2,2"] if big else ["64,64,32,32,32,8,1,2,2"])
        + (["128,128,8,16,8,4,1,8"] if big else ["64,64,16,4,8,4,1,16"])
        + ["64,64,8,4,4,4,1,8", "32,32,8,4,4,4,1,8", "16,16,8,1,1,1,1,8"],
        ("pointwise", False): ["64,1,16", "64,1,4", "64,1,1"],
        ("pointwise", True): ["256,1,4", "256,1,1"],
        ("reduce", False): ["4,1,16,4", "4,1,4,4", "4,1,1,4"],
        ("reduce", True): ["1,256,4,1", "1,256,1,1"],
        ("attention", False): ["16,64,8", "16,32,8", "16,16,8", "16,4,4", "4,64,8", "2,64,8", "1,64,8",
                               "1,16,4", "1,1,1"],
        ("attention", True): ["64,64,1,1", "32,32,1,1", "16,16,1,1",
                              "64,8,8", "64,4,4", "64,1,1", "4,8,8", "2,8,8", "1,8,8", "1,1,1"],
    }
    key = (problem.kind if problem.kind != "softmax" else "reduce", gpu)
    for text in prefs[key]:
        s = Solution.parse(problem.kind, text)
        if is_applicable(problem, s, limits):
            return s
    q = quick_list(problem, limits)
    if not q:
        raise NotApplicable(f"no applicable solution for {problem.key()} on {limits}")
    return q[0]
