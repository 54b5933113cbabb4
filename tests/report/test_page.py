"""The page and the command: key text present, every input escaped, links relative and pointing at files that
exist, nothing loaded from elsewhere; bad inputs are one line and exit status 2."""
from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.report import write_report


class Page(HTMLParser):
    """The tags, hrefs and text of a page (and whether it nests as written)."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            self.attrs.append((tag, k, v or ""))
            if k == "href":
                self.hrefs.append(v or "")

    def handle_data(self, data):
        self.text.append(data)

    @property
    def body_text(self) -> str:
        return "".join(self.text)


@pytest.fixture(scope="module")
def page(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "sub" / "report.html"       # not beside the reproducers
    data = write_report(inputs.repros, out, inputs.db, inputs.fuzz)
    return out, data, out.read_text(encoding="utf-8")


def test_key_text_is_on_the_page(page):
    out, data, html = page
    p = Page(html)
    text = p.body_text
    for f in data.findings:
        assert f.signature in text and f.error in text and f.kind in text
        assert all(s in text for s in f.solutions + f.passed)
        assert f.device_description in text and "reproduces" in text
    for prob in data.problems:
        assert prob.key in text                                # the problem key as it is, tabs and all
        for b in prob.best:
            assert b["solution"] in text
    assert "ops × dtype drawn" in text and "problem kinds drawn" in text
    for (op, _dt) in data.fuzz.ops:
        assert op in text
    # charts: a time-per-solution chart per tuning, a spread per problem, and the counts
    assert html.count('class="chart solution-bars"') == sum(len(pr.runs) for pr in data.problems) == 3
    assert html.count('class="chart spread"') == len(data.problems) == 2
    assert html.count('<rect class="bar failed"') >= 2 and html.count('<rect class="bar"') > 10


def test_links_are_relative_and_point_at_files_that_exist(page, inputs):
    out, data, html = page
    hrefs = Page(html).hrefs
    files = [h for h in hrefs if not h.startswith("#")]
    assert len(files) == 3 * len(data.findings)               # reproducer, ticket, .mlir of each
    for h in files:
        u = urlparse(h)
        assert not u.scheme and not u.netloc and not h.startswith("/"), h
        target = (out.parent / unquote(u.path)).resolve()
        assert target.is_file() and target.parent == inputs.repros.resolve(), h
    anchors = {v for t, k, v in Page(html).attrs if k == "id"}
    assert all(h[1:] in anchors for h in hrefs if h.startswith("#"))
    for f in data.findings:
        assert os.path.relpath(f.script, out.parent) in files


def test_the_page_stands_alone(page):
    _, _, html = page
    p = Page(html)
    assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags and "iframe" not in p.tags
    assert not [a for a in p.attrs if a[1] in ("src", "srcset")]
    assert "url(" not in html and "@import" not in html
    assert "https://" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def _mutated(src: Path, d: Path, out: Path, db: Path, fuzz: Path, *, error: str, symbol: str, origin: str,
             key: str) -> Page:
    shutil.copytree(src, d)
    idx = json.loads((d / "INDEX.json").read_text())
    for e in idx["reproducers"].values():
        e["error"], e["symbol"], e["last_origin"] = error, symbol, origin
        e["problem_key"] = e["problem_key"] + key
    (d / "INDEX.json").write_text(json.dumps(idx))
    write_report(d, out, db, fuzz)
    return Page(out.read_text())


def test_everything_from_the_inputs_is_escaped(inputs, tmp_path):
    evil = '<script>alert("x")</script> & <b>bold</b> \'quoted\''
    args = (inputs.db, inputs.fuzz)
    plain = _mutated(inputs.repros, tmp_path / "a", tmp_path / "a.html", *args, error="e", symbol="s", origin="o",
                     key=" k")
    p = _mutated(inputs.repros, tmp_path / "b", tmp_path / "b.html", *args, error=evil, symbol="<sym&>",
                 origin='a" onmouseover="alert(1)', key=" <&>")
    html = (tmp_path / "b.html").read_text()
    assert "script" not in p.tags and Counter(p.tags) == Counter(plain.tags)       # no element came from the data
    assert not [a for a in p.attrs if a[1].startswith("on")]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt; &#x27;quoted&#x27;" in html
    assert evil in p.body_text and "<sym&>" in p.body_text and "-k 13 <&>" in p.body_text
    # the MLIR from the reproducers: its types hold < and >
    assert "tensor&lt;1x5x13xf32&gt;" in html and "tensor<1x5x13xf32>" in p.body_text


def run_cli(capsys, *args):
    code = main(["report", *map(str, args)])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err + cap.out
    return code, cap.out, cap.err


def test_the_command_writes_the_page(inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLIRTRACE_TUNING_DB", str(inputs.db))          # the default: the one tune uses
    out = tmp_path / "report.html"
    code, so, se = run_cli(capsys, inputs.repros, "-o", out, "--fuzz-report", inputs.fuzz)
    assert code == 0 and out.is_file(), se
    assert so.strip() == f"{out}: 2 finding(s), 2 tuned problem(s) (3 chart(s) of time per solution), fuzz coverage"
    assert str(inputs.db) in out.read_text()
    # no database where the default points: the page says so, still exit 0
    monkeypatch.setenv("MLIRTRACE_TUNING_DB", str(tmp_path / "none.json"))
    code, so, se = run_cli(capsys, inputs.repros, "-o", out)
    assert code == 0 and "no tuning database at" in out.read_text() and "Fuzz coverage" in out.read_text()


def test_bad_inputs_are_one_line_and_exit_2(inputs, tmp_path, capsys):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    not_db = tmp_path / "list.json"
    not_db.write_text("[1, 2, 3]")
    odd_db = tmp_path / "odd.json"
    odd_db.write_text('{"no-bar-here": {"solution": "1,1"}}')
    out = tmp_path / "o.html"
    broken = tmp_path / "broken"
    shutil.copytree(inputs.repros, broken)
    (broken / "REPLAY.json").write_text('{"replays": [')
    cases = [
        ([tmp_path / "nowhere", "-o", out],
         f"{tmp_path / 'nowhere'}: no such directory; expected a reproducer directory"),
        ([tmp_path, "-o", out], f"{tmp_path}: no INDEX.json here"),
        ([broken, "-o", out, "--no-tuning-db"], f"{broken / 'REPLAY.json'}: not valid JSON (line 1, column 14"),
        ([inputs.repros, "-o", out, "--tuning-db", tmp_path / "missing.json"],
         f"{tmp_path / 'missing.json'}: no such file; expected a tuning database"),
        ([inputs.repros, "-o", out, "--tuning-db", bad_json], f"{bad_json}: not valid JSON (line 1, column 2"),
        ([inputs.repros, "-o", out, "--tuning-db", not_db], f"{not_db}: expected a tuning database"),
        ([inputs.repros, "-o", out, "--tuning-db", odd_db],
         f"{odd_db}: entry 'no-bar-here': expected a tuning database"),
        ([inputs.repros, "-o", out, "--tuning-db", inputs.db, "--fuzz-report", bad_json],
         f"{bad_json}: not valid JSON (line 1, column 2: Expecting property name enclosed in double quotes); "
         f"expected the JSON report of `mlirtrace fuzz --report FILE`"),
        ([inputs.repros, "-o", out, "--tuning-db", inputs.db, "--fuzz-report", inputs.db],
         f"{inputs.db}: expected the JSON report of `mlirtrace fuzz --report FILE`"),
        ([inputs.repros, "-o", tmp_path, "--tuning-db", inputs.db],
         f"{tmp_path}: is a directory; expected the HTML file"),
    ]
    for args, expected in cases:
        code, so, se = run_cli(capsys, *args)
        assert code == 2 and se.startswith("mlirtrace: " + expected) and se.count("\n") == 1, (args, se)
    assert not out.exists()
