"""What ``mlirtrace show`` prints always parses back to the same module (issue 12).

Modules come from the Hypothesis strategy ``fused_graphs()``, with parameter names, a func name, an
``arch`` and string attributes drawn from any text (quotes, backslashes, newlines, tabs, control
characters, non-ASCII).  Each is given to ``show`` as MIGraphX text and as MLIR in both type syntaxes,
shown with ``--types tensor`` and ``--types shaped``; every section of the output (the MIGraphX text,
the MLIR) is parsed back and compared with the module it came from.
"""
from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal.cli.main import main
from pytest_mlirtrace._internal.ir import Module, parse_module, print_module, quote_string, unquote_string
from pytest_mlirtrace._internal.mlir import FuncAttrs, emit_mlir, module_difference, normalise_mlir, parse_mlir, symbol
from tests.mlir.mlir_helpers import STRINGS, odd_modules


def show(path: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["show", str(path), *args])
    return rc, out.getvalue(), err.getvalue()


def sections(out: str) -> list[tuple[str, str]]:
    """[(title, body)] of ``show``'s output: ``// ---- migraphx`` and ``// ---- mlir (..)`` sections."""
    parts = re.split(r"(?m)^// (?:----|====) (.*)\n", out)
    assert parts[0] == "", out[:200]
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


def check_mlir_section(body: str, original: Module, shaped: bool, name: str | None = None,
                       arch: str | None = None):
    fs = parse_mlir(body, "shown.mlir")
    assert len(fs) == 1 and fs[0].ok, fs
    f = fs[0]
    assert module_difference(original, f.module, strides=shaped) is None
    if name is not None:
        assert f.name == name
    if arch is not None:
        assert f.attrs.arch == arch
    assert normalise_mlir(body) == body           # it prints back as it was printed
    return f


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(odd_modules(), STRINGS.filter(bool), STRINGS, st.sampled_from(["tensor", "shaped"]))
def test_show_output_parses_back(module, func_name, arch, in_syntax):
    with tempfile.TemporaryDirectory() as d:
        # MIGraphX text in: both sections parse back to the module
        txt = Path(d) / "m.txt"
        txt.write_text(print_module(module), encoding="utf-8")
        for types in ("tensor", "shaped"):
            rc, out, err = show(txt, "--types", types, f"--arch={arch}")
            assert (rc, err) == (0, ""), err
            (t1, migraphx), (t2, mlir) = sections(out)
            assert (t1, t2) == ("migraphx", f"mlir ({types})")
            back = parse_module(migraphx, "shown.txt")
            assert back.instructions == module.instructions and back.name == module.name
            check_mlir_section(mlir, module, types == "shaped", arch=arch)
        # MLIR in (an odd func name and arch): the header names the func, both sections parse back
        src = Path(d) / "m.mlir"
        src.write_text(emit_mlir(module, type_syntax=in_syntax, name=func_name,
                                 attrs=FuncAttrs.default(arch, 7)), encoding="utf-8")
        parsed = parse_mlir(src.read_text(encoding="utf-8"), str(src))
        assert len(parsed) == 1 and parsed[0].ok and parsed[0].name == func_name
        for types in ("tensor", "shaped"):
            rc, out, err = show(src, "--types", types)
            assert (rc, err) == (0, ""), err
            (h, _), (t1, migraphx), (t2, mlir) = sections(out)
            head = re.fullmatch(r'@("(?:[^"\\\n]|\\.)*"|[\w$.]+) \((.*)\)', h)
            assert head and (unquote_string(head.group(1)) if head.group(1).startswith('"') else head.group(1)) \
                == func_name
            back = parse_module(migraphx, "shown.txt")
            assert back.instructions == parsed[0].module.instructions
            check_mlir_section(mlir, module, types == "shaped" and in_syntax == "shaped", name=func_name,
                               arch=arch)


# --------------------------------------------------------------- examples --
QUOTED = '''module {
  func.func @"a\\"b"(%arg0: tensor<2xf32>) -> tensor<2xf32> attributes {arch = "x\\0Ay", kernel = "mixr", num_cu = 1 : i64} {
    %0 = migraphx.relu(%arg0) {note = "line1\\nline2\\t\\"q\\" \\\\ \\7F é"} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
'''  # noqa: E501 - MLIR text as written


def test_quoted_symbol_parses_and_prints_back_identically(tmp_path):
    fs = parse_mlir(QUOTED, "q.mlir")
    assert [f.status for f in fs] == ["ok"] and fs[0].name == 'a"b' and fs[0].attrs.arch == "x\ny"
    assert fs[0].module.instructions[1].attrs == {"note": 'line1\nline2\t"q" \\ \x7f é'}
    assert normalise_mlir(QUOTED) == QUOTED.replace("\\0A", "\\n")     # MLIR's \0A and \n are one string
    path = tmp_path / "q.mlir"
    path.write_text(QUOTED, encoding="utf-8")
    rc, out, err = show(path, "--only", "mlir")
    assert (rc, err) == (0, "")
    assert out == f'// ==== @"a\\"b" ({path}:2:3)\n// ---- mlir (tensor)\n' + QUOTED.replace("\\0A", "\\n")
    rc, out, err = show(path, "--only", "migraphx")
    assert (rc, err) == (0, "")
    assert '@1 = relu["note"="line1\\nline2\\t\\"q\\" \\\\ \\7F é"](x0)' not in out    # the key is bare
    assert '@1 = relu[note="line1\\nline2\\t\\"q\\" \\\\ \\7F é"](x0)' in out


def test_symbols_bare_or_quoted():
    assert [symbol(n) for n in ("mlir_dot", "a.b$c_1", "_x", "1a", "a-b", "a b", 'a"b', "é", "")] == \
        ["mlir_dot", "a.b$c_1", "_x", '"1a"', '"a-b"', '"a b"', '"a\\"b"', '"é"', '""']


@pytest.mark.parametrize("s", ["", "plain", 'a"b', "a\\b", "a\nb\tc", "\x00\x01\x1f\x7f", "é🙂", "\u2028\x85",
                               "\\n", "\\0A"])
def test_string_quoting_round_trips(s):
    q = quote_string(s)
    assert "\n" not in q and q.startswith('"') and q.endswith('"')
    assert unquote_string(q) == s


def test_mlir_escapes_are_read():
    assert unquote_string(r'"a\22b\5Cc\0a\09\C3\A9"') == 'a"b\\c\n\té'
    with pytest.raises(ValueError):
        unquote_string(r'"a\qb"')


def test_migraphx_text_quotes_what_its_syntax_cannot_hold():
    m = Module(name=None)
    x = m.add_param("in put", "f32", [2])
    y = m.add_param("b,c", "f32", [2])
    s = m.add("add", x, y, name="sum (1)")
    m.instructions[-1].attrs["tag"] = "a]b, c=d"
    m.instructions[-1].attrs["n"] = "12"
    m.add_return(s)
    text = print_module(m)
    assert '"in put" = @param:"in put" -> float_type' in text
    assert '"sum (1)" = add[tag="a]b, c=d",n="12"]("in put","b,c")' in text
    back = parse_module(text)
    assert back.instructions == m.instructions
    assert back.get("sum (1)").attrs == {"tag": "a]b, c=d", "n": "12"}
