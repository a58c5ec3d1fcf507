"""Control flow: the counted loop (``loop``) and how its results are read (``loop_result``).

In:  a *body* — an ``ir.Graph`` traced once from one iteration of the user's
     loop — its trip count, and the nodes of the outer graph it starts from.
Out: registered :class:`OpDef` entries of kind ``loop``.

A ``loop`` node is our twin of torch's ``while_loop``/``scan`` higher-order
ops and of JAX's ``lax.fori_loop``: instead of a graph that repeats the body
``n`` times (unrolled, as torch.compile does), one node holds the body graph
once.  The body's placeholders are, in order:

* the **carried** values (``len(carried)`` of them): the arrays the body
  reads at the start of an iteration and hands the next one;
* the **invariant** values: arrays the body only reads;
* the **index**: a 0-d ``int64``, ``start + k * step`` on iteration ``k``.

Its outputs are the carried values' next values, in the same order and of
the same shapes and dtypes.  The node's meta is the tuple of those metas,
and each result is read by a ``loop_result`` node (``loop[k]``), so every
other node of a graph still holds one array.  The reference implementation
runs the body graph ``n`` times through NumPy (the ``eager`` backend); the
inductor's backends compile the body once and run it ``n`` times
(``inductor/loops.py``); ``ir.loops.unroll_loops`` writes the body out ``n``
times where a stage needs a loop-free graph (differentiation).

The trip count ``n`` is an int, or a size symbol (``s0``) when the loop counts
to an int argument that automatic dynamic made symbolic: the graph then takes
that int as a size input and each call runs its own number of iterations.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..symbolic import Sym
from .registry import OpDef, TensorMeta, register

INDEX_META = TensorMeta((), np.dtype(np.int64))


def _loop(body, start, step, n, carried, invariant):
    """Run the body ``n`` times; ``start``/``step`` give the index of each iteration."""
    values = tuple(carried)
    for k in range(n):
        values = body(*values, *invariant, np.int64(start + k * step))
    # A result that is one of the inputs themselves (no iteration ran, or the body
    # hands an input on unchanged) is copied: an op's result is a new array.
    inputs = [id(v) for v in (*carried, *invariant)]
    return tuple(v.copy() if id(v) in inputs else v for v in values)


def _loop_meta(body, start, step, n, carried, invariant) -> tuple[TensorMeta, ...]:
    expected = [*carried, *invariant, INDEX_META]
    metas = [p.meta for p in body.placeholders]
    if len(metas) != len(expected) or any(tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype
                                          for a, b in zip(metas, expected)):
        raise TypeError("loop: the body's inputs do not match the carried and invariant values")
    outs = [o.meta for o in body.outputs]
    if len(outs) != len(carried) or any(tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype
                                        for a, b in zip(outs, carried)):
        raise TypeError("loop: the body's outputs do not match its carried values")
    if not (isinstance(n, (int, np.integer)) and n >= 0 or isinstance(n, Sym)):
        raise TypeError(f"loop: the trip count must be an int >= 0 or a size symbol, got {n!r}")
    return tuple(carried)


def _loop_result(loop, index):
    return loop[index]


def _loop_result_meta(loop, index) -> TensorMeta:
    return loop[index]


register(OpDef("loop", "loop", _loop, _loop_meta))
register(OpDef("loop_result", "loop", _loop_result, _loop_result_meta))


def is_loop(node: Any) -> bool:
    return getattr(node, "op", None) is not None and node.op.name == "loop"


def loop_parts(node: Any) -> tuple[Any, int, int, int, tuple, tuple]:
    """``(body, start, step, n, carried, invariant)`` of a loop node."""
    return tuple(node.args)  # type: ignore[return-value]
