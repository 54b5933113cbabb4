"""The outputs of the fused attention kernels, shared by the FMA kernel (:mod:`.attention`) and the tensor-core
kernel (:mod:`.attention_mma`): the primary output from the second gemm's value, through the ops after it
(:func:`output_at`), and the outputs computed once per row from the softmax's maximum and sum
(:func:`row_outputs`, e.g. the log-sum-exp)."""
from __future__ import annotations

from .cgen import DagEmitter, round_to, store_value
from .kernel import Ctx, emit_output, render


def output_at(ctx: Ctx) -> list[str]:
    """The primary output at (gb, m, d) -- C variables of those names in scope -- from the second gemm's value
    ``ov`` (a float in scope), through the ops after it."""
    def acc_value(_w, _lane):
        return "ov"

    def subst(_ll):
        return {}, {}

    def store(_ll, target, val):
        return f"{target} = {val};"
    return emit_output(ctx, acc_value, 1, subst, subst, store, "o", only_primary=True)


def row_outputs(ctx: Ctx, leaf) -> list[str]:
    """The outputs computed once per row (the log-sum-exp, or any value of the softmax's maximum and sum):
    stored at (gb, m) from the floats ``mx`` and ``sm`` in scope; ``leaf`` renders the other leaves."""
    an, dag, h = ctx.an, ctx.dag, ctx.helpers
    L: list[str] = []
    for j, x in enumerate(an.extra_outputs, start=1):
        def lse_leaf(i, n):
            if n.kind == "acc":
                v = "mx" if dag.nodes[i].op == an.info["max_name"] else "sm"
                return round_to(h, n.dtype, v)
            return leaf(i, n)
        el = DagEmitter(dag, h, lse_leaf, 1, prefix=f"l{j}_")
        val = el.emit(x.root)
        L += el.lines
        L.append(f"out{j}[{render(x.offset, {}, {})}] = {store_value(h, x.dtype, val)};")
    return L


__all__ = ["output_at", "row_outputs"]
