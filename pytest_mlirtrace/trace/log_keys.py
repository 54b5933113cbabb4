"""Problem keys and perf configs as real MIGraphX / rocMLIR logs print them.

Problem keys: ``<arch><TAB><num_cu>[<TAB><chiplets>]<TAB>-t f16 -out_datatype f16 ... -m 384 -n 768 -k 768``
(tabs in the program's output, often spaces once pasted into an issue; some keys carry an operation word
such as ``conv`` before the flags).  Perf configs: 8 plain numbers (2023), ``v2:`` + 9 numbers (2024),
newer ``v3:``/``v4:`` (and ``attn:v1:`` style prefixes); the raw string is always kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_FLAG = re.compile(r"^-[A-Za-z_][\w-]*$")
_INT = re.compile(r"^-?\d+$")


@dataclass
class ProblemKey:
    raw: str
    arch: str | None = None
    num_cu: int | None = None
    chiplets: int | None = None            # the third prefix field of the newest keys
    operation: str | None = None           # "conv", "gemm", ... when the key names it
    prefix: list[str] = field(default_factory=list)   # every field before the first -flag
    fields: dict[str, str] = field(default_factory=dict)
    separator: str = "space"               # "tab" when the prefix fields were tab-separated

    # ---- derived ------------------------------------------------------------
    def int_field(self, name: str) -> int | None:
        v = self.fields.get(name)
        return int(v) if v is not None and _INT.match(v) else None

    @property
    def dtype(self) -> str | None:
        return self.fields.get("t")

    @property
    def m(self) -> int | None:
        return self.int_field("m")

    @property
    def n(self) -> int | None:
        return self.int_field("n")

    @property
    def k(self) -> int | None:
        return self.int_field("k")

    @property
    def g(self) -> int | None:
        return self.int_field("g")

    @property
    def kind(self) -> str:
        f = self.fields
        if self.operation:
            return self.operation
        if "seq_len_q" in f or "head_dim_qk" in f:
            return "attention"
        if all(x in f for x in ("m", "n", "k")):
            return "gemm"
        if any(x in f for x in ("H", "W", "y", "x", "in_h", "fil_h")):
            return "conv"
        return "unknown"

    def dims(self) -> dict[str, int]:
        """The integer fields that say what the problem computes (m/n/k/g, attention and conv sizes)."""
        return {k: int(v) for k, v in self.fields.items() if _INT.match(v)}

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "arch": self.arch, "num_cu": self.num_cu, "chiplets": self.chiplets,
                "operation": self.operation, "kind": self.kind, "separator": self.separator,
                "fields": dict(self.fields)}

    def short(self) -> str:
        keep = [f"-{k} {v}" for k, v in self.fields.items()
                if k in ("t", "g", "m", "n", "k", "seq_len_q", "seq_len_k", "head_dim_qk", "head_dim_v",
                         "n", "c", "H", "W", "y", "x")]
        head = " ".join(x for x in (self.arch, None if self.num_cu is None else f"cu={self.num_cu}",
                                    None if self.chiplets is None else f"chiplets={self.chiplets}") if x)
        return (head + " " + " ".join(keep)).strip()


def parse_problem_key(text: str) -> ProblemKey | None:
    """Parse a key; None when ``text`` has no ``-flag`` at all (then it is not a rocMLIR key)."""
    raw = text.strip()
    # a flattened error message runs on after the key ("... -k 320 MLIR Fused Kernel: module {")
    raw = re.split(r"\s+(?:MLIR Fused Kernel:|Module:|Problem:|module \{)", raw, maxsplit=1)[0].strip()
    toks = raw.replace("\xa0", " ").split()
    if not toks:
        return None
    first_flag = next((i for i, t in enumerate(toks) if _FLAG.match(t) and i > 0), None)
    if first_flag is None:
        return None
    key = ProblemKey(raw=raw, separator="tab" if "\t" in raw.split(" -", 1)[0] else "space")
    key.prefix = toks[:first_flag]
    key.arch = key.prefix[0]
    nums = []
    for t in key.prefix[1:]:
        if _INT.match(t):
            nums.append(int(t))
        elif key.operation is None:
            key.operation = t
    if nums:
        key.num_cu = nums[0]
    if len(nums) > 1:
        key.chiplets = nums[1]
    i = first_flag
    while i < len(toks):
        t = toks[i]
        if _FLAG.match(t):
            if i + 1 < len(toks) and not _FLAG.match(toks[i + 1]):
                key.fields[t[1:]] = toks[i + 1]
                i += 2
            else:
                key.fields[t[1:]] = ""
                i += 1
        else:  # a stray value: keep it under a numbered name so nothing is lost
            key.fields[f"_{i}"] = t
            i += 1
    return key


@dataclass
class PerfConfig:
    raw: str
    version: int | None = None      # 1 for the plain 8-number form; N for "vN:"; None when unrecognised
    kind: str | None = None         # e.g. "attn" for "attn:v1:..."
    values: list[Any] = field(default_factory=list)

    @property
    def n_fields(self) -> int:
        return len(self.values)

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "version": self.version, "kind": self.kind, "values": list(self.values)}

    def __str__(self) -> str:
        return self.raw


_VER = re.compile(r"^(?:(?P<kind>[A-Za-z_]+):)?v(?P<ver>\d+):(?P<body>.*)$")


def parse_perf_config(text: str) -> PerfConfig:
    raw = text.strip()
    pc = PerfConfig(raw=raw)
    body = raw
    m = _VER.match(raw)
    if m:
        pc.version, pc.kind, body = int(m.group("ver")), m.group("kind"), m.group("body")
    vals = [v.strip() for v in body.split(",")] if body else []
    pc.values = [int(v) if _INT.match(v) else v for v in vals]
    if m is None and pc.values and all(isinstance(v, int) for v in pc.values) and len(pc.values) >= 2:
        pc.version = 1
    return pc
