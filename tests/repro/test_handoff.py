"""The hand-off command lines against rocMLIR's own: the corpus's ``// RUN:`` lines (real rocMLIR tests).

For every corpus test whose RUN line is the migraphx e2e chain with a clone verifier (``rocmlir-gen -fut F
--arch %arch --clone-harness %s ... --verifier clone ...``), the chain generated for its func and the kind
mlirtrace computes for it has the same tools, the same flags in the same order and the same values (the
runtime libraries, which differ between rocMLIR versions, and ``FileCheck`` aside)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlirtrace._internal import codegen, mlir
from pytest_mlirtrace._internal.repro.handoff import RUNTIME_LIBS, rocmlir_chain, tuning_config_line

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "rocmlir"


def run_pipelines(text: str) -> list[list[list[str]]]:
    """Each RUN command of a lit test (continuation lines joined) as its stages' argv."""
    cmds, cur = [], ""
    for line in text.splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            continue
        body = m.group(1).rstrip()
        cur += " " + body.rstrip("\\")
        if not body.endswith("\\"):
            cmds.append(cur.strip())
            cur = ""
    return [[st.split() for st in c.split("|") if st.strip()] for c in cmds]


def clone_chains():
    out = []
    for f in sorted(CORPUS.glob("*.mlir")) if CORPUS.is_dir() else []:
        for stages in run_pipelines(f.read_text()):
            first = stages[0]
            if first[:1] == ["rocmlir-gen"] and "--clone-harness" in first and first[1:2] == ["-fut"] \
                    and any("--verifier" in st for st in stages) and any("-rand_type" in st for st in stages):
                out.append(pytest.param(f, stages, id=f.name[:70]))
    return out


def _comparable(stages):
    """Stages up to the runner; the runner's library list reduced to its flag name."""
    keep = [st for st in stages if st[0] != "FileCheck"]
    return [[("--shared-libs" if a.startswith("--shared-libs=") else a) for a in st] for st in keep]


CHAINS = clone_chains()


def kind_of(path: Path, func: str) -> str | None:
    """The problem key's kind mlirtrace gives ``func`` of the test (None: a func it does not read or lower)."""
    try:
        return codegen.problem_of(mlir.parse_mlir_module(path.read_text(), source=path.name, name=func)).key_kind
    except Exception:   # noqa: BLE001
        return None


def test_the_corpus_has_such_chains():
    if not CORPUS.is_dir():
        pytest.skip("no corpus here")
    assert len(CHAINS) >= 8


@pytest.mark.parametrize("path, stages", CHAINS)
def test_the_chain_is_rocmlirs_own(path, stages):
    func = stages[0][2]
    kind = kind_of(path, func)
    split = any(st[:2] == ["rocmlir-driver", "-kernel-pipeline=migraphx"] for st in stages)
    if kind is not None:
        # a two-gemm kind gets the split pipeline, as every such test has it (one gemm: both forms occur)
        if kind in ("attention", "gemm_gemm"):
            assert split, (kind, stages)
            assert rocmlir_chain(func, kind=kind).stages[1] == ("rocmlir-driver", "-kernel-pipeline=migraphx")
    ours = rocmlir_chain(func, kind=kind or "gemm", lit=True, split=split).stages
    theirs = _comparable(stages)
    mine = _comparable([list(st) for st in ours])
    if any("linalg" in a or a in ("-targets", "runner", "mhal,runner", "-print-results", "-relDiff_threshold")
           or a.startswith("-relDiff") or a == "mlir-runner" for st in theirs for a in st):
        # another variant of the chain (the linalg pipeline, an explicit -targets, the runner host pipeline):
        # the same tools in the same order
        assert [st[0] for st in mine] == [st[0] if st[0] != "mlir-runner" else "xmir-runner" for st in theirs]
        return
    assert mine == theirs


def test_the_libraries_are_the_tests_libraries_in_their_order():
    names = [n for _, n in RUNTIME_LIBS]
    seen = 0
    for _, stages in [(p.values[0], p.values[1]) for p in CHAINS]:
        libs = next((a for st in stages for a in st if a.startswith("--shared-libs=")), None)
        got = [re.sub(r"%shlibext$", "", x.split("/")[-1]) for x in libs.split("=", 1)[1].split(",")] if libs else []
        if got == names:
            seen += 1
        else:   # a shorter list: ours in the same relative order
            assert [n for n in names if n in got] == [n for n in got if n in names], got
    assert seen >= 3


def test_the_shell_form_quotes_and_fixes_the_perf_config():
    ch = rocmlir_chain("mlir_dot_add", "dot add.mlir", "gfx942", perf_config="v2:64,64,8,32,32,8,1,1,1")
    sh = ch.shell()
    assert sh.startswith("rocmlir-gen -fut mlir_dot_add --arch gfx942 --clone-harness 'dot add.mlir' "
                         "--perf_config=v2:64,64,8,32,32,8,1,1,1")
    assert '"--shared-libs=$ROCMLIR_LIB_DIR/libmlir_rocm_runtime.so,' in sh
    assert ch.tools() == ["rocmlir-gen", "rocmlir-driver", "rocmlir-gen", "rocmlir-driver", "xmir-runner"]
    assert rocmlir_chain("mlir_attention", kind="attention").tools().count("rocmlir-driver") == 3
    assert ch.lit().startswith("// RUN: rocmlir-gen -fut mlir_dot_add --arch gfx942")


def test_the_tuning_config_line_is_the_problem_key():
    key = "-t f16 -out_datatype f16 -transA false -transB false -g 1 -m 384 -n 2304 -k 768"
    assert tuning_config_line("  " + key.replace(" -g", "   -g") + "\n") == key
    with pytest.raises(ValueError, match="not a problem key"):
        tuning_config_line("gfx942\t304\t-t f16")


def test_kinds_were_computed_for_most_chains():
    """the split is checked against mlirtrace's own kind (not only the RUN line's) for most chains"""
    if not CHAINS:
        pytest.skip("no corpus here")
    kinds = [kind_of(p.values[0], p.values[1][0][2]) for p in CHAINS]
    assert sum(k is not None for k in kinds) >= 6, kinds
    assert set(kinds) >= {"attention", "gemm_gemm", "gemm"}, kinds
