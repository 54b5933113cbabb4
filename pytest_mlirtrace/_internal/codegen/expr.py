"""Integer index expressions: how a logical index reaches a parameter's storage slot.

Views (transpose, broadcast, slice, reshape, ...) are never materialised; each one
rewrites the index vector of its output into the index vector of its input.  The
expressions are quasi-affine (``+``, ``*const``, ``floordiv const``, ``mod const``)
over non-negative index variables with known extents, kept in a canonical linear
form and simplified with range information, so that the common views come out
affine (``64*m + k``) and the rest as the few div/mod terms they need
(``64*m + 24576*(k/64) + k%64`` for the seed's transpose->reshape).

Every value here is non-negative, so C's ``/`` and ``%`` are floor division. The one exception is the
argument of a :class:`Clamp` (a convolution's padded input index, ``ho*stride + y*dilation - pad``): it may
be negative, and the clamp brings it into the input before any division sees it.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np


@dataclass(frozen=True)
class Var:
    name: str
    extent: int          # the variable takes values 0 .. extent-1

    def key(self):
        return (0, self.name)


@dataclass(frozen=True)
class FDiv:
    arg: Lin
    d: int

    def key(self):
        return (1, self.arg.key(), self.d)


@dataclass(frozen=True)
class FMod:
    arg: Lin
    d: int

    def key(self):
        return (2, self.arg.key(), self.d)


@dataclass(frozen=True)
class Clamp:
    """``arg`` clamped into ``lo .. hi`` (a padded index read inside the tensor; the padding's zero is
    selected separately)."""
    arg: Lin
    lo: int
    hi: int

    def key(self):
        return (3, self.arg.key(), self.lo, self.hi)


Atom = Var | FDiv | FMod | Clamp


@dataclass(frozen=True)
class Lin:
    """``const + sum(coef * atom)``; build through :func:`lin` to keep it canonical."""
    const: int
    terms: tuple  # ((atom, coef), ...) sorted by atom key, coef != 0

    def key(self):
        return (self.const, tuple((a.key(), c) for a, c in self.terms))

    # arithmetic ---------------------------------------------------------------
    def __add__(self, other: Lin | int) -> Lin:
        other = const(other) if isinstance(other, int) else other
        return lin(self.const + other.const, list(self.terms) + list(other.terms))

    __radd__ = __add__

    def __mul__(self, c: int) -> Lin:
        if c == 0:
            return ZERO
        return lin(self.const * c, [(a, k * c) for a, k in self.terms])

    __rmul__ = __mul__

    def __floordiv__(self, d: int) -> Lin:
        return fdiv(self, d)

    def __mod__(self, d: int) -> Lin:
        return fmod(self, d)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def vars(self) -> set[str]:
        out: set[str] = set()
        for a, _ in self.terms:
            out |= atom_vars(a)
        return out

    def __str__(self) -> str:
        return to_c(self)


def const(c: int) -> Lin:
    return Lin(int(c), ())


ZERO = Lin(0, ())


def var(name: str, extent: int) -> Lin:
    if extent <= 1:
        return ZERO
    return Lin(0, ((Var(name, int(extent)), 1),))


def atom_vars(a: Atom) -> set[str]:
    if isinstance(a, Var):
        return {a.name}
    return a.arg.vars()


def atom_range(a: Atom) -> tuple[int, int]:
    if isinstance(a, Var):
        return 0, a.extent - 1
    lo, hi = lin_range(a.arg)
    if isinstance(a, Clamp):
        return max(a.lo, min(lo, a.hi)), min(a.hi, max(hi, a.lo))
    if isinstance(a, FDiv):
        return lo // a.d, hi // a.d
    if hi - lo + 1 >= a.d or lo // a.d != hi // a.d:
        return 0, a.d - 1
    return lo % a.d, hi % a.d


def lin_range(e: Lin) -> tuple[int, int]:
    lo = hi = e.const
    for a, c in e.terms:
        alo, ahi = atom_range(a)
        if c > 0:
            lo += c * alo
            hi += c * ahi
        else:
            lo += c * ahi
            hi += c * alo
    return lo, hi


def _combine(terms):
    acc: dict = {}
    order: dict = {}
    for a, c in terms:
        k = a.key()
        acc[k] = acc.get(k, 0) + c
        order[k] = a
    return [(order[k], c) for k, c in sorted(acc.items()) if c != 0]


def lin(c: int, terms) -> Lin:
    terms = _combine(terms)
    # fold a split back into what was split: k*d*(y/d) + k*(y%d) == k*y, the quotient and the remainder each
    # found as the atom the simplifier makes of them
    changed = True
    while changed:
        changed = False
        by_key = {a.key(): (a, k) for a, k in terms}
        for a, k in list(terms):
            pair = None
            if isinstance(a, FMod):
                # y%d with coefficient k: is fdiv(y, d) a term with coefficient k*d?
                q = fdiv(a.arg, a.d)
                if len(q.terms) == 1 and not q.const and q.terms[0][1] == 1:
                    dk = q.terms[0][0].key()
                    if dk in by_key and by_key[dk][1] == k * a.d:
                        pair = (dk, k)
            elif isinstance(a, FDiv) and k % a.d == 0:
                # y/d with coefficient k: is fmod(y, d) a term with coefficient k/d? (y = x%(d*m):
                # (x%(d*m))%d simplifies to x%d)
                r = fmod(a.arg, a.d)
                if len(r.terms) == 1 and not r.const and r.terms[0][1] == 1:
                    mk = r.terms[0][0].key()
                    if mk in by_key and by_key[mk][1] * a.d == k:
                        pair = (mk, k // a.d)
            if pair is not None:
                other, mult = pair
                rest = [(b, kb) for b, kb in terms if b.key() not in (a.key(), other)]
                rest += [(b, kb * mult) for b, kb in a.arg.terms]
                c += a.arg.const * mult
                terms = _combine(rest)
                changed = True
                break
    return Lin(int(c), tuple(terms))


def _split(e: Lin, d: int):
    """(quotient part, rest) with every quotient coefficient a multiple of d."""
    q = [(a, k // d) for a, k in e.terms if k % d == 0]
    r = [(a, k) for a, k in e.terms if k % d != 0]
    return lin(e.const // d, q), lin(e.const % d, r)


def _content(e: Lin) -> int:
    g = abs(e.const)
    for _, k in e.terms:
        g = gcd(g, abs(k))
    return g


def fdiv(e: Lin, d: int) -> Lin:
    if d <= 0:
        raise ValueError("division by a non-positive constant")
    if d == 1:
        return e
    q, r = _split(e, d)
    lo, hi = lin_range(r)
    if lo >= 0 and hi < d:
        return q
    hi_lo = _small_part(r, d)
    if hi_lo is not None:
        # floor((c*x + s) / (c*d')) == floor(x / d') for 0 <= s < c
        c, big, _ = hi_lo
        return q + fdiv(big, d // c)
    g = gcd(_content(lin(0, r.terms)), d)
    if g > 1 and 0 <= r.const < g:
        # floor((g*x + c) / (g*d')) == floor(x / d') for 0 <= c < g
        r = lin(0, [(a, k // g) for a, k in r.terms])
        d //= g
        if d == 1:
            return q + r
    # (x / a) / b == x / (a*b)
    if r.const == 0 and len(r.terms) == 1 and r.terms[0][1] == 1 and isinstance(r.terms[0][0], FDiv):
        inner = r.terms[0][0]
        return q + fdiv(inner.arg, inner.d * d)
    return q + Lin(0, ((FDiv(r, d), 1),))


def _small_part(r: Lin, d: int):
    """(c, x, s) with r == c*x + s, c > 1 a divisor of d, 0 <= s < c by range (s: the terms whose
    coefficients c does not divide, and the constant); None when there is no such split."""
    divs = sorted({k for i in range(2, int(d ** 0.5) + 1) if d % i == 0 for k in (i, d // i)} | {d}, reverse=True)
    for c in divs:
        big = [(a, k // c) for a, k in r.terms if k % c == 0]
        if not big:
            continue
        small = lin(r.const, [(a, k) for a, k in r.terms if k % c != 0])
        lo, hi = lin_range(small)
        if lo >= 0 and hi < c:
            return c, lin(0, big), small
    return None


def fmod(e: Lin, d: int) -> Lin:
    if d <= 0:
        raise ValueError("modulo by a non-positive constant")
    if d == 1:
        return ZERO
    _, r = _split(e, d)
    lo, hi = lin_range(r)
    if lo >= 0 and hi < d:
        return r
    hi_lo = _small_part(r, d)
    if hi_lo is not None and hi_lo[2].terms:
        # (c*x + s) % (c*d') == c*(x % d') + s for 0 <= s < c
        c, big, small = hi_lo
        return fmod(big, d // c) * c + small
    g = gcd(_content(r), d)
    if g > 1:
        r2 = lin(r.const // g, [(a, k // g) for a, k in r.terms])
        return fmod(r2, d // g) * g
    # (x % a) % b == x % b when b divides a
    if r.const == 0 and len(r.terms) == 1 and r.terms[0][1] == 1 and isinstance(r.terms[0][0], FMod):
        inner = r.terms[0][0]
        if inner.d % d == 0:
            return fmod(inner.arg, d)
    return Lin(0, ((FMod(r, d), 1),))


def clamp(e: Lin, lo: int, hi: int) -> Lin:
    """``e`` clamped into ``lo .. hi``; ``e`` itself when its range is already inside."""
    elo, ehi = lin_range(e)
    if elo >= lo and ehi <= hi:
        return e
    if elo >= hi:
        return const(hi)
    if ehi <= lo:
        return const(lo)
    return Lin(0, ((Clamp(e, int(lo), int(hi)), 1),))


def substitute(e: Lin, env: dict[str, Lin]) -> Lin:
    """Replace variables by expressions (and re-simplify)."""
    out = const(e.const)
    for a, k in e.terms:
        out = out + _subst_atom(a, env) * k
    return out


def _subst_atom(a: Atom, env) -> Lin:
    if isinstance(a, Var):
        return env.get(a.name, Lin(0, ((a, 1),)))
    arg = substitute(a.arg, env)
    if isinstance(a, Clamp):
        return clamp(arg, a.lo, a.hi)
    return fdiv(arg, a.d) if isinstance(a, FDiv) else fmod(arg, a.d)


def coeff(e: Lin, name: str) -> int | None:
    """The coefficient of variable ``name`` if ``e`` is affine in it (0 when absent), else None."""
    c = 0
    for a, k in e.terms:
        if isinstance(a, Var) and a.name == name:
            c = k
        elif name in atom_vars(a):
            return None
    return c


def part(e: Lin, names: set[str]) -> Lin:
    """The terms of ``e`` that depend on any of ``names`` (no constant)."""
    return lin(0, [(a, k) for a, k in e.terms if atom_vars(a) & names])


def evaluate(e: Lin, env: dict[str, np.ndarray | int]):
    """Numeric value (numpy broadcasting) with variables bound in ``env`` (missing ones are 0)."""
    v = np.int64(e.const)
    for a, k in e.terms:
        v = v + np.int64(k) * _eval_atom(a, env)
    return v


def _eval_atom(a: Atom, env):
    if isinstance(a, Var):
        return np.asarray(env.get(a.name, 0), dtype=np.int64)
    x = evaluate(a.arg, env)
    if isinstance(a, Clamp):
        return np.clip(x, a.lo, a.hi)
    return x // a.d if isinstance(a, FDiv) else x % a.d


def to_c(e: Lin, names: dict[str, str] | None = None) -> str:
    """C text; ``names`` renames variables (to C expressions, parenthesised as needed)."""
    names = names or {}
    parts = []
    for a, k in e.terms:
        t = _atom_c(a, names)
        if k != 1 and not isinstance(a, Var):
            t = f"({t})"
        parts.append(t if k == 1 else f"{k}*{t}")
    if e.const or not parts:
        parts.append(str(e.const))
    return " + ".join(parts)


def _atom_c(a: Atom, names) -> str:
    if isinstance(a, Var):
        n = names.get(a.name, a.name)
        return n if n.isidentifier() else f"({n})"
    inner = to_c(a.arg, names)
    if isinstance(a, Clamp):
        return f"clamp((int)({inner}), {a.lo}, {a.hi})"
    if len(a.arg.terms) + (1 if a.arg.const else 0) > 1 or not inner.isidentifier():
        inner = f"({inner})"
    return f"{inner}/{a.d}" if isinstance(a, FDiv) else f"{inner}%{a.d}"
