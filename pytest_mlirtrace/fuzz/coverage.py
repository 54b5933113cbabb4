"""What a fuzz run drew: ops by dtype, how the parameters are laid out, the problem kinds and the longest
reductions (printed at the end of ``mlirtrace fuzz`` and in its JSON report), so a run that never reached
an op, a dtype or a layout says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .. import ir


def layout_of(shape) -> str:
    """How a parameter's storage is laid out: standard (packed row-major), broadcast (a zero stride),
    permuted (packed, another dim order), padded (gaps between rows)."""
    lens, strides = tuple(shape.lens), tuple(shape.strides)
    if strides == tuple(ir.standard_strides(lens)):
        return "standard"
    if any(s == 0 and n > 1 for s, n in zip(strides, lens)):
        return "broadcast"
    order = sorted((s, n) for s, n in zip(strides, lens) if n > 1)
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
        out.append("  parameter layouts: " + (", ".join(f"{k} {v}" for k, v in sorted(self.layouts.items())) or "none"))
        by_op: dict[str, list[str]] = {}
        for (op, dt), n in sorted(self.ops.items()):
            by_op.setdefault(op, []).append(f"{dt} {n}")
        out.append("  ops x dtype: " + ("; ".join(f"{op} ({', '.join(v)})" for op, v in by_op.items()) or "none"))
        return out

    def to_dict(self) -> dict:
        return {"kinds": dict(self.kinds), "layouts": dict(self.layouts), "longest_reduction": dict(self.longest),
                "ops": {f"{op}:{dt}": n for (op, dt), n in sorted(self.ops.items())}}
