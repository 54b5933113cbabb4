"""An environment failure (no device, a worker that cannot start or import) stops the run with exit
status 4 and is never counted as a finding: at the pool, in the CLI, in the fuzz and under pytest."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from pytest_mlirtrace._internal.runtime import DeviceError, EnvironmentFailure, InBuf, KernelJob, OutBuf, WorkerPool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = os.path.join(ROOT, "examples", "seed_transpose_reshape_dot_add_f32.txt")
COPY = "__kernel void copy(__global const float *a, __global float *o) { o[get_global_id(0)] = a[get_global_id(0)]; }"


@pytest.fixture
def broken_pyopencl(tmp_path):
    """A PYTHONPATH entry whose ``pyopencl`` cannot be imported (as on a machine missing a package)."""
    d = tmp_path / "broken"
    (d / "pyopencl").mkdir(parents=True)
    (d / "pyopencl" / "__init__.py").write_text("raise ImportError('planted: this pyopencl cannot be imported')\n")
    return str(d)


def _env(broken: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = broken + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_a_worker_that_cannot_start_mid_run_raises_environment_failure(cpu_device, broken_pyopencl):
    a = np.random.default_rng(int.from_bytes(os.urandom(4), "little")).standard_normal(64).astype(np.float32)
    job = KernelJob(COPY, "copy", [InBuf(a), OutBuf((64,), np.float32)], (64,))
    with WorkerPool(cpu_device, workers=1) as p:
        r = p.run(job)
        np.testing.assert_array_equal(r.outputs[0], a)
        p._env = _env(broken_pyopencl)                 # the machine changes under the run
        w = p._slots[0].worker
        os.kill(w.pid, signal.SIGKILL)                 # its replacement cannot import pyopencl
        w.proc.wait(10)
        with pytest.raises(EnvironmentFailure, match="cannot be imported"):
            p.run(job)
        with pytest.raises(EnvironmentFailure):
            p.build([job])
    assert issubclass(EnvironmentFailure, DeviceError) and EnvironmentFailure.exit_status == 4


def _cli(*argv, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "pytest_mlirtrace", *argv], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.parametrize("argv", [["run", SEED], ["tune", SEED, "--no-database"], ["compile", SEED]])
def test_cli_commands_exit_4_when_no_worker_can_start(argv, broken_pyopencl):
    p = _cli(*argv, env=_env(broken_pyopencl))
    assert p.returncode == 4, (p.returncode, p.stdout, p.stderr)
    assert "mlirtrace: environment:" in p.stderr and "cannot be imported" in p.stderr
    assert "Traceback" not in p.stderr


def test_cli_exits_4_for_a_device_that_is_not_there():
    p = _cli("run", SEED, "--device", "no-such-device-here")
    assert p.returncode == 4, (p.stdout, p.stderr)
    assert "environment: unknown device spec 'no-such-device-here'" in p.stderr


def test_fuzz_with_no_worker_stops_once_and_writes_nothing(broken_pyopencl, tmp_path):
    repros = tmp_path / "repros"
    p = _cli("fuzz", "--budget", "20", "--seed", "1", "--repro-dir", str(repros), "--database", "none",
             env=_env(broken_pyopencl))
    assert p.returncode == 4, (p.stdout, p.stderr)
    assert p.stderr.count("mlirtrace: environment:") == 1
    assert not repros.exists() or not any(repros.iterdir())
