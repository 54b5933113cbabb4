"""Problem keys: the text that names one tuning problem, rocMLIR style -- formatted and parsed here only.

A key is a device prefix, then ``-flag value`` fields::

    <arch><TAB><num_cu>[<TAB><chiplets>]<TAB>-t f16 -out_datatype f16 -transA false ... -m 384 -n 768 -k 768

The prefix is tab separated when a program prints it (MIGraphX, mlirtrace); pasted into an issue it often
becomes spaces.  The forms, by kind:

``gemm``        ``-t f16 -out_datatype f16 -transA false -transB false -g 1 -m 384 -n 2304 -k 768``; a scaled (MX)
                gemm adds ``-scaledGemm -scale_a_dtype f8E8M0FNU -scale_b_dtype f8E8M0FNU -transScaleA false
                -transScaleB false`` after ``-transB``
                (rocMLIR's own form: such a key is also a ``tuningRunner.py`` config line)
``conv``        ``convfp16 -F 1 -f GNC01 -I NGC01 -O NGC01 -n 1 -c 512 -H 28 -W 28 -k 256 -y 1 -x 1 -p 0 -q 0
                -u 1 -v 1 -l 1 -j 1 -g 1 -t f16`` (an operation word after the prefix -- ``conv`` for f32,
                ``convfp16``, ``convbfp16``, ``convint8`` -- then MIOpen-driver style flags: direction ``-F``
                (1: forward), filter / input / output layouts (outermost dim first; ``0``, ``1``, ``2`` the
                spatial dims, ``G`` the group split of the channels), sizes, padding ``-p -q``, strides
                ``-u -v``, dilations ``-l -j``, groups ``-g``); older logs write ``-f NCHW -I NCHW -O NCHW``.
                1-D convolutions are written as 2-D with ``-H 1 -y 1``; a 3-D one adds the depth as
                rocMLIR's conv-config names it: ``-in_d -fil_d -padding_d -conv_stride_d -dilation_d``
``attention``   ``-t f16 -transQ false -transK true -transV false -transO false -causal false -return_lse false
                -g 24 -seq_len_q 4096 -seq_len_k 4096 -head_dim_qk 64 -head_dim_v 64`` (MIGraphX 2.13's form;
                older keys lack ``-causal``/``-return_lse``, newer ones add ``-split_kv``, ``-num_heads_q``, ...)
``gemm_gemm``   ``-t f32 -transA false -transB false -transC false -transO false -g 1 -m 7 -n 7 -k 3 -gemmO 3``
                (first gemm m x k times k x n, then times the n x gemmO third operand C)
``conv_gemm``   ``-t f16 -f GNC01 -I NGC01 -transC false -transO false -n 1 -c 8 -H 16 -W 16 -k 16 -y 3 -x 3
                -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -g 1 -gemmO 32`` (a convolution, then a gemm with its result;
                a 3-D convolution adds the conv key's depth fields before ``-gemmO``)
``pointwise``, ``reduce``, ``softmax``  (mlirtrace's own kinds: rocMLIR's keys have no form for them)
                ``-op reduce -t f32 -out_datatype f32 -elements 3 -reduce_len 5 -outer 3 -g 1``
                ``elements``: output elements; ``reduce_len``: elements per reduction (pointwise: row
                length); ``outer``: independent reductions (pointwise: rows); ``-g`` is always 1 (kept:
                these keys are stored in tuning databases and reproducers)

:func:`format_problem_key` writes a key of a known kind from its fields; :func:`parse_problem_key` reads
any of the forms above, including what real logs print around them (a flattened error message that runs
on after the key).  ``parse_problem_key(format_problem_key(...))`` gives the same fields back, and
:attr:`ProblemKey.text` the same text.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProblemKey", "ProblemKeyError", "KEY_FIELDS", "format_problem_key", "parse_problem_key"]

#: the fields of each kind mlirtrace writes, in the order they are written
GEMM_FIELDS = ("t", "out_datatype", "transA", "transB", "g", "m", "n", "k")
# a scaled (MX) gemm's key: rocMLIR's --emit-tuning-key adds a bare -scaledGemm and the scales' types and layouts
SCALED_GEMM_FIELDS = ("t", "out_datatype", "transA", "transB", "scaledGemm", "scale_a_dtype", "scale_b_dtype",
                      "transScaleA", "transScaleB", "g", "m", "n", "k")
_BARE_FLAGS = ("scaledGemm",)
FUSED_FIELDS = ("op", "t", "out_datatype", "elements", "reduce_len", "outer", "g")
CONV_FIELDS = ("F", "f", "I", "O", "n", "c", "H", "W", "k", "y", "x", "p", "q", "u", "v", "l", "j", "g", "t")
CONV_3D_FIELDS = ("in_d", "fil_d", "padding_d", "conv_stride_d", "dilation_d")
ATTENTION_FIELDS = ("t", "transQ", "transK", "transV", "transO", "causal", "return_lse", "g", "seq_len_q",
                    "seq_len_k", "head_dim_qk", "head_dim_v")
GEMM_GEMM_FIELDS = ("t", "transA", "transB", "transC", "transO", "g", "m", "n", "k", "gemmO")
CONV_GEMM_FIELDS = ("t", "f", "I", "transC", "transO", "n", "c", "H", "W", "k", "y", "x", "p", "q", "u", "v", "l", "j",
                    "g", "gemmO")
KEY_FIELDS: dict[str, tuple[str, ...]] = {"gemm": GEMM_FIELDS, "pointwise": FUSED_FIELDS,
                                          "reduce": FUSED_FIELDS, "softmax": FUSED_FIELDS, "conv": CONV_FIELDS,
                                          "attention": ATTENTION_FIELDS, "gemm_gemm": GEMM_GEMM_FIELDS,
                                          "conv_gemm": CONV_GEMM_FIELDS}
#: the operation word of a conv key, by element type
CONV_WORDS = {"f32": "conv", "f16": "convfp16", "bf16": "convbfp16", "i8": "convint8"}
_OWN_KINDS = ("pointwise", "reduce", "softmax")       # keyed by "-op <kind>"

_FLAG = re.compile(r"^-[A-Za-z_][\w-]*$")
_INT = re.compile(r"^-?\d+$")
# a flattened error message runs on after the key ("... -k 320 MLIR Fused Kernel: module {")
_RUN_ON = re.compile(r"\s+(?:MLIR Fused Kernel:|Module:|Problem:|module \{)")


class ProblemKeyError(ValueError):
    """A problem key that cannot be written (a missing or unknown field, a value with spaces)."""


@dataclass
class ProblemKey:
    raw: str                               # the key as given (trailing log text cut off)
    arch: str | None = None                # first prefix field: "gfx90a:sramecc+:xnack-", "pocl-cpu"
    num_cu: int | None = None
    chiplets: int | None = None            # the third prefix field of the newest keys
    operation: str | None = None           # "conv", ... when the prefix names it
    prefix: list[str] = field(default_factory=list)   # every field before the first -flag
    fields: dict[str, str] = field(default_factory=dict)
    separator: str = "space"               # "tab" when the prefix fields were tab-separated

    # ---- derived ------------------------------------------------------------
    def int_field(self, name: str) -> int | None:
        v = self.fields.get(name)
        return int(v) if v is not None and _INT.match(v) else None

    def get(self, name: str, default: Any = None) -> Any:
        """A prefix value (``arch``, ``num_cu``, ``chiplets``, ``operation``) or a ``-flag``'s value."""
        if name in ("arch", "num_cu", "chiplets", "operation"):
            v = getattr(self, name)
            return default if v is None else v
        return self.fields.get(name, default)

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
            return "conv" if self.operation.startswith("conv") else self.operation
        if f.get("op") in _OWN_KINDS:
            return f["op"]
        if "seq_len_q" in f or "head_dim_qk" in f:
            return "attention"
        if "gemmO" in f and all(x in f for x in ("m", "n", "k")):
            return "gemm_gemm"
        if "gemmO" in f and "I" in f:
            return "conv_gemm"
        if all(x in f for x in ("m", "n", "k")):
            return "gemm"
        if any(x in f for x in ("H", "W", "y", "x", "in_h", "fil_h")):
            return "conv"
        return "unknown"

    def dims(self) -> dict[str, int]:
        """The integer fields that say what the problem computes (m/n/k/g, attention and conv sizes)."""
        return {k: int(v) for k, v in self.fields.items() if _INT.match(v)}

    @property
    def body(self) -> str:
        """The ``-flag value`` part, single spaced."""
        out = []
        for k, v in self.fields.items():
            if _STRAY.match(k):
                out.append(v)
            else:
                out.append(f"-{k} {v}" if v != "" else f"-{k}")
        return " ".join(out)

    @property
    def text(self) -> str:
        """The key written back: the device fields joined by the key's separator, then an operation word
        (``conv``) and the flags, single spaced."""
        if not self.prefix:
            return self.body
        ints = [i for i, t in enumerate(self.prefix) if i and _INT.match(t)]
        cut = ints[-1] + 1 if ints else 1
        sep = "\t" if self.separator == "tab" else " "
        return sep.join(self.prefix[:cut] + [" ".join(self.prefix[cut:] + [self.body])])

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "arch": self.arch, "num_cu": self.num_cu, "chiplets": self.chiplets,
                "operation": self.operation, "kind": self.kind, "separator": self.separator,
                "fields": dict(self.fields)}

    def short(self) -> str:
        keep = [f"-{k} {v}" for k, v in self.fields.items()
                if k in ("t", "g", "m", "n", "k", "gemmO", "seq_len_q", "seq_len_k", "head_dim_qk", "head_dim_v",
                         "n", "c", "H", "W", "y", "x")]
        head = " ".join(x for x in (self.arch, None if self.num_cu is None else f"cu={self.num_cu}",
                                    None if self.chiplets is None else f"chiplets={self.chiplets}") if x)
        return (head + " " + " ".join(keep)).strip()


_STRAY = re.compile(r"^_\d+$")     # a value with no flag before it, kept under its token position


def _value(name: str, v: Any) -> str:
    s = ("true" if v else "false") if isinstance(v, bool) else str(v)
    if not s or any(c.isspace() for c in s) or _FLAG.match(s):
        raise ProblemKeyError(f"problem key field -{name}: {s!r} cannot be written as one value")
    return s


def format_problem_key(kind: str, fields: Mapping[str, Any], *, arch: str | None = None,
                       num_cu: int | str | None = None, chiplets: int | None = None) -> str:
    """The key of a ``kind`` problem (one of :data:`KEY_FIELDS`) with ``fields``; booleans print as
    ``true``/``false``.  With ``arch`` (and ``num_cu``, ``chiplets``) the device prefix comes first,
    tab separated as MIGraphX prints it.  Raises :class:`ProblemKeyError` naming a missing or unknown field.
    """
    if kind not in KEY_FIELDS:
        raise ProblemKeyError(f"no problem-key form for kind {kind!r}; known: {', '.join(KEY_FIELDS)}")
    names = KEY_FIELDS[kind]
    given = dict(fields)
    word = None
    if kind == "conv_gemm":
        names = CONV_GEMM_FIELDS[:-1] + tuple(n for n in CONV_3D_FIELDS if n in given) + CONV_GEMM_FIELDS[-1:]
    if kind == "conv":
        names = CONV_FIELDS[:-1] + tuple(n for n in CONV_3D_FIELDS if n in given) + CONV_FIELDS[-1:]
        word = CONV_WORDS.get(str(given.get("t")), f"conv{given.get('t', '')}")
    if kind == "gemm" and "scale_a_dtype" in given:
        names = SCALED_GEMM_FIELDS
        given.setdefault("scaledGemm", True)
    if kind in _OWN_KINDS:
        if given.setdefault("op", kind) != kind:
            raise ProblemKeyError(f"a {kind} key has -op {kind}, not -op {given['op']}")
    missing = [n for n in names if n not in given]
    extra = [n for n in given if n not in names]
    if missing or extra:
        what = "; ".join(x for x in (f"missing {', '.join(missing)}" if missing else "",
                                     f"unknown {', '.join(extra)}" if extra else "") if x)
        raise ProblemKeyError(f"{kind} problem key fields: {what} (a {kind} key has {', '.join(names)})")
    body = " ".join(f"-{n}" if n in _BARE_FLAGS else f"-{n} {_value(n, given[n])}" for n in names)
    if word is not None:
        body = f"{word} {body}"
    if arch is None:
        return body
    head = [_value("arch", arch)] + [_value(n, v) for n, v in (("num_cu", num_cu), ("chiplets", chiplets))
                                     if v is not None]
    return "\t".join(head + [body])


def parse_problem_key(text: str) -> ProblemKey | None:
    """Parse a key in any form (module docstring); None when ``text`` has no ``-flag`` (then it is no key).

    The prefix may be missing (``-t f32 ... -k 7``, as codegen's :meth:`Problem.key` writes it);
    text a flattened log message runs on with after the key is cut off.
    """
    raw = text.strip()
    raw = _RUN_ON.split(raw, maxsplit=1)[0].strip()
    toks = raw.replace("\xa0", " ").split()
    if not toks:
        return None
    first_flag = next((i for i, t in enumerate(toks) if _FLAG.match(t)), None)
    if first_flag is None:
        return None
    key = ProblemKey(raw=raw, separator="tab" if "\t" in raw.split(" -", 1)[0] else "space")
    key.prefix = toks[:first_flag]
    key.arch = key.prefix[0] if key.prefix else None
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
        else:  # a stray value: keep it under its token position so nothing is lost
            key.fields[f"_{i}"] = t
            i += 1
    return key
