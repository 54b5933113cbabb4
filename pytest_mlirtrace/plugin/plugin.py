"""The ``mlirtrace`` pytest plugin (entry point ``pytest11: mlirtrace``).

Active in every pytest run but silent and cheap until a test uses the ``mlirtrace`` fixture: this
module imports only the standard library and pytest; OpenCL, the compiler and the reproducer
writer are imported on the fixture's first use.

Options (and ini keys):
  ``--mlir-trace[=LEVEL]`` (``mlir_trace``)  trace dumps at LEVEL (bare: 1), what MIGRAPHX_TRACE_MLIR and
                                           MIGRAPHX_TRACE_BENCHMARKING do (the env vars still work alone)
  ``--mlir-repro-dir DIR`` (``mlir_repro_dir``, default ``reproducers`` under the rootdir)
  ``--mlir-device SPEC``   (``mlir_device``; else ``MLIRTRACE_DEVICE``, else PoCL's CPU device)
  ``--mlir-timeout S``     (``mlir_timeout``, default 30: seconds before a kernel counts as hung)
  ``--mlir-no-repro``      (``mlir_repro = false``) write no reproducers
  ``--mlir-reduce[=S]``    (``mlir_reduce``; else ``MLIRTRACE_REDUCE``) after the run, reduce each new reproducer
                           (``mlirtrace reduce``) for at most S seconds each (bare: 120)
  ``--mlir-store DIR|URL`` (``mlir_store``; else ``MLIRTRACE_STORE``) where shared state lives: a directory
                           (``reproducers/`` and ``tuning.json`` under it) or ``redis://host:port/db``
                           (a fleet: one reproducer per signature fleet-wide, one tuning database)
  ``--mlir-tuning-db PATH`` (``mlir_tuning_db``; else ``MLIRTRACE_TUNING_DB``) the tuning database the fixture
                           reads and writes; by default each test has its own, in memory, so that no test's
                           outcome depends on what another test or an earlier run tuned

Reproducers are written whenever a test that used the fixture fails (with or without
``--mlir-trace``), at the end of the failing phase, one per distinct failure: a failed fixture
call (wrong numbers, crash, hang, build error, too slow, ...) gives the reproducer of that
failure; any other failure (an ``assert`` in the test body) gives an "assertion" reproducer of the
last thing compiled, unless an unchecked fixture call (``check=False``) had failed before, whose
failures are written instead. Expected failures (xfail) write nothing.

``@pytest.mark.mlirtrace(device=, timeout=, max_ms=, solution=, trace=)`` sets the defaults of one
test's fixture calls (see ``MARKER_HELP``); ``pytest_mlirtrace_failure`` (``hooks.py``) lets other
plugins act on each distinct failure written.

``@given`` tests: the ``mlirtrace_session`` fixture (session-scoped, so Hypothesis's
``function_scoped_fixture`` health check stays on) gives a fresh recorder per example with
``with mlirtrace_session.for_example() as mlirtrace: ...`` (``per_example.py``); what Hypothesis
reported for the failing example (``Falsifying example``, ``note()`` texts, which Hypothesis attaches to
the exception) goes in the report (``hypothesis_examples.py``). With pytest-html on, a failing test's
HTML report gets the sections as collapsible blocks and the tuning chart as inline SVG
(``html_extras.py``, ``tuning_chart.py``).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ..config import SettingError, resolve
from .keys import DEVICES_KEY, FACADE_KEY, PROP_DEVICE, PROP_REPRO, SECTION, SETTINGS_KEY, STATE_KEY
from .trace_env import check_trace_env



MARK_ERROR_KEY = pytest.StashKey[str]()


# ------------------------------------------------------------------------------- options ---
def pytest_addhooks(pluginmanager):
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser):
    g = parser.getgroup("mlirtrace", "mlirtrace (fused-op compiler traces and reproducers)")
    g.addoption("--mlir-trace", dest="mlir_trace", nargs="?", const="1", default=None, metavar="LEVEL",
                help="dump the migraphx module + MLIR before the first compile and each solution before it is "
                     "benchmarked, at LEVEL 1-3 (bare: 1); sets MIGRAPHX_TRACE_MLIR and "
                     "MIGRAPHX_TRACE_BENCHMARKING for the mlirtrace fixture (ini: mlir_trace)")
    g.addoption("--mlir-repro-dir", dest="mlir_repro_dir", default=None, metavar="DIR",
                help="where reproducers, tickets and INDEX.json go (ini: mlir_repro_dir; default: "
                     "reproducers/ under the rootdir)")
    g.addoption("--mlir-device", dest="mlir_device", default=None, metavar="SPEC",
                help="OpenCL device for the mlirtrace fixture: pocl, nvidia, gpu, cpu, P:D, a name substring "
                     "(ini: mlir_device; env MLIRTRACE_DEVICE)")
    g.addoption("--mlir-timeout", dest="mlir_timeout", default=None, type=float, metavar="S",
                help="seconds before a kernel counts as hung (ini: mlir_timeout; default 30)")
    g.addoption("--mlir-no-repro", dest="mlir_no_repro", action="store_true", default=False,
                help="write no reproducers for failing tests (ini: mlir_repro = false)")
    g.addoption("--mlir-reduce", dest="mlir_reduce", nargs="?", const="on", default=None, metavar="SECONDS",
                help="after the run, reduce each new reproducer (drop ops, shrink sizes, solution toward the "
                     "default, keeping its failure class) for at most SECONDS each (bare: 120); the reduced "
                     "reproducer and ticket go beside it (ini: mlir_reduce; env: MLIRTRACE_REDUCE)")
    g.addoption("--mlir-tuning-db", dest="mlir_tuning_db", default=None, metavar="PATH",
                help="tuning database file shared by the tests (ini: mlir_tuning_db; env MLIRTRACE_TUNING_DB); "
                     "default: each test has its own, in memory, so no test depends on another's tuning")
    g.addoption("--mlir-store", dest="mlir_store", default=None, metavar="DIR|URL",
                help="where shared state lives: a directory (reproducers/ and tuning.json under it), or "
                     "redis://host:port/db to share reproducers, tickets and tuning results with a fleet of "
                     "runners (ini: mlir_store; env MLIRTRACE_STORE; default: local files)")
    parser.addini("mlir_trace", "mlirtrace trace level 0-3 (like --mlir-trace=LEVEL)", default="")
    parser.addini("mlir_store", "mlirtrace store: a directory or redis://host:port/db", default="")
    g.addoption("--mlir-devices", dest="mlir_devices", default=None, metavar="all|SPEC,SPEC",
                help="with pytest-xdist: one worker per OpenCL device (all of them, or the specs listed: 0:0,0:1, "
                     "nvidia, ...), each worker's fixture pinned to its device and the device named in every "
                     "report; -n defaults to the number of devices (ini: mlir_devices; env MLIRTRACE_DEVICES)")
    parser.addini("mlir_devices", "mlirtrace: one pytest-xdist worker per OpenCL device: all, or specs", default="")
    parser.addini("mlir_tuning_db", "mlirtrace tuning database file shared by the tests (relative to the ini "
                                    "file); default: one in memory per test", default="")
    parser.addini("mlir_repro_dir", "mlirtrace reproducer directory (relative to the ini file)", default="")
    parser.addini("mlir_device", "mlirtrace OpenCL device spec", default="")
    parser.addini("mlir_timeout", "mlirtrace hang timeout in seconds", default="")
    parser.addini("mlir_repro", "write mlirtrace reproducers for failing tests (true/false; default true)",
                  default="")
    parser.addini("mlir_reduce", "reduce each new mlirtrace reproducer after the run: seconds each, or on/off",
                  default="")


def _ini_text(v):
    """An ini value as text (pytest may hand over a list for a key given twice)."""
    if v is None:
        return None
    return " ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _is_level(v: str) -> bool:
    return v.strip().lower() in ("", "on", "off", "true", "false", "yes", "no") or v.strip().isdigit()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """``--mlir-trace tests/x.py``: the optional LEVEL must not swallow the path that follows."""
    for i, a in enumerate(list(args)):
        if a == "--":
            break
        if a == "--mlir-trace" and i + 1 < len(args) and not args[i + 1].startswith("-") \
                and not _is_level(args[i + 1]):
            args[i] = "--mlir-trace=1"


def resolve_settings(config):
    """The run's :class:`~pytest_mlirtrace.config.Settings` (option > environment > ini); a bad value is a
    usage error naming where it came from."""
    opt = config.option
    ini_keys = {"trace": "mlir_trace", "repro_dir": "mlir_repro_dir", "device": "mlir_device",
                "timeout_s": "mlir_timeout", "repro": "mlir_repro", "tuning_db": "mlir_tuning_db",
                "reduce_s": "mlir_reduce", "store": "mlir_store", "devices": "mlir_devices"}
    try:
        return resolve({"trace": opt.mlir_trace, "repro_dir": opt.mlir_repro_dir, "device": opt.mlir_device,
                        "timeout_s": opt.mlir_timeout, "repro": False if opt.mlir_no_repro else None,
                        "tuning_db": opt.mlir_tuning_db, "reduce_s": opt.mlir_reduce, "store": opt.mlir_store,
                        "devices": opt.mlir_devices},
                       option_names={"trace": "--mlir-trace", "repro_dir": "--mlir-repro-dir",
                                     "device": "--mlir-device", "timeout_s": "--mlir-timeout",
                                     "tuning_db": "--mlir-tuning-db", "reduce_s": "--mlir-reduce",
                                     "store": "--mlir-store", "devices": "--mlir-devices"},
                       env=os.environ, ini={k: _ini_text(config.getini(v)) for k, v in ini_keys.items()},
                       ini_names=ini_keys, ini_file=str(config.inipath.name) if config.inipath else "")
    except SettingError as e:
        raise pytest.UsageError(str(e)) from None


def _worker_devices(config) -> list | None:
    return getattr(config, "workerinput", {}).get("mlirtrace_devices")


def _resolve_devices(st) -> list[str]:
    """The specs (``P:D``) of ``--mlir-devices``: every OpenCL device for ``all`` (enumerated in a
    subprocess, as the runtime always does), else each spec's device; a usage error naming the source."""
    from ..runtime import DeviceError, list_devices
    from ..runtime.device import match_spec

    try:
        devs = list_devices()
        if st.devices == ("all",):
            out = [d.spec for d in devs]
        else:
            out = [match_spec(devs, s).spec for s in st.devices]
    except DeviceError as e:
        raise pytest.UsageError(f"{st.source('devices')}: {e}") from None
    if not out:
        raise pytest.UsageError(f"{st.source('devices')}: no OpenCL device")
    return list(dict.fromkeys(out))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``--mlir-devices``: the devices resolved once, on the controller; with pytest-xdist and no ``-n`` given,
    one worker per device (each pinned to its own in ``pytest_configure_node``); ``-n 0`` keeps one process
    (on the first device)."""
    if hasattr(config, "workerinput"):      # a worker: the controller resolved them
        return None
    st = resolve_settings(config)
    config.stash[SETTINGS_KEY] = st        # MlirtraceState takes these: resolved once
    if not st.devices:
        return None
    devices = _resolve_devices(st)
    config.stash[DEVICES_KEY] = devices
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None) is None:
        config.option.numprocesses = len(devices)
        if getattr(config.option, "dist", "no") == "no":
            config.option.dist = "load"
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist (controller): each worker gets the device list; it takes the one of its index."""
    devices = node.config.stash.get(DEVICES_KEY, None)
    if devices:
        node.workerinput["mlirtrace_devices"] = list(devices)


class MlirtraceState:
    """Per pytest process: options, the lazily made TraceSession and writer, what reports carried.

    The OpenCL worker pool behind the session is the runtime's process-wide one (closed at exit)."""

    def __init__(self, config):
        self.config = config
        st = config.stash.get(SETTINGS_KEY, None) or resolve_settings(config)    # (xdist workers: here)
        try:
            check_trace_env(os.environ)
        except SettingError as e:
            raise pytest.UsageError(str(e)) from None
        self.settings = st
        self.level = st.trace
        self.store_spec = st.store
        self._store = None
        under = Path(st.store.where) if st.store is not None and not st.store.is_redis else None
        self.repro_dir = self._path("repro_dir") or (under or Path(config.rootpath)) / "reproducers"
        self.tuning_db = self._path("tuning_db") or (under / "tuning.json" if under else None)
        # None: each test has its own, in memory (unless a fleet's store shares one)
        self._database = None
        self.device = st.device
        devices = _worker_devices(config) or config.stash.get(DEVICES_KEY, None)
        self.pinned = None           # --mlir-devices: (this worker's device, every device)
        if devices:
            wid = getattr(config, "workerinput", {}).get("workerid", "gw0")
            i = int(wid[2:]) if wid[2:].isdigit() else 0
            self.device = devices[i % len(devices)]
            self.pinned = (self.device, tuple(devices))
        self.timeout_s = st.timeout_s
        self.repro = st.repro
        self.started = time.time()
        self._session = None
        self._session_error: Exception | None = None
        self._writer = None
        self.reported: dict[tuple[str, str], dict] = {}    # (nodeid, signature) -> WrittenRepro dict + origin
        self.current_item = None     # the test running now (mlirtrace_session.for_example() binds to it)

    def _path(self, name: str) -> Path | None:
        """A path setting: relative to where pytest was started (option), to the ini file (ini key), as it
        is (environment); None when unset."""
        value, src = getattr(self.settings, name), self.settings.source(name)
        if not value:
            return None
        if src.endswith("(command line)"):
            return Path(self.config.invocation_params.dir, value)
        if "(ini file" in src:
            return Path(self.config.inipath.parent if self.config.inipath else self.config.rootpath, value)
        return Path(value)

    def tuning_database(self):
        """The tuning database of one test: the named one (shared by every test), else a new one in memory."""
        from ..engine import MemoryDatabase, TuningDatabase

        fleet = self.store_spec is not None and self.store_spec.is_redis
        if self.tuning_db is None and not fleet:
            return MemoryDatabase()
        if self._database is None:
            self._database = self.store().tuning_database(self.tuning_db) if fleet else TuningDatabase(self.tuning_db)
        return self._database

    def store(self):
        """The run's :class:`~pytest_mlirtrace.store.Store` (made on first use; closed at the end)."""
        if self._store is None:
            from ..store import Store
            self._store = Store(self.store_spec, say=_store_warning)
        return self._store

    def trace_session(self):
        if self._session is None:
            if self._session_error is not None:
                raise self._session_error
            from ..trace import TraceConfig, TraceSession
            try:
                from ..engine import MemoryDatabase
                # every call passes its test's database; the session's own is never on disk
                self._session = TraceSession(self.device, config=TraceConfig.from_level(self.level),
                                             timeout_s=self.timeout_s, database=MemoryDatabase(),
                                             **self._pool_kw())
            except Exception as e:   # noqa: BLE001 - no OpenCL device: every test using the fixture says so
                self._session_error = e
                raise
        return self._session

    def _pool_kw(self) -> dict:
        """Beside other xdist workers, this process's pool has its share of the CPUs (one worker each on
        2 cores: the workers' processes are the parallelism, and each OpenCL worker costs a PoCL start-up);
        alone, the runtime's default."""
        workers = _xdist_workers(self.config)
        if workers <= 1:
            return {}
        from .. import runtime
        return {"pool": runtime.get_pool(self.device, workers=max(1, (os.cpu_count() or 1) // workers))}

    def writer(self):
        if self._writer is None:
            self._writer = self.store().repro_writer(self.repro_dir)
        return self._writer

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


class StoreWarning(UserWarning):
    """The store (``--mlir-store redis://...``) could not be reached, or came back."""


def _store_warning(msg: str) -> None:
    import warnings
    warnings.warn(StoreWarning(f"mlirtrace: {msg}"), stacklevel=2)


def _unpin_pocl_threads_beside_other_workers(config) -> None:
    """An xdist worker beside others: PoCL's compute threads not pinned one per core, unless the user set
    ``POCL_AFFINITY``. Pinned (the runtime's default for a process that times kernels alone), the threads of
    several processes' PoCL all sit on the same cores and wait on each other: two pytest processes running
    the codegen suite side by side on 2 cores took 38 s each pinned and 27 s unpinned, against 25 s alone
    (BENCHMARKS.md, "The test suite on 2 cores")."""
    if _xdist_workers(config) > 1:
        os.environ.setdefault("POCL_AFFINITY", "0")


def _xdist_workers(config) -> int:
    """How many pytest-xdist workers this run has (1 in a run without xdist, and on its controller)."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    return workers if isinstance(workers, int) else 1


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER_HELP)
    _unpin_pocl_threads_beside_other_workers(config)
    state = MlirtraceState(config)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(_Reporter(state), "mlirtrace-reporter")


def pytest_unconfigure(config):
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def pytest_report_header(config):
    """One line: the device, the tuning database, where reproducers go (and PoCL's wheel version when
    installed); nothing is imported or started for it."""
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    try:
        from importlib.metadata import PackageNotFoundError, version
        try:
            pocl = f" (pocl-binary-distribution {version('pocl-binary-distribution')})"
        except PackageNotFoundError:
            pocl = ""
    except Exception:   # noqa: BLE001 - a header is never worth a failed run
        pocl = ""
    device = state.device or "default (PoCL CPU)"
    if state.pinned is not None:
        device = f"{state.pinned[0]} (one pytest-xdist worker per device: {', '.join(state.pinned[1])})"
    db = _shown(config, state.tuning_db) if state.tuning_db is not None else "per test, in memory"
    repro = f"reproducers -> {_shown(config, state.repro_dir)}" if state.repro else "reproducers off"
    fleet = state.store_spec is not None and state.store_spec.is_redis
    if fleet and state.tuning_db is None:
        db = f"{state.store_spec.display()} (fleet)"
    elif fleet:
        db += f" + {state.store_spec.display()} (fleet)"
    if fleet:
        repro += f" (one per signature fleet-wide: {state.store_spec.display()})"
    return f"mlirtrace: device {device}{pocl}, tuning database {db}, {repro}"


def _shown(config, path) -> str:
    """``path`` relative to where pytest was started when it lies below it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path(config.invocation_params.dir).resolve()))
    except (ValueError, OSError):
        return str(path)


# -------------------------------------------------------------------------------- marker ---
MARKER_HELP = ("mlirtrace(device=None, timeout=None, max_ms=None, solution=None, trace=None): defaults of this "
               "test's mlirtrace fixture calls: timeout = hang timeout in seconds of every call (a call's "
               "timeout_s wins), max_ms = run()'s max_ms, solution = run()'s and compile()'s solution, trace = "
               "the trace level 0-3 of its calls, device = must be the session's device (--mlir-device)")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v > 0


_MARK_CHECKS = {
    "device": (lambda v: isinstance(v, str) and v.strip() != "", "a device spec (text, as --mlir-device takes)"),
    "timeout": (_number, "a positive number of seconds"),
    "max_ms": (_number, "a positive number of milliseconds"),
    "solution": (lambda v: isinstance(v, str) and v.strip() != "", "a solution (perf-config text)"),
    "trace": (lambda v: isinstance(v, int) and 0 <= int(v) <= 3, "a trace level 0-3"),
}


def marker_options(node) -> tuple[dict, str | None]:
    """The ``mlirtrace`` marks of ``node`` merged (the closest mark wins per argument; ``None``: not given),
    and the message of the first bad argument, or None."""
    opts: dict = {}
    for mark in node.iter_markers("mlirtrace"):
        if mark.args:
            return {}, (f"@pytest.mark.mlirtrace takes keyword arguments only ({', '.join(_MARK_CHECKS)}); "
                        f"got positional {', '.join(map(repr, mark.args))}")
        for k, v in mark.kwargs.items():
            if k not in _MARK_CHECKS:
                return {}, (f"@pytest.mark.mlirtrace: unknown argument {k}={v!r}; known: "
                            f"{', '.join(_MARK_CHECKS)}")
            if v is None:
                continue
            ok, expected = _MARK_CHECKS[k]
            if not ok(v):
                return {}, f"@pytest.mark.mlirtrace({k}={v!r}): expected {expected}, got {type(v).__name__}"
            opts.setdefault(k, v)
    return opts, None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """A bad ``mlirtrace`` mark fails the test before its body runs."""
    err = item.stash.get(MARK_ERROR_KEY, None)
    if err:
        pytest.fail(err, pytrace=False)


# ------------------------------------------------------------------------------- fixture ---
@pytest.fixture
def mlirtrace(request):
    """Compile, tune and run fused ops on the OpenCL device; a failure fails the test and leaves a reproducer.

    ``mlirtrace.run(source, solution=None, seed=0, max_ms=None)`` -> RunResult (fails the test on
    wrong numbers, crash, hang, build error, or slower than ``max_ms``); ``.tune(source, mode="quick")``
    -> TuneResult; ``.compile(source, solution=None)`` -> CompiledResult; ``.log`` (this test's
    TraceLog); ``.last_span``. ``source``: MLIR text, MIGraphX text or an ``ir.Module``.
    ``@pytest.mark.mlirtrace(...)`` on the test sets the calls' defaults (``MARKER_HELP``).
    """
    opts, err = marker_options(request.node)
    if err:
        request.node.stash[MARK_ERROR_KEY] = err    # failed by pytest_runtest_call, before the body runs
    from .facade import Mlirtrace

    facade = Mlirtrace(request.config.stash[STATE_KEY], request.node, marks=opts)
    request.node.stash[FACADE_KEY] = facade
    yield facade
    facade.close()


@pytest.fixture(scope="session")
def mlirtrace_session(request):
    """For ``@given`` tests (Hypothesis's health checks left on): ``with mlirtrace_session.for_example() as
    mlirtrace:`` gives a fresh recorder, the ``mlirtrace`` fixture's object, for each example; failures
    are reported with the test running (Hypothesis's final, shrunk example writes the reproducer)."""
    from .per_example import MlirtraceSession

    return MlirtraceSession(request.config.stash[STATE_KEY])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The test running now, for ``mlirtrace_session.for_example()`` (a session-scoped fixture has no item)."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        yield
        return
    state.current_item = item
    try:
        yield
    finally:
        state.current_item = None


# ------------------------------------------------------------------------------- reports ---
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed phase of a test that compiled something: write its reproducers now (a process that dies
    later loses nothing), add the report sections and the junit properties."""
    outcome = yield
    facade = item.stash.get(FACADE_KEY, None)
    if facade is not None and call.when == "call":
        state = item.config.stash[STATE_KEY]
        if state.pinned is not None:       # --mlir-devices: every report names its worker's device
            prop = (PROP_DEVICE, state.pinned[0])
            outcome.get_result().user_properties.append(prop)
            item.user_properties.append(prop)      # junitxml writes them from the teardown report
    if facade is None or not facade.spans or call.excinfo is None:
        return
    rep = outcome.get_result()
    if not rep.failed or rep.when == "teardown":      # an error tearing a fixture down is not the compiler's
        return
    try:
        reported = facade.report_failure(rep, call)
    except Exception as e:   # noqa: BLE001 - never lose the test's own report
        rep.sections.append((SECTION + "reproducer", f"mlirtrace could not write the reproducer: "
                                                     f"{type(e).__name__}: {e}"))
        return
    if reported and item.config.pluginmanager.hasplugin("html"):
        try:
            from .html_extras import attach

            attach(rep, reported, item.config.stash[STATE_KEY].repro)
        except Exception as e:   # noqa: BLE001 - the HTML view is never worth the report
            rep.sections.append((SECTION + "html", f"mlirtrace could not add the pytest-html extras: "
                                                   f"{type(e).__name__}: {e}"))


class _Reporter:
    """Registered per config: collects the reproducers each report names (on the xdist controller
    too, user_properties travel with the reports) and lists them in the terminal summary."""

    def __init__(self, state: MlirtraceState):
        self.state = state

    def pytest_runtest_logreport(self, report):
        if not report.failed:
            return
        for name, value in getattr(report, "user_properties", None) or ():
            if name != PROP_REPRO:
                continue
            try:
                d = json.loads(value)
            except (TypeError, ValueError):
                continue
            self.state.reported.setdefault((report.nodeid, d["signature"]), dict(d, nodeid=report.nodeid))

    def pytest_terminal_summary(self, terminalreporter):
        state = self.state
        rows = list(state.reported.values())
        extra = _written_elsewhere(state, rows) if terminalreporter.stats.get("failed") or rows else []
        if not rows and not extra:
            return
        from ..repro.files import display_path as _rel

        tr = terminalreporter
        tr.write_sep("=", "mlirtrace reproducers")
        by_sig: dict[str, list[dict]] = {}
        for r in rows:
            by_sig.setdefault(r["signature"], []).append(r)
        for sig, rs in by_sig.items():
            count = max(int(r["count"]) for r in rs)
            tag = "new" if any(r["new"] for r in rs) else "repeat"
            where = _rel(rs[0]["script_path"])
            if rs[0].get("elsewhere") and not any(r["new"] for r in rs):
                where = f"(another runner's, in the store {rs[0]['elsewhere']}: mlirtrace repro pull)"
            tr.write_line(f"{tag:<6} {sig}  {where}  (count {count}: "
                          f"{', '.join(r['nodeid'] for r in rs)})")
        for e in extra:
            tr.write_line(f"{'index':<6} {e['signature']}  {_rel(str(state.repro_dir / e['script']))}  "
                          f"(count {e['count']}, last from {e.get('last_origin')}: no test report named it)")
        n_new = sum(1 for rs in by_sig.values() if any(r["new"] for r in rs))
        tr.write_line(f"{len(by_sig) + len(extra)} reproducer(s), {n_new} new, in {_rel(str(state.repro_dir))}/ "
                      f"(INDEX.md, INDEX.json); run one: python <reproducer>.py  (exit 0 = fixed, 1 = reproduces)")
        if state.settings.reduce_s and n_new and not _is_xdist_worker(tr.config):
            _reduce_new(state, tr, [rs[0]["script_path"] for rs in by_sig.values() if any(r["new"] for r in rs)])


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _reduce_new(state, tr, scripts: list[str]) -> None:
    """``--mlir-reduce``: each new reproducer reduced (isolated runs, its budget), one line each; a reproducer
    no run shows again (an assertion, a slow run) or a failure of the reduction is said, never raised."""
    from ..repro.files import display_path as _rel
    from ..repro.reduce import reduce_reproducer

    budget = state.settings.reduce_s
    tr.write_sep("-", f"mlirtrace reduce ({budget:g} s at most each)")
    for path in scripts:
        tr.write_line(f"reducing {_rel(path)} ...")
        try:
            out = reduce_reproducer(path, state.device, state.timeout_s, budget)
        except ValueError as e:
            tr.write_line(f"  not reduced: {e}")
            continue
        except Exception as e:   # noqa: BLE001 - the test run's outcome stands; say what went wrong
            tr.write_line(f"  not reduced: {type(e).__name__}: {e}")
            continue
        tr.write_line(f"  {out.message}")
        if out.script_path is not None:
            tr.write_line(f"  {_rel(str(out.script_path))}  (ticket: {_rel(str(out.ticket_path))})")


def _written_elsewhere(state, rows) -> list[dict]:
    """Index entries updated during this session that no report named (a worker that died, say)."""
    path = state.repro_dir / "INDEX.json"
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("reproducers", {})
    except (OSError, ValueError):
        return []
    named = {r["signature"] for r in rows}
    return [e for sig, e in sorted(entries.items())
            if sig not in named and float(e.get("last_seen", 0)) >= state.started]
