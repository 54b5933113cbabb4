#!/usr/bin/env python
"""Probe: does NVIDIA's OpenCL compiler take inline PTX ``mma.sync`` (tensor cores), and how fast is a first,
plain use of it? (issue 19: groundwork for tensor-core solutions; not yet a code-generator kind.)

    python3 benchmarks/probe_mma.py [--size 4096] [--check 512]

1. One 16x8x16 f16 tile through ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``, checked against numpy.
2. Two plain GEMM kernels built on it, each checked against numpy at ``--check`` and timed at ``--size``
   against torch's f16 matmul on the same GPU (CUDA events), if torch is there: ``gemm_mma``, one warp per
   32x32 block of C with fragments loaded straight from global memory; ``gemm_smem``, 128x128 blocks of 8
   warps through shared-memory tiles (no ldmatrix, no cp.async, no double buffering).

It runs OpenCL in this process: a probe script, never run by the tests. The OpenCL platform comes from
``runtime.ensure_opencl_env`` (runtime/opencl_env/icd_files.py) (which writes the NVIDIA ICD file).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MMA = ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, '
       '{%8,%9}, {%0,%1,%2,%3};" : "+f"(D[0]), "+f"(D[1]), "+f"(D[2]), "+f"(D[3]) : "r"(A0), "r"(A1), '
       '"r"(A2), "r"(A3), "r"(B0), "r"(B1));')

SOURCE = r"""
#define H(p, i) ((uint)(p)[i])
#define PAIR(p, i, j) (H(p, i) | (H(p, j) << 16))

/* D (16x8 f32) += A (16x16 f16, row-major) x B (16x8 f16, k-major): the fragment layout of PTX's m16n8k16 */
inline void mma_tile(float *D, uint A0, uint A1, uint A2, uint A3, uint B0, uint B1)
{
    MMA_ASM
}

__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void one_tile(__global const ushort *A, __global const ushort *B, __global float *C)
{
    int lane = get_local_id(0), g = lane >> 2, t = lane & 3;
    float D[4] = {0.f, 0.f, 0.f, 0.f};
    mma_tile(D,
             PAIR(A, g * 16 + t * 2, g * 16 + t * 2 + 1), PAIR(A, (g + 8) * 16 + t * 2, (g + 8) * 16 + t * 2 + 1),
             PAIR(A, g * 16 + t * 2 + 8, g * 16 + t * 2 + 9),
             PAIR(A, (g + 8) * 16 + t * 2 + 8, (g + 8) * 16 + t * 2 + 9),
             PAIR(B, (t * 2) * 8 + g, (t * 2 + 1) * 8 + g), PAIR(B, (t * 2 + 8) * 8 + g, (t * 2 + 9) * 8 + g));
    C[g * 8 + t * 2] = D[0];
    C[g * 8 + t * 2 + 1] = D[1];
    C[(g + 8) * 8 + t * 2] = D[2];
    C[(g + 8) * 8 + t * 2 + 1] = D[3];
}

/* C (MxN f32) = A (MxK f16 row-major) x B (KxN f16 row-major); one warp per 32x32 block of C */
__kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void gemm_mma(__global const ushort *A, __global const ushort *B, __global float *C, int M, int N, int K)
{
    int lane = get_local_id(0), g = lane >> 2, t = lane & 3;
    int m0 = get_group_id(1) * 32, n0 = get_group_id(0) * 32;
    float acc[2][4][4];
    for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
    for (int k = 0; k < K; k += 16) {
        uint a[2][4], b[4][2];
        for (int i = 0; i < 2; i++) {
            int r0 = m0 + i * 16 + g, r1 = r0 + 8, c0 = k + t * 2, c1 = c0 + 8;
            a[i][0] = PAIR(A, r0 * K + c0, r0 * K + c0 + 1);
            a[i][1] = PAIR(A, r1 * K + c0, r1 * K + c0 + 1);
            a[i][2] = PAIR(A, r0 * K + c1, r0 * K + c1 + 1);
            a[i][3] = PAIR(A, r1 * K + c1, r1 * K + c1 + 1);
        }
        for (int j = 0; j < 4; j++) {
            int n = n0 + j * 8 + g, k0 = k + t * 2, k1 = k0 + 8;
            b[j][0] = PAIR(B, k0 * N + n, (k0 + 1) * N + n);
            b[j][1] = PAIR(B, k1 * N + n, (k1 + 1) * N + n);
        }
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                mma_tile(acc[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]);
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            int r = m0 + i * 16 + g, c = n0 + j * 8 + t * 2;
            C[r * N + c] = acc[i][j][0];
            C[r * N + c + 1] = acc[i][j][1];
            C[(r + 8) * N + c] = acc[i][j][2];
            C[(r + 8) * N + c + 1] = acc[i][j][3];
        }
}

/* the same with shared-memory tiles: a 128x128 block of C per work-group of 8 warps (2 x 4), each warp 64x32
   (4 x 4 mma tiles), K in steps of 32; A's tile row-major, B's stored transposed (n-major) so that each
   fragment register is one aligned 32-bit load. Needs M, N % 128 == 0, K % 32 == 0. */
#define BM 128
#define BN 128
#define BK 32
#define PAD 8
/* the 128x128-block kernels' common parts: a warp (wm, wn) holds a 64x32 block of C as 4 x 4 mma tiles */
#define ZERO_4X4(acc) \
    for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f
#define A_FRAGS(a, As, kk) \
    for (int i = 0; i < 4; i++) { \
        int r = wm * 64 + i * 16 + g, c0 = (kk) + t * 2; \
        a[i][0] = *(__local uint *)&As[r][c0]; \
        a[i][1] = *(__local uint *)&As[r + 8][c0]; \
        a[i][2] = *(__local uint *)&As[r][c0 + 8]; \
        a[i][3] = *(__local uint *)&As[r + 8][c0 + 8]; \
    }
#define MMA_4X4(acc, a, b) \
    for (int i = 0; i < 4; i++) \
        for (int j = 0; j < 4; j++) \
            mma_tile(acc[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1])
#define STORE_4X4(acc) \
    for (int i = 0; i < 4; i++) \
        for (int j = 0; j < 4; j++) { \
            int r = m0 + wm * 64 + i * 16 + g, c = n0 + wn * 32 + j * 8 + t * 2; \
            vstore2((float2)(acc[i][j][0], acc[i][j][1]), 0, C + (size_t)r * N + c); \
            vstore2((float2)(acc[i][j][2], acc[i][j][3]), 0, C + (size_t)(r + 8) * N + c); \
        }
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemm_smem(__global const ushort *A, __global const ushort *B, __global float *C, int M, int N, int K)
{
    __local ushort As[BM][BK + PAD] __attribute__((aligned(16)));
    __local ushort Bt[BN][BK + PAD] __attribute__((aligned(16)));
    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    int wm = warp >> 2, wn = warp & 3;                 /* warp's 64x32 place in the block */
    int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    float acc[4][4][4];
    ZERO_4X4(acc);
    for (int k = 0; k < K; k += BK) {
        /* A: 128 rows x 32 halves = 512 chunks of 8 halves, 2 per thread */
        for (int c = tid; c < BM * BK / 8; c += 256) {
            int r = c / (BK / 8), col = (c % (BK / 8)) * 8;
            uint4 v = vload4(0, (__global const uint *)(A + (size_t)(m0 + r) * K + k + col));
            __local uint *d = (__local uint *)&As[r][col];
            d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
        }
        /* B: 32 rows (k) x 128 halves (n), stored transposed */
        for (int c = tid; c < BK * BN / 8; c += 256) {
            int kr = c / (BN / 8), col = (c % (BN / 8)) * 8;
            uint4 v = vload4(0, (__global const uint *)(B + (size_t)(k + kr) * N + n0 + col));
            uint w[4] = {v.x, v.y, v.z, v.w};
            for (int e = 0; e < 4; e++) {
                Bt[col + 2 * e][kr] = (ushort)(w[e] & 0xffff);
                Bt[col + 2 * e + 1][kr] = (ushort)(w[e] >> 16);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < BK; kk += 16) {
            uint a[4][4], b[4][2];
            A_FRAGS(a, As, kk);
            for (int j = 0; j < 4; j++) {
                int n = wn * 32 + j * 8 + g, k0 = kk + t * 2;
                b[j][0] = *(__local uint *)&Bt[n][k0];
                b[j][1] = *(__local uint *)&Bt[n][k0 + 8];
            }
            MMA_4X4(acc, a, b);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    STORE_4X4(acc);
}

/* gemm_smem with B kept row-major in shared memory (no transposing scatter, whose stores all fell in one
   bank: b fragments are built from two 16-bit loads instead) and the next K tile loaded from global memory
   into registers while the current one is multiplied (one shared buffer, two barriers a step) */
#define BNP (BN + PAD)
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemm_smem2(__global const ushort *A, __global const ushort *B, __global float *C, int M, int N, int K)
{
    __local ushort As[BM][BK + PAD] __attribute__((aligned(16)));
    __local ushort Bs[BK][BNP] __attribute__((aligned(16)));
    int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    int wm = warp >> 2, wn = warp & 3;
    int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    float acc[4][4][4];
    ZERO_4X4(acc);
    /* this thread's two 8-half chunks of A's tile and of B's tile */
    int ar0 = tid / 4, ac = (tid % 4) * 8, ar1 = ar0 + 64;
    int bk0 = tid / 16, bc = (tid % 16) * 8, bk1 = bk0 + 16;
    uint4 pa0 = vload4(0, (__global const uint *)(A + (size_t)(m0 + ar0) * K + ac));
    uint4 pa1 = vload4(0, (__global const uint *)(A + (size_t)(m0 + ar1) * K + ac));
    uint4 pb0 = vload4(0, (__global const uint *)(B + (size_t)bk0 * N + n0 + bc));
    uint4 pb1 = vload4(0, (__global const uint *)(B + (size_t)bk1 * N + n0 + bc));
    for (int k = 0; k < K; k += BK) {
        *(__local uint4 *)&As[ar0][ac] = pa0;
        *(__local uint4 *)&As[ar1][ac] = pa1;
        *(__local uint4 *)&Bs[bk0][bc] = pb0;
        *(__local uint4 *)&Bs[bk1][bc] = pb1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k + BK < K) {
            int kn = k + BK;
            pa0 = vload4(0, (__global const uint *)(A + (size_t)(m0 + ar0) * K + kn + ac));
            pa1 = vload4(0, (__global const uint *)(A + (size_t)(m0 + ar1) * K + kn + ac));
            pb0 = vload4(0, (__global const uint *)(B + (size_t)(kn + bk0) * N + n0 + bc));
            pb1 = vload4(0, (__global const uint *)(B + (size_t)(kn + bk1) * N + n0 + bc));
        }
        for (int kk = 0; kk < BK; kk += 16) {
            uint a[4][4], b[4][2];
            A_FRAGS(a, As, kk);
            for (int j = 0; j < 4; j++) {
                int n = wn * 32 + j * 8 + g, k0 = kk + t * 2;
                b[j][0] = (uint)Bs[k0][n] | ((uint)Bs[k0 + 1][n] << 16);
                b[j][1] = (uint)Bs[k0 + 8][n] | ((uint)Bs[k0 + 9][n] << 16);
            }
            MMA_4X4(acc, a, b);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    STORE_4X4(acc);
}
""".replace("MMA_ASM", MMA)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--check", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--kernels", default="gemm_mma,gemm_smem,gemm_smem2")
    args = ap.parse_args()
    from pytest_mlirtrace._internal.runtime import ensure_opencl_env
    ensure_opencl_env()
    import pyopencl as cl

    devs = [d for p in cl.get_platforms() for d in p.get_devices() if "NVIDIA" in p.name]
    if not devs:
        print("no NVIDIA OpenCL device")
        return 2
    dev = devs[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"device: {dev.name}, driver {dev.driver_version}, {dev.version}")
    try:
        prg = cl.Program(ctx, SOURCE).build()
    except cl.Error as e:
        print("BUILD FAILED: inline PTX mma.sync is not taken\n", str(e)[:3000])
        return 1
    mf = cl.mem_flags
    rng = np.random.default_rng(0)

    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = np.empty((16, 8), np.float32)
    ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a.view(np.uint16))
    bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b.view(np.uint16))
    cb = cl.Buffer(ctx, mf.WRITE_ONLY, c.nbytes)
    prg.one_tile(q, (32,), (32,), ab, bb, cb)
    cl.enqueue_copy(q, c, cb)
    want = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(c - want).max())
    print(f"1. one m16n8k16 tile: max |diff| vs numpy {err:.3g} ({'ok' if err < 1e-2 else 'WRONG'})")

    def block128(s):        # 8 warps per 128x128 block of C
        return (s // 128 * 256, s // 128), (256, 1)
    # name -> (global size, local size) for an s x s x s problem
    kernels = {"gemm_mma": (lambda s: ((s, s // 32), (32, 1))), "gemm_smem": block128, "gemm_smem2": block128}

    def gemm(name, s):
        A = (rng.standard_normal((s, s)) * 0.5).astype(np.float16)
        B = (rng.standard_normal((s, s)) * 0.5).astype(np.float16)
        Cb = cl.Buffer(ctx, mf.WRITE_ONLY, s * s * 4)
        Ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A.view(np.uint16))
        Bb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B.view(np.uint16))
        knl = cl.Kernel(prg, name)
        knl.set_args(Ab, Bb, Cb, np.int32(s), np.int32(s), np.int32(s))
        return A, B, Cb, knl, (Ab, Bb)      # the buffers must outlive the launches

    best = None
    for name in args.kernels.split(","):
        geom = kernels[name]
        print(f"-- {name}", flush=True)
        s = args.check
        A, B, Cb, knl, _held = gemm(name, s)
        cl.enqueue_nd_range_kernel(q, knl, *geom(s)).wait()
        got = np.empty((s, s), np.float32)
        cl.enqueue_copy(q, got, Cb)
        want = A.astype(np.float32) @ B.astype(np.float32)
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        print(f"2. {name} {s}^3: max |diff| / max |C| = {rel:.3g} ({'ok' if rel < 1e-3 else 'WRONG'})")
        s = args.size
        A, B, Cb, knl, _held = gemm(name, s)
        times = []
        for _ in range(args.repeats + 1):
            ev = cl.enqueue_nd_range_kernel(q, knl, *geom(s))
            ev.wait()
            times.append((ev.profile.end - ev.profile.start) * 1e-6)
        t = statistics.median(times[1:])
        print(f"   {name} {s}^3 f16 -> f32: {t:.3f} ms = {2 * s ** 3 / t / 1e9:.1f} TFLOP/s")
        if rel < 1e-3 and (best is None or t < best):
            best = t
    ours = best if best is not None else float("nan")
    try:
        import torch
        ta = torch.from_numpy(A).cuda()
        tb = torch.from_numpy(B).cuda()
        ts = []
        for _ in range(args.repeats + 1):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.matmul(ta, tb)
            e1.record()
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1))
        tm = statistics.median(ts[1:])
        print(f"   torch.matmul f16 {s}^3: {tm:.3f} ms = {2 * s ** 3 / tm / 1e9:.1f} TFLOP/s; ours/torch = "
              f"{ours / tm:.2f}x the time ({tm / ours * 100:.0f}% of torch)")
    except Exception as e:   # noqa: BLE001 - a probe: say why there is no comparison
        print(f"   (no torch comparison: {type(e).__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
