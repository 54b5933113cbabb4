"""Masks an attention computes from indices alone: is it causal?

MIGraphX writes a causal mask as ``where(greater(iota_k, iota_q + offset), -inf, scores)`` (literals, no
parameter).  :func:`causal_offset` evaluates such a data-independent condition of the score DAG with numpy
over the (batch, query, key) grid and returns ``offset`` when the masked positions are exactly
``n1 > m + offset`` -- rocMLIR's ``-causal true`` -- so the kernel can stop each row's key loop at the
diagonal.  It is decided on the values, not on the ops' spelling, so any way of writing the mask counts.
"""
from __future__ import annotations

import numpy as np

from . import expr as E
from .element_dag import Dag

_CMP = {"greater": np.greater, "less": np.less, "equal": np.equal, "greater_or_equal": np.greater_equal,
        "less_or_equal": np.less_equal, "not_equal": np.not_equal, "logical_and": np.logical_and,
        "logical_or": np.logical_or, "logical_xor": np.logical_xor}
_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
#: rows of the grid evaluated (first and last ones) when the whole grid would be too large
_ROWS = 64


class _Opaque(Exception):
    """The condition reads data or uses an op this evaluator does not know: not a fixed mask."""


def _value(dag: Dag, i: int, env: dict, memo: dict):
    if i in memo:
        return memo[i]
    n = dag.nodes[i]
    if n.kind == "const":
        v = np.asarray(n.value, dtype=np.float64)
    elif n.kind == "table":
        v = dag.tables[n.param][E.evaluate(n.offset, env)].astype(np.float64)
    elif n.kind == "op":
        args = [_value(dag, a, env, memo) for a in n.args]
        if n.op in _CMP:
            v = _CMP[n.op](*args).astype(np.float64)
        elif n.op in _ARITH:
            v = _ARITH[n.op](*args)
        elif n.op == "not":
            v = (args[0] == 0).astype(np.float64)
        elif n.op == "convert":
            v = (args[0] != 0).astype(np.float64) if n.dtype.name == "bool" else (
                args[0] if n.dtype.is_float else np.trunc(args[0]))
        elif n.op == "where":
            v = np.where(args[0] != 0, args[1], args[2])
        else:
            raise _Opaque(n.op)
    else:
        raise _Opaque(n.kind)
    memo[i] = v
    return v


def _is_neg_inf(dag: Dag, i: int) -> bool:
    n = dag.nodes[i]
    while n.kind == "op" and n.op == "convert":
        n = dag.nodes[n.args[0]]
    return n.kind == "const" and n.dtype.is_float and float(n.value) == float("-inf")


def _outside_dots(dag: Dag, root: int) -> list[int]:
    seen, stack = set(), [root]
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            if dag.nodes[i].kind != "dot":
                stack.extend(dag.nodes[i].args)
    return sorted(seen)


def causal_offset(dag: Dag, root: int, g: int, M: int, N1: int) -> int | None:
    """``offset`` when the score DAG ``root`` sets exactly the positions ``n1 > m + offset`` to -inf (for every
    batch), else None."""
    rows = np.arange(M) if M <= 2 * _ROWS else np.r_[0:_ROWS, M - _ROWS:M]
    batches = np.arange(g) if g <= 8 else np.r_[0:4, g - 4:g]
    env = {"gb": batches[:, None, None], "m": rows[None, :, None], "n1": np.arange(N1)[None, None, :]}
    masks = []
    for i in _outside_dots(dag, root):
        n = dag.nodes[i]
        if not (n.kind == "op" and n.op == "where"):
            continue
        c, x, y = n.args
        if not (_is_neg_inf(dag, x) or _is_neg_inf(dag, y)):
            continue
        try:
            cond = _value(dag, c, env, {}) != 0
        except (_Opaque, IndexError, ValueError, TypeError, KeyError):
            continue
        masked = cond if _is_neg_inf(dag, x) else ~cond
        masks.append(np.broadcast_to(masked, (len(batches), len(rows), N1)))
    if not masks:
        return None
    masked = np.logical_or.reduce(masks)
    first = np.argmax(masked[0, 0]) if masked[0, 0].any() else N1
    offset = int(first) - 1 - int(rows[0])
    want = np.arange(N1)[None, None, :] > rows[None, :, None] + offset
    return offset if np.array_equal(masked, np.broadcast_to(want, masked.shape)) and masked.any() else None


__all__ = ["causal_offset"]
