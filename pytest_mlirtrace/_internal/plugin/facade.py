"""The ``mlirtrace`` fixture's object: a per-test facade over the per-process TraceSession.

Imported on the fixture's first use only (it pulls in the compiler and the OpenCL runtime).
"""
from __future__ import annotations

import contextlib
import json
import linecache
import os
import sys
from typing import NamedTuple

import pytest

from ..config import SettingError, environment, inject_now
from ..engine import RunOptions
from ..repro import FailureRecord, Findings, records_from_events, signature
from ..repro.files import display_path as _rel
from ..repro.payload import device_description, device_key
from ..runtime import DeviceError, resolve_device
from ..trace import TraceConfig, TraceLog
from ..vocab import Status
from .hypothesis_examples import current_example, example_notes, is_hypothesis_test
from .keys import (
    PROP_CALL,
    PROP_KEY,
    PROP_MLIR,
    PROP_MODULE,
    PROP_REPRO,
    PROP_SCRIPT,
    PROP_SIGNATURE,
    PROP_TICKET,
    SECTION,
)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class Mlirtrace:
    """``run`` / ``tune`` / ``compile`` a fused op; a failure fails the test (``check=False``: returned only).

    ``log``: this test's :class:`TraceLog` (every event of every call); ``last_span``: the span of the
    last thing compiled; ``spans``: all of them; ``failures``: the :class:`FailureRecord` of each failure.
    ``marks``: the test's ``@pytest.mark.mlirtrace`` arguments (validated by the plugin): the defaults of
    its calls (``timeout``, ``max_ms``, ``solution``, ``trace``) and the device it must run on.
    """

    def __init__(self, state, node, marks=None):
        self._state = state
        self.node = node
        self.marks = dict(marks or {})
        self.log = TraceLog()
        self.spans: list = []
        self.last_span = None
        self.failures: list[FailureRecord] = []
        self._last_seed = 0
        self._tuned = False
        self._raised: dict[int, tuple[BaseException, list[FailureRecord]]] = {}
        self._written: list[FailureRecord] = []      # records already written (identity)
        self._session = None
        self._opts = RunOptions()                    # the options of the last call
        # the tuning database of this test: its own, in memory, unless the run names one
        self._db = state.tuning_database()
        # inside a Hypothesis test: the example now running, and the failures of that example only
        self._example = None
        self._current: list[FailureRecord] = []

    def __repr__(self) -> str:          # as Hypothesis prints a falsifying example's arguments
        return "<mlirtrace>"

    # ---- plumbing ----------------------------------------------------------
    @property
    def session(self):
        """The per-process TraceSession (made on first use, this test's log attached)."""
        if self._session is None:
            try:
                s = self._state.trace_session()
            except DeviceError as e:
                _stop_for_environment(e)
            except Exception as e:   # noqa: BLE001
                pytest.fail(f"mlirtrace: no usable OpenCL device ({self._state.device or 'default'}): "
                            f"{type(e).__name__}: {e}", pytrace=False)
            self._check_marked_device(s)
            s.log.clear()                 # the session's own log would only grow
            self._session = s
        return self._session

    @property
    def device(self):
        return self.session.device

    def _check_marked_device(self, s) -> None:
        """``@pytest.mark.mlirtrace(device=...)``: the session's device, or the test fails (the worker pool,
        and so the device, is one per process)."""
        spec = self.marks.get("device")
        if spec is None:
            return
        have = s.device
        session = (f"the session's device is {have.spec} ({have.name}; --mlir-device "
                   f"{self._state.device or '(default)'})")
        try:
            want = resolve_device(spec)
        except DeviceError as e:
            pytest.fail(f"mlirtrace: @pytest.mark.mlirtrace(device={spec!r}) names no device here "
                        f"({str(e).splitlines()[0]}); {session}", pytrace=False)
        if want.spec != have.spec:
            pytest.fail(f"mlirtrace: @pytest.mark.mlirtrace(device={spec!r}) is {want.spec} ({want.name}), but "
                        f"{session}: one device per pytest process; run this test with --mlir-device {spec}",
                        pytrace=False)

    def close(self) -> None:
        """Nothing to undo: every call passed its options as a value, the shared session is unchanged."""

    @contextlib.contextmanager
    def _call(self, timeout_s=None):
        """The options of one call, as a value: the planted faults as the environment has them now (the
        session outlives the test that set it), this call's hang timeout, this test's log as a listener."""
        try:
            inject = inject_now()
        except SettingError as e:
            pytest.fail(f"mlirtrace: {e}", pytrace=False)
        p = self.session.pipeline
        example = current_example()
        if example is not self._example:          # a new example: earlier examples' failures are not its own
            self._example, self._current = example, []
        if timeout_s is None:
            timeout_s = self.marks.get("timeout")
        self._opts = RunOptions(timeout_s=float(timeout_s) if timeout_s is not None else p.timeout_s,
                                inject=inject, listeners=(self.log,), database=self._db)
        sink, saved = self.session.sink, None
        if self.marks.get("trace") is not None:     # the marked level for this call only (env vars still raise it)
            saved, sink.config = sink.config, TraceConfig.from_level(int(self.marks["trace"]))
        try:
            yield self._opts
        except DeviceError as e:
            _stop_for_environment(e)
        finally:
            if saved is not None:
                sink.config = saved

    def _rec_kw(self) -> dict:
        o = self._opts
        return {"inject": o.inject or "", "timeout_s": o.timeout_s, "device_info": self.session.pipeline.device}

    def _note(self, span, seed: int) -> None:
        if span is not None:
            self.spans.append(span)
            self.last_span = span
            self._last_seed = seed

    def _records_from_events(self, start: int, specs: dict, seed: int, passed=()) -> list[FailureRecord]:
        return records_from_events(self.log.events[start:], seed=seed, origin=self.node.nodeid, specs=specs,
                                   bench_table=self.log.bench_table() if self._tuned else "", passed=passed,
                                   **self._rec_kw())

    def _call_site(self) -> str:
        """The line of the test that made the fixture call now failing: the outermost frame in the test's
        file (the test function; a helper of that file it went through is named after "via"), else the
        first frame outside this package; each with its source line."""
        path, frames = str(self.node.path), []
        f = sys._getframe(1)
        while f is not None:
            if not f.f_code.co_filename.startswith(_PACKAGE_DIR):
                frames.append((f.f_code.co_filename, f.f_lineno))
            f = f.f_back

        def shown(fn, line):
            text = linecache.getline(fn, line).strip()
            return f"{_rel(fn)}:{line}" + (f": {text}" if text else "")
        mine = [x for x in frames if x[0] == path]
        if not mine:
            return shown(*frames[0]) if frames else ""
        site = shown(*mine[-1])
        return site if mine[0] == mine[-1] else f"{site} (via {shown(*mine[0])})"

    def _add(self, recs: list[FailureRecord]) -> None:
        site = self._call_site()
        for r in recs:
            r.call_site = r.call_site or site
        self.failures.extend(recs)
        self._current.extend(recs)

    def _fail(self, recs: list[FailureRecord], what: str = "") -> None:
        if self._state.repro and self._example is None:
            self._check_planted(recs)   # before the signature is shown (inside Hypothesis: at the report)
        self._add(recs)
        first = recs[0]
        s = first.span
        lines = [f"mlirtrace: {first.kind}: {first.symbol} with solution {s.solution or '(none)'} on "
                 f"{device_key(first)} ({first.stage} stage){what}"]
        if first.call_site:
            lines.append(f"  called at {first.call_site}")
        err = first.error.rstrip().splitlines() or [first.kind]
        lines += ["  " + ln for ln in err[:12]] + (["  ..."] if len(err) > 12 else [])
        lines.append(f"  problem key: {s.problem_key}")
        more = f" (+{len(recs) - 1} more failures)" if len(recs) > 1 else ""
        lines.append(f"  signature: {signature(first)}{more}")
        if self._state.repro:
            lines.append(f"  reproducer: {_rel(self._state.repro_dir / (signature(first) + '.py'))} "
                         "(see the 'mlirtrace: reproducer' section)")
        exc = pytest.fail.Exception("\n".join(lines), pytrace=False)
        self._raised[id(exc)] = (exc, recs)
        while len(self._raised) > 64:              # shrinking raises many: the final ones are the last
            self._raised.pop(next(iter(self._raised)))
        raise exc

    # ---- public API --------------------------------------------------------
    def run(self, source, solution=None, seed: int = 0, max_ms: float | None = None, *, check: bool = True,
            timeout_s: float | None = None, repeats: int | None = None):
        """Compile with ``solution`` (else the best known: tuning database, else the default), run on
        ``ir.random_inputs(module, seed)``, check against the oracle; fail the test on wrong numbers,
        crash, hang, build error, launch error, or a median time above ``max_ms``. ``solution`` and
        ``max_ms`` default to the test's ``@pytest.mark.mlirtrace`` arguments."""
        if solution is None:
            solution = self.marks.get("solution")
        if max_ms is None:
            max_ms = self.marks.get("max_ms")
        reps = repeats or (5 if max_ms is not None else 1)
        with self._call(timeout_s) as opts:
            res = self.session.run(source, solution=solution, seed=seed, repeats=reps, options=opts)
            kw = self._rec_kw()
        self._note(res.compiled.span, seed)
        slow = res.ok and max_ms is not None and res.time_ms is not None and res.time_ms > max_ms
        if not res.ok or slow:
            rec = FailureRecord.from_run(res, origin=self.node.nodeid, max_ms=max_ms, **kw)
            rec.bench_table = self.log.bench_table() if self._tuned else ""
            if check:
                self._fail([rec])
            self._add([rec])
        return res

    def tune(self, source, mode: str = "quick", *, check: bool = True, use_database: bool = False,
             solutions: list | None = None, timeout_s: float | None = None):
        """Benchmark every solution of the quick list (``mode="exhaustive"``: the whole space), keep the
        fastest correct one (stored in the tuning database); fail the test if any solution crashes,
        hangs, fails to build or computes wrong numbers, or none works."""
        start = len(self.log.events)
        self._tuned = True
        with self._call(timeout_s) as opts:
            tr = self.session.tune(source, mode=mode, use_database=use_database, solutions=solutions, options=opts)
            recs = self._records_from_events(start, {c.span.hash: c.spec for c in tr.failures},
                                             self.session.pipeline.seed,
                                             passed=[r.solution for r in tr.rows if r.status == Status.OK])
        self._note((tr.best.span if tr.best is not None else (tr.failures[0].span if tr.failures else None)),
                   self.session.pipeline.seed)
        if recs and (check or tr.best is None):
            self._fail(recs, f"; {len(tr.failures)} of {len(tr.rows)} solutions failed")
        if tr.best is None and check:
            pytest.fail(f"mlirtrace: no solution of {tr.lowered.key} works", pytrace=False)
        self._add(recs)
        return tr

    def compile(self, source, solution=None, *, check: bool = True):
        """Lower and build one solution (the default one when none is given, or the test's marked one); fail
        the test if it does not build."""
        if solution is None:
            solution = self.marks.get("solution")
        start = len(self.log.events)
        with self._call() as opts:
            c = self.session.compile(source, solution, options=opts)
            recs = [] if c.ok else self._records_from_events(start, {c.span.hash: c.spec}, self.session.pipeline.seed)
        self._note(c.span, self.session.pipeline.seed)
        if not c.ok:
            if check and recs:
                self._fail(recs)
            self._add(recs)
        return c

    # ---- the failing test's report ------------------------------------------
    def _hits(self, call) -> list[tuple[BaseException, list[FailureRecord]]]:
        """What this recorder's fixture calls raised, of the exception(s) that ended the test (each of a
        group: Hypothesis reports several distinct failures as one)."""
        out = []
        for exc in _flatten(call.excinfo.value):
            hit = self._raised.get(id(exc))
            if hit is not None and hit[0] is exc:
                out.append(hit)
        return out

    def raised(self, call) -> bool:
        """Whether a fixture call of this recorder raised (part of) the failure that ended the test."""
        return bool(self._hits(call))

    def _records_for(self, call) -> tuple[list[FailureRecord], list[str]]:
        """The records of the failure that ended the test, and what Hypothesis noted about its example
        ([] outside Hypothesis): those of the fixture call(s) that raised it, else the unchecked failures
        of the last example (a Hypothesis test: the final, shrunk one; else the whole test), else an
        assertion of the test's own."""
        hits = self._hits(call)
        given = is_hypothesis_test(self.node)
        if hits:
            return [r for h in hits for r in h[1]], example_notes(*(h[0] for h in hits)) if given else []
        notes = example_notes(*_flatten(call.excinfo.value)) if given else []
        pending = [r for r in self._current if not self._was_written(r)]
        if pending:
            return pending, notes
        error = call.excinfo.exconly(tryshort=False) or call.excinfo.typename
        return [FailureRecord(Status.ASSERTION, self.last_span, "test", error, seed=self._last_seed,
                              origin=self.node.nodeid, **self._rec_kw())], notes

    def _was_written(self, rec: FailureRecord) -> bool:
        return any(rec is w for w in self._written)

    def report_failure(self, rep, call) -> list[Reported]:
        """Write the reproducers of the failure that ended the test and add the report's sections and
        junit properties; what was reported (for the pytest-html extras), [] when nothing new."""
        recs, notes = self._records_for(call)
        recs = [r for r in recs if not self._was_written(r)]
        if not recs:
            return []
        written, errors = [], []
        if self._state.repro:
            filed = self._findings(self._state.writer()).file(recs, keep_going=True)
            written, errors = filed.written, filed.errors
            self._written.extend(recs)
        first = recs[0]
        s = first.span
        add = rep.sections.append
        add((SECTION + "migraphx module", s.module_text))
        add((SECTION + "MLIR", s.mlir_text))
        add((SECTION + "problem key and solution", _key_section(first, recs)))
        if notes:
            add((SECTION + "Hypothesis example", "\n".join(notes)))
        if s.kernel_source:
            add((SECTION + "kernel source", s.kernel_source))
        if self._tuned and self.log.bench_table():
            add((SECTION + "benchmark table", self.log.bench_table()))
        add((SECTION + "reproducer", _repro_section(written, errors, self._state.repro)))
        for w in written:
            props = [(PROP_SIGNATURE, w.signature), (PROP_SCRIPT, str(w.script_path)),
                     (PROP_TICKET, str(w.ticket_path)), (PROP_REPRO, json.dumps(w.to_dict()))]
            rep.user_properties.extend(props)
            self.node.user_properties.extend(props)
        # what a CI page needs to show the failure with the test (junitxml writes them as properties)
        props = [(PROP_KEY, f"{s.problem_key}\t{s.solution}"), (PROP_MLIR, s.mlir_text or ""),
                 (PROP_MODULE, s.module_text or "")] + ([(PROP_CALL, first.call_site)] if first.call_site else [])
        rep.user_properties.extend(props)
        self.node.user_properties.extend(props)
        self._announce(recs, written, rep)
        return [Reported(recs, written, errors, list(self.log.events) if self._tuned else [], notes)]

    def _announce(self, recs: list[FailureRecord], written, rep) -> None:
        """``pytest_mlirtrace_failure`` once per distinct failure (signature); a failing implementation
        leaves a report section, never a lost report."""
        by_sig = {w.signature: w for w in written}
        hook = self.node.config.hook.pytest_mlirtrace_failure
        seen: set[str] = set()
        for r in recs:
            sig = signature(r)
            if sig in seen:
                continue
            seen.add(sig)
            try:
                hook(record=r, report=rep, written=by_sig.get(sig))
            except (Exception, pytest.fail.Exception, pytest.skip.Exception) as e:   # noqa: BLE001
                rep.sections.append((SECTION + "failure hook",
                                     f"a pytest_mlirtrace_failure implementation failed on {sig}: "
                                     f"{type(e).__name__}: {e}"))

    def _findings(self, writer=None) -> Findings:
        """The findings service on this test's session (it runs a case again for the planted check)."""
        return Findings(writer, pipeline=self.session.pipeline)

    def _check_planted(self, recs: list[FailureRecord]) -> None:
        """'Planted' only once a failure recorded with a fault on passes with it off (Findings.settle)."""
        self._findings().settle(recs)


class Reported(NamedTuple):
    """One failing test's reported failure, as the pytest-html extras show it."""
    records: list            # the FailureRecords (the first one's span is shown; one signature or more)
    written: list            # the WrittenRepros ([] when reproducers are off)
    errors: list             # what could not be written
    events: list             # the recorder's events when the test tuned (the tuning chart), else []
    notes: list              # what Hypothesis reported in the failing example ([] outside Hypothesis)


def _flatten(exc):
    """``exc`` and, for an exception group, every exception inside it."""
    yield exc
    for sub in getattr(exc, "exceptions", None) or ():
        if isinstance(sub, BaseException):
            yield from _flatten(sub)


def _stop_for_environment(e: DeviceError):
    """No device, or an OpenCL worker that can't start or import: no test can be judged, so the run
    stops once, with exit status 4, instead of failing every test that uses the fixture."""
    pytest.exit(f"mlirtrace: environment: {e}", returncode=e.exit_status)


def _key_section(first: FailureRecord, recs: list[FailureRecord]) -> str:
    s = first.span
    lines = [f"Problem: {s.problem_key}", f"Solution: {s.solution}", f"Device: {device_description(first)}",
             f"Failure: {first.kind} at {first.stage}: {first.first_line}",
             f"Seed: {first.seed}  span {s.hash}  mlir {s.mlir_hash}"]
    if first.call_site:
        lines.append(f"Called at: {first.call_site}")
    if first.kind == Status.HANG and first.timeout_s is not None:
        lines.append(f"Timeout: {first.timeout_s:g} s")
    if first.inject:
        lines.append(f"Injected fault: {environment.INJECT}={first.inject}")
    for r in recs[1:]:
        lines.append(f"Also: {r.kind} with solution {r.span.solution} at {r.stage}: {r.first_line}")
    return "\n".join(lines)


def _repro_section(written, errors, enabled: bool) -> str:
    if not enabled:
        return "reproducers are off (--mlir-no-repro / mlir_repro = false)"
    lines = []
    for w in written:
        if getattr(w, "elsewhere", ""):    # a fleet: another runner wrote it; the store holds it
            lines += [f"{w.signature}: written by another runner ({w.count} occurrences fleet-wide), kept in the "
                      f"store {w.elsewhere}",
                      f"  fetch it:   mlirtrace repro pull DIR --store {w.elsewhere}"]
            continue
        script = _rel(w.script_path)
        state = "new" if w.new else f"seen before: {w.count} occurrences"
        exits = ("exit 5 = only this test can judge its assertion, 1 = the kernel fails now"
                 if w.signature.startswith(f"{Status.ASSERTION}-") else "exit 0 = fixed, 1 = reproduces")
        lines += [f"{script}  ({w.signature}, {state})",
                  f"  run:        python {script}   ({exits})",
                  f"  standalone: python {script} --standalone   (numpy + pyopencl only)",
                  f"  ticket:     {_rel(w.ticket_path)}"]
    lines += [f"could not write {e}" for e in errors]
    return "\n".join(lines)
