"""Pure pointwise modules: any view graph + pointwise ops, one output.

The output is split into rows x cols where cols is the longest trailing run of dims over
which every input's index map stays affine; work-item (x, row) computes ElementsPerThread
vectors of VectorWidth consecutive columns.  The last vector of a row is shifted back inside
the row and stores only the lanes it owns.
"""
from __future__ import annotations

from . import expr as E
from .kernel import Ctx, emit_output


def lower_pointwise(ctx: Ctx, sol, _faults):
    an = ctx.an
    R, C = an.rows, an.cols
    BS, EPT, VW = sol.BlockSize, sol.ElementsPerThread, sol.VectorWidth
    rvar, cvar = E.var("rr", R), E.var("cc", C)
    L: list[str] = []
    L.append("const int r = get_global_id(1);")
    L.append(f"const int cw = get_global_id(0) * {VW * EPT};")
    L.append(f"if (cw >= {C}) return;")
    if EPT > 1:
        L.append("#pragma unroll")
    L.append(f"for (int e = 0; e < {EPT}; ++e) {{")
    L.append(f"  const int cs = cw + e * {VW};")
    L.append(f"  if (cs < {C}) {{")
    L.append(f"  const int cv = MINI(cs, {C - VW});")
    stores: list[tuple[str, str]] = []

    def acc_value(_w, _lane):
        raise AssertionError("pointwise kernels have no anchor")

    def lane_subst(ll):
        return {"r": rvar, "c": cvar + ll}, {"rr": "r", "cc": "cv"}

    def store(_ll, off, val):
        stores.append((off, val))
        return ""
    lines = emit_output(ctx, acc_value, VW, lane_subst, lane_subst, store, "p")
    L += ["  " + x for x in lines if x]
    if VW == 1:
        L += [f"  {o} = {v};" for o, v in stores]
    else:
        L.append("  if (cv == cs) {")
        L += [f"    {o} = {v};" for o, v in stores]
        L.append("  } else {")
        L.append("    const int lo = cs - cv;")
        L += [f"    if (lo <= {ll}) {o} = {v};" for ll, (o, v) in enumerate(stores)]
        L.append("  }")
    L.append("  }")
    L.append("}")
    groups_x = -(-C // (VW * EPT))
    gx = -(-groups_x // BS) * BS
    attrs = f"__attribute__((reqd_work_group_size({BS}, 1, 1)))"
    return L, (gx, R, 1), (BS, 1, 1), attrs
