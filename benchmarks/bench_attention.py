"""Fused attention and gemm-gemm (issue 14): our one-kernel lowering vs numpy and torch, side by side.

    python benchmarks/bench_attention.py [--device D] [--cases bert_attn,bert_gemm_gemm] [--dtypes f32,f16]
                                         [--heads 12] [--seq 384] [--hd 64] [--torch auto|cpu|cuda|none]
                                         [--no-numpy] [--rounds 3] [--repeats 10] [--json FILE]

Cases, at BERT-base sizes (12 heads, sequence 384, head dim 64), each one MIGraphX fused op:

- ``bert_attn``: ``softmax(Q x K^T * 1/sqrt(64)) x V``, K given as [heads, seq, hd] and transposed in the
  module (as MIGraphX writes it), the softmax op; our kernel: the attention kind (online softmax, the first
  gemm inline, one work-item per query row and DPerThread output columns).
  numpy: ``q @ k.T * s``, a stable softmax, ``@ v`` in float32 (f16 inputs cast to f32 once before timing).
  torch: ``F.scaled_dot_product_attention(q, k, v, scale=s)`` in the row's dtype (on CUDA: its fused
  kernels -- flash / memory-efficient -- as torch picks them).
- ``bert_gemm_gemm``: ``(A x B) x C`` with the same shapes (no softmax): our gemm-gemm kind vs
  ``(a @ b) @ c`` in numpy and two ``torch.matmul`` calls.

ours: the quick tune, the ``--top`` fastest re-timed, the best of them; median OpenCL-event kernel time of
``--repeats`` launches, checked against the float64 oracle each time. Timings alternate in ``--rounds``
blocks; medians reported; ratios > 1 mean our kernel is slower. Each baseline's result is compared with the
oracle's.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from _common import env_report, numpy_ms, torch_ms  # noqa: E402
from bench_conv import _load, close, fmt, load_torch  # noqa: E402

from pytest_mlirtrace._internal import ir  # noqa: E402
from pytest_mlirtrace._internal.codegen import Solution  # noqa: E402
from pytest_mlirtrace._internal.engine import MemoryDatabase  # noqa: E402
from pytest_mlirtrace._internal.engine.session import load_module  # noqa: E402
from pytest_mlirtrace._internal.trace import TraceConfig, TraceSession  # noqa: E402


def _t(dims, dt) -> str:
    strides, s = [], 1
    for n in reversed(dims):
        strides.append(s)
        s *= n
    return f"<{'x'.join(map(str, dims))}x{dt}, {'x'.join(map(str, reversed(strides)))}>"


def attention_mlir(dt: str, h: int, s: int, d: int, softmax: bool = True) -> str:
    """The fused op as MLIR (migraphx dialect): Q [h, s, d], K [h, s, d] transposed in the module, V [h, s, d]."""
    q, kt_in = _t([h, s, d], dt), _t([h, s, d], dt)
    kt = f"<{h}x{d}x{s}x{dt}, {s * d}x1x{d}>"
    sc = _t([h, s, s], dt)
    lines = [f"func.func @mlir_{'attention' if softmax else 'gemm_gemm'}(%arg0: !migraphx.shaped{q}, "
             f"%arg1: !migraphx.shaped{kt_in}, %arg2: !migraphx.shaped{q}) -> !migraphx.shaped{q} {{"]
    lines.append(f"  %kt = migraphx.transpose %arg1 {{permutation = [0, 2, 1]}} : {kt_in} -> {kt}")
    lines.append(f"  %s = migraphx.dot %arg0, %kt : {q}, {kt} -> {sc}")
    last = "%s"
    if softmax:
        lines.append(f"  %c = migraphx.literal(dense<{1.0 / math.sqrt(d)}> : tensor<1x{dt}>) : <1x{dt}, 0>")
        lines.append(f"  %cb = migraphx.multibroadcast %c {{out_lens = [{h}, {s}, {s}]}} : <1x{dt}, 0> -> "
                     f"<{h}x{s}x{s}x{dt}, 0x0x0>")
        lines.append(f"  %m = migraphx.mul %s, %cb : {sc}, <{h}x{s}x{s}x{dt}, 0x0x0> -> {sc}")
        lines.append(f"  %p = migraphx.softmax %m {{axis = 2 : i64}} : {sc} -> {sc}")
        last = "%p"
    lines.append(f"  %o = migraphx.dot {last}, %arg2 : {sc}, {q} -> {q}")
    lines.append(f"  return %o : !migraphx.shaped{q}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def numpy_fn(q, k, v, scale, softmax: bool):
    if not softmax:
        return lambda: (q @ k.transpose(0, 2, 1)) @ v

    def f():
        x = (q @ k.transpose(0, 2, 1)) * np.float32(scale)
        x -= x.max(-1, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(-1, keepdims=True)
        return x @ v
    return f


def torch_fn(torch, inputs: dict, tdt, dev: str, scale, softmax: bool, unfused: bool = False):
    """torch's fused attention (SDPA) or, ``unfused``, its three-step sequence (matmul, softmax, matmul)."""
    q, k, v = (torch.from_numpy(np.ascontiguousarray(inputs[p].astype(np.float32))).to(dev, tdt)
               for p in ("x0", "x1", "x2"))
    F = torch.nn.functional

    def f():
        with torch.inference_mode():
            if softmax and unfused:
                return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(1, 2)) * scale, dim=-1), v)
            if softmax:
                return F.scaled_dot_product_attention(q, k, v, scale=scale)
            return torch.matmul(torch.matmul(q, k.transpose(1, 2)), v)
    return f


def best_by_style(rows) -> str:
    """The tune's fastest tensor-core (MatrixCore=1) and FMA solutions, side by side."""
    out = []
    for label, want in (("tensor cores", True), ("FMA", False)):
        ok = [x for x in rows if x.status == "ok" and Solution.parse("attention", x.solution).matrix_core == want]
        if ok:
            b = min(ok, key=lambda x: x.time_ms)
            out.append(f"{label} {b.solution} {b.time_ms:.3f} ms ({len(ok)} ok)")
    return "; ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--cases", default="bert_attn,bert_gemm_gemm")
    ap.add_argument("--dtypes", default="f32,f16")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=384)
    ap.add_argument("--hd", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--torch", default="auto", choices=("auto", "cpu", "cuda", "none"))
    ap.add_argument("--no-numpy", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    s = TraceSession(args.device, config=TraceConfig(), database=MemoryDatabase(), repeats=5, timeout_s=120)
    dev = s.device
    torch, tdev = load_torch(args.torch, getattr(dev, "kind", "cpu"))
    print(env_report(dev))
    if torch is not None:
        extra = torch.cuda.get_device_name() if tdev == "cuda" else f"cpu threads={torch.get_num_threads()}"
        print(f"torch {torch.__version__} on {tdev}: {extra}")
    else:
        print("torch: not used (not importable or --torch none)")
    h, sq, d = args.heads, args.seq, args.hd
    scale = 1.0 / math.sqrt(d)
    print(f"{h} heads, seq {sq}, head dim {d}; {args.rounds} rounds of {args.repeats} launches/calls; medians; "
          f"load average {_load()}", flush=True)
    hdr = (f"{'case':<15} {'dtype':<5} {'ours_ms':>9} {'numpy_ms':>9} {'ours/np':>7} {'torch_ms':>9} "
           f"{'ours/tch':>8} {'GFLOP/s':>8} {'tune_s':>6}  solution / key")
    print(hdr)
    rows = []
    flop = 2.0 * h * sq * sq * d * 2
    for case in args.cases.split(","):
        softmax = case == "bert_attn"
        for dt in args.dtypes.split(","):
            text = attention_mlir(dt, h, sq, d, softmax)
            mod, _ = load_module(text)
            inputs = ir.random_inputs(mod, 0)
            t0 = time.perf_counter()
            tr = s.tune(text, use_database=False)
            tune_s = time.perf_counter() - t0
            if tr.best is None:
                print(f"{case:<15} {dt:<5} no solution passed: {sorted({x.status for x in tr.rows})}", flush=True)
                continue
            ok = sorted((x for x in tr.rows if x.status == "ok"), key=lambda x: x.time_ms)[:max(1, args.top)]
            timed = []
            for x in ok:
                rr = s.run(text, solution=x.solution, inputs=inputs, repeats=args.repeats)
                if rr.ok:
                    timed.append((rr.time_ms, x.solution))
            sol = min(timed)[1] if timed else tr.best.span.solution
            f32 = {p: v.astype(np.float32) for p, v in inputs.items()}
            np_f = None if args.no_numpy else numpy_fn(f32["x0"], f32["x1"], f32["x2"], scale, softmax)
            print(f"   tune: {best_by_style(tr.rows)}", flush=True)
            t_f = t_u = None
            if torch is not None:
                tdt = {"f16": torch.float16, "bf16": torch.bfloat16}.get(dt, torch.float32)
                t_f = torch_fn(torch, inputs, tdt, tdev, scale, softmax)
                if softmax:
                    t_u = torch_fn(torch, inputs, tdt, tdev, scale, softmax, unfused=True)
            timer = (lambda fn: torch_ms(fn, repeats=args.repeats)) if tdev == "cuda" else \
                (lambda fn: numpy_ms(fn, repeats=args.repeats))
            ours_t, np_t, t_t, u_t, expected, status = [], [], [], [], None, "ok"
            for _ in range(args.rounds):
                rr = s.run(text, solution=sol, inputs=inputs, repeats=args.repeats)
                if not rr.ok:
                    status = rr.status
                    break
                ours_t.append(rr.time_ms)
                expected = rr.expected[0]
                if np_f is not None:
                    time.sleep(0.3)
                    np_t.append(numpy_ms(np_f, repeats=args.repeats))
                if t_f is not None:
                    time.sleep(0.3)
                    t_t.append(timer(t_f))
                if t_u is not None:
                    time.sleep(0.3)
                    u_t.append(timer(t_u))
                time.sleep(0.3)
            if status != "ok":
                print(f"{case:<15} {dt:<5} our kernel {sol}: {status}", flush=True)
                continue
            checks = {}
            if np_f is not None:
                checks["numpy"] = close(np_f(), expected, dt)
            if t_f is not None:
                checks["torch"] = close(t_f().float().cpu().numpy(), expected, dt)
            if t_u is not None:
                checks["torch unfused"] = close(t_u().float().cpu().numpy(), expected, dt)
            ours = statistics.median(ours_t)
            npm = statistics.median(np_t) if np_t else None
            tm = statistics.median(t_t) if t_t else None
            um = statistics.median(u_t) if u_t else None
            key = tr.lowered.key.split("\t")[-1]
            rows.append({"case": case, "dtype": dt, "ours_ms": ours, "numpy_ms": npm, "torch_ms": tm,
                         "torch_unfused_ms": um, "torch_device": tdev or None, "gflops": flop / ours / 1e6,
                         "solution": sol,
                         "tune_s": tune_s, "key": key, "baseline_matches_oracle": checks})
            ratio = lambda b, ours=ours: f"{ours / b:8.2f}" if b else f"{'-':>8}"  # noqa: E731
            line = (f"{case:<15} {dt:<5} {fmt(ours)} {fmt(npm)} {ratio(npm)[1:]} {fmt(tm)} {ratio(tm)} "
                    f"{flop / ours / 1e6:8.1f} {tune_s:6.0f}  {sol} / {key}")
            if um:
                line += f"  (torch unfused {um:.3f} ms: ours/unfused {ours / um:.2f})"
            bad = [n for n, v in checks.items() if not v]
            if bad:
                line += f"  (MISMATCH vs oracle: {','.join(bad)})"
            print(line, flush=True)
    print(f"load average at the end {_load()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev.name, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
