"""Derivative rules of the ops that only move elements: joins, copies, windows, sorts.

In:  the emitter ``E``, the gradient ``g`` of the op's output, the output
     ``out`` and the op's canonical arguments ``a`` (see derivatives.py).
Out: the rules of ``vstack``, ``hstack``, ``dstack``, ``column_stack``,
     ``atleast_*``, ``repeat``, ``tile``, ``roll``, ``rot90``, ``pad``,
     ``tril``, ``triu``, ``sliding_window_view``, ``as_strided`` (and its
     scatter), ``sort``, ``take_along_axis``, ``put_along_axis`` and the
     ``<ufunc>_at`` updates, registered in :data:`~.derivatives.DERIVATIVES`
     on import.

Each output element is a copy of one input element, so each rule sends the
output's gradient back to the element it came from, by the op's inverse
where it has one (a roll rolls back, a join splits) and by adding up where
one element was copied several times (``tile`` and ``repeat`` sum over their
copies, a window view over its windows, ``pad``'s edge modes over every
place an element was copied to).  A write (``put_along_axis``) gives the
overwritten elements nothing and the written values the gradient of where
they landed — only where no two of them land on one place (NumPy keeps the
last write there), else it raises.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from ..ir.ops import TensorMeta
from ..ir.ops.indexing import _strided_positions
from .derivatives import DERIVATIVES, NonDifferentiable, _split_along, derivative_rule, is_array


def _data_of(value):
    """The array behind a value a rule may be given: an array, or a tape tensor's data."""
    return value.data if hasattr(value, "requires_grad") else value


# -- joins: split g back into the pieces ------------------------------------------------------

def _promoted(shape: tuple, op: str) -> tuple:
    """The shape a joined array has once the join has raised its rank (atleast_1d/2d/3d)."""
    n = len(shape)
    if op == "hstack":
        return shape if n else (1,)
    if op == "vstack":
        return {0: (1, 1), 1: (1,) + shape}.get(n, shape)
    if op == "dstack":
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(n, shape)
    return {0: (1, 1), 1: shape + (1,)}.get(n, shape)  # column_stack: 1-d arrays become columns


def _join_rule(op: str):
    def rule(E, g, out, a):  # the inverse of a join is a split (each piece reshaped back)
        arrays = a["tup"]
        if is_array(arrays):
            raise NonDifferentiable(f"np.{op} of one array (its rows) has no derivative rule yet")
        shapes = [_promoted(tuple(x.shape) if is_array(x) else np.shape(x), op) for x in arrays]
        if op == "hstack":
            axis = 0 if len(shapes[0]) == 1 else 1
        else:
            axis = {"vstack": 0, "dstack": 2, "column_stack": 1}[op]
        pieces = _split_along(E, g, [TensorMeta(s, g.dtype) for s in shapes], axis)
        return {"tup": tuple(E.call("reshape", p, tuple(x.shape)) if is_array(x) else None
                             for p, x in zip(pieces, arrays))}
    return rule


for _op in ("vstack", "hstack", "dstack", "column_stack"):
    DERIVATIVES[_op] = _join_rule(_op)


@derivative_rule("concatenate")
def _concatenate(E, g, out, a):  # a split; axis=None joins the flattened arrays
    arrays, axis = a["arrays"], a["axis"]
    if is_array(arrays):
        raise NonDifferentiable("np.concatenate of one array (its rows) has no derivative rule yet")
    if axis is None:
        flat = [TensorMeta((int(np.prod(x.shape)) if is_array(x) else int(np.size(x)),), g.dtype) for x in arrays]
        pieces = _split_along(E, g, flat, 0)
    else:
        pieces = _split_along(E, g, arrays, axis % len(g.shape))
    return {"arrays": tuple(E.call("reshape", p, tuple(x.shape)) if is_array(x) else None
                            for p, x in zip(pieces, arrays))}


@derivative_rule("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(E, g, out, a):  # a reshape that adds axes of size 1
    return {"a": E.call("reshape", g, tuple(a["a"].shape))}


# -- copies: add up the gradient of every copy -------------------------------------------------

def take_grad(E, g, shape: tuple, dtype, indices, axis: int):
    """The gradient of ``np.take(x, indices, axis)`` for x of ``shape``: every copy added back."""
    return DERIVATIVES["take"](E, g, None, {"a": TensorMeta(tuple(shape), np.dtype(dtype)), "indices": indices,
                                            "axis": axis, "mode": "raise"})["a"]


@derivative_rule("repeat")
def _repeat(E, g, out, a):  # each element repeated r times: its gradient sums its r copies
    x, repeats, axis = a["a"], a["repeats"], a["axis"]
    shape = tuple(x.shape)
    if axis is None:
        shape, axis = (int(np.prod(x.shape)),), 0
    axis %= len(shape)
    r = repeats if not isinstance(repeats, tuple) else repeats[0] if len(repeats) == 1 else None
    if r is not None:
        split = shape[:axis] + (shape[axis], int(r)) + shape[axis + 1:]
        grad = E.call("sum", E.call("reshape", g, split), axis=axis + 1)
    else:
        indices = tuple(np.repeat(np.arange(shape[axis]), repeats).tolist())
        grad = take_grad(E, g, shape, g.dtype, indices, axis)
    return {"a": E.call("reshape", grad, tuple(x.shape))}


@derivative_rule("tile")
def _tile(E, g, out, a):  # out viewed as (r0, n0, r1, n1, ...): sum over the copies r
    x, reps = a["A"], a["reps"]
    reps = (reps,) if not isinstance(reps, tuple) else reps
    d = max(len(reps), len(x.shape))
    sx = (1,) * (d - len(x.shape)) + tuple(x.shape)
    r = (1,) * (d - len(reps)) + tuple(int(v) for v in reps)
    pairs = E.call("reshape", g, tuple(n for p in zip(r, sx) for n in p))
    return {"A": E.call("reshape", E.call("sum", pairs, axis=tuple(range(0, 2 * d, 2))), tuple(x.shape))}


@derivative_rule("roll")
def _roll(E, g, out, a):  # roll back
    x, shift, axis = a["a"], a["shift"], a["axis"]
    back = tuple(-int(s) for s in shift) if isinstance(shift, tuple) else -int(shift)
    if axis is None:
        flat = E.call("roll", E.call("reshape", g, (-1,)), back)
        return {"a": E.call("reshape", flat, tuple(x.shape))}
    return {"a": E.call("roll", g, back, axis)}


@derivative_rule("rot90")
def _rot90(E, g, out, a):  # rotate back
    return {"m": E.call("rot90", g, -int(a["k"]), a["axes"])}


@derivative_rule("pad")
def _pad(E, g, out, a):
    x, mode = a["array"], a["mode"]
    nd = len(x.shape)
    widths = np.broadcast_to(np.asarray(a["pad_width"], dtype=np.intp), (nd, 2)).tolist() if nd else []
    grads = {}
    if mode == "constant":  # x sits inside the padding: g's box there
        key = tuple(slice(b, b + n) for (b, _), n in zip(widths, x.shape))
        grads["array"] = E.call("getitem", g, key) if nd else g
        if is_array(a["constant_values"]):
            raise NonDifferentiable("np.pad with constant_values given as an array has no derivative rule yet")
        return grads
    # edge, reflect, symmetric, wrap: along each axis, out = take(x, np.pad(arange(n), widths, mode)):
    # an element copied to several places gets all their gradients.
    shape = list(g.shape)
    for axis in range(nd):
        n = x.shape[axis]
        indices = tuple(np.pad(np.arange(n), widths[axis], mode).tolist())
        shape[axis] = n
        g = take_grad(E, g, tuple(shape), g.dtype, indices, axis)
    return {"array": g}


def _triangle_rule(op: str):
    def rule(E, g, out, a):
        m = a["m"]  # the kept triangle passes its gradient, the zeroed one none
        kept = E.call(op, g, a["k"])
        if len(m.shape) < 2:  # a 1-d m is broadcast to rows: sum them
            kept = E.sum_to(kept, tuple(m.shape))
        return {"m": kept}
    return rule


DERIVATIVES["tril"], DERIVATIVES["triu"] = _triangle_rule("tril"), _triangle_rule("triu")


@derivative_rule("sliding_window_view")
def _sliding_window_view(E, g, out, a):
    # out[..., i, ..., w] = x[..., i + w, ...]: for each window axis (the last first), the
    # window's slices, each shifted back into place by padding, added up.
    x, window = a["x"], a["window_shape"]
    window = (window,) if not isinstance(window, tuple) else window
    nd = len(x.shape)
    axes = tuple(range(nd)) if a["axis"] is None else (
        (a["axis"],) if isinstance(a["axis"], (int, np.integer)) else tuple(a["axis"]))
    axes = tuple(int(i) % nd for i in axes)
    for d, w in reversed(list(zip(axes, window))):
        total = None
        for j in range(int(w)):
            piece = E.call("getitem", g, (Ellipsis, j))
            widths = tuple((j, int(w) - 1 - j) if i == d else (0, 0) for i in range(len(piece.shape)))
            piece = E.call("pad", piece, widths)
            total = piece if total is None else E.call("add", total, piece)
        g = total
    return {"x": g}


@derivative_rule("as_strided")
def _as_strided(E, g, out, a):  # each view element read one base element: add them back there
    x = a["a"]
    positions = _strided_positions(tuple(a["shape"]), tuple(a["strides"]), a["offset"])
    flat = E.call("zeros", (int(np.prod(x.shape)),), x.dtype)
    flat = E.call("add_at", flat, (tuple(positions.reshape(-1).tolist()),), E.call("reshape", g, (-1,)))
    return {"a": E.call("reshape", flat, tuple(x.shape))}


@derivative_rule("as_strided_scatter")
def _as_strided_scatter(E, g, out, a):  # a write into a strided view of a
    shape, strides, offset = tuple(a["shape"]), tuple(a["strides"]), a["offset"]
    positions = _strided_positions(shape, strides, offset)
    if np.unique(positions).size != positions.size:
        raise NonDifferentiable("as_strided_scatter through overlapping view elements has no derivative rule")
    src = a["src"]
    grads = {"a": E.call("as_strided_scatter", g, E.call("zeros", shape, g.dtype), shape, strides, offset)}
    if is_array(src):
        grads["src"] = E.call("as_strided", g, shape, strides, offset)
    return grads


# -- sorts and reads along an axis --------------------------------------------------------------

@derivative_rule("sort")
def _sort(E, g, out, a):  # a permutation: each gradient goes back where its element came from
    x, axis = a["a"], a["axis"]
    flat = axis is None
    if flat:
        x, axis = E.call("reshape", x, (-1,)), 0
    order = E.call("argsort", x, axis=axis, kind="stable")  # the sort's permutation (ties: any pairing)
    grad = E.call("put_along_axis", E.call("zeros_like", x), order, g, axis)
    return {"a": E.call("reshape", grad, tuple(a["a"].shape)) if flat else grad}


def _along_key(E, shape: tuple, indices, axis: int) -> tuple:
    """The index key that reads what ``take_along_axis(x, indices, axis)`` reads, for x of ``shape``."""
    key = []
    for i, n in enumerate(shape):
        if i == axis:
            key.append(indices)
        else:
            key.append(E.call("reshape", E.call("arange", n), tuple(n if j == i else 1 for j in range(len(shape)))))
    return tuple(key)


@derivative_rule("take_along_axis")
def _take_along_axis(E, g, out, a):  # a gather: scatter-add back (an index read twice adds up)
    x, indices, axis = a["arr"], a["indices"], a["axis"]
    if axis is None:
        flat = E.call("add_at", E.call("zeros", (int(np.prod(x.shape)),), x.dtype), (indices,), g)
        return {"arr": E.call("reshape", flat, tuple(x.shape))}
    axis %= len(x.shape)
    return {"arr": E.call("add_at", E.call("zeros_like", x), _along_key(E, tuple(x.shape), indices, axis), g)}


def _distinct_along(indices, axis) -> bool:
    """Are ``indices`` a different place for each value of a slice along ``axis``?"""
    if isinstance(indices, Node):  # known only when the graph runs: a sort's permutation is
        return indices.op is not None and indices.op.name in ("argsort", "argpartition")
    values = np.asarray(_data_of(indices))
    if hasattr(values, "get"):
        values = values.get()
    if axis is None:
        values, axis = values.reshape(-1), 0
    moved = np.moveaxis(values, axis, -1).reshape(-1, values.shape[axis]) if values.ndim else values.reshape(1, 1)
    return all(np.unique(row).size == row.size for row in moved)


@derivative_rule("put_along_axis")
def _put_along_axis(E, g, out, a):  # a write: the written places give arr nothing, values get them
    arr, indices, values, axis = a["arr"], a["indices"], a["values"], a["axis"]
    grads = {"arr": E.call("put_along_axis", g, indices, 0.0, axis)}
    if is_array(values):
        if not _distinct_along(indices, axis):
            raise NonDifferentiable("np.put_along_axis writing one place twice has no derivative rule "
                                    "(NumPy keeps the last write)")
        read = E.call("take_along_axis", g, indices, axis)
        grads["values"] = E.sum_to(read, tuple(values.shape))
    return grads


# -- ufunc.at: updates through an index ----------------------------------------------------------

def _landed(E, g, indices, b):
    """What the update ``b`` at ``indices`` reads back from ``g``, summed to b's shape."""
    return E.sum_to(E.call("getitem", g, indices), tuple(b.shape))


@derivative_rule("add_at")
def _add_at(E, g, out, a):  # out = a, then out[i] += b for every index: each b gets g there
    b = a["b"]
    return {"a": g, "b": _landed(E, g, a["indices"], b) if is_array(b) else None}


@derivative_rule("subtract_at")
def _subtract_at(E, g, out, a):
    b = a["b"]
    return {"a": g, "b": E.call("negative", _landed(E, g, a["indices"], b)) if is_array(b) else None}


@derivative_rule("negative_at")
def _negative_at(E, g, out, a):  # each element negated once per time its index comes up
    x = a["a"]
    return {"a": E.call("multiply", g, E.call("negative_at", E.call("ones_like", x), a["indices"]))}


@derivative_rule("multiply_at")
def _multiply_at(E, g, out, a):  # out = a * (the product of the b's landing there)
    x, b, indices = a["a"], a["b"], a["indices"]
    factor = E.call("multiply_at", E.call("ones_like", x), indices, b)
    grads = {"a": E.call("multiply", g, factor)}
    if is_array(b):  # d out / d b_k = out / b_k (b without zeros)
        read = E.call("getitem", E.call("multiply", g, out), indices)
        grads["b"] = E.sum_to(E.call("divide", read, b), tuple(b.shape))
    return grads


def _extremum_at(E, g, out, a):  # the gradient goes to whichever value won (ties: to a)
    x, b, indices = a["a"], a["b"], a["indices"]
    kept = E.call("equal", out, x)
    grads = {"a": E.call("where", kept, g, 0.0)}
    if is_array(b):
        won = E.call("logical_and", E.call("equal", E.call("getitem", out, indices), b),
                     E.call("getitem", E.call("logical_not", kept), indices))
        grads["b"] = E.sum_to(E.call("where", won, E.call("getitem", g, indices), 0.0), tuple(b.shape))
    return grads


DERIVATIVES["maximum_at"] = DERIVATIVES["minimum_at"] = _extremum_at
