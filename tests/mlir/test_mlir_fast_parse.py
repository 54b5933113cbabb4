"""The fast path (``mlir/fast_parse.py``) gives exactly what the xDSL path gives, on every real func.

``parse.FAST = False`` parses every func with xDSL; the two results are compared field by field, the
module instruction by instruction with the types of attribute values and the bytes of literals (a
``True`` is not a ``1``, an ``f16`` literal is not an ``f32`` one).  Funcs the fast path leaves to xDSL
compare equal trivially; the tests also check that it takes the common ones.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_mlirtrace._internal.mlir import FuncAttrs, emit_mlir, parse_mlir, split
from pytest_mlirtrace._internal.mlir import parse as parse_mod
from pytest_mlirtrace._internal.strategies import fused_graphs
from tests.corpus import ROCMLIR, TRACES

from .mlir_helpers import STRINGS, many_funcs, odd_modules

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _strict(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_strict(a[k], b[k]) for k in a)
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    return a == b


def module_difference_strict(a, b) -> str | None:
    if a is None or b is None:
        return None if a is b else f"module {a is not None} vs {b is not None}"
    if (a.name, a.target_id, len(a.instructions)) != (b.name, b.target_id, len(b.instructions)):
        return "module name / target_id / length"
    for x, y in zip(a.instructions, b.instructions, strict=False):
        if (x.name, x.op, x.inputs, x.param, x.shape) != (y.name, y.op, y.inputs, y.param, y.shape):
            return f"{x} vs {y}"
        if not _strict(x.attrs, y.attrs):
            return f"{x.name}: attributes {x.attrs!r} vs {y.attrs!r}"
        if (x.literal is None) != (y.literal is None):
            return f"{x.name}: literal"
        if x.literal is not None:
            la, lb = np.asarray(x.literal), np.asarray(y.literal)
            if la.dtype != lb.dtype or la.shape != lb.shape or la.tobytes() != lb.tobytes():
                return f"{x.name}: literal {la!r} vs {lb!r}"
    return None


FIELDS = ("name", "line", "column", "source", "unsupported", "invalid", "private", "declaration", "type_syntax",
          "arg_names", "param_names", "perf_configs", "text")


def difference(f, g) -> str | None:
    for k in FIELDS:
        if not _strict(getattr(f, k), getattr(g, k)):
            return f"{k}: {getattr(f, k)!r} vs {getattr(g, k)!r}"
    fa, ga = f.attrs, g.attrs
    if not _strict((fa.arch, fa.kernel, fa.num_cu, fa.prefix, fa.extra), (ga.arch, ga.kernel, ga.num_cu, ga.prefix,
                                                                         ga.extra)):
        return f"attrs {fa} vs {ga}"
    return module_difference_strict(f.module, g.module)


def both(text: str, source: str = "t.mlir", param_names=None):
    """(fast path result, xDSL-only result); each an exception or a list of ParsedFunc."""
    out = []
    for flag in (True, False):
        old = parse_mod.FAST
        parse_mod.FAST = flag
        try:
            out.append(parse_mlir(text, source, param_names))
        except Exception as e:          # noqa: BLE001 -- the exception is compared
            out.append(e)
        finally:
            parse_mod.FAST = old
    return out


def assert_same(text: str, source: str = "t.mlir", param_names=None) -> int:
    """Both paths agree; returns how many funcs the fast path took."""
    fast, slow = both(text, source, param_names)
    if isinstance(slow, Exception) or isinstance(fast, Exception):
        assert type(fast) is type(slow) and str(fast) == str(slow), (fast, slow)
        return 0
    assert len(fast) == len(slow)
    taken = 0
    for f, g in zip(fast, slow, strict=False):
        d = difference(f, g)
        assert d is None, f"{f.name}: {d}"
        taken += f._func_op is None and f.ok
    return taken


def _corpus_texts():
    texts = [(p.name, p.read_text()) for p in sorted(ROCMLIR.glob("*.mlir"))] if ROCMLIR.is_dir() else []
    texts += [(p.name, p.read_text()) for p in sorted(DATA.glob("*.mlir"))]
    texts += [(p.name, p.read_text()) for p in sorted(EXAMPLES.glob("*.mlir"))] if EXAMPLES.is_dir() else []
    if TRACES.is_dir():
        for p in sorted(TRACES.glob("*")):
            log = p.read_text(errors="replace")
            try:
                spans = split.find_funcs(log, p.name)
            except Exception:            # noqa: BLE001 -- a log cut off mid-func: take the funcs one by one
                spans = []
            for k, s in enumerate(spans):
                texts.append((f"{p.name}#{k}", log[s.start:s.end] + "\n"))
    return texts


CORPUS_TEXTS = _corpus_texts()


@pytest.mark.parametrize("name,text", CORPUS_TEXTS, ids=[n for n, _ in CORPUS_TEXTS])
def test_fast_path_matches_xdsl_on_real_funcs(name, text):  # noqa: ARG001 (name: the parametrize id)
    assert_same(text, name)


def test_fast_path_takes_the_common_funcs():
    taken = sum(assert_same(t, n) for n, t in CORPUS_TEXTS)
    oks = sum(f.ok for n, t in CORPUS_TEXTS for f in (lambda r: r if isinstance(r, list) else [])(both(t, n)[1]))
    assert taken >= 20 and taken >= oks // 2, (taken, oks)
    seed = (DATA / "seed_module.mlir").read_text()
    assert assert_same(seed) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fused_graphs(max_dim=8, max_elements=256), st.sampled_from(["tensor", "shaped"]))
def test_fast_path_matches_xdsl_on_generated_modules(module, syntax):
    text = emit_mlir(module, type_syntax=syntax)
    assert assert_same(text) == 1


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(odd_modules(), STRINGS.filter(bool), STRINGS, st.sampled_from(["tensor", "shaped"]))
def test_fast_path_matches_xdsl_on_odd_names_and_strings(module, name, arch, syntax):
    text = emit_mlir(module, type_syntax=syntax, name=name, attrs=FuncAttrs.default(arch, 3))
    assert assert_same(text) == 1


LITERAL_FUNC = """func.func @f() -> {T} {{
  %0 = migraphx.literal(dense<{V}> : {DT}) : {S}
  return %0 : {T}
}}
"""


@pytest.mark.parametrize("elt,values", [
    ("f16", ["1.0", "0xFC00", "0x7C00", "0xFFFF", "0x7E01", "7.0e4", "6.55e4", "-0.0", "1", "1e3", "0x1"]),
    ("f32", ["1.5", "3.5e38", "0xFF800000", "0x7FC00000", "1.0e-46", "0xFFFFFFFF", "2.0"]),
    ("f64", ["1.5", "1.0e308", "0x7FF0000000000000", "2.5"]),
    ("bf16", ["1.5", "0x3F80", "0xFF80", "1.1", "3.0e38"]),
    ("si32", ["1", "-5", "2147483647", "2147483648", "0x10", "-2147483649"]),
    ("i8", ["1", "-128", "200", "255", "256", "true"]),
    ("ui8", ["0", "255", "-1", "256"]),
    ("i1", ["true", "false", "1"]),
])
def test_fast_path_literals_match_xdsl(elt, values):
    for shaped in (False, True):
        for v in values + [f"[{values[0]}, {values[-1]}]", f"[{values[0]}]"]:
            n = 2 if v.startswith("[") and "," in v else 1
            t = f"!migraphx.shaped<{n}x{elt}, 1>" if shaped else f"tensor<{n}x{elt}>"
            s = f"<{n}x{elt}, 1>" if shaped else t
            text = LITERAL_FUNC.format(T=t, V=v, DT=f"tensor<{n}x{elt}>", S=s)
            assert_same(text)


def test_fast_path_remembers_literals_by_type():
    """The same dense<..> text read for another shape or element type is checked again."""
    two = LITERAL_FUNC.format(T="tensor<2xf32>", V="[1.0, 2.0]", DT="tensor<2xf32>", S="tensor<2xf32>")
    nested = LITERAL_FUNC.format(T="tensor<1x2xf32>", V="[1.0, 2.0]", DT="tensor<1x2xf32>", S="tensor<1x2xf32>")
    ints = LITERAL_FUNC.format(T="tensor<2xi8>", V="[1, 300]", DT="tensor<2xi8>", S="tensor<2xi8>")
    ints32 = LITERAL_FUNC.format(T="tensor<2xi32>", V="[1, 300]", DT="tensor<2xi32>", S="tensor<2xi32>")
    for text in (two + nested.replace("@f", "@g"), ints32 + ints.replace("@f", "@g")):
        assert_same(text)


ATTRS = ['{arch = "gfx90a:sramecc+:xnack-", kernel = "mixr", num_cu = 110 : i64}', "{kernel}",
         '{rock.arch = "", rock.kernel, rock.num_cu = 304 : i64, enable_splitk_for_tuning}',
         '{arch = "a\\"b\\\\c\\0Ad", kernel = "é", x = [1, [2, true], "s"], y = -3 : i32, "odd key" = 1}',
         '{arch = "é\\n", num_cu = "n", kernel = 1 : i64}', "{x = 1.5 : f32}", "{x = 0x10 : i64}",
         "{x = 9223372036854775807 : i64, y = 9223372036854775808}", "{sym_name = \"x\"}", "{a = 1, a = 2}",
         '{mhal.arch = "gfx942", kernel = "\\C3\\A9\\0A"}', '{x = "\\FF"}', "{}",
         '{"é" = 1, "a\\0Ab" = "é\\n", x = "\\C3\\A9"}', '{"é\\n" = 1}']


@pytest.mark.parametrize("attrs", ATTRS)
def test_fast_path_func_attributes_match_xdsl(attrs):
    seed = (DATA / "seed_module.mlir").read_text()
    text = re.sub(r"attributes \{[^\n]*\} \{", lambda _: f"attributes {attrs} {{", seed, count=1)
    assert text != seed or attrs.startswith('{arch = "gfx90a')
    assert_same(text)


VARIANTS = [
    ("old syntax, extra spaces", lambda s: s.replace("migraphx.dot(%2, %0)", "migraphx.dot( %2 ,%0 )")),
    ("comment inside", lambda s: s.replace("    %4 =", "    // a comment %9 = migraphx.relu\n    %4 =")),
    ("comment inside a list", lambda s: s.replace("migraphx.dot(%2, %0)", "migraphx.dot(%2, // x\n %0)")),
    ("named values", lambda s: s.replace("%3", "%fused_12").replace("%arg1", "%x_1")),
    ("numbered args", lambda s: s.replace("%arg", "%")),
    ("forward use", lambda s: s.replace("migraphx.dot(%2, %0)", "migraphx.dot(%2, %4)")),
    ("redefinition", lambda s: s.replace("%4 = migraphx.add", "%3 = migraphx.add").replace("return %4", "return %3")),
    ("type mismatch", lambda s: s.replace("migraphx.add(%3, %arg0) : (tensor<1x384x768xf16>",
                                          "migraphx.add(%3, %arg0) : (tensor<1x384x768xf32>")),
    ("private", lambda s: s.replace("func.func @", "func.func private @")),
    ("nested", lambda s: s.replace("func.func @", "func.func nested @")),
    ("quoted name", lambda s: s.replace("@mlir_transpose_reshape_dot_add", '@"a\\"b c"')),
    ("bad escape in name", lambda s: s.replace("@mlir_transpose_reshape_dot_add", '@"a\\qb"')),
    ("func.return", lambda s: s.replace("return %4", "func.return %4")),
    ("op after return", lambda s: s.replace("  }\n}", "  %9 = migraphx.relu(%4) : (tensor<1x384x768xf16>) -> "
                                                       "tensor<1x384x768xf16>\n  }\n}")),
    ("unknown op", lambda s: s.replace("migraphx.add(", "migraphx.frobnicate(")),
    ("wrong rule", lambda s: s.replace("permutation = [0, 2, 1, 3]", "permutation = [0, 2, 3, 1]")),
    ("perf_config", lambda s: s.replace("migraphx.dot(%2, %0)", 'migraphx.dot(%2, %0) {perf_config = "v2:16,16"}')),
    ("alias", lambda s: "!t = tensor<1x384x768xf16>\n" + s.replace("return %4 : tensor<1x384x768xf16>",
                                                                     "return %4 : !t")),
    ("to instead of ->", lambda s: s.replace(") -> tensor<1x384x768xf16>\n    return", ") to tensor<1x384x768xf16>\n"
                                                                                      "    return")),
    ("one line", lambda s: re.sub(r"\n\s*", " ", s)),
]


@pytest.mark.parametrize("name,change", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_fast_path_variants_match_xdsl(name, change):  # noqa: ARG001 (name: the parametrize id)
    seed = (DATA / "seed_module.mlir").read_text()
    text = change(seed)
    assert text != seed
    assert_same(text)
    assert_same(text, param_names=["a", "b", "c"])
    assert_same(text, param_names=["a"])


# ----------------------------------------------------------------- mutations --
_SEEDS = [t for _, t in CORPUS_TEXTS if len(t) < 6000] + re.findall(r"(?ms)^  func\.func.*?^  }\n",
                                                                    many_funcs(n=40, seed=3)[0])
_TOKENS = list('0123456789x,%<>(){}[]":=if -.\n\\é#!_') + [
    '\\"', "\\0A", "\\C3\\A9", " : i32", " : i1", "1.5", "nan", "0x7E00", "array<i64: 1>", "perf_config", "private ",
    "func.", "^bb0:", "->", "to", "tensor<", "!migraphx.shaped<", "si", "ui", "0x", "e", "dense<", "true", "@", "//"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SEEDS), st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from("ids"),
                                                   st.sampled_from(_TOKENS)), min_size=1, max_size=3))
def test_fast_path_matches_xdsl_on_mutated_funcs(seed, edits):
    """Small edits of real and generated funcs (a token in, a few characters out): whatever the fast path
    takes, xDSL reads the same; whatever is wrong, the error is xDSL's."""
    text = seed
    for at, kind, tok in edits:
        i = int(at * len(text))
        text = {"i": text[:i] + tok + text[i:], "d": text[:i] + text[i + 2:], "s": text[:i] + tok + text[i + 1:]}[kind]
    assert_same(text)
