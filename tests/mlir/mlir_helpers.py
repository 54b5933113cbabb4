"""Shared checks for the mlir tests."""
import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from pytest_mlirtrace._internal.ir import evaluate, random_inputs


def inputs_for(parsed, original, inputs):
    """The original's inputs renamed to the parsed module's params (same position in params())."""
    return {q.param: inputs[p.param] for p, q in zip(original.params(), parsed.params(), strict=False)}


def assert_same_outputs(original, parsed, seed=0):
    """Both modules give bit-identical outputs with the oracle on the same random inputs."""
    ins = random_inputs(original, seed=seed)
    a = evaluate(original, ins)
    b = evaluate(parsed, inputs_for(parsed, original, ins))
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=False):
        assert x.shape == y.shape
        if x.dtype == np.bool_ or y.dtype == np.bool_:
            x, y = x.astype(np.int8), y.astype(np.int8)
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def macs(module) -> int:
    """Rough cost of evaluating ``module`` (multiply-adds of its dots, elements of the rest)."""
    total = 0
    for ins in module.instructions:
        if ins.op in ("dot", "quant_dot"):
            k = module.get(ins.inputs[0]).shape.lens[-1]
            total += int(np.prod(ins.shape.lens)) * k
        elif ins.shape is not None:
            total += int(np.prod(ins.shape.lens))
    return total


# ------------------------------------------------------ generated modules --
# ops whose attributes MLIR keeps (contiguous is not printed; reshape-likes print their result lens only)
def keeps_attrs(ins) -> bool:
    return not ins.op.startswith("@") and ins.op not in ("contiguous", "reshape_lazy", "squeeze", "unsqueeze",
                                                         "flatten")


ANY_TEXT = st.text(max_size=12)                  # any code point but surrogates
ODD = st.sampled_from(['a"b', "a\\b", "a\nb", "a\tb", "é", "x y", "a,b", "a]b", "{}", "1", "-2.5", "\x00\x7f", "",
                       "a=b", "@1", '"', "\\0A", "%0", "//c", "\u2028", "🙂", "a(b", "b)", "f(x)", " a ", "[1]",
                       "{a}"])
STRINGS = st.one_of(ODD, ANY_TEXT)


def renamed(m, names: dict):
    """``m`` with its params renamed (instruction names of the params too)."""
    from pytest_mlirtrace._internal.ir import Module
    from pytest_mlirtrace._internal.ir.instruction import Instruction

    out = Module(name=m.name, target_id=m.target_id)
    for ins in m.instructions:
        out.instructions.append(Instruction(names.get(ins.name, ins.name), ins.op,
                                            [names.get(i, i) for i in ins.inputs], dict(ins.attrs), ins.shape,
                                            names.get(ins.param, ins.param) if ins.param else ins.param,
                                            ins.literal))
    return out


@st.composite
def odd_modules(draw, max_dim: int = 6, max_elements: int = 128):
    """``fused_graphs()`` modules with string attributes (any text, in key and value) on some ops and
    parameters with odd names (quotes, backslashes, newlines, spaces, commas, brackets, non-ASCII)."""
    from pytest_mlirtrace._internal.strategies import fused_graphs

    m = draw(fused_graphs(max_dim=max_dim, max_elements=max_elements))
    ops = [i for i in m.instructions if keeps_attrs(i)]
    for ins in draw(st.lists(st.sampled_from(ops), max_size=3)) if ops else []:
        # keys that no shape rule reads; any ASCII (xDSL takes no name with both an escape and non-ASCII)
        ins.attrs["note" + draw(st.one_of(ODD, st.text(st.characters(max_codepoint=127), max_size=8)).filter(
            lambda s: s.isascii()))] = draw(STRINGS)
    params = m.params()
    new = draw(st.lists(st.one_of(ODD.filter(bool), st.text(min_size=1, max_size=8)), min_size=len(params),
                        max_size=len(params), unique=True))
    taken = {i.name for i in m.instructions if i.op != "@param"}
    assume(not taken & set(new) and all(":" not in n for n in new))   # "a:b" names read as a module prefix
    m = renamed(m, {p.name: n for p, n in zip(params, new, strict=False)})
    m.verify()
    return m


# ------------------------------------------------------ many distinct funcs --
def many_funcs(n: int | None = None, mib: float | None = None, seed: int = 12) -> tuple[str, list[str]]:
    """``module { func.func ... }`` of distinct fused funcs (``n`` of them, or until ``mib`` MiB), as a long
    trace log or test file holds them: each built from a seeded random plan of the strategy's builder
    (pointwise chains, reduce, softmax, gemm with viewed inputs, quant_dot, attention; f32, f16, i8; ranks
    1-4; dims up to 512; literals), in ``tensor<>`` or ``!migraphx.shaped<>`` syntax, its own name and
    attributes.  Returns (text, func names).  ``benchmarks/bench_parse.py`` times files made here."""
    import random

    from pytest_mlirtrace._internal.mlir import FuncAttrs, emit_func
    from pytest_mlirtrace._internal.strategies.graph_builder import ALL_KINDS, FLOAT_OPS, VIEW_RECIPES, Plan, Step
    from pytest_mlirtrace._internal.strategies.graphs import build_module

    rng = random.Random(seed)
    parts, names, size = [], [], 0
    archs = ["gfx90a:sramecc+:xnack-", "gfx942", "gfx1100", "pocl-cpu"]
    while (n is not None and len(names) < n) or (mib is not None and size < mib * 2**20):
        kind = rng.choice(ALL_KINDS)
        rank = rng.randint(1, 4) if kind in ("pointwise", "reduce", "softmax") else rng.randint(2, 4)

        def steps():
            return tuple(Step(rng.randrange(len(FLOAT_OPS)), rng.randrange(1 << 27))
                         for _ in range(rng.randint(0, 4)))

        dims = tuple(rng.choice([1, 2, 3, 8, 16, 40, 64, 128, 384, 512]) for _ in range(8))
        views = tuple((rng.randrange(len(VIEW_RECIPES)), rng.randrange(256), rng.randrange(256), rng.randrange(256))
                      for _ in range(4))
        plan = Plan(kind, rng.choice(["f32", "f16"]), rank, dims, views, rng.randrange(8),
                    tuple(rng.random() < 0.4 for _ in range(4)), steps(), steps())
        try:
            module = build_module(plan, max_rank=4, max_elements=1 << 24)
        except Exception:                # noqa: BLE001 -- a plan the builder refuses: draw another
            continue
        name = f"{module.symbol_name()}_{len(names)}"
        attrs = FuncAttrs.default(rng.choice(archs), rng.choice([1, 104, 110, 304]), "mixr",
                                  prefix=rng.choice(["", "", "rock."]))
        func = emit_func(module, attrs=attrs, type_syntax=rng.choice(["tensor", "shaped"]), name=name)
        parts.append(func)
        names.append(name)
        size += len(func)
    return "module {\n" + "".join(parts) + "}\n", names
