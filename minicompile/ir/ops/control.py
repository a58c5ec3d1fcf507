"""Control flow: the counted loop (``loop``) and how its results are read (``loop_result``).

In:  a *body* — an ``ir.Graph`` traced once from one iteration of the user's
     loop — its trip count, and the nodes of the outer graph it starts from.
Out: registered :class:`OpDef` entries of kind ``loop``.

A ``loop`` node is our twin of torch's ``while_loop``/``scan`` higher-order
ops and of JAX's ``lax.fori_loop``/``lax.scan``: instead of a graph that
repeats the body ``n`` times (unrolled, as torch.compile does), one node holds
the body graph once.  The body's placeholders are, in order:

* the **carried** values (``len(carried)`` of them): the arrays the body
  reads at the start of an iteration and hands the next one;
* the **invariant** values: arrays the body only reads;
* the **sliced** values: arrays of ``n`` rows, of which iteration ``k``
  reads row ``k`` (``lax.scan``'s ``xs``);
* the **index**: a 0-d ``int64``, ``start + k * step`` on iteration ``k``.

Its outputs are the carried values' next values, in the same order and of
the same shapes and dtypes, then any number of **stacked** values: what
iteration ``k`` computes for one of them is row ``k`` of an array of ``n``
rows (``lax.scan``'s ``ys``).  A stacked output that is a carried
placeholder itself keeps the value each iteration *started* from: the
history of that carry, which is what a gradient needs (``aot/loop_gradients.py``).
With ``reverse=True`` the iterations run ``k = n-1, ..., 0`` (the backward of
a loop runs its forward's iterations in reverse), each still reading row
``k`` and index ``start + k * step``.

The node's meta is the tuple of the carried metas, then the stacked ones,
and each result is read by a ``loop_result`` node (``loop[k]``), so every
other node of a graph still holds one array.  The reference implementation
runs the body graph ``n`` times through NumPy (the ``eager`` backend); the
inductor's backends compile the body once and run it ``n`` times
(``inductor/loops.py``); ``ir.loops.unroll_loops`` writes the body out ``n``
times where a stage needs a loop-free graph.

The trip count ``n`` is an int, or a size symbol (``s0``) when the loop counts
to an int argument that automatic dynamic made symbolic: the graph then takes
that int as a size input and each call runs its own number of iterations.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..symbolic import Sym
from .registry import OpDef, TensorMeta, register

INDEX_META = TensorMeta((), np.dtype(np.int64))


def iteration_order(n: int, reverse: bool) -> range:
    """The iteration numbers ``k`` in the order a loop runs them."""
    return range(n - 1, -1, -1) if reverse else range(n)


def _loop(body, start, step, n, carried, invariant, sliced=(), reverse=False):
    """Run the body ``n`` times; ``start``/``step`` give the index of each iteration."""
    values = tuple(carried)
    stacked_metas = [o.meta for o in body.outputs[len(carried):]]
    stacked = [np.empty((n, *m.shape), m.dtype) for m in stacked_metas]
    for k in iteration_order(n, reverse):
        results = body(*values, *invariant, *(s[k, ...] for s in sliced), np.int64(start + k * step))
        values = results[:len(carried)]
        for s, r in zip(stacked, results[len(carried):]):
            s[k] = r
    # A result that is one of the inputs themselves (no iteration ran, or the body
    # hands an input on unchanged) is copied: an op's result is a new array.
    inputs = [id(v) for v in (*carried, *invariant)]
    return tuple(v.copy() if id(v) in inputs else v for v in values) + tuple(stacked)


def _same(metas: list, expected: list) -> bool:
    return len(metas) == len(expected) and all(tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
                                               for a, b in zip(metas, expected))


def _loop_meta(body, start, step, n, carried, invariant, sliced=(), reverse=False) -> tuple[TensorMeta, ...]:
    if not (isinstance(n, (int, np.integer)) and n >= 0 or isinstance(n, Sym)):
        raise TypeError(f"loop: the trip count must be an int >= 0 or a size symbol, got {n!r}")
    if any(not s.shape or s.shape[0] != n for s in sliced):
        raise TypeError(f"loop: a sliced value must have {n} rows, one per iteration")
    rows = [TensorMeta(tuple(s.shape[1:]), s.dtype) for s in sliced]
    if not _same([p.meta for p in body.placeholders], [*carried, *invariant, *rows, INDEX_META]):
        raise TypeError("loop: the body's inputs do not match the carried, invariant and sliced values")
    outs = [o.meta for o in body.outputs]
    if not _same(outs[:len(carried)], list(carried)):
        raise TypeError("loop: the body's outputs do not match its carried values")
    stacked = tuple(TensorMeta((n, *m.shape), m.dtype) for m in outs[len(carried):])
    return tuple(carried) + stacked


def _loop_result(loop, index):
    return loop[index]


def _loop_result_meta(loop, index) -> TensorMeta:
    return loop[index]


register(OpDef("loop", "loop", _loop, _loop_meta))
register(OpDef("loop_result", "loop", _loop_result, _loop_result_meta))


def is_loop(node: Any) -> bool:
    return getattr(node, "op", None) is not None and node.op.name == "loop"


class LoopParts(NamedTuple):
    """A loop node's arguments, by name."""
    body: Any
    start: int
    step: int
    n: Any
    carried: tuple
    invariant: tuple
    sliced: tuple
    reverse: bool


def loop_parts(node: Any) -> LoopParts:
    """The arguments of a loop node, by name."""
    return LoopParts(*node.args)
