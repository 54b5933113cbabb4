"""Problem keys: each form round-trips, real keys from logs parse, and every writer writes the same text."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlirtrace._internal.vocab import KEY_FIELDS, ProblemKeyError, format_problem_key, parse_problem_key
from tests.corpus import TRACES

DATA = Path(__file__).resolve().parents[1] / "data" / "logs"
CORPUS = TRACES

SEED_FIELDS = {"t": "f16", "out_datatype": "f16", "transA": False, "transB": False, "g": 1, "m": 384, "n": 768,
               "k": 768}
CASES = [
    ("gemm", SEED_FIELDS, "-t f16 -out_datatype f16 -transA false -transB false -g 1 -m 384 -n 768 -k 768"),
    ("gemm", {"t": "i8", "out_datatype": "i32", "transA": True, "transB": False, "g": 6, "m": 5, "n": 6, "k": 7},
     "-t i8 -out_datatype i32 -transA true -transB false -g 6 -m 5 -n 6 -k 7"),
    # mlirtrace's own kinds: these texts are stored in tuning databases and reproducers -- pinned
    ("pointwise", {"t": "f32", "out_datatype": "f32", "elements": 32, "reduce_len": 32, "outer": 1, "g": 1},
     "-op pointwise -t f32 -out_datatype f32 -elements 32 -reduce_len 32 -outer 1 -g 1"),
    ("reduce", {"t": "f32", "out_datatype": "f32", "elements": 3, "reduce_len": 5, "outer": 3, "g": 1},
     "-op reduce -t f32 -out_datatype f32 -elements 3 -reduce_len 5 -outer 3 -g 1"),
    ("softmax", {"op": "softmax", "t": "f16", "out_datatype": "f16", "elements": 60, "reduce_len": 5, "outer": 12,
                 "g": 1},
     "-op softmax -t f16 -out_datatype f16 -elements 60 -reduce_len 5 -outer 12 -g 1"),
]


def _text(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@pytest.mark.parametrize("kind,fields,body", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
@pytest.mark.parametrize("device", [None, ("pocl-cpu", 2, None), ("gfx942:sramecc+:xnack-", 304, 1)],
                         ids=["bare", "device", "chiplets"])
def test_each_form_round_trips(kind, fields, body, device):
    arch, cu, chiplets = device or (None, None, None)
    text = format_problem_key(kind, fields, arch=arch, num_cu=cu, chiplets=chiplets)
    head = [] if device is None else [arch, str(cu)] + ([] if chiplets is None else [str(chiplets)])
    assert text == "\t".join(head + [body])
    k = parse_problem_key(text)
    want = {"op": kind} if kind in ("pointwise", "reduce", "softmax") else {}
    want.update({n: _text(v) for n, v in fields.items()})
    assert k.fields == want and list(k.fields) == list(KEY_FIELDS[kind])
    assert (k.kind, k.arch, k.num_cu, k.chiplets) == (kind, arch, cu, chiplets)
    assert k.separator == ("tab" if device else "space")
    assert k.text == text and str(k) == text
    assert format_problem_key(kind, k.fields, arch=k.arch, num_cu=k.num_cu, chiplets=k.chiplets) == text
    assert k.get("arch") == arch and k.get("t") == _text(fields["t"]) and k.get("nope", "-") == "-"


def test_gemm_key_accessors():
    k = parse_problem_key(format_problem_key("gemm", SEED_FIELDS, arch="pocl-cpu", num_cu=2))
    assert (k.dtype, k.g, k.m, k.n, k.k) == ("f16", 1, 384, 768, 768)
    assert k.dims() == {"g": 1, "m": 384, "n": 768, "k": 768}


@pytest.mark.parametrize("kind,fields,match", [
    ("gemm", {**SEED_FIELDS, "x": 1}, r"unknown x"),
    ("gemm", {n: v for n, v in SEED_FIELDS.items() if n != "k"}, r"missing k \(a gemm key has t, out_datatype"),
    ("attention", {}, r"attention problem key fields: missing t, transQ"),
    ("flash", {}, r"no problem-key form for kind 'flash'"),
    ("conv", {"t": "f32"}, r"missing F, f, I, O"),
    ("reduce", {**dict(CASES[3][1]), "op": "softmax"}, r"a reduce key has -op reduce, not -op softmax"),
    ("gemm", {**SEED_FIELDS, "t": "f 16"}, r"-t: 'f 16' cannot be written as one value"),
])
def test_keys_that_cannot_be_written_are_refused(kind, fields, match):
    with pytest.raises(ProblemKeyError, match=match):
        format_problem_key(kind, fields)


def test_conv_keys_as_rocmlir_prints_them():
    fields = dict(F=1, f="GNC01", I="NGC01", O="NGC01", n=256, c=1024, H=14, W=14, k=2048, y=1, x=1, p=0, q=0,
                  u=2, v=2, l=1, j=1, g=1, t="f16")
    text = format_problem_key("conv", fields, arch="gfx942", num_cu=304)
    assert text == ("gfx942\t304\tconvfp16 -F 1 -f GNC01 -I NGC01 -O NGC01 -n 256 -c 1024 -H 14 -W 14 -k 2048 -y 1 "
                    "-x 1 -p 0 -q 0 -u 2 -v 2 -l 1 -j 1 -g 1 -t f16")
    k = parse_problem_key(text)
    assert (k.kind, k.operation, k.text) == ("conv", "convfp16", text)
    assert {n: k.fields[n] for n in fields} == {n: str(v) for n, v in fields.items()}
    assert format_problem_key("conv", dict(fields, t="f32")).startswith("conv -F 1 ")
    assert format_problem_key("conv", dict(fields, t="i8")).startswith("convint8 -F 1 ")
    # the older NCHW form of the layouts
    old = parse_problem_key("gfx90a 110 conv -F 1 -f NCHW -I NCHW -O NCHW -n 1 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 "
                            "-p 3 -q 3 -u 2 -v 2 -l 1 -j 1 -g 1")
    assert (old.kind, old.fields["f"], old.int_field("k")) == ("conv", "NCHW", 64)


def test_forms_real_logs_print():
    # spaces once pasted, an operation word, attention flags, a message running on after the key
    k = parse_problem_key("gfx908:sramecc+:xnack- 120     -t f16 -out_datatype f16 -transA false -transB false "
                          "-g 1 -m 1 -n 2304 -k 768")
    assert (k.arch, k.num_cu, k.separator, k.kind, k.m) == ("gfx908:sramecc+:xnack-", 120, "space", "gemm", 1)
    assert k.text == " ".join(k.raw.split())
    c = parse_problem_key("gfx942\t304\tconv -F 1 -f GNCHW -I NGCHW -O NGCHW -n 1 -c 512 -H 28 -W 28 -k 256 -y 1 "
                          "-x 1 -t f32")
    assert (c.operation, c.kind, c.fields["f"], c.dims()["H"]) == ("conv", "conv", "GNCHW", 28)
    assert c.text == c.raw
    a = parse_problem_key("gfx1030 40 -t f16 -g 24 -seq_len_q 4096 -seq_len_k 4096 -head_dim_qk 64 -head_dim_v 64 "
                          "MLIR Fused Kernel: module {")
    assert a.kind == "attention" and "MLIR" not in a.raw and a.fields["head_dim_v"] == "64"
    flags = parse_problem_key("gfx90a 104 -t f16 -transA -g 2 stray")
    assert flags.fields == {"t": "f16", "transA": "", "g": "2", "_7": "stray"}
    assert flags.text == "gfx90a 104 -t f16 -transA -g 2 stray"
    assert parse_problem_key("no flags here") is None and parse_problem_key("") is None


def _logged_keys() -> list[tuple[str, str]]:
    from pytest_mlirtrace._internal.logs.line_kinds import logical_lines

    pats = [re.compile(r"^\s*Problem\s*:\s*(?P<key>.+)$"),
            re.compile(r"No (?:valid tuned compilation|solutions provided) for \S+ with (?P<key>.+)")]
    files = sorted(DATA.glob("*.log")) + (sorted(CORPUS.glob("*.txt")) if CORPUS.is_dir() else [])
    out = []
    for f in files:
        lines, _ = logical_lines(f.read_text(encoding="utf-8", errors="replace"))
        for L in lines:
            if L.text.lstrip().startswith("#"):
                continue
            for p in pats:
                m = p.search(L.text)
                if m and "no config provided" not in L.text:
                    out.append((f"{f.name}:{L.no}", m.group("key")))
    return out


LOGGED = _logged_keys()


def test_the_logs_hold_keys_of_each_real_form():
    kinds = {parse_problem_key(k).kind for _, k in LOGGED}
    assert len(LOGGED) >= 3 and "gemm" in kinds


@pytest.mark.parametrize("where,text", LOGGED, ids=[w for w, _ in LOGGED])
def test_keys_in_real_logs_parse(where, text):
    k = parse_problem_key(text)
    assert k is not None, where
    assert k.arch and k.arch.startswith("gfx") and k.num_cu and k.num_cu > 0
    assert k.kind in ("gemm", "attention", "conv") and k.dtype in ("f16", "f32", "bf16", "i8")
    again = parse_problem_key(k.text)
    assert again.fields == k.fields and (again.arch, again.num_cu, again.chiplets) == (k.arch, k.num_cu, k.chiplets)
    assert again.text == k.text


def test_codegen_and_tuning_write_one_key():
    from pytest_mlirtrace._internal import codegen
    from pytest_mlirtrace._internal.engine import problem_key

    class Dev:
        key_name, compute_units = "pocl-cpu", 2

    P = codegen.Problem
    for p in [P("gemm", "f16", "f16", False, True, 3, 384, 768, 768, elements=5, op="dot"),
              P("pointwise", "f32", "f32", elements=32, outer=1, reduce_len=32, op="pointwise"),
              P("reduce", "f32", "f32", elements=3, outer=3, reduce_len=5, op="reduce_max"),
              P("softmax", "f16", "f16", elements=60, outer=12, reduce_len=5, op="softmax")]:
        key = problem_key(p, Dev())
        assert key == f"pocl-cpu\t2\t{p.key()}"
        k = parse_problem_key(key)
        assert k.kind == p.kind and k.text == key
    assert P("reduce", "f32", "f32", elements=3, outer=3, reduce_len=5, op="reduce_max").key() == CASES[3][2]
