"""Perf configs: each form parses to its version and fields (or is refused, saying why) and writes back."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.vocab import PerfConfigError, format_perf_config, parse_perf_config
from tests.corpus import CORPUS

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"


@pytest.mark.parametrize("raw,version,prefixed,kind,values", [
    ("128,256,4,64,128,8,1,1", 1, False, None, [128, 256, 4, 64, 128, 8, 1, 1]),            # legacy (2023)
    ("64,1,16", 1, False, None, [64, 1, 16]),                                                # mlirtrace's own
    ("v1:128,256,4,64,128,8,1,1", 1, True, None, [128, 256, 4, 64, 128, 8, 1, 1]),
    ("v2:16,64,8,16,16,8,1,1,1", 2, True, None, [16, 64, 8, 16, 16, 8, 1, 1, 1]),            # 2024 logs
    ("v3:64,64,16,32,32,32,4,1,2,1,1", 3, True, None, [64, 64, 16, 32, 32, 32, 4, 1, 2, 1, 1]),
    ("v4:256,128,64,32,32,1,1,2,1,1,1,1", 4, True, None, [256, 128, 64, 32, 32, 1, 1, 2, 1, 1, 1, 1]),
    ("attn:v1:32,32,32,32,32,32,16,1,1", 1, True, "attn", [32, 32, 32, 32, 32, 32, 16, 1, 1]),
])
@pytest.mark.parametrize("colon", ["", ":", " :"], ids=["plain", "trailing-colon", "spaced-colon"])
def test_each_form_parses_and_writes_back(raw, version, prefixed, kind, values, colon):
    given = raw + colon
    pc = parse_perf_config(given, strict=True)
    assert (pc.version, pc.prefixed, pc.kind, pc.values, pc.n_fields) == (version, prefixed, kind, values,
                                                                           len(values))
    assert pc.error is None and pc.raw == given and str(pc) == given
    assert pc.text == raw and pc.fields == tuple(str(v) for v in values)
    assert pc.legacy == (not prefixed)
    assert format_perf_config(values, version if prefixed else None, kind) == raw
    again = parse_perf_config(pc.text, strict=True)
    assert (again.version, again.kind, again.values, again.text) == (version, kind, values, raw)


@pytest.mark.parametrize("raw,message", [
    ("", r"^empty perf config$"),
    ("v2:", r"'v2:' has no fields"),
    ("64", r"'64': a legacy perf config has at least 2 comma-separated numbers"),
    ("v5:1,2,3", r"'v5:1,2,3': version v5 is not one rocMLIR writes \(v1\.\.v4\)"),
    ("v0:1,2,3", r"version v0 is not one rocMLIR writes"),
    ("v2:16,64,x,16,16,8,1,1,1", r"field 3 is 'x', expected an integer"),
    ("1,,2", r"field 2 is '', expected an integer"),
    ("{weird}", r"field 1 is '\{weird\}', expected an integer"),
    ("v2:1,2,3,4,5,6,7,8,9,10", r"has 10 fields; a v2 config has at most 9"),
    ("v1:1,2,3,4,5,6,7,8,9", r"has 9 fields; a v1 config has at most 8"),
    ("v3:" + ",".join(["1"] * 12), r"has 12 fields; a v3 config has at most 11"),
    ("v4:" + ",".join(["1"] * 13), r"has 13 fields; a v4 config has at most 12"),
])
def test_what_is_not_a_perf_config_is_refused_saying_why(raw, message):
    with pytest.raises(PerfConfigError, match=message):
        parse_perf_config(raw, strict=True)
    pc = parse_perf_config(raw)                 # the lenient read (a log's text) keeps it and says why
    assert pc.raw == raw and re.search(message, pc.error)
    if not pc.prefixed:
        assert pc.version is None


def test_lenient_read_keeps_a_prefix_it_cannot_check():
    pc = parse_perf_config("v2:16,64,x")
    assert (pc.version, pc.values, pc.n_fields) == (2, [16, 64, "x"], 3) and "field 3" in pc.error
    assert parse_perf_config("{weird}").to_dict() == {"raw": "{weird}", "version": None, "kind": None,
                                                      "values": ["{weird}"]}


def test_format_refuses_what_it_cannot_write():
    with pytest.raises(PerfConfigError, match="needs a version"):
        format_perf_config([1, 2], kind="attn")
    with pytest.raises(PerfConfigError, match="at most 9"):
        format_perf_config(range(10), version=2)


def _logged_configs() -> list[tuple[str, str]]:
    out = []
    sol = re.compile(r"^\s*(?:Benchmarking solution|Fastest solution)\s*:\s*(?P<cfg>\S+)")
    attr = re.compile(r'perf_config\s*=\s*"(?P<cfg>[^"]+)"')
    files = sorted(DATA.glob("*.log"))
    if CORPUS.is_dir():
        files += sorted((CORPUS / "traces").glob("*.txt")) + sorted((CORPUS / "rocmlir").glob("*.mlir"))
    for f in files:
        for no, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for p in (sol, attr):
                m = p.search(line)
                if m and not line.lstrip().startswith("#"):
                    out.append((f"{f.name}:{no}", m.group("cfg")))
    return out


LOGGED = _logged_configs()


def test_the_logs_hold_configs_of_several_forms():
    assert {parse_perf_config(c).prefixed for _, c in LOGGED} == {True, False}


@pytest.mark.parametrize("where,text", LOGGED, ids=[w for w, _ in LOGGED])
def test_configs_in_real_logs_parse(where, text):
    pc = parse_perf_config(text, strict=True)
    assert pc.version in (1, 2, 3, 4) and pc.n_fields >= 2, where
    assert parse_perf_config(pc.text).values == pc.values


def test_solution_parse_takes_its_splitting_from_vocab():
    from pytest_mlirtrace._internal.codegen import Solution, SolutionError

    plain = Solution.parse("gemm", "16,16,8,4,4,4,0,2")
    for text in ("v1:16,16,8,4,4,4,0,2", "16,16,8,4,4,4,0,2:", " 16, 16,8,4,4,4,0,2 "):
        assert Solution.parse("gemm", text) == plain
    with pytest.raises(SolutionError, match=r"has 10 field\(s\), expected 8 or 9"):
        Solution.parse("gemm", "v3:16,64,8,16,16,8,1,1,1,1")
