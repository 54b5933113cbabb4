"""Hand-off command lines: how the people who fix a finding reproduce it with rocMLIR's own tools.

The chain is the one rocMLIR's own end-to-end tests run on a migraphx-dialect func (the ``// RUN:`` lines of
``mlir/test/fusion`` and ``mlir/test/Dialect/MIGraphX/integration``; ``tests/repro/test_handoff.py`` checks
the tools, their flags and their order against the corpus copies of those lines)::

    rocmlir-gen -fut F --arch ARCH --clone-harness FILE          # F and a clone of it as the reference
    | rocmlir-driver -kernel-pipeline=migraphx,highlevel -host-pipeline=migraphx,highlevel
    | rocmlir-gen -ph -rand 1 -rand_type float -fut F_wrapper --verifier clone -
    | rocmlir-driver -host-pipeline mhal -kernel-pipeline full
    | xmir-runner --shared-libs=LIBS --entry-point-result=void

Two-gemm kernels (attention, gemm-gemm) run the migraphx kernel pipeline in a driver of its own, as all
their tests do (newer gemm tests do it too; for one gemm either form works). The solution goes in as
``--perf_config`` of the first ``rocmlir-gen``. Two forms: a shell command for a ROCm machine
(``$ROCMLIR_LIB_DIR`` names rocMLIR's ``build/lib``), and a ``// RUN:`` line with lit's substitutions
(``%s``, ``%arch``, ``%linalg_test_lib_dir``...) to paste into a rocMLIR test.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..vocab import parse_problem_key
from .markdown import fence

__all__ = ["RocmlirChain", "rocmlir_chain", "handoff_markdown", "func_name", "SPLIT_PIPELINE_KINDS", "RUNTIME_LIBS",
           "tuning_config_line", "migraphx_trace_env"]

#: problem-key kinds whose tests run ``-kernel-pipeline=migraphx`` in a driver apart from the host pipeline
SPLIT_PIPELINE_KINDS = frozenset({"attention", "gemm_gemm"})
#: what xmir-runner loads: (lit's directory substitution, library stem), in the tests' order
RUNTIME_LIBS = (("%linalg_test_lib_dir", "libmlir_rocm_runtime"),
                ("%conv_validation_wrapper_library_dir", "libconv-validation-wrappers"),
                ("%linalg_test_lib_dir", "libmlir_runner_utils"),
                ("%linalg_test_lib_dir", "libmlir_float16_utils"),
                ("%linalg_test_lib_dir", "libmlir_c_runner_utils"),
                ("%linalg_test_lib_dir", "libmlir_async_runtime"))


@dataclass(frozen=True)
class RocmlirChain:
    """A pipeline of rocMLIR tools: one argv per stage."""
    stages: tuple[tuple[str, ...], ...]

    def shell(self) -> str:
        """One shell command (each stage's arguments quoted; ``$ROCMLIR_LIB_DIR`` left to the shell)."""
        return " \\\n  | ".join(" ".join(_quote(a) for a in st) for st in self.stages)

    def lit(self) -> str:
        """The ``// RUN:`` line of a rocMLIR lit test (lit's own substitutions, unquoted)."""
        return "// RUN: " + " | ".join(" ".join(st) for st in self.stages)

    def tools(self) -> list[str]:
        return [st[0] for st in self.stages]


def _quote(arg: str) -> str:
    if "$" in arg:      # a variable the shell expands ($ROCMLIR_LIB_DIR, ${ARCH:-...}): double quotes
        return '"' + arg.replace('"', '\\"') + '"'
    return shlex.quote(arg)


def rocmlir_chain(func: str, mlir_file: str = "%s", arch: str = "%arch", perf_config: str | None = None,
                  kind: str = "gemm", lit: bool = False, split: bool | None = None) -> RocmlirChain:
    """The e2e chain that builds ``func`` of ``mlir_file`` for ``arch`` (with ``perf_config`` fixed when
    given) and checks it against a clone of itself on random inputs. ``kind``: the problem key's kind (a
    two-gemm kind splits the kernel pipeline off; ``split`` says so for any kind: rocMLIR's newer gemm tests
    split it too, the two forms do the same). ``lit``: lit's substitutions for the libraries, else
    ``$ROCMLIR_LIB_DIR/<lib>.so``."""
    gen = ["rocmlir-gen", "-fut", func, "--arch", arch, "--clone-harness", mlir_file]
    if perf_config:
        gen.append(f"--perf_config={perf_config}")
    if split is None:
        split = kind in SPLIT_PIPELINE_KINDS
    if split:
        drivers = [("rocmlir-driver", "-kernel-pipeline=migraphx"),
                   ("rocmlir-driver", "-host-pipeline=migraphx,highlevel")]
    else:
        drivers = [("rocmlir-driver", "-kernel-pipeline=migraphx,highlevel", "-host-pipeline=migraphx,highlevel")]
    harness = ("rocmlir-gen", "-ph", "-rand", "1", "-rand_type", "float", "-fut", f"{func}_wrapper",
               "--verifier", "clone", "-")
    lower = ("rocmlir-driver", "-host-pipeline", "mhal", "-kernel-pipeline", "full")
    libs = ",".join(f"{d}/{n}%shlibext" if lit else f"$ROCMLIR_LIB_DIR/{n}.so" for d, n in RUNTIME_LIBS)
    run = ("xmir-runner", f"--shared-libs={libs}", "--entry-point-result=void")
    return RocmlirChain((tuple(gen), *drivers, harness, lower, run))


def tuning_config_line(problem_key: str) -> str:
    """The line ``tuningRunner.py`` / ``rocmlir-tuning-driver`` take for a problem: the problem key itself,
    in rocMLIR's flag form (``-t f16 -out_datatype f16 -transA false ... -k 768``)."""
    key = " ".join(problem_key.split())
    if not key.startswith("-"):
        raise ValueError(f"not a problem key in rocMLIR's flag form: {problem_key!r}")
    return key


def migraphx_trace_env(dump_dir: str = "mlir-dump") -> dict[str, str]:
    """The MIGraphX variables that make a model's run print what a ticket needs: each fused module, its MLIR
    and problem key (``MIGRAPHX_TRACE_MLIR``), each solution tried with its MLIR
    (``MIGRAPHX_TRACE_BENCHMARKING=3``), a .mlir file per fusion (``MIGRAPHX_MLIR_DUMP``)."""
    return {"MIGRAPHX_TRACE_MLIR": "1", "MIGRAPHX_TRACE_BENCHMARKING": "3", "MIGRAPHX_MLIR_DUMP": dump_dir}


def func_name(mlir_text: str) -> str | None:
    """The first ``func.func``'s name in ``mlir_text`` (None: there is none)."""
    m = re.search(r"\bfunc(?:\.func)?\s+(?:private\s+)?@([\w$.\-]+)", mlir_text or "")
    return m.group(1) if m else None


def handoff_markdown(data: dict, mlir_rel: str) -> list[str]:
    """A ticket's hand-off section (markdown lines): the .mlir file written beside the reproducer
    (``mlir_rel``), the rocMLIR chain that checks it on a ROCm GPU, the lit RUN line, the tuning config line
    and the MIGraphX variables to trace a model's run."""
    func = func_name(data.get("mlir_text", ""))
    if func is None:
        return []
    sol = data.get("solution") or None
    key = data.get("problem_key") or ""
    pk = parse_problem_key(key) if key.strip() else None
    kind = (pk.kind if pk is not None else None) or "gemm"
    chain = rocmlir_chain(func, mlir_rel, "${ARCH:-gfx942}", perf_config=sol, kind=kind)
    lit = rocmlir_chain(func, kind=kind, perf_config=sol, lit=True)
    out = ["## Reproduce with rocMLIR (hand-off)", "",
           f"`{mlir_rel}` holds the func `@{func}` as rocMLIR's migraphx dialect takes it. On a ROCm machine "
           "with a rocMLIR build (`ROCMLIR_LIB_DIR` = its `build/lib`, `ARCH` = the GPU, e.g. gfx942), this "
           "builds it and checks it against a clone of itself on random inputs, as rocMLIR's e2e tests do:", "",
           fence(chain.shell(), "sh"), "", "As a line of a rocMLIR lit test:", "", fence(lit.lit(), "mlir"), ""]
    if sol:
        out += [f"The perf config is the recorded one (`{sol}`). One made by mlirtrace's own code generator "
                "(a test or a fuzz finding) has mlirtrace's fields; one imported from a MIGraphX log is rocMLIR's.",
                ""]
    flags = re.search(r"(?:^|\s)(-[A-Za-z_]\w*\s.*)$", key.strip(), re.S)
    if flags:      # the key's flags without its arch / CU prefix
        out += ["Tuning config line (`rocmlir-tuning-driver`, `tuningRunner.py`):", "",
                fence(tuning_config_line(flags.group(1)), "text"), ""]
    env = " ".join(f"{k}={v}" for k, v in migraphx_trace_env().items())
    out += ["To see the same fused op in a model's MIGraphX run (each module, its MLIR, its problem and every "
            "solution benchmarked):", "", fence(f"{env} migraphx-driver compile YOUR_MODEL.onnx --gpu", "sh"), ""]
    return out
