#!/usr/bin/env python
"""Probe: how fast can a tensor-core GEMM written in OpenCL C go on NVIDIA, with ``cp.async`` stages and
swizzled local tiles?  (issue 19: the step after ``probe_mma.py``; not a code-generator kind.)

    python3 benchmarks/probe_mma_async.py [--size 4096] [--check 512] [--variants 128x128x32/64x32/2,...]
    python3 benchmarks/probe_mma_async.py --emulate      # any OpenCL device (PoCL): check the indexing only

Each variant ``BMxBNxBK/WMxWN/STAGES`` is one kernel: a work-group computes a BM x BN block of C (f32) =
A (M x K f16, row-major) x B (K x N f16, row-major) with (BM/WM) x (BN/WN) warps, each a WM x WN tile of
m16n8k16 ``mma.sync``s whose fragments come through ``ldmatrix``.  Tiles reach local memory through
``cp.async.cg`` (16 bytes a work-item, no registers), STAGES of them in flight; rows are not padded but their
16-byte chunks are XOR-swizzled, so that ``ldmatrix``'s eight row addresses fall in eight different banks
and STAGES x (BM + BN) x BK halves fit NVIDIA OpenCL's 48 KB of local memory.

``--emulate`` swaps the three PTX pieces for plain OpenCL C (a 16-byte copy, ldmatrix and mma through a
warp's local scratch), so the tiles, swizzles and fragment maps are checked against numpy on PoCL before
any GPU time is spent.  Also: does the compiler take Hopper's ``wgmma`` (sm_90a), and which PTX target does
it emit?

It runs OpenCL in this process: a probe script, never run by the tests.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import torch_ms  # noqa: E402

PTX = r"""
inline void cp16(__local ushort *dst, __global const ushort *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((uint)(ulong)dst), "l"((ulong)src) : "memory");
}
#define COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define WAIT_STR2(n) #n
#define WAIT_STR(n) WAIT_STR2(n)
#define WAIT() asm volatile("cp.async.wait_group " WAIT_STR(WAITN) ";" ::: "memory")
inline void ldsm_x4(uint *r, __local const ushort *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((uint)(ulong)p) : "memory");
}
inline void ldsm_x4_t(uint *r, __local const ushort *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"((uint)(ulong)p) : "memory");
}
inline void mma(float *d, const uint *a, uint b0, uint b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#define LDSM(r, p) ldsm_x4(r, p)
#define LDSMT(r, p) ldsm_x4_t(r, p)
#define MMA(d, a, b0, b1) mma(d, a, b0, b1)
"""

# the same three pieces in plain OpenCL C: a warp's lanes meet in local scratch (``emu``: 32 addresses, then
# the 16x16 A and 16x8 B of one mma as floats)
EMU = r"""
inline float h2f(ushort h) {
  uint s = (uint)(h >> 15), e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexp((float)m, -24) : ldexp((float)(m | 1024), (int)e - 25);
  return s ? -v : v;
}
inline void cp16(__local ushort *dst, __global const ushort *src) {
  for (int i = 0; i < 8; ++i) dst[i] = src[i];
}
#define COMMIT()
#define WAIT() barrier(CLK_LOCAL_MEM_FENCE)
inline void ldsm_any(uint *r, __local const ushort *p, int trans, __local const ushort *base,
                     __local int *s, int lane) {
  const int g = lane >> 2, t = lane & 3;
  s[lane] = (int)(p - base);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int q = 0; q < 4; ++q) {
    const int lo = trans ? s[q * 8 + t * 2] + g : s[q * 8 + g] + t * 2;
    const int hi = trans ? s[q * 8 + t * 2 + 1] + g : s[q * 8 + g] + t * 2 + 1;
    r[q] = (uint)base[lo] | ((uint)base[hi] << 16);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
inline void mma_emu(float *d, const uint *a, uint b0, uint b1, __local float *s, int lane) {
  const int g = lane >> 2, t = lane & 3;
  __local float *A = s, *B = s + 256;
  for (int r = 0; r < 4; ++r) for (int h = 0; h < 2; ++h)
    A[(g + (r & 1) * 8) * 16 + (r >> 1) * 8 + t * 2 + h] = h2f((ushort)(a[r] >> (16 * h)));
  for (int h = 0; h < 2; ++h) {
    B[(t * 2 + h) * 8 + g] = h2f((ushort)(b0 >> (16 * h)));
    B[(t * 2 + 8 + h) * 8 + g] = h2f((ushort)(b1 >> (16 * h)));
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int e = 0; e < 4; ++e) {
    const int r = g + (e >> 1) * 8, c = t * 2 + (e & 1);
    float sum = 0.f;
    for (int k = 0; k < 16; ++k) sum += A[r * 16 + k] * B[k * 8 + c];
    d[e] += sum;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#define LDSM(r, p) ldsm_any(r, p, 0, smem, emi + warp * 32, lane)
#define LDSMT(r, p) ldsm_any(r, p, 1, smem, emi + warp * 32, lane)
#define MMA(d, a, b0, b1) mma_emu(d, a, b0, b1, emf + warp * 384, lane)
"""

KERNEL = r"""
/* A tile: BM rows of BK halves (BK/8 chunks); chunk c of row r lives at chunk c ^ ((r >> ASH) & (BK/8 - 1)).
   B tile: BK rows of BN halves; chunk c of row r at c ^ (r & 7). */
#define ACH (BK / 8)
#define BCH (BN / 8)
#define AOFF(r, c) ((r) * BK + (((c) ^ (((r) >> ASH) & (ACH - 1))) << 3))
#define BOFF(r, c) ((r) * BN + (((c) ^ ((r) & 7)) << 3))
#define TI (WM / 16)
#define TJ (WN / 8)
#define NT ((BM / WM) * (BN / WN) * 32)
#define ASZ (BM * BK)
#define BSZ (BK * BN)

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm(__global const ushort *A, __global const ushort *B, __global float *C, int M, int N, int K)
{
  __local ushort smem[STAGES * (ASZ + BSZ)] __attribute__((aligned(128)));
#ifdef EMULATE
  __local int emi[NT];
  __local float emf[NT / 32 * 384];
#endif
  const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
  float acc[TI][TJ][4];
  #pragma unroll
  for (int i = 0; i < TI; ++i)
    #pragma unroll
    for (int j = 0; j < TJ; ++j) { acc[i][j][0] = 0.f; acc[i][j][1] = 0.f; acc[i][j][2] = 0.f; acc[i][j][3] = 0.f; }
  const int KT = K / BK;

#define LOAD_TILE(kt, st) do { \
    __local ushort *As_ = smem + (st) * (ASZ + BSZ), *Bs_ = As_ + ASZ; \
    const int k0_ = (kt) * BK; \
    _Pragma("unroll") for (int c = tid; c < BM * ACH; c += NT) { \
      const int r = c / ACH, q = c % ACH; \
      cp16(As_ + AOFF(r, q), A + (size_t)(m0 + r) * K + k0_ + q * 8); } \
    _Pragma("unroll") for (int c = tid; c < BK * BCH; c += NT) { \
      const int r = c / BCH, q = c % BCH; \
      cp16(Bs_ + BOFF(r, q), B + (size_t)(k0_ + r) * N + n0 + q * 8); } \
  } while (0)

  #pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) LOAD_TILE(s, s);
    COMMIT();
  }
  for (int kt = 0; kt < KT; ++kt) {
    WAIT();
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      const int nk = kt + STAGES - 1;
      if (nk < KT) LOAD_TILE(nk, nk % STAGES);
      COMMIT();
    }
    __local const ushort *As = smem + (kt % STAGES) * (ASZ + BSZ), *Bs = As + ASZ;
    #pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint a[TI][4], b[TJ][2];
      #pragma unroll
      for (int i = 0; i < TI; ++i) {
        const int r = wm * WM + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int q = (kk >> 3) + (lane >> 4);
        LDSM(a[i], As + AOFF(r, q));
      }
      #pragma unroll
      for (int j = 0; j < TJ; j += 2) {
        const int k = kk + (lane & 7) + ((lane >> 3) & 1) * 8;
        const int q = (wn * WN >> 3) + j + (lane >> 4);
        uint t4[4];
        LDSMT(t4, Bs + BOFF(k, q));
        b[j][0] = t4[0]; b[j][1] = t4[1]; b[j + 1][0] = t4[2]; b[j + 1][1] = t4[3];
      }
      #pragma unroll
      for (int i = 0; i < TI; ++i)
        #pragma unroll
        for (int j = 0; j < TJ; ++j)
          MMA(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  const int g = lane >> 2, t = lane & 3;
  #pragma unroll
  for (int i = 0; i < TI; ++i)
    #pragma unroll
    for (int j = 0; j < TJ; ++j) {
      const int row = m0 + wm * WM + i * 16 + g, col = n0 + wn * WN + j * 8 + t * 2;
      *(__global float2 *)(C + (size_t)row * N + col) = (float2)(acc[i][j][0], acc[i][j][1]);
      *(__global float2 *)(C + (size_t)(row + 8) * N + col) = (float2)(acc[i][j][2], acc[i][j][3]);
    }
}
"""

WGMMA = r"""
__kernel void wg(__global float *x) {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  x[0] = 1.f;
}
"""


def parse_variant(v: str) -> dict:
    blk, warp, st = v.split("/")
    bm, bn, bk = (int(x) for x in blk.split("x"))
    wm, wn = (int(x) for x in warp.split("x"))
    return dict(BM=bm, BN=bn, BK=bk, WM=wm, WN=wn, STAGES=int(st))


def options(p: dict, emulate: bool) -> list[str]:
    ash = {32: 1, 64: 0, 16: 2}[p["BK"]]      # rows per 128-byte line: 64 / BK, as a shift
    opts = [f"-D{k}={v}" for k, v in p.items()] + [f"-DASH={ash}", f"-DWAITN={p['STAGES'] - 2}"]
    return opts + (["-DEMULATE"] if emulate else [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--check", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", default="128x128x32/64x32/2,128x128x32/64x32/3,128x128x32/64x64/3,"
                                          "128x256x32/64x64/2,256x128x32/64x64/2,128x128x64/64x32/2")
    ap.add_argument("--emulate", action="store_true", help="plain OpenCL C for the PTX, any device")
    args = ap.parse_args()
    from pytest_mlirtrace._internal.runtime import ensure_opencl_env
    ensure_opencl_env()
    import pyopencl as cl

    plats = cl.get_platforms()
    want = "Portable" if args.emulate else "NVIDIA"
    devs = [d for p in plats for d in p.get_devices() if want in p.name]
    if not devs:
        print(f"no {want} OpenCL device")
        return 2
    dev = devs[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"device: {dev.name}, driver {dev.driver_version}, {dev.version}, local memory "
          f"{dev.local_mem_size // 1024} KB")
    if not args.emulate:
        try:
            prg = cl.Program(ctx, WGMMA).build()
            print("wgmma.fence: BUILT (sm_90a instructions taken)")
        except cl.Error as e:
            print("wgmma.fence: not taken:", " ".join(str(e).split())[:400])
        try:
            prg = cl.Program(ctx, "__kernel void z(__global int *x) { x[0] = 1; }").build()
            ptx = prg.get_info(cl.program_info.BINARIES)[0].decode(errors="replace")
            print("PTX header:", [ln for ln in ptx.splitlines() if ln.startswith((".version", ".target"))])
        except Exception as e:  # noqa: BLE001 - a probe: say what happened
            print("no PTX binary:", e)
    mf = cl.mem_flags
    rng = np.random.default_rng(0)
    src = (EMU if args.emulate else PTX) + KERNEL

    def launch(knl, p, s):
        nt = (p["BM"] // p["WM"]) * (p["BN"] // p["WN"]) * 32
        return cl.enqueue_nd_range_kernel(q, knl, (s // p["BN"] * nt, s // p["BM"]), (nt, 1))

    def setup(prg, s):
        A = (rng.standard_normal((s, s)) * 0.5).astype(np.float16)
        B = (rng.standard_normal((s, s)) * 0.5).astype(np.float16)
        bufs = (cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A.view(np.uint16)),
                cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B.view(np.uint16)),
                cl.Buffer(ctx, mf.WRITE_ONLY, s * s * 4))
        knl = cl.Kernel(prg, "gemm")
        knl.set_args(*bufs, np.int32(s), np.int32(s), np.int32(s))
        return A, B, bufs, knl

    results = []
    for v in args.variants.split(","):
        p = parse_variant(v)
        smem = p["STAGES"] * (p["BM"] + p["BN"]) * p["BK"] * 2
        print(f"-- {v}: {(p['BM'] // p['WM']) * (p['BN'] // p['WN'])} warps, {smem // 1024} KB local", flush=True)
        try:
            prg = cl.Program(ctx, src).build(options=options(p, args.emulate))
        except cl.Error as e:
            print("   BUILD FAILED:", " ".join(str(e).split())[:1500])
            continue
        s = args.check
        A, B, bufs, knl = setup(prg, s)
        try:
            launch(knl, p, s).wait()
        except cl.Error as e:
            print("   LAUNCH FAILED:", e)
            continue
        got = np.empty((s, s), np.float32)
        cl.enqueue_copy(q, got, bufs[2])
        ref = A.astype(np.float32) @ B.astype(np.float32)
        rel = float(np.abs(got - ref).max() / np.abs(ref).max())
        ok = rel < 1e-3
        print(f"   {s}^3 vs numpy: max |diff| / max |C| = {rel:.3g} ({'ok' if ok else 'WRONG'})", flush=True)
        if args.emulate or not ok:
            continue
        s = args.size
        A, B, bufs, knl = setup(prg, s)
        ts = []
        for _ in range(args.repeats + 2):
            ev = launch(knl, p, s)
            ev.wait()
            ts.append((ev.profile.end - ev.profile.start) * 1e-6)
        t = statistics.median(ts[2:])
        results.append((t, v))
        print(f"   {s}^3: {t:.3f} ms = {2 * s ** 3 / t / 1e9:.1f} TFLOP/s", flush=True)
    if results and not args.emulate:
        try:
            import torch
            ta, tb = torch.randn(args.size, args.size, dtype=torch.float16, device="cuda"), \
                torch.randn(args.size, args.size, dtype=torch.float16, device="cuda")
            tm = torch_ms(lambda: torch.matmul(ta, tb), repeats=args.repeats)
            print(f"torch.matmul f16 {args.size}^3: {tm:.3f} ms = {2 * args.size ** 3 / tm / 1e9:.1f} TFLOP/s")
            for t, v in sorted(results):
                print(f"   {v}: {t:.3f} ms, {tm / t * 100:.0f}% of torch")
        except Exception as e:  # noqa: BLE001 - a probe: say why there is no comparison
            print(f"(no torch comparison: {type(e).__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
