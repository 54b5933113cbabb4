"""OpenCL C text for element types, conversions and the pointwise op DAG.

Storage vs compute: f16 and bf16 are stored as ``ushort`` bits and converted
with integer arithmetic (no ``cl_khr_fp16``; PoCL's ``vload_half`` is an
out-of-line call, these helpers inline and vectorise), computed in ``float``.
Integers compute in ``long`` and saturate to their type after each op, bools
compute as ``int`` 0/1 -- the rounding the numpy oracle applies after every
instruction is applied here too (``round_to``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.dtypes import NARROW_VALUES, DType, bf16_to_f32
from .element_dag import Dag, Node
from .errors import NotSupported

STORAGE = {"f32": "float", "f16": "ushort", "bf16": "ushort", "f64": "double", "i8": "char",
           "u8": "uchar", "i16": "short", "u16": "ushort", "i32": "int", "u32": "uint",
           "i64": "long", "u64": "ulong", "bool": "uchar",
           # narrow floats: their bits, one element per byte (decoded to float by the dec_* helpers)
           "f8E4M3FN": "uchar", "f8E5M2": "uchar", "f8E8M0FNU": "uchar", "f4E2M1FN": "uchar"}
INT_RANGE = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767), "u16": (0, 65535),
             "i32": (-2147483648, 2147483647), "u32": (0, 4294967295)}
FLOAT_OPS_ONLY = ("exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "erf", "recip")
# ops that vector (floatN) code handles with the same semantics as the scalar code
VECTOR_OPS = frozenset(("add", "sub", "mul", "div", "max", "min", "pow", "relu", "neg", "exp", "log",
                        "tanh", "sigmoid", "sqrt", "rsqrt", "erf", "abs", "floor", "ceil", "recip",
                        "convert", "clip"))
COMPARE_SYMBOLS = {"greater": ">", "less": "<", "equal": "==", "greater_or_equal": ">="}


def storage(dt: DType) -> str:
    try:
        return STORAGE[dt.name]
    except KeyError:
        raise NotSupported(f"element type {dt.name} has no OpenCL storage type") from None


def compute(dt: DType) -> str:
    if dt.name in ("f32", "f16", "bf16") or dt.name in NARROW_VALUES:
        return "float"
    if dt.name == "f64":
        return "double"
    if dt.name == "bool":
        return "int"
    return "long"


def vt(base: str, w: int) -> str:
    return base if w == 1 else f"{base}{w}"


def cvt(base: str, w: int) -> str:
    return f"convert_{vt(base, w)}"


def lane(i: int) -> str:
    return f"s{i:x}"


def float_lit(v: float) -> str:
    v = float(v)
    if np.isnan(v):
        return "NAN"
    if np.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    return f"{float(np.float32(v)).hex()}f" if True else ""


def double_lit(v: float) -> str:
    v = float(v)
    if np.isnan(v):
        return "((double)NAN)"
    if np.isinf(v):
        return "((double)INFINITY)" if v > 0 else "(-(double)INFINITY)"
    return v.hex()


def const_text(dt: DType, v) -> str:
    """A constant of storage value ``v`` as a compute-type C literal."""
    if dt.name == "bf16":
        return float_lit(float(bf16_to_f32(np.array([v], dtype=np.uint16))[0]))
    if dt.name in NARROW_VALUES:
        return float_lit(float(NARROW_VALUES[dt.name][int(v) & (NARROW_VALUES[dt.name].size - 1)]))
    if dt.name in ("f32", "f16"):
        return float_lit(v)
    if dt.name == "f64":
        return double_lit(v)
    if dt.name == "bool":
        return "1" if v else "0"
    return f"{int(v)}L"


# ----------------------------------------------------------------- helpers --
# Each helper takes ``call``: ``call(fn, args, w, res)`` renders a call of an OpenCL builtin at vector
# width ``w`` (returning ``res``-typed lanes), split in halves where the device needs it (Helpers.call).
def _helper_h2f(w: int, call) -> str:
    # ternaries, not select(): PoCL calls its select() out of line
    F, U = vt("float", w), vt("uint", w)
    return f"""static inline {F} h2f{w}({vt("ushort", w)} h) {{
  const {U} u = {call(cvt("uint", w), ["h"], w, "uint")}, em = u & 0x7fffu;
  {F} f = (em < 0x400u) ? {call(cvt("float", w), ["em"], w, "float")} * 0x1p-24f : as_{F}((em << 13) + 0x38000000u);
  f = (em >= 0x7c00u) ? as_{F}((em << 13) | 0x7f800000u) : f;
  return as_{F}(as_{U}(f) | ((u & 0x8000u) << 16));
}}
"""


def _helper_f2h(w: int, call, truncate: bool = False) -> str:
    F, U = vt("float", w), vt("uint", w)
    # normal range: round to nearest even (+0xfff, +1 when the kept lsb is odd); [fault hook] f2h_truncate drops
    # the 13 low bits instead (round toward zero)
    rnd = "0xc8000000u" if truncate else "0xc8000fffu + ((ax >> 13) & 1u)"
    return f"""static inline {vt("ushort", w)} f2h{w}({F} f) {{
  const {U} x = as_{U}(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  {U} o = (ax < 0x38800000u) ? as_{U}(as_{F}(ax) + 0.5f) - 0x3f000000u
                            : (ax + {rnd}) >> 13;
  o = (ax >= 0x47800000u) ? ({U})0x7c00u : o;
  o = (ax > 0x7f800000u) ? ({U})0x7e00u : o;
  return {call(cvt("ushort", w), ["o | sign"], w, "ushort")};
}}
"""


def _helper_bf2f(w: int, call) -> str:
    F = vt("float", w)
    bits = call(cvt("uint", w), ["h"], w, "uint")
    return f"""static inline {F} bf2f{w}({vt("ushort", w)} h) {{ return as_{F}({bits} << 16); }}
"""


def _helper_f2bf(w: int, call) -> str:
    U = vt("uint", w)
    return f"""static inline {vt("ushort", w)} f2bf{w}({vt("float", w)} f) {{
  {U} u = as_{U}(f);
  return {call(cvt("ushort", w), ["(u + (((u >> 16) & 1u) + 0x7fffu)) >> 16"], w, "ushort")};
}}
"""


def _helper_rh(w: int, _call) -> str:
    F = vt("float", w)
    return f"static inline {F} rh{w}({F} x) {{ return h2f{w}(f2h{w}(x)); }}\n"


def _helper_rbf(w: int, _call) -> str:
    F = vt("float", w)
    return f"static inline {F} rbf{w}({F} x) {{ return bf2f{w}(f2bf{w}(x)); }}\n"


# 1/s correctly rounded (one Newton step on the division, which OpenCL lets be 2.5 ulp off): quantizelinear
# rounds x * (1/s) to an integer, so one ulp can move a result by one
_QRECIP = """static inline float qrecip(float s) {
  const float r = 1.0f / s;
  return (isinf(r) || r == 0.0f) ? r : fma(r, fma(-s, r, 1.0f), r);
}
"""

# narrow floats: bits -> float, from each format's definition (sign, exponent, mantissa; subnormals when the
# exponent field is 0) by integer arithmetic into the float's fields
_NARROW_DEC = {
    "f8E4M3FN": """static inline float dec_f8E4M3FN(uchar b) {
  const uint e = (b >> 3) & 15u, m = b & 7u;
  const float v = (e == 0u) ? (float)m * 0x1p-9f : as_float(((e + 120u) << 23) | (m << 20));
  const float r = ((b & 0x7fu) == 0x7fu) ? NAN : v;
  return (b & 0x80u) ? -r : r;
}
""",
    "f8E5M2": """static inline float dec_f8E5M2(uchar b) {
  const uint e = (b >> 2) & 31u, m = b & 3u;
  float v = (e == 0u) ? (float)m * 0x1p-16f : as_float(((e + 112u) << 23) | (m << 21));
  v = (e == 31u) ? ((m == 0u) ? INFINITY : NAN) : v;
  return (b & 0x80u) ? -v : v;
}
""",
    "f8E8M0FNU": """static inline float dec_f8E8M0FNU(uchar b) {
  return (b == 255) ? NAN : (b == 0) ? 0x1p-127f : as_float((uint)b << 23);
}
""",
    "f4E2M1FN": """static inline float dec_f4E2M1FN(uchar b) {
  const uint e = (b >> 1) & 3u, m = b & 1u;
  const float v = (e == 0u) ? (float)m * 0.5f : as_float(((e + 126u) << 23) | (m << 22));
  return (b & 8u) ? -v : v;
}
""",
}
# float -> f8E8M0FNU: the float32's exponent field (MLIR's arith.truncf expansion: "extract exponent bits";
# inf and NaN give 0xFF, NaN)
_ENC_E8M0 = """static inline uchar enc_f8E8M0FNU(float x) { return (uchar)((as_uint(x) >> 23) & 255u); }
"""

_IPOW = """static inline long ipow(long a, long b) {
  long r = 1;
  for (b = b < 0 ? 0 : b; b > 0; b >>= 1) { if (b & 1) r *= a; a *= a; }
  return r;
}
"""

def _helper_keep(w: int, _call) -> str:
    F = vt("float", w)
    return f"static inline {F} keep{w}({F} x) {{ return x; }}\n"


_HELPERS = {"keep": _helper_keep, "h2f": _helper_h2f, "f2h": _helper_f2h, "bf2f": _helper_bf2f, "f2bf": _helper_f2bf,
            "rh": _helper_rh, "rbf": _helper_rbf}
_DEPS = {"rh": ("h2f", "f2h"), "rbf": ("bf2f", "f2bf")}
# the widest element any vector builtin call of ours takes or returns (float, int, uint lanes)
_LANE_BITS = 32


@dataclass
class Helpers:
    """The helper functions a kernel uses (emitted once, in a fixed order), and how builtins are called.

    ``vector_bits``: the widest vector (in bits) that a call of an OpenCL builtin may take or return on
    the target device, 0 for any.  PoCL links its builtins from a library compiled for the target CPU;
    a call passing a vector wider than the CPU's vector registers (float16 = 512 bits without AVX-512,
    float8 without AVX) breaks its ABI: LLVM 14 aborts, hangs, crashes or computes garbage.  Such calls
    are split into halves (``.lo``/``.hi``) that the target passes in registers.
    """
    used: set = field(default_factory=set)
    vector_bits: int = 0
    faults: frozenset = frozenset()     # [fault hook] planted faults in the helpers' text (f2h_truncate)

    def need(self, name: str, w: int = 1) -> str:
        for d in _DEPS.get(name, ()):
            self.used.add((d, w))
        self.used.add((name, w))
        return f"{name}{w}" if name in _HELPERS else name

    def call(self, fn: str, args: list[str], w: int, res: str) -> str:
        """``fn(args...)`` on ``w``-wide vector arguments returning ``res``-typed lanes.

        A conversion (``convert_uint16``, named for its width) is renamed for the halves."""
        if w <= 1 or w % 2 or not self.vector_bits or w * _LANE_BITS <= self.vector_bits:
            return f"{fn}({', '.join(args)})"
        half = w // 2
        fn_half = cvt(res, half) if fn.startswith("convert_") else fn
        lo = self.call(fn_half, [f"({a}).lo" for a in args], half, res)
        hi = self.call(fn_half, [f"({a}).hi" for a in args], half, res)
        return f"({vt(res, w)})({lo}, {hi})"

    def text(self) -> str:
        order = ["keep", "h2f", "f2h", "bf2f", "f2bf", "rh", "rbf", "ipow", "qrecip"] + \
            [f"dec_{n}" for n in _NARROW_DEC] + ["enc_f8E8M0FNU"]
        out = []
        for name in order:
            for (n, w) in sorted(self.used, key=lambda x: (x[0], x[1])):
                if n != name:
                    continue
                if n == "f2h":
                    out.append(_helper_f2h(w, self.call, truncate="f2h_truncate" in self.faults))
                    continue
                if n.startswith("dec_"):
                    out.append(_NARROW_DEC[n[4:]])
                    continue
                if n == "enc_f8E8M0FNU":
                    out.append(_ENC_E8M0)
                    continue
                out.append(_IPOW if n == "ipow" else _QRECIP if n == "qrecip" else _HELPERS[n](w, self.call))
        return "".join(out)


# ------------------------------------------------------------ load / store --
def load_scalar(h: Helpers, dt: DType, ptr: str, off: str) -> str:
    """Compute-type value of element ``off`` of a storage pointer."""
    x = f"{ptr}[{off}]"
    if dt.name == "f16":
        return f"{h.need('h2f')}({x})"
    if dt.name == "bf16":
        return f"{h.need('bf2f')}({x})"
    if dt.name in NARROW_VALUES:
        return f"{h.need('dec_' + dt.name)}({x})"
    if dt.name in ("f32", "f64"):
        return x
    if dt.name == "bool":
        return f"(int)({x} != 0)"
    return f"(long){x}"


class LaneOffsets:
    """Lane l of a vector access sits at ``base + l*stride``; rendered through one base pointer
    (``(p + (base))[l]``) so that compilers see constant offsets and merge the lanes into one vector
    load/store (``p[base + l]`` with a 32-bit index hides that from LLVM's load/store vectoriser)."""

    def __init__(self, base: str, stride: int, w: int):
        self.base, self.stride, self.w = base, stride, w

    def __len__(self) -> int:
        return self.w

    def __getitem__(self, lane: int) -> str:
        if not 0 <= lane < self.w:
            raise IndexError(lane)
        return f"{self.base} + {lane * self.stride}" if lane * self.stride else self.base

    def at(self, ptr: str, lane: int) -> str:
        return f"({ptr} + ({self.base}))[{lane * self.stride}]"


def lane_refs(ptr: str, offs) -> list[str]:
    if isinstance(offs, LaneOffsets):
        return [offs.at(ptr, lane) for lane in range(offs.w)]
    return [f"{ptr}[{o}]" for o in offs]


def load_vector(h: Helpers, dt: DType, ptr: str, offs) -> str:
    """floatN value composed from scalar loads (compilers merge consecutive ones into one vector load)."""
    w = len(offs)
    if w == 1:
        return load_scalar(h, dt, ptr, offs[0])
    parts = ", ".join(lane_refs(ptr, offs))
    if dt.name == "f16":
        return f"{h.need('h2f', w)}(({vt('ushort', w)})({parts}))"
    if dt.name == "bf16":
        return f"{h.need('bf2f', w)}(({vt('ushort', w)})({parts}))"
    if dt.name in NARROW_VALUES:
        fn = h.need("dec_" + dt.name)
        return f"({vt('float', w)})({', '.join(f'{fn}({r})' for r in lane_refs(ptr, offs))})"
    if dt.name == "f32":
        return f"({vt('float', w)})({parts})"
    if dt.name in ("i8", "u8", "i16", "u16", "i32"):
        return h.call(cvt('int', w), [f"({vt(storage(dt), w)})({parts})"], w, "int")
    raise NotSupported(f"vector load of {dt.name}")


def store_value(h: Helpers, dt: DType, v: str) -> str:
    """Storage-type value of a compute-type scalar (already rounded to ``dt``)."""
    if dt.name == "f16":
        return f"{h.need('f2h')}({v})"
    if dt.name == "bf16":
        return f"{h.need('f2bf')}({v})"
    if dt.name == "f8E8M0FNU":
        return f"{h.need('enc_f8E8M0FNU')}({v})"
    if dt.name in NARROW_VALUES:
        raise NotSupported(f"a kernel storing {dt.name} values (only reading them, and f8E8M0FNU scales, is "
                           "lowered)")
    if dt.name == "bool":
        return f"(uchar)(({v}) != 0)"
    return f"({storage(dt)})({v})"


def store_vector(h: Helpers, dt: DType, v: str, w: int) -> str:
    if w == 1:
        return store_value(h, dt, v)
    if dt.name == "f16":
        return f"{h.need('f2h', w)}({v})"
    if dt.name == "bf16":
        return f"{h.need('f2bf', w)}({v})"
    if dt.name in NARROW_VALUES:
        raise NotSupported(f"vector store of {dt.name}")
    if dt.name == "f32":
        return v
    if dt.name in ("i8", "u8", "i16", "u16", "i32", "u32"):
        return h.call(cvt(storage(dt), w), [v], w, storage(dt))
    raise NotSupported(f"vector store of {dt.name}")


def round_to(h: Helpers, dt: DType, v: str, w: int = 1) -> str:
    """Round a compute value to ``dt`` (what the oracle does after every instruction)."""
    if dt.name == "f16":
        return f"{h.need('rh', w)}({v})"
    if dt.name == "bf16":
        return f"{h.need('rbf', w)}({v})"
    if dt.name == "f8E8M0FNU":
        if w != 1:
            raise NotSupported("f8E8M0FNU values are rounded one lane at a time")
        return f"{h.need('dec_f8E8M0FNU')}({h.need('enc_f8E8M0FNU')}({v}))"
    if dt.name in NARROW_VALUES:
        raise NotSupported(f"a kernel computing {dt.name} values (rounding a float to {dt.name}); only reading "
                           "them (and f8E8M0FNU scales) is lowered")
    if dt.name in INT_RANGE:
        lo, hi = INT_RANGE[dt.name]
        return f"clamp({v}, {lo}L, {hi}L)"
    if dt.name == "u64":
        return f"max({v}, 0L)"
    if dt.name == "bool":
        return f"(int)(({v}) != 0)"
    return v


# --------------------------------------------------------------- the DAG --
def vectorizable(dag: Dag, roots) -> bool:
    for i in dag.reachable(roots):
        n = dag.nodes[i]
        if n.kind == "inb":     # an int vector of in-bounds flags, only ever the condition of a padding select
            continue
        if n.kind == "op" and n.op == "where" and dag.nodes[n.args[0]].kind == "inb" \
                and compute(n.dtype) == "float":
            continue
        if compute(n.dtype) != "float":
            return False
        if n.kind == "op" and n.dtype.name in NARROW_VALUES:      # rounded to a narrow float one lane at a time
            return False
        if n.kind == "op" and n.op not in VECTOR_OPS:
            return False
        if n.kind == "op" and n.op == "convert" and any(compute(dag.nodes[a].dtype) != "float" for a in n.args):
            return False
        if n.kind in ("table", "dot"):
            return False
    return True


def max_min(h: Helpers, is_max: bool, a: str, b: str, ct: str, w: int) -> str:
    """max/min of two compute values; floats propagate NaN as numpy's maximum/minimum do."""
    if ct not in ("float", "double"):
        return f"{'max' if is_max else 'min'}({a}, {b})"
    fn = "fmax" if is_max else "fmin"
    if w > 1:
        nan = f"{h.call('isnan', [a], w, 'int')} | {h.call('isnan', [b], w, 'int')}"
        return h.call("select", [h.call(fn, [a, b], w, ct), f"{a} + {b}", nan], w, ct)
    return f"((isnan({a}) || isnan({b})) ? {a} + {b} : {fn}({a}, {b}))"


def _op_text(h: Helpers, n: Node, args: list[str], arg_nodes: list[Node], w: int) -> str:
    op = n.op
    cin = compute(arg_nodes[0].dtype) if arg_nodes else compute(n.dtype)
    is_f = cin in ("float", "double")
    F = vt(cin, w)
    zero = f"({F})(0)" if w > 1 else ("0.0f" if cin == "float" else "0.0" if cin == "double" else "0L")
    one = f"({F})(1)" if w > 1 else ("1.0f" if cin == "float" else "1.0" if cin == "double" else "1L")
    a = args[0] if args else ""
    b = args[1] if len(args) > 1 else ""
    if op == "convert":
        src, dst = arg_nodes[0].dtype, n.dtype
        cs, cd = compute(src), compute(dst)
        if cd == "long" and cs in ("float", "double"):
            return f"convert_long_sat({a})"
        if cd == "int" and cs != "int":        # to bool
            return f"(int)(({a}) != 0)"
        if cs == cd:
            return a
        return h.call(cvt(cd, w), [a], w, cd) if w > 1 else f"({cd})({a})"
    if op in ("add", "sub", "mul"):
        return f"({a} {dict(add='+', sub='-', mul='*')[op]} {b})"
    if op == "div":
        return f"({a} / {b})" if is_f else f"(({b}) == 0 ? 0L : ({a}) / ({b}))"
    if op in ("max", "min"):
        return max_min(h, op == "max", a, b, cin, w)
    if op == "pow":
        return h.call("pow", [a, b], w, cin) if is_f else f"{h.need('ipow')}({a}, {b})"
    if op in COMPARE_SYMBOLS:
        return f"(int)({a} {COMPARE_SYMBOLS[op]} {b})"
    if op == "clip":
        return max_min(h, False, max_min(h, True, a, b, cin, w), args[2], cin, w)
    if op == "quantizelinear":
        # rocMLIR: r = 1/s and y = x*r in the input's type, round half to even, saturate (to int32 first when
        # a zero point is added); round_to then saturates to the output type
        ft = arg_nodes[0].dtype
        r = f"(1.0 / {b})" if compute(ft) == "double" else f"{h.need('qrecip')}({b})"
        y = round_to(h, ft, f"({a} * {round_to(h, ft, r)})")
        q = f"(isnan({y}) ? 0L : convert_long_sat_rte({y}))"      # NaN -> 0 (PoCL's sat conversion gives LONG_MIN)
        return f"(clamp({q}, -2147483648L, 2147483647L) + {args[2]})" if len(args) == 3 else q
    if op == "dequantizelinear":
        # rocMLIR: (T(x) - T(zero point)) * scale, T the output type, each step rounded to T
        t, ct = n.dtype, compute(n.dtype)
        xt = round_to(h, t, f"({ct})({a})")
        if len(args) == 3:
            xt = round_to(h, t, f"({xt} - {round_to(h, t, f'({ct})({args[2]})')})")
        return f"({xt} * {b})"
    if op == "unpack":
        # migraphx.unpack: args = (the byte, the output index's parity along the axis); low nibble first,
        # sign-extended unless the node's value is "u" (isUnsigned)
        u = f"(((long)({a})) & 255L)"
        nib = f"(({b}) ? ({u} >> 4) : ({u} & 15L))"
        return nib if n.value == "u" else f"(({nib} ^ 8L) - 8L)"
    if op == "where":
        c, x, y = args
        if w > 1:      # a padding select over lanes (see vectorizable): select(y, x, c != 0), split as needed
            return h.call("select", [y, x, f"(({c}) != 0)"], w, compute(n.dtype))
        return f"(({c}) != 0 ? {x} : {y})"
    if op == "relu":
        if not is_f:
            return f"max({a}, 0L)"
        if w > 1:
            return h.call("select", [zero, a, f"({a} > {zero}) | {h.call('isnan', [a], w, 'int')}"], w, cin)
        return f"(({a} > {zero} || isnan({a})) ? {a} : {zero})"
    if op == "neg":
        return f"(-{a})"
    if op == "abs":
        return h.call("fabs", [a], w, cin) if is_f else f"(({a}) < 0 ? -({a}) : ({a}))"
    if op in ("floor", "ceil"):
        return h.call(op, [a], w, cin) if is_f else a
    if op in FLOAT_OPS_ONLY:
        x = a if is_f else f"(float)({a})"
        f1 = one if is_f else "1.0f"
        fw = w if is_f else 1

        def fn(name: str, arg: str) -> str:
            return h.call(name, [arg], fw, "float")
        body = {"exp": fn("exp", x), "log": fn("log", x), "tanh": fn("tanh", x),
                "sigmoid": f"({f1} / ({f1} + {fn('exp', f'-{x}')}))", "sqrt": fn("sqrt", x),
                "rsqrt": fn("rsqrt", x), "erf": fn("erf", x), "recip": f"({f1} / {x})"}[op]
        return body if is_f else f"convert_long_sat_rte({body})"
    raise NotSupported(f"pointwise op {op!r} has no OpenCL lowering")


class DagEmitter:
    """Emits ``const T vN = ...;`` statements for the DAG nodes a root needs, at vector width ``w``.

    ``leaf(node_id, node) -> C expr`` renders loads / tables / the anchor (``acc``) nodes.
    """

    def __init__(self, dag: Dag, helpers: Helpers, leaf, w: int = 1, prefix: str = "v"):
        self.dag, self.h, self.leaf, self.w, self.prefix = dag, helpers, leaf, w, prefix
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        # node -> C expression inside an inline dot's loop (an operand the caller computed before the loop)
        self.preset: dict[int, str] = {}

    def _reachable(self, root: int) -> list[int]:
        """The nodes ``root`` needs outside any inline dot's loop (a dot's operands are emitted in it)."""
        seen: set[int] = set()
        stack = [root]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            if self.dag.nodes[i].kind != "dot":
                stack.extend(self.dag.nodes[i].args)
        return sorted(seen)

    def _dot(self, i: int, n) -> str:
        """An inline dot: a loop over its variable accumulating the product of its operands."""
        acc_t = compute(n.dtype)
        name = f"{self.prefix}{i}"
        inner = DagEmitter(self.dag, self.h, self.leaf, 1, prefix=f"{name}_")
        inner.names.update(self.preset)
        a = inner.emit(n.args[0])
        b = inner.emit(n.args[1])
        kv = n.op
        self.lines.append(f"{acc_t} {name}a = 0;")
        self.lines.append(f"for (int {kv} = 0; {kv} < {int(n.value)}; ++{kv}) {{")
        self.lines += ["  " + x for x in inner.lines]
        self.lines.append(f"  {name}a += ({acc_t})({a}) * ({acc_t})({b});")
        self.lines.append("}")
        return round_to(self.h, n.dtype, f"{name}a", 1)

    def emit(self, root: int) -> str:
        for i in self._reachable(root):
            if i in self.names:
                continue
            n = self.dag.nodes[i]
            ty = vt(compute(n.dtype), self.w)
            if n.kind == "dot":
                if self.w != 1:
                    raise NotSupported("an inline dot is emitted one lane at a time")
                text = self._dot(i, n)
                name = f"{self.prefix}{i}"
                self.lines.append(f"const {ty} {name} = {text};")
                self.names[i] = name
                continue
            if n.kind == "const":
                c = const_text(n.dtype, n.value)
                text = f"({ty})({c})" if self.w > 1 else c
                self.names[i] = f"({text})"
                continue
            if n.kind in ("load", "table", "acc", "inb", "idx"):
                text = self.leaf(i, n)
            else:
                args = [self.names[a] for a in n.args]
                text = round_to(self.h, n.dtype, _op_text(self.h, n, args, [self.dag.nodes[a] for a in n.args],
                                                          self.w), self.w)
            name = f"{self.prefix}{i}"
            self.lines.append(f"const {ty} {name} = {text};")
            self.names[i] = name
        return self.names[root]
