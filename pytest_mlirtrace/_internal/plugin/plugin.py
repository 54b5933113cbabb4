"""The ``mlirtrace`` pytest plugin (entry point ``pytest11: mlirtrace``).

Active in every pytest run but silent and cheap until a test uses the ``mlirtrace`` fixture: this
module and its parts (``options.py``, ``state.py``, ``marker.py``, ``summary.py``, ``keys.py``) import only
the standard library, pytest and ``config``; OpenCL, the compiler and the reproducer writer are imported
on the fixture's first use. The run's settings are resolved once (``options.resolve_settings``), kept by
the process's :class:`~.state.MlirtraceState` and passed down from there.

Options (and ini keys):
  ``--mlir-trace[=LEVEL]`` (``mlir_trace``)  trace dumps at LEVEL (bare: 1), what MIGRAPHX_TRACE_MLIR and
                                           MIGRAPHX_TRACE_BENCHMARKING do (the env vars still work alone)
  ``--mlir-repro-dir DIR`` (``mlir_repro_dir``, default ``reproducers`` under the rootdir)
  ``--mlir-device SPEC``   (``mlir_device``; else its environment variable, else PoCL's CPU device)
  ``--mlir-timeout S``     (``mlir_timeout``, default 30: seconds before a kernel counts as hung)
  ``--mlir-no-repro``      (``mlir_repro = false``) write no reproducers
  ``--mlir-reduce[=S]``    (``mlir_reduce``; else its environment variable) after the run, reduce each new reproducer
                           (``mlirtrace reduce``) for at most S seconds each (bare: 120)
  ``--mlir-store DIR|URL`` (``mlir_store``; else its environment variable) where shared state lives: a directory
                           (``reproducers/`` and ``tuning.json`` under it) or ``redis://host:port/db``
                           (a fleet: one reproducer per signature fleet-wide, one tuning database)
  ``--mlir-tuning-db PATH`` (``mlir_tuning_db``; else its environment variable) the tuning database the fixture
                           reads and writes; by default each test has its own, in memory, so that no test's
                           outcome depends on what another test or an earlier run tuned

Reproducers are written whenever a test that used the fixture fails (with or without
``--mlir-trace``), at the end of the failing phase, one per distinct failure: a failed fixture
call (wrong numbers, crash, hang, build error, too slow, ...) gives the reproducer of that
failure; any other failure (an ``assert`` in the test body) gives an "assertion" reproducer of the
last thing compiled, unless an unchecked fixture call (``check=False``) had failed before, whose
failures are written instead. Expected failures (xfail) write nothing.

``@pytest.mark.mlirtrace(device=, timeout=, max_ms=, solution=, trace=)`` sets the defaults of one
test's fixture calls (see ``marker.MARKER_HELP``); ``pytest_mlirtrace_failure`` (``hooks.py``) lets other
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

import pytest

from .keys import DEVICES_KEY, FACADE_KEY, PROP_DEVICE, SECTION, SETTINGS_KEY, STATE_KEY
from .marker import MARK_ERROR_KEY, MARKER_HELP, marker_options
from .options import add_options, resolve_settings, trace_level_not_a_path
from .state import MlirtraceState, unpin_pocl_threads_beside_other_workers
from .summary import Reporter, header_line

__all__ = ["STATE_KEY", "mlirtrace", "mlirtrace_session"]


# ------------------------------------------------------------------------------- options ---
def pytest_addhooks(pluginmanager):
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser):
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(args):
    """``--mlir-trace tests/x.py``: the optional LEVEL must not swallow the path that follows."""
    trace_level_not_a_path(args)


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


@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config):
    """The run's settings, resolved once (an xdist worker, which has no such call, resolves its own in
    :class:`MlirtraceState`). ``--mlir-devices``: the devices resolved once, on the controller; with
    pytest-xdist and no ``-n`` given, one worker per device (each pinned to its own in
    ``pytest_configure_node``); ``-n 0`` keeps one process (on the first device). A wrapper, so that this
    runs before pytest-xdist's own ``pytest_cmdline_main`` reads ``-n``, whatever order the plugins were
    loaded in."""
    if not hasattr(config, "workerinput"):      # a worker: the controller resolved them
        _resolve_run(config)
    yield


def _resolve_run(config) -> None:
    st = resolve_settings(config)
    config.stash[SETTINGS_KEY] = st        # MlirtraceState takes these: resolved once
    if not st.devices:
        return
    devices = _resolve_devices(st)
    config.stash[DEVICES_KEY] = devices
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None) is None:
        config.option.numprocesses = len(devices)
        if getattr(config.option, "dist", "no") == "no":
            config.option.dist = "load"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist (controller): each worker gets the device list; it takes the one of its index."""
    devices = node.config.stash.get(DEVICES_KEY, None)
    if devices:
        node.workerinput["mlirtrace_devices"] = list(devices)


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER_HELP)
    unpin_pocl_threads_beside_other_workers(config)
    state = MlirtraceState(config)
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(Reporter(state), "mlirtrace-reporter")


def pytest_unconfigure(config):
    state = config.stash.get(STATE_KEY, None)
    if state is not None:
        state.close()


def pytest_report_header(config):
    """One line: the device, the tuning database, where reproducers go (``summary.header_line``)."""
    state = config.stash.get(STATE_KEY, None)
    return None if state is None else header_line(config, state)


# -------------------------------------------------------------------------------- marker ---
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
    ``@pytest.mark.mlirtrace(...)`` on the test sets the calls' defaults (``marker.MARKER_HELP``).
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
def pytest_runtest_protocol(item):
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
        _name_the_device(item, outcome.get_result())
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
        _attach_html(item, rep, reported)


def _name_the_device(item, rep) -> None:
    """``--mlir-devices``: every report names its worker's device."""
    state = item.config.stash[STATE_KEY]
    if state.pinned is not None:
        prop = (PROP_DEVICE, state.pinned[0])
        rep.user_properties.append(prop)
        item.user_properties.append(prop)      # junitxml writes them from the teardown report


def _attach_html(item, rep, reported) -> None:
    try:
        from .html_extras import attach

        attach(rep, reported, item.config.stash[STATE_KEY].repro)
    except Exception as e:   # noqa: BLE001 - the HTML view is never worth the report
        rep.sections.append((SECTION + "html", f"mlirtrace could not add the pytest-html extras: "
                                               f"{type(e).__name__}: {e}"))
