"""What a fuzz run drew: ops by dtype, how the parameters are laid out, the problem kinds, the longest
reductions and the graph forms (views after the anchor, bool converts, several outputs, literals, several
reductions, softmax inputs past exp's overflow, f32 -> f16 converts), printed at the end of ``mlirtrace fuzz``
and in its JSON report, so a run that never reached an op, a dtype, a layout or a form says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import ir

#: the ops a view after which is a "view after the anchor" (named by the family in :func:`forms_of`)
_ANCHORS = {"dot": "dot", "quant_dot": "dot", "convolution": "convolution", "quant_convolution": "convolution",
            "softmax": "softmax", **{op: "reduce" for op in ir.REDUCE_OPS}}
#: a softmax input at least this large overflows a naive exp in f32
EXP_OVERFLOW = 88.0


def _softmax_input_max(module) -> float:
    """The largest finite |x| among the module's softmax inputs on the oracle's seed-0 inputs (0 when none)."""
    sms = [i for i in module.instructions if i.op == "softmax"]
    if not sms:
        return 0.0
    try:
        _, env = ir.evaluate(module, ir.random_inputs(module, 0), keep_all=True)
    except Exception:       # coverage never fails a run
        return 0.0
    best = 0.0
    with np.errstate(all="ignore"):
        for i in sms:
            x = np.abs(np.asarray(env[i.inputs[0]], dtype=np.float64))
            x = x[np.isfinite(x)]
            if x.size:
                best = max(best, float(x.max()))
    return best


def forms_of(module) -> set[str]:
    """The graph forms a module has (labels of the coverage report): ``<view> after <dot|convolution|reduce|
    softmax>`` (a view straight after the anchor), ``convert X->bool`` / ``convert bool->X``, ``f32->f16
    convert``, ``outputs N`` (N >= 2), ``literal scalar`` (a broadcast value other than 0 and 1) / ``literal
    tensor`` (a literal of several values), ``reductions N`` (N >= 2 in one module), ``softmax |x| >= 88`` (on
    the oracle's seed-0 inputs)."""
    out: set[str] = set()
    reds = 0
    for ins in module.instructions:
        if ins.op == "@literal":
            lit = np.asarray(ins.literal) if ins.literal is not None else None
            if lit is None or lit.size == 0:
                continue
            dt = ins.shape.dtype
            flat = ir.dtypes.to_compute(np.asarray(lit).astype(dt.np), dt).reshape(-1)     # bf16: held as bits
            if lit.size > 1 and not np.all(flat == flat[0]):
                out.add("literal tensor")
            elif not np.isin(flat[:1], (0, 1)).all():
                out.add("literal scalar")
            continue
        if ins.op.startswith("@"):
            continue
        if ins.op in ir.REDUCE_OPS:
            reds += 1
        if ins.op in ir.VIEW_OPS and ins.inputs:
            src = module.get(ins.inputs[0])
            if src.op in _ANCHORS:
                out.add(f"{ins.op} after {_ANCHORS[src.op]}")
        if ins.op == "convert" and ins.inputs:
            a, b = module.get(ins.inputs[0]).shape.dtype.name, ins.shape.dtype.name
            if "bool" in (a, b):
                out.add(f"convert {a}->{b}" if a == "bool" else f"convert {a}->bool")
            if (a, b) == ("f32", "f16"):
                out.add("f32->f16 convert")
    if len(module.returns()) > 1:
        out.add(f"outputs {len(module.returns())}")
    if reds > 1:
        out.add(f"reductions {reds}")
    if _softmax_input_max(module) >= EXP_OVERFLOW:
        out.add(f"softmax |x| >= {EXP_OVERFLOW:g}")
    return out


def layout_of(shape) -> str:
    """How a parameter's storage is laid out: standard (packed row-major), broadcast (a zero stride),
    permuted (packed, another dim order), padded (gaps between rows)."""
    lens, strides = tuple(shape.lens), tuple(shape.strides)
    if strides == tuple(ir.standard_strides(lens)):
        return "standard"
    if any(s == 0 and n > 1 for s, n in zip(strides, lens, strict=True)):
        return "broadcast"
    order = sorted((s, n) for s, n in zip(strides, lens, strict=True) if n > 1)
    acc = 1
    packed = True
    for s, n in order:
        if s != acc:
            packed = False
            break
        acc *= n
    return "permuted" if packed else "padded"


@dataclass
class Coverage:
    ops: Counter = field(default_factory=Counter)        # (op, dtype) -> examples
    layouts: Counter = field(default_factory=Counter)    # parameter layout -> parameters
    kinds: Counter = field(default_factory=Counter)      # problem kind -> examples
    longest: dict = field(default_factory=dict)          # problem kind -> longest reduction (K, axis length)
    forms: Counter = field(default_factory=Counter)      # graph form (:func:`forms_of`) -> examples

    def add(self, module, problem=None) -> None:
        seen = set()
        for ins in module.instructions:
            if ins.op in ("@return",):
                continue
            if ins.op == "@param":
                self.layouts[layout_of(ins.shape)] += 1
                continue
            if ins.op == "@literal":
                continue
            dt = module.get(ins.inputs[0]).shape.dtype.name if ins.inputs else ins.shape.dtype.name
            key = (ins.op, dt if ins.op != "convert" else f"{dt}->{ins.shape.dtype.name}")
            if key not in seen:
                seen.add(key)
                self.ops[key] += 1
        self.forms.update(forms_of(module))
        if problem is not None:
            kind = getattr(problem, "key_kind", problem.kind)
            self.kinds[kind] += 1
            red = getattr(problem, "k", 0) or getattr(problem, "reduce_len", 0) or 0
            if problem.kind in ("gemm", "reduce", "softmax"):
                self.longest[kind] = max(self.longest.get(kind, 0), int(red))

    def lines(self) -> list[str]:
        out = ["coverage (examples drawn):"]
        out.append("  kinds: " + (", ".join(f"{k} {v}" for k, v in sorted(self.kinds.items())) or "none"))
        if self.longest:
            out.append("  longest reduction: " + ", ".join(f"{k} {v}" for k, v in sorted(self.longest.items())))
        out.append("  forms: " + (", ".join(f"{k} {v}" for k, v in sorted(self.forms.items())) or "none"))
        out.append("  parameter layouts: " + (", ".join(f"{k} {v}" for k, v in sorted(self.layouts.items())) or "none"))
        by_op: dict[str, list[str]] = {}
        for (op, dt), n in sorted(self.ops.items()):
            by_op.setdefault(op, []).append(f"{dt} {n}")
        out.append("  ops x dtype: " + ("; ".join(f"{op} ({', '.join(v)})" for op, v in by_op.items()) or "none"))
        return out

    def to_dict(self) -> dict:
        return {"kinds": dict(self.kinds), "layouts": dict(self.layouts), "longest_reduction": dict(self.longest),
                "forms": dict(self.forms),
                "ops": {f"{op}:{dt}": n for (op, dt), n in sorted(self.ops.items())}}
