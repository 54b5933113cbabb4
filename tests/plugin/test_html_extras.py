"""pytest-html extras (issue 18): a failing test's HTML report shows the migraphx module, the MLIR, the
problem key and solution and the kernel source as collapsible sections, and the tuning chart as inline
SVG; without pytest-html (``-p no:html``) the run is the same and nothing of it is imported."""
from __future__ import annotations

import html
import json
import re

import pytest

from .plugin_helpers import NASTY_COMMENT

pytest.importorskip("pytest_html")

pytest_plugins = ["pytester"]

INNER = '''
import sys

from mods import DOT_K4, DOT_T, NASTY_MLIR

TUNED = ["1,1,4,1,1,1,0,4", "1,1,8,1,1,1,0,4"]      # k_tail_off_by_one: KPerBlock 8 fails on k=4, 4 passes


def test_pass(mlirtrace):
    assert mlirtrace.run(DOT_T).ok


def test_tune(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "k_tail_off_by_one")
    mlirtrace.tune(DOT_K4, solutions=TUNED)


def test_nasty_mlir(mlirtrace, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_INJECT", "wrong_transpose_stride")
    mlirtrace.run(NASTY_MLIR)


def test_no_html_module_imported():
    print("HTML_EXTRAS_IMPORTED", "pytest_mlirtrace._internal.plugin.html_extras" in sys.modules)
'''


def _tests_in_report(path) -> dict:
    """The per-test data of a pytest-html 4 report: the JSON in its ``data-jsonblob`` attribute."""
    text = path.read_text(encoding="utf-8")
    blob = re.search(r'data-jsonblob="([^"]*)"', text).group(1)
    return json.loads(html.unescape(blob))["tests"]


def _extras_html(entries) -> str:
    return "".join(x["content"] for e in entries for x in e.get("extras", []) if x["format_type"] == "html")


def test_failing_tests_get_collapsible_sections_and_the_tuning_chart(inner):
    inner.makepyfile(test_inner=INNER)
    res = inner.runpytest("-p", "no:cacheprovider", "--html=report.html", "--self-contained-html",
                          "-k", "not no_html")
    res.assert_outcomes(passed=1, failed=2)
    assert "mlirtrace: html" not in res.stdout.str()          # the extras were made without an error
    tests = _tests_in_report(inner.path / "report.html")
    by_name = {k.split("::")[-1]: v for k, v in tests.items()}
    assert _extras_html(by_name["test_pass"]) == ""           # a passing test carries nothing

    tune = _extras_html(by_name["test_tune"])
    for title in ("problem key and solution", "migraphx module", "MLIR", "kernel source", "tuning chart",
                  "reproducer"):
        assert f"<summary>{title}</summary>" in tune, title
    assert tune.count('<div class="mlirtrace"') == 1
    assert "<details open><summary>problem key and solution</summary>" in tune
    assert "<details><summary>kernel source</summary>" in tune        # long texts start folded
    assert "Problem: pocl-cpu" in tune and "-m 3 -n 2 -k 4" in tune
    assert "Solution: 1,1,8,1,1,1,0,4" in tune
    assert "func.func @mlir_transpose_dot" in tune and "__kernel" in tune
    # the chart: inline SVG, one bar for the solution that ran, the failing one marked with its status
    svg = re.search(r"<svg .*?</svg>", tune, re.S).group(0)
    assert 'class="chart solution-bars"' in svg and "<title>time per solution: pocl-cpu" in svg
    assert svg.count('<rect class="bar"') == 1 and svg.count('<rect class="bar failed"') == 1
    assert ">1,1,4,1,1,1,0,4</text>" in svg and re.search(r"\d (ms|µs|ns)</text>", svg)
    assert ">1,1,8,1,1,1,0,4 *</text>" in svg and ">✗ wrong</text>" in svg   # 1,1,8: failed, and is the report's
    assert "1 ran, 1 failed; * fails in a finding" in svg
    sig = re.search(r'data-signature="([^"]+)"', tune).group(1)
    assert f"reproducers/{sig}.py" in tune

    nasty = _extras_html(by_name["test_nasty_mlir"])
    assert "tuning chart" not in nasty                                # it did not tune
    assert html.escape(NASTY_COMMENT) in nasty and NASTY_COMMENT not in nasty   # every text escaped
    assert nasty.count("</details>") == nasty.count("<details")


def test_without_pytest_html_nothing_changes(inner):
    inner.makepyfile(test_inner=INNER)
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:html", "-s", "-k",
                                     "nasty or no_html")
    res.assert_outcomes(passed=1, failed=1)
    out = res.stdout.str()
    assert "HTML_EXTRAS_IMPORTED False" in out
    assert "mlirtrace: problem key and solution" in out and "mlirtrace: html" not in out
    assert not (inner.path / "report.html").exists()
