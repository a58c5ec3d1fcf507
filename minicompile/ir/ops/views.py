"""Shape and layout: ops that rearrange elements without computing new values.

In:  one array (or a sequence of arrays for ``concatenate``/``stack``) and
     Python-valued shape arguments: ``shape``, ``axes``, ``axis``, ``reps``...
Out: registered :class:`OpDef` entries.  Kind ``view`` where NumPy returns a
     view (``transpose``, ``reshape``, ``squeeze``, ``broadcast_to``...), kind
     ``layout`` where it copies into a new arrangement (``concatenate``,
     ``tile``, ``pad``, ``roll``).  None of them returns a NumPy scalar.

Shape arguments must be Python values: an array there would make the output
shape depend on data (:class:`DataDependent`).  ``transpose`` and ``reshape``
have explicit rules (the inductor lowers them to index arithmetic); the rest
ask NumPy on ghost inputs.  Symbolic sizes (dynamic shapes) keep their symbols
through ``concatenate``/``stack``, ``pad`` and ``sliding_window_view`` (a
convolution's batch axis passes through untouched); any other op here pins
the sizes it touches.

``split``/``array_split`` return several arrays.  The IR keeps one output per
node, so a split is *several* nodes, one ``getitem`` with a basic slice per
piece: :func:`split_keys` computes those slices (raising what NumPy raises),
and the pieces are views of the input, just as NumPy's are.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..symbolic import Sym, is_symbolic
from .registry import (
    OpDef,
    TensorMeta,
    node_free,
    normalize_axes,
    normalize_axis,
    register,
    simple_op,
    symbolic_or_numpy,
    with_signature,
)

# ---------------------------------------------------------------------------
# transpose and reshape: explicit rules (lowered as index arithmetic)
# ---------------------------------------------------------------------------


def _transpose(a, axes=None):
    return np.transpose(a, axes)


def _transpose_canon(args: dict[str, Any]) -> dict[str, Any]:
    ndim = args["a"].ndim
    axes = args["axes"]
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    axes = tuple(int(x) for x in axes)
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    axes = tuple(normalize_axes(x, ndim)[0] for x in axes)
    if len(set(axes)) != ndim:
        raise ValueError("repeated axis in transpose")
    return {**args, "axes": axes}


def _transpose_meta(a: TensorMeta, axes: tuple[int, ...]) -> TensorMeta:
    return TensorMeta(tuple(a.shape[i] for i in axes), a.dtype)


register(OpDef("transpose", "view", _transpose, _transpose_meta, canonicalize=_transpose_canon))


def _reshape(a, shape):
    return np.reshape(a, shape)


def _reshape_canon(args: dict[str, Any]) -> dict[str, Any]:
    a = args["a"]
    shape = node_free(args["shape"], "reshape's shape")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(n if isinstance(n, Sym) else int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or a.size % known:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
        shape = tuple(a.size // known if n == -1 else n for n in shape)
    if any(n < 0 for n in shape) or math.prod(shape) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
    return {**args, "shape": shape}


register(
    OpDef(
        "reshape", "view", _reshape,
        lambda a, shape: TensorMeta(shape, a.dtype),
        canonicalize=_reshape_canon,
    )
)

# ---------------------------------------------------------------------------
# The rest: NumPy's answer on ghosts
# ---------------------------------------------------------------------------


def _ravel(a, order="C"):
    return np.ravel(a, order)


def _swapaxes(a, axis1, axis2):
    return np.swapaxes(a, axis1, axis2)


def _moveaxis(a, source, destination):
    return np.moveaxis(a, source, destination)


def _expand_dims(a, axis):
    return np.expand_dims(a, axis)


def _squeeze(a, axis=None):
    return np.squeeze(a, axis)


def _broadcast_to(array, shape):
    return np.broadcast_to(array, shape)


def _flip(m, axis=None):
    return np.flip(m, axis)


def _atleast(n: int):
    fn = {1: np.atleast_1d, 2: np.atleast_2d, 3: np.atleast_3d}[n]

    def impl(a):
        return fn(a)

    impl.__name__ = fn.__name__
    return impl


def _tuple_arg(name: str):
    """Lists and tuples mean the same in shape-like arguments; keep one spelling."""

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        value = node_free(args[name], name)
        return {**args, name: tuple(value) if isinstance(value, list) else value}

    return canonicalize


for _name, _impl, _canon in (
    ("ravel", _ravel, None),
    ("swapaxes", _swapaxes, None),
    ("moveaxis", _moveaxis, None),
    ("expand_dims", _expand_dims, _tuple_arg("axis")),
    ("squeeze", _squeeze, _tuple_arg("axis")),
    ("broadcast_to", _broadcast_to, _tuple_arg("shape")),
    ("atleast_1d", _atleast(1), None),
    ("atleast_2d", _atleast(2), None),
    ("atleast_3d", _atleast(3), None),
):
    simple_op(_name, _impl, "view", canonicalize=_canon)


def _sliding_window_view(x, window_shape, axis=None):
    return np.lib.stride_tricks.sliding_window_view(x, window_shape, axis)


def _sliding_window_shape(x, window_shape, axis=None) -> tuple:
    """Each windowed axis ``d`` shrinks to ``n_d - w + 1``, the windows' sizes
    appended; a symbolic ``n_d`` asks ``n_d >= w`` (static for ``w <= 2``)."""
    window = (window_shape,) if isinstance(window_shape, (int, np.integer)) else tuple(window_shape)
    if is_symbolic(window) or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool)
                                      for w in window):
        raise NotImplementedError("sliding_window_view: window sizes other than ints")
    if any(w < 0 for w in window):
        raise NotImplementedError("sliding_window_view: a negative window (NumPy raises)")
    if axis is None:
        if len(window) != x.ndim:
            raise NotImplementedError("sliding_window_view: window rank differs (NumPy raises)")
        axes = tuple(range(x.ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if len(axes) != len(window) or not all(
                isinstance(a, (int, np.integer)) and not isinstance(a, bool) and -x.ndim <= a < x.ndim
                for a in axes):
            raise NotImplementedError("sliding_window_view: axes NumPy refuses")
        axes = tuple(int(a) % x.ndim for a in axes)
    shape = list(x.shape)
    for d, w in zip(axes, window):
        if shape[d] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        shape[d] = shape[d] - int(w) + 1
    return tuple(shape) + tuple(int(w) for w in window)


# np.flip indexes with m[::-1, ...]; on a 0-d array that is m[()], a NumPy scalar.
simple_op("flip", _flip, "view", canonicalize=_tuple_arg("axis"), scalar_result=True)
simple_op("sliding_window_view", _sliding_window_view, "view", canonicalize=_tuple_arg("window_shape"),
          meta=symbolic_or_numpy(_sliding_window_view, _sliding_window_shape, at_hints=True))


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return np.diagonal(a, offset, axis1, axis2)


def _rot90(m, k=1, axes=(0, 1)):
    return np.rot90(m, k, axes)


def _diag(v, k=0):
    return np.diag(v, k)


simple_op("diagonal", _diagonal, "view")
simple_op("rot90", _rot90, "view", canonicalize=_tuple_arg("axes"))
simple_op("diag", _diag, "layout")  # 1-d in: a new 2-d array; 2-d in: its diagonal


# -- joining: a sequence of arrays in -------------------------------------------------


def _sequence(args: dict[str, Any], name: str) -> dict[str, Any]:
    seq = args[name]
    # One array is a sequence too: np.concatenate(x) joins x's rows.
    out = {**args, name: seq if isinstance(seq, TensorMeta) else tuple(seq)}
    if "dtype" in args and args["dtype"] is not None:
        out["dtype"] = np.dtype(args["dtype"])
    return out


def _concatenate(arrays, axis=0, dtype=None, casting="same_kind"):
    return np.concatenate(arrays, axis=axis, dtype=dtype, casting=casting)


def _stack(arrays, axis=0, dtype=None, casting="same_kind"):
    return np.stack(arrays, axis=axis, dtype=dtype, casting=casting)


def _hstack(tup, dtype=None, casting="same_kind"):
    return np.hstack(tup, dtype=dtype, casting=casting)


def _vstack(tup, dtype=None, casting="same_kind"):
    return np.vstack(tup, dtype=dtype, casting=casting)


def _dstack(tup):
    return np.dstack(tup)


def _column_stack(tup):
    return np.column_stack(tup)


def _joined(arrays: Any) -> list[TensorMeta]:
    return [arrays] if isinstance(arrays, TensorMeta) else list(arrays)


def _same_dims(shapes: list[tuple], skip: int | None, what: str) -> None:
    for shape in shapes[1:]:
        if len(shape) != len(shapes[0]):
            raise ValueError("all the input array dimensions except for the concatenation axis must match exactly")
        for i, (a, b) in enumerate(zip(shapes[0], shape)):
            if i != skip and a != b:
                raise ValueError(f"all the input array dimensions except for the concatenation axis "
                                 f"must match exactly, but along dimension {i}, {what}")


def _concatenate_shape(arrays, axis=0, dtype=None, casting="same_kind") -> tuple:
    metas = _joined(arrays)
    if isinstance(arrays, TensorMeta):  # np.concatenate(x): x's rows joined
        shape = arrays.shape
        if axis != 0:
            raise NotImplementedError("np.concatenate(x, axis) of one array")
        return (shape[0] * shape[1],) + tuple(shape[2:])
    if axis is None:
        return (sum(m.size for m in metas),)
    ax = normalize_axis(axis, metas[0].ndim)
    _same_dims([m.shape for m in metas], ax, "the sizes differ")
    shape = list(metas[0].shape)
    shape[ax] = sum(m.shape[ax] for m in metas)
    return tuple(shape)


def _stack_shape(arrays, axis=0, dtype=None, casting="same_kind") -> tuple:
    metas = _joined(arrays)
    if isinstance(arrays, TensorMeta):
        raise NotImplementedError("np.stack(x) of one array")
    _same_dims([m.shape for m in metas], None, "the sizes differ")
    ax = normalize_axis(axis, metas[0].ndim + 1)
    shape = list(metas[0].shape)
    shape.insert(ax, len(metas))
    return tuple(shape)


SYMBOLIC_JOIN = {"concatenate": _concatenate_shape, "stack": _stack_shape}

for _name, _impl, _param in (
    ("concatenate", _concatenate, "arrays"),
    ("stack", _stack, "arrays"),
    ("hstack", _hstack, "tup"),
    ("vstack", _vstack, "tup"),
    ("dstack", _dstack, "tup"),
    ("column_stack", _column_stack, "tup"),
):
    simple_op(_name, _impl, "layout",
              canonicalize=(lambda p: (lambda args: _sequence(args, p)))(_param),
              meta=symbolic_or_numpy(_impl, SYMBOLIC_JOIN[_name]) if _name in SYMBOLIC_JOIN else None)


# -- copies into a new arrangement --------------------------------------------------


def _tile(A, reps):
    return np.tile(A, reps)


def _repeat(a, repeats, axis=None):
    return np.repeat(a, repeats, axis)


def _roll(a, shift, axis=None):
    return np.roll(a, shift, axis)


def _pad(array, pad_width, mode="constant", constant_values=0):
    if mode == "constant":
        return np.pad(array, pad_width, mode, constant_values=constant_values)
    return np.pad(array, pad_width, mode)


def _pad_canon(args: dict[str, Any]) -> dict[str, Any]:
    node_free(args["pad_width"], "pad's pad_width")
    if args["mode"] not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"np.pad mode {args['mode']!r} is not supported")
    return args


def _pad_shape(array, pad_width, mode="constant", constant_values=0) -> tuple:
    """Each axis grows by its ``before + after``: a symbolic size passes through."""
    if is_symbolic(pad_width):
        raise NotImplementedError("np.pad: symbolic pad widths")
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu" or (widths.size and widths.min() < 0):
        raise NotImplementedError("np.pad: pad widths NumPy refuses")
    try:
        pairs = np.broadcast_to(widths, (array.ndim, 2))
    except ValueError:
        raise NotImplementedError("np.pad: pad widths that do not broadcast (NumPy raises)") from None
    out = []
    for n, (before, after) in zip(array.shape, pairs.tolist()):
        if mode != "constant" and not isinstance(n, Sym) and n == 0 and before + after:
            raise NotImplementedError("np.pad: extending an empty axis (NumPy raises)")
        out.append(n + before + after)
    return tuple(out)


def _copy(a, order="K"):
    return np.copy(a, order=order)


simple_op("tile", _tile, "layout", canonicalize=_tuple_arg("reps"))
simple_op("repeat", _repeat, "layout", canonicalize=_tuple_arg("repeats"))
simple_op("roll", _roll, "layout", canonicalize=_tuple_arg("shift"))
simple_op("pad", _pad, "layout", canonicalize=_pad_canon, meta=symbolic_or_numpy(_pad, _pad_shape, at_hints=True))
simple_op("copy", _copy, "layout", meta=lambda a, order="K": TensorMeta(a.shape, a.dtype))  # sizes kept symbolic
simple_op("triu", with_signature(lambda m, k=0: np.triu(m, k), np.triu), "layout")
simple_op("tril", with_signature(lambda m, k=0: np.tril(m, k), np.tril), "layout")


# ---------------------------------------------------------------------------
# split: several outputs, one basic-slice node each
# ---------------------------------------------------------------------------


def split_keys(shape: tuple[int, ...], indices_or_sections: Any, axis: int = 0,
               equal: bool = True) -> list[tuple]:
    """The index key of each piece of ``np.split`` (``equal``) or ``np.array_split``.

    Each key is a canonical basic index (see :mod:`minicompile.ir.indexing`):
    full slices up to ``axis``, then the piece's slice.
    """
    node_free(indices_or_sections, "split's indices_or_sections")
    ndim = len(shape)
    if ndim == 0:
        raise IndexError("tuple index out of range")  # NumPy reads shape[axis] first
    axis = normalize_axis(axis, ndim)
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        sections = int(indices_or_sections)
        if equal and sections == 0:
            raise ZeroDivisionError("integer modulo by zero")  # np.split tests n % sections first
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    keys = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        # NumPy slices with the raw bounds: negative and out-of-range ones clip.
        piece = slice(*slice(start, stop).indices(n)[:2], 1)
        keys.append((slice(None),) * axis + (piece,))
    return keys
