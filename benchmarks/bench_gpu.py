"""Fused kernels on an OpenCL GPU against torch (cuBLAS) on the same GPU, in one run.

    python benchmarks/bench_gpu.py [--device nvidia] [--size 4096] [--out results.json]

1. dot at size³ f32: our fastest quick-list solution vs torch.matmul fp32 with TF32 off (cuBLAS SGEMM).
2. the seed's fused op at that size (transpose -> reshape -> dot -> add, k = heads*64): our one fused
   kernel vs torch's unfused transpose + reshape (a copy) + matmul + add.
3. f16 and bf16: our kernels (16-bit in memory; on tensor cores through inline PTX mma.sync where the device
   has it, else f32 arithmetic) vs torch's matmul of that type (tensor cores) and vs torch fp32 on the same
   data.  Each tune prints its fastest tensor-core (MatrixCore=1) and FMA solutions side by side.
Our times are OpenCL profiling-event kernel times (median of repeats); torch's are CUDA-event times
(median of repeats). Needs torch with CUDA and an OpenCL GPU (on NVIDIA the runtime adds the ICD).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))

from _common import seed_module, torch_ms  # noqa: E402

from pytest_mlirtrace._internal.engine import Pipeline, TuningDatabase  # noqa: E402
from pytest_mlirtrace._internal.ir import Module  # noqa: E402


def plain_dot(dt: str, s: int) -> Module:
    m = Module()
    m.add_return(m.add("dot", m.add_param("a", dt, [1, s, s]), m.add_param("b", dt, [1, s, s])))
    return m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="nvidia")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--out", default=None)
    ap.add_argument("--mode", default="quick")
    ap.add_argument("--dtypes", default="f32,f16,bf16", help="comma-separated: f32, f16, bf16")
    ap.add_argument("--cases", default="dot,seed", help="comma-separated: dot, seed")
    args = ap.parse_args()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    s = args.size
    pipe = Pipeline(args.device, database=TuningDatabase(os.path.join(tempfile.mkdtemp(), "db.json")),
                    repeats=10, timeout_s=120)
    dev = pipe.device
    print(f"device: {dev.name} [{dev.platform}] key={dev.key_name}; torch {torch.__version__} "
          f"on {torch.cuda.get_device_name()}", flush=True)
    results = {"device": dev.name, "size": s, "rows": []}
    flop = 2.0 * s * s * s

    def ours(mod, label):
        t0 = time.perf_counter()
        r = pipe.tune(mod, mode=args.mode, use_database=False)
        ok = [x for x in r.rows if x.status == "ok"]
        bad = [x for x in r.rows if x.status != "ok"]
        print(f"  {label}: tuned {len(r.rows)} solutions in {time.perf_counter() - t0:.1f}s "
              f"({len(ok)} ok, {len(bad)} failed: {sorted({x.status for x in bad})})", flush=True)
        for x in bad[:4]:
            print(f"    failed {x.solution}: {x.status} {x.detail[:300]}", flush=True)
        timed = sorted((x for x in ok if x.time_ms), key=lambda x: x.time_ms)
        for name, xs in (("tensor cores", [x for x in timed if len(x.solution.split(",")) == 9]),
                         ("FMA", [x for x in timed if len(x.solution.split(",")) == 8])):
            if xs:
                print(f"    fastest {name}: " + ", ".join(f"{x.solution} {x.time_ms:.3f} ms" for x in xs[:4]),
                      flush=True)
        return r

    g = torch.Generator(device="cuda").manual_seed(0)
    rnd = lambda *shape, dt=torch.float32: torch.rand(*shape, device="cuda", generator=g, dtype=torch.float32).to(dt)  # noqa: E731

    tdts = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    cases = args.cases.split(",")
    for dt in args.dtypes.split(","):
        tdt = tdts[dt]
        if "dot" not in cases:
            continue
        r = ours(plain_dot(dt, s), f"dot {dt}")
        a, b = rnd(s, s, dt=tdt), rnd(s, s, dt=tdt)
        t_same = torch_ms(lambda a=a, b=b: torch.matmul(a, b))
        a32, b32 = a.float(), b.float()
        t_fp32 = torch_ms(lambda a32=a32, b32=b32: torch.matmul(a32, b32))
        row = {"case": f"dot {s}^3", "dtype": dt, "ours_ms": r.best_ms,
               "solution": r.best.span.solution if r.best else None,
               "torch_ms": t_same, "torch_fp32_ms": t_fp32}
        if r.best_ms:
            row["ours_tflops"] = flop / r.best_ms / 1e9
            row["ours_vs_cublas_fp32"] = t_fp32 / r.best_ms
            row["ours_vs_torch_same_dtype"] = t_same / r.best_ms
        results["rows"].append(row)
        print(json.dumps(row), flush=True)

    for dt in args.dtypes.split(","):
        tdt = tdts[dt]
        if "seed" not in cases:
            continue
        heads = s // 64
        mod = seed_module(dt, g=1, heads=heads, seq=s, hd=64, n=s)
        r = ours(mod, f"fused seed op {dt}")
        y0, y1, x1 = rnd(1, heads, s, 64, dt=tdt), rnd(1, s, s, dt=tdt), rnd(1, s, s, dt=tdt)
        t_unfused = torch_ms(lambda y0=y0, y1=y1, x1=x1, s=s:
                             torch.matmul(y0.transpose(1, 2).reshape(1, s, s), y1) + x1)
        y0f, y1f, x1f = y0.float(), y1.float(), x1.float()
        t_unfused32 = torch_ms(lambda y0f=y0f, y1f=y1f, x1f=x1f, s=s:
                               torch.matmul(y0f.transpose(1, 2).reshape(1, s, s), y1f) + x1f)
        row = {"case": f"transpose+reshape+dot+add m=n=k={s}", "dtype": dt, "ours_ms": r.best_ms,
               "solution": r.best.span.solution if r.best else None, "torch_unfused_ms": t_unfused,
               "torch_unfused_fp32_ms": t_unfused32}
        if r.best_ms:
            row["ours_vs_torch_unfused_fp32"] = t_unfused32 / r.best_ms
            row["ours_vs_torch_unfused_same_dtype"] = t_unfused / r.best_ms
        results["rows"].append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
