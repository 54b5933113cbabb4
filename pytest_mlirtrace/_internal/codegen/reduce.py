"""Reductions (reduce_sum/max/min/mean over any axes) and softmax, with pointwise ops around them.

The input is seen as G groups x R reduced elements (``gi``, ``j``).  ThreadsPerGroup work-items
share one group: each reads VectorWidth-wide vectors strided over ``j`` (Unroll-ed), the lanes and
then the work-items are combined (local-memory tree).  Softmax makes three passes (max, sum of
exp, output).  The output is either one element per group, or -- when the reduction is broadcast
back (softmax, ``x - reduce_max(x)``) -- the whole input domain, written in a last pass over ``j``.
"""
from __future__ import annotations

from . import expr as E
from .cgen import DagEmitter, compute, max_min, round_to, vectorizable, vt
from .kernel import Ctx, emit_output, lanes_of, render


def _identity(op: str, ct: str) -> str:
    if op in ("reduce_sum", "reduce_mean", "sum"):
        return {"float": "0.0f", "double": "0.0", "long": "0L", "int": "0"}[ct]
    big = {"float": "INFINITY", "double": "((double)INFINITY)", "long": "LONG_MAX", "int": "INT_MAX"}[ct]
    small = {"float": "(-INFINITY)", "double": "(-(double)INFINITY)", "long": "LONG_MIN", "int": "INT_MIN"}[ct]
    return small if op in ("reduce_max", "max") else big


def _combine(h, op: str, a: str, b: str, ct: str, w: int) -> str:
    if op in ("reduce_sum", "reduce_mean", "sum"):
        return f"{a} + {b}"
    return max_min(h, op in ("reduce_max", "max"), a, b, ct, w)


def lower_reduce(ctx: Ctx, sol, faults):
    an = ctx.an
    dag = ctx.dag
    h = ctx.helpers
    G, Rn = an.info["G"], an.info["R"]
    GPB, TPG, VW, U = sol.GroupsPerBlock, sol.ThreadsPerGroup, sol.VectorWidth, sol.Unroll
    softmax = an.kind == "softmax"
    xnode = dag.nodes[an.pre_root]
    ct = compute(xnode.dtype)
    siblings = an.info.get("siblings", [])      # other reductions of the same groups (name, op, root, dtype)
    sib_values = {s[0]: f"rr{i}" for i, s in enumerate(siblings)}
    vec_ok = VW > 1 and ct == "float" and vectorizable(dag, [an.pre_root] + [s[2] for s in siblings])
    W = VW if vec_ok else 1
    step = TPG * W
    rfull = (Rn // step) * step
    gvar, jvar = E.var("gg", G), E.var("jj", Rn)
    L: list[str] = []
    L.append("const int t = get_local_id(0), ly = get_local_id(1);" if TPG > 1
             else "const int t = 0, ly = get_local_id(1);")
    L.append("const int gq = get_global_id(1);")
    L.append(f"const int gi = MINI(gq, {G - 1});")
    if TPG > 1:
        L.append(f"__local {ct} red[{GPB}][{TPG}];")

    def x_at(prefix: str, w: int, jname: str, lines: list[str], root: int | None = None) -> str:
        """The pre-reduction value at j = jname (+ lanes); ``root``: a sibling reduction's input."""
        if w > 1:
            def leaf(_i, n):
                offs = lanes_of(n.offset, lambda ll: ({"gi": gvar, "j": jvar + ll}, {"gg": "gi", "jj": jname}), w)
                return ctx.load_lanes(n, offs)
        else:
            def leaf(_i, n):
                return ctx.load(n, render(n.offset, {"gi": gvar, "j": jvar}, {"gg": "gi", "jj": jname}))
        em = DagEmitter(dag, h, leaf, w, prefix=prefix)
        v = em.emit(an.pre_root if root is None else root)
        lines += em.lines
        return v

    def reduce_pass(name: str, op: str, transform, root: int | None = None) -> None:
        """acc ``name`` = op over j of transform(x_j) across the group's work-items."""
        ident = _identity(op, ct)
        V = vt(ct, W)
        L.append(f"{ct} {name} = {ident};")
        if rfull:
            if W > 1:
                L.append(f"{V} {name}v = ({V})({ident});")
            iters = rfull // step
            if U > 1 and iters > 1 and TPG == 1:
                L.append(f"#pragma unroll {min(U, iters)}")
            L.append(f"for (int j0 = t * {W}; j0 < {rfull}; j0 += {step}) {{")
            body: list[str] = []
            x = x_at(f"{name}m", W, "j0", body, root)
            L.extend("  " + b for b in body)
            y = transform(x, W)
            if W > 1:
                L.append(f"  {name}v = {_combine(h, op, f'{name}v', y, ct, W)};")
            else:
                L.append(f"  {name} = {_combine(h, op, name, y, ct, 1)};")
            L.append("}")
            if W > 1:
                for ll in range(W):
                    L.append(f"{name} = {_combine(h, op, name, f'{name}v.s{ll:x}', ct, 1)};")
        if rfull < Rn:
            L.append(f"for (int jt = {rfull} + t; jt < {Rn}; jt += {TPG}) {{")
            body = []
            x = x_at(f"{name}t", 1, "jt", body, root)
            L.extend("  " + b for b in body)
            L.append(f"  {name} = {_combine(h, op, name, transform(x, 1), ct, 1)};")
            L.append("}")
        if TPG > 1:
            L.append(f"red[ly][t] = {name};")
            L.append("barrier(CLK_LOCAL_MEM_FENCE);")
            s = TPG // 2
            while s >= 1:
                L.append(f"if (t < {s}) red[ly][t] = {_combine(h, op, 'red[ly][t]', f'red[ly][t + {s}]', ct, 1)};")
                L.append("barrier(CLK_LOCAL_MEM_FENCE);")
                s //= 2
            L.append(f"{name} = red[ly][0];")
            L.append("barrier(CLK_LOCAL_MEM_FENCE);")

    ident_t = lambda x, _w: x  # noqa: E731
    if softmax:
        reduce_pass("mx", "max", ident_t)

        shift = "" if "softmax_no_max" in faults else " - mx"    # [fault hook] softmax_no_max

        def ex(x, w):
            return h.call("exp", [f"{x}{shift}"], w, "float")
        reduce_pass("sm", "sum", ex)

        def anchor_value(x, w):
            return f"({ex(x, w)} / sm)"
    else:
        op = an.reduce_op
        # the first reduction, then each sibling over the same groups (its own pass over j)
        for name, res, rop, root, dt in [("ra", "rr", op, None, an.acc_dtype)] + [
                (f"ra{i}", f"rr{i}", s_op, s_root, s_dt) for i, (_, s_op, s_root, s_dt) in enumerate(siblings)]:
            reduce_pass(name, rop, ident_t, root)
            if rop == "reduce_mean":
                if ct in ("float", "double"):
                    L.append(f"{name} = {name} / {float(Rn).hex()}{'f' if ct == 'float' else ''};")
                else:
                    L.append(f"{name} = convert_long_sat_rte((float){name} / {float(Rn).hex()}f);")
            L.append(f"const {ct} {res} = {round_to(h, dt, name)};")

    # ---- output
    if not softmax and an.out_per_group:
        L.append(f"if (t == 0 && gq < {G}) {{")

        def acc_value(_w, _lane):
            return "rr"

        def lane_subst(_ll):
            return {"gi": gvar}, {"gg": "gi"}

        def store(_ll, target, val):
            return f"{target} = {val};"
        lines = emit_output(ctx, acc_value, 1, lane_subst, lane_subst, store, "o", anchor_values=sib_values)
        L += ["  " + x for x in lines]
        L.append("}")
    else:
        epi_vec = W > 1 and vectorizable(dag, [an.epilogue])
        L.append(f"if (gq < {G}) {{")
        for (lo, hi, w, jname, start, stepv) in ((0, rfull, W if epi_vec else 1, "j0", f"t * {W}", step),
                                                  (rfull, Rn, 1, "jt", f"{rfull} + t", TPG)):
            if hi <= lo:
                continue
            ww = w if jname == "j0" else 1
            if jname == "j0" and not epi_vec and W > 1:
                # scalar epilogue over the vector loop's lanes
                ww = 1
            L.append(f"  for (int {jname} = {start}; {jname} < {hi}; {jname} += {stepv}) {{")
            if jname == "j0" and W > 1 and not epi_vec:
                L.append(f"   for (int jl = {jname}; jl < {jname} + {W}; ++jl) {{")
                jn = "jl"
            else:
                jn = jname
            pre: list[str] = []
            if softmax:
                x = x_at(f"q{jname}", ww, jn, pre)
                sv = f"{round_to(h, an.acc_dtype, anchor_value(x, ww), ww)}"
                pre.append(f"const {vt(ct, ww)} sx = {sv};")

                def acc_value(_w, ln, ww=ww):
                    return "sx" if (ln is None or ww == 1) else f"sx.s{ln:x}"
            else:
                def acc_value(_w, ln, ww=ww):
                    return f"({vt(ct, ww)})(rr)" if (ln is None and ww > 1) else "rr"

            def lane_subst(ll, jn=jn):
                return {"gi": gvar, "j": jvar + ll}, {"gg": "gi", "jj": jn}

            def store(_ll, target, val):
                return f"{target} = {val};"
            lines = emit_output(ctx, acc_value, ww, lane_subst, lane_subst, store, f"o{jname}",
                                anchor_values=sib_values)
            L += ["    " + x for x in pre + lines]
            if jn == "jl":
                L.append("   }")
            L.append("  }")
        L.append("}")
    attrs = f"__attribute__((reqd_work_group_size({TPG}, {GPB}, 1)))"
    gy = -(-G // GPB) * GPB
    return L, (TPG, gy, 1), (TPG, GPB, 1), attrs
