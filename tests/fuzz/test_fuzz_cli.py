"""``mlirtrace fuzz`` command line: usage errors, progress, summary; the fuzz loop's bookkeeping."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from pytest_mlirtrace._internal.cli.fuzz_cmd import local_paths
from pytest_mlirtrace._internal.cli.main import build_parser, main
from pytest_mlirtrace._internal.fuzz import report as fuzz_report
from pytest_mlirtrace._internal.store import parse_store


def parse(*argv):
    return build_parser().parse_args(["fuzz", *argv])


def test_fuzz_is_registered_with_its_options():
    a = parse("--budget", "5", "--seed", "3", "--kinds", "gemm,reduce", "--max-dim", "8", "--repro-dir", "r",
              "--database", "db", "--quiet", "--device", "pocl")
    assert a.budget == 5.0 and a.seed == 3 and a.kinds == ["gemm", "reduce"] and a.max_dim == 8
    assert a.repro_dir == "r" and a.database == "db" and a.quiet and a.device == "pocl"
    a = parse("--budget", "1")
    assert a.kinds is None and local_paths(a, None) == ("reproducers", ".mlirtrace/fuzz-db")
    # a directory store holds both; what is given wins; "none": no example database
    assert local_paths(a, parse_store("st")) == ("st/reproducers", "st/fuzz-db")
    given = parse("--budget", "1", "--repro-dir", "r", "--database", "none")
    assert local_paths(given, parse_store("st")) == ("r", None)
    assert local_paths(a, parse_store("redis://h:1/0")) == ("reproducers", ".mlirtrace/fuzz-db")
    assert parse("--budget", "1", "--kinds", "conv gemm").kinds == ["conv", "gemm"]


@pytest.mark.parametrize("argv", [[], ["--budget", "0"], ["--budget", "x"], ["--budget", "5", "--kinds", "convolution"],
                                  ["--budget", "5", "--max-dim", "0"], ["--budget", "5", "--build", "turbo"]])
@pytest.mark.usefixtures("capsys")      # argparse's messages
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as e:
        main(["fuzz", *argv])
    assert e.value.code == 2


def test_unknown_fault_is_a_usage_error(tmp_path):
    env = dict(os.environ, MLIRTRACE_INJECT="no_such_fault")
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "fuzz", "--budget", "5", "--repro-dir",
                        str(tmp_path / "r"), "--database", "none"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "no_such_fault" in p.stderr


class _Stats:
    def __init__(self):
        from collections import Counter
        self.elapsed_s, self.cases, self.failures, self.phase = 2.0, 10, Counter(wrong=2), "generating"

    @property
    def rate(self):
        return 5.0


class _Fz:
    def __init__(self):
        self.stats, self.findings = _Stats(), []
        self.o = type("O", (), {"budget_s": 30})()


def test_progress_is_one_updating_line_on_a_tty_and_periodic_lines_otherwise(monkeypatch):
    class TTY(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "160")     # wide enough for one line, whatever terminal runs the tests
    monkeypatch.delenv("TERM", raising=False)
    t = TTY()
    p = fuzz_report.Progress(stream=t)
    p(_Fz())
    p.last = 0
    p(_Fz())
    p.done()
    text = t.getvalue()
    # drawn, redrawn in place twice (the second call, the last redraw at done()), then a new line and the
    # cursor shown again (rich hides it while the bar is up)
    assert text.count("\r") == 2 and text.endswith("\n\x1b[?25h") and "10 cases (5.00/s)" in text and "wrong 2" in text
    assert text.count("\n") == 1
    s = io.StringIO()
    p = fuzz_report.Progress(stream=s, every_s=0)
    p(_Fz())
    p(_Fz())
    assert s.getvalue().count("\n") == 2 and "\r" not in s.getvalue()
    q = io.StringIO()
    fuzz_report.Progress(stream=q, quiet=True)(_Fz())
    assert q.getvalue() == ""


def test_an_unknown_kind_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["fuzz", "--budget", "1", "--kinds", "flash", "--repro-dir", str(tmp_path / "r"), "--database", "none",
              "--quiet"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unknown kind(s) 'flash'" in err and "attention" in err


def test_summary_lists_cases_rate_failures_and_reproducers():
    from collections import Counter

    from pytest_mlirtrace._internal import ir
    from pytest_mlirtrace._internal.fuzz import FailingCase, FuzzReport, FuzzStats

    m = ir.Module()
    m.add_return(m.add("relu", m.add_param("x0", "f32", [2])))
    st = FuzzStats(cases=30, examples=10, campaigns=2, elapsed_s=10.0, failures=Counter(wrong=3))
    w = type("W", (), {"new": True, "count": 1, "signature": "wrong-x-1", "script_path": "r/x.py"})()
    f = FailingCase("wrong/pointwise", "wrong", m, "64,1,1", 3, None, "output 0: 1/2 elements differ",
                first_found_s=1.0, written_s=4.0, written=w, path="r/x.py")
    text = fuzz_report.summary(FuzzReport(st, [f]), 2)
    assert "30 cases in 10.0s (3.00 cases/s)" in text and "wrong 3" in text
    assert "reproducers written: 1 (1 new)" in text and "r/x.py" in text and "found after 1.0s" in text
    assert FuzzReport(st, [f]).exit_code == 1 and FuzzReport(st, []).exit_code == 0


def test_json_prints_the_report_on_stdout_and_progress_stays_on_stderr(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLIRTRACE_INJECT"}
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "fuzz", "--budget", "8", "--seed", "2",
                        "--kinds", "pointwise", "--repro-dir", str(tmp_path / "r"), "--database", "none", "--json",
                        "--report", str(tmp_path / "report.json")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    d = json.loads(p.stdout)            # all of stdout is the one JSON document
    assert d["cases"] > 0 and d["findings"] == []
    assert d == json.loads((tmp_path / "report.json").read_text())
    assert "fuzz: device" in p.stderr


def test_help_names_every_planted_fault_and_every_kind(capsys):
    from pytest_mlirtrace._internal.cli.main import main
    from pytest_mlirtrace._internal.strategies import ALL_KINDS
    from pytest_mlirtrace._internal.vocab.faults import FAULTS

    with pytest.raises(SystemExit):
        main(["fuzz", "--help"])
    out = capsys.readouterr().out
    for name in FAULTS:
        assert f"\n  {name} " in out, name
    assert "not lowered" not in out
    assert ", ".join(ALL_KINDS) in " ".join(out.split())


def test_build_fast_builds_the_same_kernels_with_optimisations_off_and_still_finds_a_planted_bug(tmp_path):
    """--build fast: the header says so; a planted wrong-number fault is still found, and its reproducer
    builds the kernel as the case was built (-cl-opt-disable) and fails alone."""
    env = dict(os.environ, MLIRTRACE_INJECT="k_tail_off_by_one")
    p = subprocess.run([sys.executable, "-m", "pytest_mlirtrace", "fuzz", "--budget", "25", "--seed", "1",
                        "--kinds", "gemm", "--build", "fast", "--repro-dir", str(tmp_path / "r"), "--database",
                        "none", "--max-findings", "1", "--json"], env=env, capture_output=True, text=True,
                       timeout=400)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert "build fast (optimisations off)" in p.stderr
    import json

    from pytest_mlirtrace._internal.codegen import FAST_BUILD_OPTIONS
    from pytest_mlirtrace._internal.repro.writer import read_payload
    assert json.loads(p.stdout)["findings"]
    scripts = list((tmp_path / "r").glob("*.py"))
    assert len(scripts) == 1
    assert read_payload(scripts[0])["standalone"]["build_options"] == FAST_BUILD_OPTIONS
    # run alone with the fault planted again, through the package: it fails as recorded (exit 1)
    r = subprocess.run([sys.executable, str(scripts[0])], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]


def test_an_unknown_build_is_refused_before_any_case():
    from pytest_mlirtrace._internal.fuzz import Fuzzer, FuzzOptions
    with pytest.raises(ValueError, match="build 'turbo': expected one of full, fast"):
        Fuzzer(FuzzOptions(build="turbo", database=None))
