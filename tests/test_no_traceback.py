"""No traceback on any input: random bytes, and real MLIR, MIGraphX text and logs (the shared corpus) cut
short and mutated byte by byte, given to ``show``, ``run``, ``compile`` and ``import-trace``, always end
with a status of the exit-code contract and a message, never a Python traceback or an internal error.

Also: a second Ctrl-C while the worker pool shuts down at exit prints no traceback.
"""
from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.vocab.exit_codes import ExitCode
from tests.corpus import CORPUS, MISSING, ROCMLIR, TRACES

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = {ExitCode.OK, ExitCode.FAILURE, ExitCode.USAGE, ExitCode.NOT_SUPPORTED, ExitCode.ENVIRONMENT}


def _read(paths) -> list[bytes]:
    return [p.read_bytes() for p in sorted(paths) if p.is_file()]


MODULES = _read([*ROOT.glob("examples/*"), *ROOT.glob("tests/data/*.mlir"), *ROOT.glob("tests/data/*.txt")]
                + (list(ROCMLIR.glob("*.mlir")) if ROCMLIR.is_dir() else []))
LOGS = _read([*ROOT.glob("tests/data/logs/*.log")] + (list(TRACES.glob("*.txt")) if TRACES.is_dir() else []))

# numbers that turn a shape into an edge case: empty, just past 32-bit, huge, not a number at all
NUMBERS = [b"0", b"1", b"3", b"65536", b"2147483648", b"4294967297", b"-1", b"99999999999999999999", b"1.5"]
_DIGITS = re.compile(rb"\d+")


@st.composite
def mutated(draw, pool: list[bytes]) -> bytes:
    """A real file, cut short or changed in a few places: a number swapped for an edge case, bytes
    replaced, inserted or deleted, a line repeated."""
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(0, 3))):     # none: the real file as it is
        if not data:
            break
        op = draw(st.sampled_from(["number", "truncate", "byte", "insert", "delete", "number", "line"]))
        i = draw(st.integers(0, len(data) - 1))
        if op == "truncate":
            del data[i:]
        elif op == "byte":
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 64))]
        elif op == "number":
            nums = list(_DIGITS.finditer(data))
            if nums:
                m = nums[draw(st.integers(0, len(nums) - 1))]
                data[m.start():m.end()] = draw(st.sampled_from(NUMBERS))
        else:
            lines = bytes(data).splitlines(keepends=True)
            k = draw(st.integers(0, len(lines) - 1))
            data = bytearray(b"".join(lines[:k + 1] + lines[k:]))
    return bytes(data)


# random bytes, some after a start that sends them down the MLIR or the MIGraphX-text path
RANDOM = st.builds(lambda head, tail: head + tail,
                   st.sampled_from([b"", b"module {\n", b"func.func @f(", b"x0 = @param:x0 -> float_type, {2}, {1}\n"]),
                   st.binary(max_size=400))

# the options that keep one example small and quick: a short hang timeout, a small size limit, no database
QUICK = ["--timeout", "5", "--max-bytes", "64M"]
ARGS = {"show": [], "compile": QUICK, "run": QUICK + ["--no-database"], "import-trace": QUICK + ["--no-tune"]}


@pytest.fixture(scope="module", autouse=True)
def own_state():
    d = tempfile.mkdtemp(prefix="mlirtrace-no-traceback-")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLIRTRACE_TUNING_DB", str(Path(d) / "tuning.json"))
        for var in ("MLIRTRACE_INJECT", "MLIRTRACE_MAX_BYTES", "MLIRTRACE_DEBUG", "MIGRAPHX_TRACE_MLIR",
                    "MIGRAPHX_TRACE_BENCHMARKING"):
            mp.delenv(var, raising=False)
        yield
    shutil.rmtree(d, ignore_errors=True)


def check(command: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="mlirtrace-nt-") as d:
        path = Path(d) / ("input.log" if command == "import-trace" else "input.mlir")
        path.write_bytes(data)
        out_dir = ["--out", str(Path(d) / "out")] if command == "import-trace" else []
        argv = [command, str(path), *ARGS[command], *out_dir]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    text = out.getvalue() + err.getvalue()
    assert rc in CONTRACT, f"exit status {rc} is not in the contract:\n{text}"
    assert "Traceback" not in text and "internal error" not in text, text
    if rc in (ExitCode.USAGE, ExitCode.NOT_SUPPORTED) and command != "import-trace":
        assert err.getvalue().strip(), "a refusal without a message"


# run and compile build kernels of the inputs that parse (in worker processes): few examples each
EXAMPLES = {"show": 100, "compile": 60, "run": 60, "import-trace": 40}


def _settings(command: str):
    # the examples are whole files (sampled, not drawn byte by byte): large inputs are the point here
    return settings(max_examples=EXAMPLES[command], deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.data_too_large, HealthCheck.too_slow])


@pytest.mark.parametrize("command", ["show", "compile", "run", "import-trace"])
def test_random_bytes(command):
    given(RANDOM)(_settings(command)(lambda data: check(command, data)))()


@pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)
@pytest.mark.parametrize("command", ["show", "compile", "run"])
def test_mutated_modules(command):
    given(mutated(MODULES + LOGS[:2]))(_settings(command)(lambda data: check(command, data)))()


@pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)
def test_mutated_logs():
    given(mutated(LOGS + MODULES[:4]))(_settings("import-trace")(lambda data: check("import-trace", data)))()


# ---- a second Ctrl-C at exit ----------------------------------------------------------------------------
class _Worker:
    def __init__(self, interrupt: bool):
        self.interrupt, self.killed, self.shut = interrupt, None, False

    def shutdown(self, grace):  # noqa: ARG002 - the pool's signature
        if self.interrupt:
            raise KeyboardInterrupt     # the user presses Ctrl-C again while the workers stop
        self.shut = True

    def kill(self, grace=1.0):
        self.killed = grace


def test_a_ctrl_c_during_the_pools_shutdown_at_exit_stops_the_workers_quietly(monkeypatch):
    from types import SimpleNamespace

    from pytest_mlirtrace._internal.runtime import pool, pool_slots

    workers = [_Worker(True), _Worker(False), _Worker(False)]   # Ctrl-C while the first one stops
    slots = [SimpleNamespace(worker=w) for w in workers]
    try:
        interrupted = pool_slots.shutdown_slots(slots)
    except KeyboardInterrupt:       # (caught here: pytest would take it for the user stopping the whole run)
        pytest.fail("the KeyboardInterrupt propagated out of the pool's finalizer (run at exit)")
    assert interrupted is True
    assert [w.killed for w in workers] == [0, 0, 0] and not workers[1].shut    # the rest killed at once
    assert all(s.worker is None for s in slots)

    class Pool:
        closed = False

        def __init__(self):
            self.calls = 0

        def close(self):
            self.calls += 1
            raise KeyboardInterrupt

    fake = {"a": Pool(), "b": Pool()}
    monkeypatch.setattr(pool, "_pools", dict(fake))
    with pytest.raises(KeyboardInterrupt):                      # called by a program: it hears of the Ctrl-C
        pool.close_all_pools()
    assert all(p.calls == 1 for p in fake.values())            # ... after every pool was closed


def test_the_atexit_hook_swallows_a_ctrl_c():
    import subprocess
    import sys

    code = ("from pytest_mlirtrace._internal.runtime import pool\n"
            "class Pool:\n"
            "    closed = False\n"
            "    def close(self):\n"
            "        raise KeyboardInterrupt\n"
            "pool._pools['x'] = Pool()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
