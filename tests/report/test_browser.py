"""The report page in a real headless browser (Debian's Chromium, driven by playwright): it loads from a file://
URL with no console error and no page error, every chart renders (a non-empty box with bars inside), the key
text is in the DOM and every link resolves to a file that exists.

Chromium comes from the system (``apt-get install chromium``; ``.ci/run`` installs it), never from
``playwright install``. Without it the test is skipped, with the reason, but fails when ``CI`` is set: a CI
must not skip it silently.

``MLIRTRACE_REPORT_SCREENSHOT=1`` also saves the page as ``docs/report-screenshot.png`` (the README's picture).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from pytest_mlirtrace._internal.report import write_report

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "report-screenshot.png"


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _need(reason: str):
    if _in_ci():
        pytest.fail(f"{reason} (CI is set: the browser test must run there)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium")
    if exe is None:
        _need("no chromium on PATH: apt-get install -y --no-install-recommends chromium (.ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe)
        yield browser
        browser.close()


@pytest.mark.slow   # 20-45 s: run by .ci/run's slow pass, kept out of the default ~10 min
def test_the_page_renders_in_chromium(inputs, chromium, tmp_path):
    out = tmp_path / "site" / "report.html"
    data = write_report(inputs.repros, out, inputs.db, inputs.fuzz)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    page.on("console",
            lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri(), wait_until="load")
    assert problems == []
    assert requests == [out.as_uri()]                  # the page alone: nothing else fetched

    charts = page.locator("svg.chart")
    n = charts.count()
    runs = sum(len(p.runs) for p in data.problems)
    assert n == runs + len(data.problems) + 1 + 2      # time per solution, spreads, kinds; fuzz kinds and layouts
    for i in range(n):
        svg = charts.nth(i)
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box()
        assert box and box["width"] > 50 and box["height"] > 20, (i, box)
        bars = svg.locator("rect.bar")
        assert bars.count() >= 1, svg.get_attribute("aria-label")
        for j in range(bars.count()):
            b = bars.nth(j).bounding_box()
            assert b and b["width"] > 0 and b["height"] > 0, (i, j, b)
            # inside its chart
            assert box["x"] <= b["x"] and b["x"] + b["width"] <= box["x"] + box["width"] + 0.5
            assert box["y"] <= b["y"] and b["y"] + b["height"] <= box["y"] + box["height"] + 0.5
    assert page.locator("svg.solution-bars rect.bar.failed").count() >= 2      # failed solutions marked

    text = page.locator("body").text_content()
    wrong = next(f for f in data.findings if f.kind == "wrong")
    assert wrong.signature in text and wrong.error in text
    for prob in data.problems:
        assert prob.key in text
    assert wrong.solutions[0] in text and wrong.passed[0] in text
    assert page.locator("text", has_text=wrong.passed[0]).count() >= 1         # a solution as SVG text too
    assert "ops × dtype drawn" in text

    # links: relative in the page, each resolving to a file that exists
    hrefs = page.eval_on_selector_all("a[href]:not([href^='#'])",
                                      "els => els.map(e => [e.getAttribute('href'), e.href])")
    assert len(hrefs) == 3 * len(data.findings)
    for raw, resolved in hrefs:
        assert not urlparse(raw).scheme and not raw.startswith("/"), raw
        assert Path(unquote(urlparse(resolved).path)).is_file(), resolved

    page.close()


@pytest.mark.skipif(os.environ.get("MLIRTRACE_REPORT_SCREENSHOT", "").strip() in ("", "0"),
                    reason="MLIRTRACE_REPORT_SCREENSHOT=1 saves docs/report-screenshot.png")
def test_save_the_readme_screenshot(inputs, chromium, monkeypatch):
    """The README's picture: the page as a user makes it, from inside the folder (relative paths)."""
    monkeypatch.chdir(inputs.root)
    write_report(Path("reproducers"), Path("report.html"), Path("tuning.json"), Path("fuzz.json"))
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto((inputs.root / "report.html").as_uri(), wait_until="load")
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    page.close()


def test_no_browser_skips_locally_but_fails_in_ci(monkeypatch):
    from _pytest.outcomes import Failed, Skipped

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(Skipped, match="no chromium"):
        _need("no chromium on PATH")
    for value in ("true", "1"):
        monkeypatch.setenv("CI", value)
        with pytest.raises(Failed, match="CI is set"):
            _need("no chromium on PATH")
