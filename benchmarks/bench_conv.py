"""Fused convolution + bias + relu (ResNet-50 / MobileNet layer shapes): tuned kernel vs numpy and torch.

    python benchmarks/bench_conv.py [--device D] [--batch N] [--hw H] [--cases r50_3x3,r50_1x1,r50_3x3s2,dw_3x3]
                                    [--dtypes f32,f16] [--torch auto|cpu|cuda|none] [--no-numpy] [--json FILE]

Each case is one MIGraphX fused op, ``convolution -> broadcast(bias) -> add -> relu``, lowered by mlirtrace
as an implicit GEMM on its gemm kernels (issue 13). For each case and dtype, in one run on one machine:

- ours: the quick tune, the ``--top`` fastest solutions re-timed (``--repeats`` launches each), then the
  fastest of them; the time is the median kernel time of ``--repeats`` launches (OpenCL profiling
  events), checked against the float64 oracle each time.
- numpy: the same op on the same inputs in float32 (f16 inputs are cast to f32 once, before timing, numpy
  having no f16 GEMM): im2col (a strided window view copied into a [C*R*S, OH*OW] matrix per image) then
  one matmul, for 1x1 stride-1 layers the matmul alone, for depthwise layers a multiply-add per kernel
  position; then bias and relu in place.
- torch (when it imports): ``relu(conv2d(x, w, b, stride, padding, groups=g))`` under inference mode, in
  the row's dtype; for f16 rows also in f32 on the same values (``torch32``). On the CPU with
  ``torch.set_num_threads(os.cpu_count())`` timed with perf_counter; on CUDA with CUDA events, cuDNN's
  autotuner on (``cudnn.benchmark``) and TF32 off.

Timings alternate in ``--rounds`` blocks (ours, numpy, torch, with short pauses), medians reported.
Ratios > 1 mean our kernel is slower. Each baseline's result is compared with the oracle's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np  # noqa: E402
from _common import env_report, numpy_ms, torch_ms  # noqa: E402

from pytest_mlirtrace._internal import ir  # noqa: E402
from pytest_mlirtrace._internal.engine import MemoryDatabase  # noqa: E402
from pytest_mlirtrace._internal.engine.session import load_module  # noqa: E402
from pytest_mlirtrace._internal.trace import TraceConfig, TraceSession  # noqa: E402

# name: (in channels, out channels, input H=W, kernel, stride, pad, group; None = channels: depthwise)
CASES = {
    "r50_3x3": (64, 64, 56, 3, 1, 1, 1),        # ResNet-50 stage 2, 3x3 conv of a bottleneck
    "r50_1x1": (256, 64, 56, 1, 1, 0, 1),       # ResNet-50 stage 2, 1x1 reduce of a bottleneck
    "r50_3x3s2": (128, 128, 56, 3, 2, 1, 1),    # ResNet-50 (v1.5) stage 3's first 3x3, stride 2: 56 -> 28
    "dw_3x3": (128, 128, 56, 3, 1, 1, None),    # MobileNet depthwise 3x3, group = channels
}
_TYPE = {"f32": "float_type", "f16": "half_type"}


def _shape(lens) -> str:
    strides, s = [], 1
    for n in reversed(lens):
        strides.append(s)
        s *= n
    return "{" + ", ".join(map(str, lens)) + "}, {" + ", ".join(map(str, reversed(strides))) + "}"


def conv_text(dt: str, n: int, c: int, k: int, hw: int, r: int, stride: int, pad: int, group: int) -> str:
    """MIGraphX text of convolution -> broadcast(bias) -> add -> relu."""
    t = _TYPE[dt]
    o = (hw + 2 * pad - r) // stride + 1
    out = _shape([n, k, o, o])
    return "\n".join([
        f"x = @param:x -> {t}, {_shape([n, c, hw, hw])}",
        f"w = @param:w -> {t}, {_shape([k, c // group, r, r])}",
        f"b = @param:b -> {t}, {_shape([k])}",
        f"@3 = convolution[padding={{{pad}, {pad}, {pad}, {pad}}},stride={{{stride}, {stride}}},"
        f"dilation={{1, 1}},group={group},padding_mode=0](x,w) -> {t}, {out}",
        f"@4 = broadcast[axis=1,out_lens={{{n}, {k}, {o}, {o}}}](b) -> {t}, "
        f"{{{n}, {k}, {o}, {o}}}, {{0, 1, 0, 0}}",
        f"@5 = add(@3,@4) -> {t}, {out}",
        f"@6 = relu(@5) -> {t}, {out}",
        "@7 = @return(@6)",
        "",
    ])


def numpy_conv(x, w, b, stride: int, pad: int, group: int):
    """A float32 numpy conv + bias + relu on ``x`` (N,C,H,W), ``w`` (K,C/g,R,S), ``b`` (K,)."""
    n, c, h, _ = x.shape
    k, cg, r, s = w.shape
    o = (h + 2 * pad - r) // stride + 1
    bias = b.reshape(1, k, 1, 1)
    if group == 1 and r == s == 1 and stride == 1 and pad == 0:
        wm = w.reshape(k, c)

        def f():
            y = np.matmul(wm, x.reshape(n, c, h * h)).reshape(n, k, o, o)
            y += bias
            return np.maximum(y, 0, out=y)
        return f
    if group == c == k and cg == 1:                 # depthwise: a multiply-add per kernel position
        wd = w.reshape(k, r, s, 1, 1)

        def f():
            xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
            y = np.zeros((n, k, o, o), np.float32)
            span = (o - 1) * stride + 1
            for i in range(r):
                for j in range(s):
                    y += xp[:, :, i:i + span:stride, j:j + span:stride] * wd[:, i, j]
            y += bias
            return np.maximum(y, 0, out=y)
        return f
    wm = w.reshape(group, k // group, cg * r * s)

    def f():                                        # im2col: one copy, then one (batched) matmul
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
        cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, group, cg * r * s, o * o)
        y = np.matmul(wm, cols).reshape(n, k, o, o)
        y += bias
        return np.maximum(y, 0, out=y)
    return f


def torch_conv(torch, inputs: dict, dt, dev: str, stride: int, pad: int, group: int):
    F = torch.nn.functional
    x, w, b = (torch.from_numpy(np.ascontiguousarray(inputs[p].astype(np.float32))).to(dev, dt) for p in "xwb")

    def f():
        with torch.inference_mode():
            return torch.relu(F.conv2d(x, w, b, stride=stride, padding=pad, groups=group))
    return f


def cpu_ms(fn, repeats: int) -> float:
    return numpy_ms(fn, repeats=repeats, warmup=2)


def close(got, want, dt: str) -> bool:
    """The baseline's result against the oracle's (relative to the output's magnitude)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    tol = {"f16": 2e-2, "bf16": 6e-2}.get(dt, 1e-4)
    return bool(np.max(np.abs(got - want)) <= tol * max(1.0, float(np.max(np.abs(want)))))


def load_torch(which: str, device_kind: str):
    """(torch module or None, device string)."""
    if which == "none":
        return None, ""
    try:
        import torch
    except ImportError:
        return None, ""
    if which == "cuda" or (which == "auto" and device_kind == "gpu" and torch.cuda.is_available()):
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        return torch, "cuda"
    torch.set_num_threads(os.cpu_count() or 1)
    return torch, "cpu"


def _load() -> str:
    """The 1/5/15-minute load averages (a shared machine's other work shows here)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def fmt(v, w=9, p=3) -> str:
    return f"{v:{w}.{p}f}" if v is not None else f"{'-':>{w}}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--dtypes", default="f32,f16")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--hw", type=int, default=None, help="input height = width for every case (default: the layer's)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating timing rounds (medians reported)")
    ap.add_argument("--repeats", type=int, default=10, help="launches / calls per timing")
    ap.add_argument("--top", type=int, default=3, help="re-time the quick tune's best TOP solutions")
    ap.add_argument("--torch", default="auto", choices=("auto", "cpu", "cuda", "none"))
    ap.add_argument("--no-numpy", action="store_true")
    ap.add_argument("--json", default=None, help="also write the rows as JSON to this file")
    args = ap.parse_args()

    s = TraceSession(args.device, config=TraceConfig(), database=MemoryDatabase(), repeats=5, timeout_s=120)
    dev = s.device
    torch, tdev = load_torch(args.torch, getattr(dev, "kind", "cpu"))
    print(env_report(dev))
    if torch is not None:
        extra = (f"{torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}, benchmark on, TF32 off"
                 if tdev == "cuda" else f"cpu threads={torch.get_num_threads()}")
        print(f"torch {torch.__version__} on {tdev}: {extra}")
    else:
        print("torch: not used (not importable or --torch none)")
    print(f"batch {args.batch}; {args.rounds} rounds of {args.repeats} launches/calls; medians; "
          f"load average {_load()}", flush=True)
    hdr = (f"{'case':<10} {'dtype':<5} {'problem':<30} {'ours_ms':>9} {'numpy_ms':>9} {'ours/np':>7} "
           f"{'torch_ms':>9} {'ours/tch':>8} {'torch32':>9} {'ours/t32':>8} {'GFLOP/s':>8} {'tune_s':>6}  solution")
    rows, lines = [], []
    for case in args.cases.split(","):
        c, k, hw, r, stride, pad, group = CASES[case]
        hw = args.hw or hw
        group = group or c
        o = (hw + 2 * pad - r) // stride + 1
        flop = 2.0 * args.batch * k * o * o * (c // group) * r * r
        prob = f"n{args.batch} {c}x{hw}^2->{k}x{o}^2 {r}x{r}/{stride}" + (f" g{group}" if group > 1 else "")
        for dt in args.dtypes.split(","):
            text = conv_text(dt, args.batch, c, k, hw, r, stride, pad, group)
            mod, _ = load_module(text)
            inputs = ir.random_inputs(mod, 0)
            t0 = time.perf_counter()
            tr = s.tune(text, use_database=False)
            tune_s = time.perf_counter() - t0
            if tr.best is None:
                print(f"{case:<10} {dt:<5} no solution passed: {sorted({x.status for x in tr.rows})} "
                      f"{[x.detail for x in tr.rows][:2]}", flush=True)
                continue
            ok = sorted((x for x in tr.rows if x.status == "ok"), key=lambda x: x.time_ms)[:max(1, args.top)]
            timed = []
            for x in ok:
                rr = s.run(text, solution=x.solution, inputs=inputs, repeats=args.repeats)
                if rr.ok:
                    timed.append((rr.time_ms, x.solution))
            sol = min(timed)[1] if timed else tr.best.span.solution

            f32 = {p: v.astype(np.float32) for p, v in inputs.items()}
            np_fn = None if args.no_numpy else numpy_conv(f32["x"], f32["w"], f32["b"], stride, pad, group)
            t_fns = {}
            if torch is not None:
                tdt = torch.float16 if dt == "f16" else torch.float32
                try:
                    t_fns["torch"] = torch_conv(torch, inputs, tdt, tdev, stride, pad, group)
                    if dt == "f16":
                        t_fns["torch32"] = torch_conv(torch, inputs, torch.float32, tdev, stride, pad, group)
                except RuntimeError as e:       # e.g. a dtype this torch build has no conv for
                    print(f"  torch {dt}: {str(e).splitlines()[0]}")
            timer = (lambda fn: torch_ms(fn, repeats=args.repeats)) if tdev == "cuda" else \
                (lambda fn: cpu_ms(fn, args.repeats))

            ours_t, np_t, tt = [], [], {name: [] for name in t_fns}
            expected, status = None, "ok"
            for _ in range(args.rounds):
                rr = s.run(text, solution=sol, inputs=inputs, repeats=args.repeats)
                if not rr.ok:
                    status = rr.status
                    break
                ours_t.append(rr.time_ms)
                expected = rr.expected[0]
                if np_fn is not None:
                    time.sleep(0.3)
                    np_t.append(cpu_ms(np_fn, args.repeats))
                for name, fn in list(t_fns.items()):
                    time.sleep(0.3)
                    try:
                        tt[name].append(timer(fn))
                    except RuntimeError as e:
                        print(f"  {name} {dt}: {str(e).splitlines()[0]}")
                        del t_fns[name]
                        tt.pop(name)
                time.sleep(0.3)
            if status != "ok":
                print(f"{case:<10} {dt:<5} our kernel {sol}: {status}", flush=True)
                continue
            checks = {}
            if np_fn is not None:
                checks["numpy"] = close(np_fn(), expected, dt)
            for name, fn in t_fns.items():
                checks[name] = close(fn().float().cpu().numpy(), expected, dt)
            ours = statistics.median(ours_t)
            npm = statistics.median(np_t) if np_t else None
            tm = statistics.median(tt["torch"]) if tt.get("torch") else None
            t32 = statistics.median(tt["torch32"]) if tt.get("torch32") else None
            row = {"case": case, "dtype": dt, "problem": prob, "ours_ms": ours, "numpy_ms": npm, "torch_ms": tm,
                   "torch32_ms": t32, "torch_device": tdev or None, "gflops": flop / ours / 1e6,
                   "solution": sol, "tune_s": tune_s, "key": tr.lowered.key.split("\t")[-1],
                   "baseline_matches_oracle": checks}
            rows.append(row)
            ratio = lambda b, ours=ours: f"{ours / b:8.2f}" if b else f"{'-':>8}"  # noqa: E731
            line = (f"{case:<10} {dt:<5} {prob:<30} {fmt(ours)} {fmt(npm)} {ratio(npm)[1:]} {fmt(tm)} {ratio(tm)} "
                    f"{fmt(t32)} {ratio(t32)} {flop / ours / 1e6:8.1f} {tune_s:6.0f}  {sol}")
            bad = [n for n, v in checks.items() if not v]
            if bad:
                line += f"  (MISMATCH vs oracle: {','.join(bad)})"
            if not lines:
                print(hdr)
            lines.append(line)
            print(line, flush=True)
    print(f"load average at the end {_load()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev.name, "batch": args.batch, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
