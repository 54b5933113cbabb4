"""The reproducer's standalone path (numpy + pyopencl only) on hand-made kernels: each failure kind is
reported, in a child process, with the right exit status; a fixed kernel passes."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pytest_mlirtrace._internal.repro import render_script
from pytest_mlirtrace._internal.repro.reproducer_template import _pack_array, pack_input, random_inputs, unpack_output

N = 6
GOOD = "__kernel void k(__global const float *a, __global const float *b, __global float *y) " \
       "{ int i = get_global_id(0); y[i] = a[i] + b[i]; }"
KERNELS = {
    "wrong": GOOD.replace("a[i] + b[i]", "a[i] - b[i]"),
    # volatile: a plain store through a null pointer is undefined behaviour that LLVM may delete (it
    # does when PoCL builds for x86-64-v3), and then nothing crashes
    "crash": GOOD.replace("y[i] = a[i] + b[i];", "__global volatile float *p = (__global volatile float *)0; "
                                                 "for (long j = 0; j < (1L << 40); j += 4096) p[j] = 1.0f;"),
    "hang": GOOD.replace("y[i] = a[i] + b[i];", "volatile int s = 1; while (s) { s = 1; }"),
    "build_error": GOOD.replace("a[i] + b[i]", "a[i] + undeclared_thing"),
    "slow": GOOD,
}


def payload(kind: str, kernel: str, seed: int = 5) -> dict:
    params = [{"param": p, "dtype": "f32", "storage_dtype": "<f4", "is_float": True, "lens": [N]} for p in "ab"]
    vals = random_inputs(params, seed)
    lay = {"dtype": "f32", "storage_dtype": "<f4", "lens": [N], "element_space": N}
    args = [dict(lay, kind="input", param="a", strides=[1]), dict(lay, kind="input", param="b", strides=[1]),
            dict(lay, kind="output", index=0)]
    expected = vals["a"].astype(np.float64) + vals["b"]
    return {
        "format": 1, "signature": f"{kind}-mlir_add-00000000", "kind": kind, "stage": "run", "error": f"{kind}!",
        "origin": "hand-made", "seed": seed, "inject": "", "module_text": "a = @param:a -> float_type, {6}, {1}",
        "mlir_text": "func.func @mlir_add() { }", "problem_key": "pocl-cpu\t2\t-op pointwise", "solution": "1",
        "kernel_source": kernel, "kernel_name": "k", "device": "0:0", "device_key": "pocl-cpu", "timeout_s": 3.0,
        "max_ms": 1e-9 if kind == "slow" else None, "time_ms": None,
        "standalone": {"args": args, "params": params, "inputs_packed": None, "build_options": "",
                       "global_size": [N], "local_size": None,
                       "expected": [{"index": 0, "dtype": "f32", "lens": [N], "rtol": 1e-5, "atol": 1e-6,
                                     "positions": None, "values": _pack_array(expected.astype(np.float32))}]},
    }


def run(tmp_path, data: dict, *extra: str) -> subprocess.CompletedProcess:
    script = tmp_path / f"{data['signature']}.py"
    script.write_text(render_script(data))
    return subprocess.run([sys.executable, str(script), "--standalone", *extra], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("kind", ["wrong", "crash", "hang", "build_error", "slow"])
def test_each_kind_reproduces_standalone(tmp_path, kind):
    out = run(tmp_path, payload(kind, KERNELS[kind]), "--timeout", "1")
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"REPRODUCED: {kind}" in out.stdout
    if kind == "wrong":
        assert "elements differ" in out.stdout
    if kind == "crash":
        assert "signal" in out.stdout


def test_a_write_one_past_the_output_reproduces_as_a_crash_every_time(tmp_path):
    # y[i + 1]: one float past the end, inside the allocation's slack (no signal); the guard zone shows it
    over = GOOD.replace("y[i] = a[i] + b[i];", "y[i + 1] = a[i] + b[i];")
    data = payload("crash", over)
    for _ in range(2):
        out = run(tmp_path, data, "--quiet")
        assert out.returncode == 1, out.stdout + out.stderr
        assert "REPRODUCED: crash" in out.stdout
    out = run(tmp_path, data)
    assert "the kernel wrote past the end of output 0: the guard zone after it changed, up to byte" in out.stdout
    good = tmp_path / "good.cl"
    good.write_text(GOOD)
    assert run(tmp_path, data, "--kernel-file", str(good), "--quiet").returncode == 0


def test_fixed_kernel_passes_and_a_different_failure_says_so(tmp_path):
    data = payload("wrong", KERNELS["wrong"])
    good = tmp_path / "good.cl"
    good.write_text(GOOD)
    out = run(tmp_path, data, "--kernel-file", str(good), "--quiet")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FIXED" in out.stdout
    bad = tmp_path / "bad.cl"
    bad.write_text(KERNELS["build_error"])
    out = run(tmp_path, data, "--kernel-file", str(bad), "--quiet")
    assert out.returncode == 6 and "FAILS DIFFERENTLY: build_error (recorded: wrong)" in out.stdout


def test_layout_helpers_strided_broadcast_and_standard_outputs():
    vals = np.arange(6, dtype=np.float16).reshape(2, 3)
    arg = {"dtype": "f16", "storage_dtype": "<f2", "lens": [2, 3], "strides": [1, 2], "element_space": 6}
    assert pack_input(vals, arg).tolist() == [0, 3, 1, 4, 2, 5]
    bcast = {"dtype": "f32", "storage_dtype": "<f4", "lens": [2, 3], "strides": [0, 1], "element_space": 3}
    assert pack_input(vals, bcast).tolist() == [0, 1, 2]          # a broadcast dim keeps its index 0
    out = {"dtype": "f16", "storage_dtype": "<f2", "lens": [2, 3], "element_space": 6}
    assert np.array_equal(unpack_output(np.arange(6, dtype=np.float16), out), vals)
