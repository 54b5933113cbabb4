"""Two fused gemms: gemm-gemm (pointwise ops between them) and attention (a softmax between them).

``out[gb, m, d] = sum over n1 of P[gb, m, n1] * V[gb, n1, d]`` where ``P`` is the first gemm's result
``S = Q x K`` (an inline dot over the head dim) after the ops between the gemms.  With a softmax among
them, P is computed with an online softmax: each work-item keeps the running maximum and sum of its row
and rescales its accumulators when the maximum grows, so S is computed once per (row, n1) and never
stored; the division by the sum comes last.  Masks, biases and scales before the softmax are part of
the score DAG (a ``where`` with ``-inf`` masks a position out; a row masked out entirely gives NaN, as
the oracle's 0/0 does).  A causal mask (:mod:`.masks`) also ends each row's key loop at the diagonal.

One work-item owns one row ``m`` and DPerThread consecutive output columns ``d`` (accumulators in
private memory); the work-group is RowsPerBlock consecutive rows (they read the same K and V elements
in the same order).  Solution fields: :mod:`.solution`.
"""
from __future__ import annotations

from .attention_mma import lower_attention_mma
from .attention_outputs import output_at, row_outputs
from .cgen import DagEmitter, compute
from .kernel import Ctx, render


def lower_attention(ctx: Ctx, sol, faults) -> tuple[list[str], tuple, tuple, str, str]:
    """(body, global size, local size, attributes, prelude: text before the kernel)."""
    if sol.matrix_core:
        return lower_attention_mma(ctx, sol, faults)
    an = ctx.an
    p = an.problem
    dag, h = ctx.dag, ctx.helpers
    M, N1, D = p.m, an.info["N1"], an.info["D"]
    RB, DT, U = sol.RowsPerBlock, sol.DPerThread, sol.Unroll
    softmax = an.info["softmax"]

    def leaf(_i, n):
        return ctx.load(n, render(n.offset, {}, {}))

    L: list[str] = []
    L.append("const int gb = get_global_id(2);")
    L.append("const int m = get_global_id(0);")
    L.append(f"const int dc = get_global_id(1) * {DT};")
    L.append(f"if (m >= {M}) return;")
    L.append(f"float acc[{DT}];")
    L.append(f"for (int q = 0; q < {DT}; ++q) acc[q] = 0.0f;")
    if softmax:
        L.append("float mx = -INFINITY, sm = 0.0f;")
    causal = an.info.get("causal")
    if causal is not None:
        # a causal mask: the keys past the diagonal are -inf (weight 0): each row stops there
        # [fault hook] causal_edge: the row stops one key early, dropping the diagonal
        edge = causal if "causal_edge" not in faults else causal - 1
        L.append(f"const int n1end = MINI({N1}, m + {edge + 1});")
    else:
        L.append(f"const int n1end = {N1};")
    em = DagEmitter(dag, h, leaf, 1, prefix="s")
    L += _hoist_query(ctx, em, leaf)
    L.append("for (int n1 = 0; n1 < n1end; ++n1) {")
    x = em.emit(an.a_root)
    L += ["  " + s for s in em.lines]
    xf = x if compute(dag.nodes[an.a_root].dtype) == "float" else f"(float)({x})"
    if softmax:
        # [fault hook] softmax_no_rescale: the accumulators are not rescaled when the running maximum grows
        rescale = "softmax_no_rescale" not in faults
        L.append(f"  const float sx = {xf};")
        L.append("  const float mn = fmax(mx, sx);")
        L.append("  const float cr = (mn == -INFINITY) ? 1.0f : exp(mx - mn);")
        L.append("  const float pe = (mn == -INFINITY) ? 0.0f : exp(sx - mn);")
        L.append("  sm = sm * cr + pe;")
        L.append("  mx = mn;")
        pv = "pe"
    else:
        rescale = False
        L.append(f"  const float pe = {xf};")
        pv = "pe"
    L.append(f"  #pragma unroll {min(U, DT)}")
    L.append(f"  for (int q = 0; q < {DT}; ++q) {{")
    L.append(f"    const int d = MINI(dc + q, {D - 1});")
    ev = DagEmitter(dag, h, leaf, 1, prefix="v")
    v = ev.emit(an.b_root)
    L += ["    " + s for s in ev.lines]
    vf = v if compute(dag.nodes[an.b_root].dtype) == "float" else f"(float)({v})"
    if rescale:
        L.append(f"    acc[q] = acc[q] * cr + {pv} * {vf};")
    else:
        L.append(f"    acc[q] += {pv} * {vf};")
    L.append("  }")
    L.append("}")
    # ---- epilogue: the second gemm's result at (gb, m, d), then the ops after it
    L.append(f"for (int q = 0; q < {DT}; ++q) {{")
    L.append("  const int d = dc + q;")
    if "attention_d_edge" not in faults:      # [fault hook] attention_d_edge: no guard at the row's end
        L.append(f"  if (d >= {D}) break;")
    L.append("  const float ov = acc[q] / sm;" if softmax else "  const float ov = acc[q];")

    L += ["  " + s for s in output_at(ctx)]
    L.append("}")
    if an.extra_outputs:
        # the row's log-sum-exp (or any value of the softmax's maximum and sum), stored once per row
        L.append("if (dc == 0) {")
        L += ["  " + s for s in row_outputs(ctx, leaf)]
        L.append("}")
    attrs = f"__attribute__((reqd_work_group_size({RB}, 1, 1)))"
    gx = -(-M // RB) * RB
    gy = -(-D // DT)
    return L, (gx, gy, p.g), (RB, 1, 1), attrs, ""


#: the longest first-gemm K whose query row is kept in private memory
MAX_HOISTED = 256


def _hoist_query(ctx: Ctx, em: DagEmitter, leaf) -> list[str]:
    """The first gemm's row operand (Q) does not depend on the key index: read the work-item's row once,
    before the key loop, into a private array the inline dot then reads (``em.preset``)."""
    dag, h = ctx.dag, ctx.helpers
    dots = [i for i in dag.reachable([ctx.an.a_root]) if dag.nodes[i].kind == "dot"]
    if len(dots) != 1:
        return []
    node = dag.nodes[dots[0]]
    K, kv, q = int(node.value), node.op, node.args[0]
    leaves = [dag.nodes[i] for i in dag.reachable([q]) if dag.nodes[i].offset is not None]
    if K > MAX_HOISTED or any("n1" in nd.offset.vars() for nd in leaves) or \
            any(dag.nodes[i].kind == "dot" for i in dag.reachable([q])):
        return []
    ct = compute(dag.nodes[q].dtype)
    inner = DagEmitter(dag, h, leaf, 1, prefix="qh_")
    v = inner.emit(q)
    em.preset[q] = f"qh[{kv}]"
    return ([f"{ct} qh[{K}];", f"for (int {kv} = 0; {kv} < {K}; ++{kv}) {{"] + ["  " + s for s in inner.lines]
            + [f"  qh[{kv}] = {v};", "}"])


__all__ = ["lower_attention"]
