"""The plugin when the fixture is not used: options parse, nothing is imported, nothing is written."""
from __future__ import annotations

pytest_plugins = ["pytester"]

PASSING = """
import sys

def test_plain():
    assert 1 + 1 == 2

def test_fails():
    assert 1 + 1 == 3

def test_modules_untouched():
    heavy = [m for m in ("pyopencl", "pytest_mlirtrace._internal.trace", "pytest_mlirtrace._internal.runtime",
                         "pytest_mlirtrace._internal.repro", "pytest_mlirtrace._internal.plugin.facade", "numpy")
             if m in sys.modules]
    assert heavy == []
"""


def test_unused_plugin_is_silent_and_cheap(pytester):
    pytester.makepyfile(test_plain=PASSING)
    res = pytester.runpytest_subprocess("--mlir-trace", "test_plain.py", "-p", "no:randomly",
                                        "-p", "no:hypothesispytest", "-p", "no:benchmark")
    res.assert_outcomes(passed=2, failed=1)
    out = res.stdout.str()
    assert [ln for ln in out.splitlines() if "mlirtrace" in ln and not ln.startswith("plugins:")
            and not ln.startswith("mlirtrace: device ")] == []      # the report header's line only
    assert not (pytester.path / "reproducers").exists()


def test_options_and_ini_keys_in_help(pytester):
    res = pytester.runpytest("--help")
    out = res.stdout.str()
    for opt in ("--mlir-trace=[LEVEL]", "--mlir-repro-dir=DIR", "--mlir-device=SPEC", "--mlir-timeout=S",
                "--mlir-no-repro", "mlir_trace", "mlir_repro_dir", "mlir_device", "mlir_timeout", "mlir_repro"):
        assert opt in out, opt


def test_options_reach_the_state(pytester):
    pytester.makeini("[pytest]\nmlir_repro_dir = out/repros\nmlir_device = pocl\nmlir_timeout = 7\n")
    pytester.makepyfile(test_state="""
from pytest_mlirtrace._internal.plugin.plugin import STATE_KEY

def test_state(request, pytestconfig):
    s = pytestconfig.stash[STATE_KEY]
    print("STATE", s.level, s.repro_dir.relative_to(pytestconfig.rootpath), s.device, s.timeout_s, s.repro)
""")
    res = pytester.runpytest("-s", "test_state.py")
    res.stdout.fnmatch_lines(["*STATE None out/repros pocl 7.0 True*"])
    res = pytester.runpytest("-s", "--mlir-trace", "test_state.py", "--mlir-repro-dir", "here", "--mlir-no-repro",
                             "--mlir-device", "cpu", "--mlir-timeout", "2.5")
    res.stdout.fnmatch_lines(["*STATE 1 here cpu 2.5 False*"])
    res = pytester.runpytest("-s", "--mlir-trace=3", "test_state.py")
    res.stdout.fnmatch_lines(["*STATE 3 *"])


def test_bad_level_is_a_usage_error(pytester):
    pytester.makepyfile(test_x="def test_x(): pass")
    res = pytester.runpytest("--mlir-trace=loud", "test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*--mlir-trace=loud: expected a trace level 0-3*"])
    res = pytester.runpytest("--mlir-trace=7", "test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*--mlir-trace=7: expected a trace level 0-3*"])


def test_a_bad_setting_is_one_usage_error_naming_its_source(pytester, monkeypatch):
    pytester.makepyfile(test_x="def test_a(): pass\ndef test_b(): pass")
    monkeypatch.setenv("MLIRTRACE_INJECT", "no_such_fault")
    res = pytester.runpytest("test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*MLIRTRACE_INJECT=no_such_fault: unknown fault(s) 'no_such_fault'; known: *"])
    monkeypatch.delenv("MLIRTRACE_INJECT")
    pytester.makeini("[pytest]\nmlir_timeout = soon\n")
    res = pytester.runpytest("test_x.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*mlir_timeout = soon in tox.ini: expected a number of seconds*"])
    monkeypatch.setenv("MLIRTRACE_TIMEOUT", "12")       # the environment beats the ini file
    res = pytester.runpytest("test_x.py")
    res.assert_outcomes(passed=2)


def test_summary_lists_index_entries_no_report_named(pytester):
    """A reproducer written during the session whose test report never arrived (a worker that died before
    sending it) is still listed, from INDEX.json."""
    pytester.makepyfile(test_lost="""
from pytest_mlirtrace._internal.plugin.plugin import STATE_KEY
from pytest_mlirtrace._internal.repro import FailureRecord, ReproWriter
from pytest_mlirtrace._internal.engine import Span


def test_lost(pytestconfig):
    span = Span("x = @param:x -> float_type, {2}, {1}", "", "pocl-cpu\\t2\\t-op pointwise", "1", "", "0:0")
    ReproWriter(pytestconfig.stash[STATE_KEY].repro_dir).write(FailureRecord("crash", span, "run", "boom", origin="gone"))
    assert 0
""")  # noqa: E501 - a test file's text
    res = pytester.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*= mlirtrace reproducers =*",
                              "index  crash-* reproducers/crash-*.py  (count 1, last from gone: "
                              "no test report named it)", "1 reproducer(s), 0 new, in reproducers/*"])


def test_the_repro_ini_key_turns_reproducers_off(pytester):
    pytester.makeini("[pytest]\nmlir_repro = false\n")
    pytester.makepyfile(test_state="""
from pytest_mlirtrace._internal.plugin.plugin import STATE_KEY

def test_state(pytestconfig):
    print("REPRO", pytestconfig.stash[STATE_KEY].repro)
""")
    pytester.runpytest("-s", "test_state.py").stdout.fnmatch_lines(["*REPRO False*"])
    pytester.makeini("[pytest]\nmlir_repro = maybe\n")
    res = pytester.runpytest("test_state.py")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*mlir_repro = maybe in tox.ini: expected true or false*"])
