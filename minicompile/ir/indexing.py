"""Python index keys (``x[1:, None, ..., idx]``): parsing, canonical form, result shape.

In:  the key of ``x[key]`` — an int, slice, ``None``, ``Ellipsis``, an index
     array (a graph node or its meta, or a constant list/tuple/ndarray of ints
     or bools), or a tuple of those — and the shape of ``x``.
Out: :func:`canonical_key` — one spelling per meaning: always a tuple, ints
     non-negative and bounds-checked, slices with explicit start/stop/step,
     constant index arrays as nested tuples (NumPy reads a tuple *inside* the
     key as an array), one trailing ``Ellipsis`` kept only where the user wrote
     one (it decides whether a 0-d result is a scalar or a 0-d view);
     :func:`result_shape` — the shape NumPy gives ``x[key]``, raising
     NumPy's IndexError where NumPy would.

NumPy's rules, in the order this module applies them:

1. Basic entries: an int drops its axis, a slice keeps it (``len(range(...))``),
   ``None`` inserts an axis of 1, ``Ellipsis`` stands for as many full slices
   as the other entries leave.
2. Advanced entries: integer arrays and boolean arrays (and, once any array is
   present, plain ints too) are broadcast together to one shape B; a boolean
   array of rank k consumes k axes and acts like its ``nonzero()`` — one index
   array of length ``count(True)`` — so its length is known only for constants.
3. Placement of B: where the first advanced entry was when all advanced entries
   are next to each other, otherwise at the front.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ops.registry import DataDependent, TensorMeta, symbolic_broadcast
from .symbolic import Sym, is_symbolic, size_hint

_INVALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) "
            "and integer or boolean arrays are valid indices")


def _is_constant_array(entry: Any) -> bool:
    """A constant index array, held as a nested tuple (a meta is a tuple too)."""
    return isinstance(entry, tuple) and not isinstance(entry, TensorMeta)


def _is_array(entry: Any) -> bool:
    return hasattr(entry, "shape") and hasattr(entry, "dtype") and not isinstance(entry, np.generic)


def _is_int(entry: Any) -> bool:
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, (bool, np.bool_))


def _constant_array(entry: Any) -> tuple:
    """A list/tuple/ndarray of Python values as a nested tuple, checked like NumPy."""
    arr = np.asarray(entry)
    if arr.dtype == object or (arr.size and arr.dtype.kind not in "biu"):
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if arr.size == 0:
        arr = arr.astype(np.intp)  # [] indexes as an empty integer array
    return nested_tuple(arr.tolist())


def nested_tuple(value: Any) -> Any:
    """Nested lists as nested tuples: hashable, and printed as Python."""
    return tuple(nested_tuple(v) for v in value) if isinstance(value, list) else value


def _array_meta(entry: Any) -> tuple[tuple[int, ...], np.dtype]:
    if _is_array(entry):
        return tuple(entry.shape), np.dtype(entry.dtype)
    arr = np.asarray(entry)
    return arr.shape, (np.dtype(np.intp) if arr.size == 0 else arr.dtype)


def _entries(key: Any) -> list:
    """The key as a list of entries; constant arrays become nested tuples."""
    if not isinstance(key, tuple) or isinstance(key, TensorMeta):
        key = (key,)
    out = []
    for entry in key:
        if isinstance(entry, (list, tuple)) and not isinstance(entry, TensorMeta):
            out.append(_constant_array(entry))
        elif isinstance(entry, np.ndarray):
            out.append(_constant_array(entry))
        elif isinstance(entry, (bool, np.bool_)):
            out.append(bool(entry))  # a 0-d boolean index
        elif entry is None or entry is Ellipsis or isinstance(entry, slice) or _is_int(entry) \
                or _is_array(entry):
            out.append(int(entry) if _is_int(entry) else entry)
        else:
            raise IndexError(_INVALID)
    return out


def _consumed(entry: Any) -> int:
    """How many axes of x an entry indexes."""
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, (slice, int)) and not isinstance(entry, bool):
        return 1
    shape, dtype = _array_meta(entry)
    return len(shape) if dtype == np.bool_ else 1


def _check_array(entry: Any) -> None:
    shape, dtype = _array_meta(entry)
    if dtype.kind not in "biu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")


def canonical_key(key: Any, shape: tuple[int, ...]) -> tuple:
    """``key`` in canonical form for an array of ``shape`` (see the module docstring)."""
    entries = _entries(key)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    for e in entries:
        if not (e is None or e is Ellipsis or isinstance(e, (slice, int))):
            _check_array(e)
    used = sum(_consumed(e) for e in entries)
    if used > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {used} were indexed")
    # Walk the entries with the axis each one starts at.
    out, axis = [], 0
    for e in entries:
        if e is Ellipsis:
            out.append(Ellipsis)
            axis += len(shape) - used
        elif e is None:
            out.append(None)
        elif isinstance(e, bool):
            out.append(e)
        elif isinstance(e, int):
            n = shape[axis]
            if not -n <= e < n:
                raise IndexError(f"index {e} is out of bounds for axis {axis} with size {n}")
            out.append(e if e >= 0 else e + n)
            axis += 1
        elif isinstance(e, slice):
            out.append(_canonical_slice(e, shape[axis]))
            axis += 1
        else:
            k = _consumed(e)
            arr_shape, dtype = _array_meta(e)
            if dtype == np.bool_:
                for i, (have, want) in enumerate(zip(arr_shape, shape[axis:axis + k])):
                    if have != want:
                        raise IndexError(
                            f"boolean index did not match indexed array along axis {axis + i}; "
                            f"size of axis is {want} but size of corresponding boolean axis is {have}")
            out.append(e)
            axis += k
    return tuple(out)


def _canonical_slice(s: slice, n: int) -> slice:
    for part in (s.start, s.stop, s.step):
        if part is not None and not _is_int(part) and not isinstance(part, Sym):
            raise TypeError("slice indices must be integers or None or have an __index__ method")
    if s.step == 0:
        raise ValueError("slice step cannot be zero")
    if is_symbolic((n, s)):
        return _symbolic_slice(s, n)
    start, stop, step = s.indices(n)
    if not len(range(start, stop, step)):
        return slice(0, 0, 1)  # every empty slice is spelled the same
    if stop < 0:
        stop = None  # .indices() says -1 for "before the first element"
    return slice(start, stop, step)


def _symbolic_slice(s: slice, n: Any) -> slice:
    """``_canonical_slice`` for a symbolic axis length: Python's clamping rules,
    each comparison a decision of the shape environment (a guard)."""
    step = 1 if s.step is None else s.step
    if step > 0:
        start = 0 if s.start is None else _clamp(s.start, n, 0, n)
        stop = n if s.stop is None else _clamp(s.stop, n, 0, n)
    else:
        start = n - 1 if s.start is None else _clamp(s.start, n, -1, n - 1)
        stop = -1 if s.stop is None else _clamp(s.stop, n, -1, n - 1)
    if range_length(start, stop, step) == 0:
        return slice(0, 0, 1)
    return slice(start, None if (isinstance(stop, int) and stop < 0) else stop, step)


def _clamp(i: Any, n: Any, lo: Any, hi: Any) -> Any:
    if i < 0:
        i = i + n
    return lo if i < lo else hi if i > hi else i


def range_length(start: Any, stop: Any, step: int) -> Any:
    """``len(range(start, stop, step))``, also for symbolic bounds.  A symbolic
    span is divided exactly: the example's remainder is guarded
    (``(s0 + 1) % 2 == 0``), so the length stays one expression."""
    span, step = (stop - start, step) if step > 0 else (start - stop, -step)
    if span <= 0:
        return 0
    if isinstance(span, int):
        return -(-span // step)
    adjust = (-size_hint(span)) % step
    return (span + adjust) // step


def _advanced_length(entry: Any) -> tuple[int, ...]:
    """The broadcast shape an advanced entry contributes."""
    if isinstance(entry, bool):
        return (int(entry),)
    if isinstance(entry, int):
        return ()
    shape, dtype = _array_meta(entry)
    if dtype != np.bool_:
        return shape
    if not _is_constant_array(entry):
        raise DataDependent("boolean mask indexing with an array mask: the result's length "
                            "is the number of True values")
    return (int(np.count_nonzero(entry)),)


def expand_ellipsis(key: tuple, ndim: int) -> tuple:
    """A basic ``key`` with its Ellipsis replaced by the full slices it stands
    for on an array of ``ndim`` axes (rule 1 above)."""
    if not any(e is Ellipsis for e in key):
        return key
    at = next(i for i, e in enumerate(key) if e is Ellipsis)
    used = sum(1 for e in key if e is not None and e is not Ellipsis)
    return key[:at] + (slice(None),) * (ndim - used) + key[at + 1:]


def is_advanced(key: tuple) -> bool:
    return any(not (e is None or e is Ellipsis or isinstance(e, (slice, int))) or isinstance(e, bool)
               for e in key)


def result_shape(key: tuple, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``x[key]`` for a canonical ``key`` (raises DataDependent for array masks)."""
    advanced = is_advanced(key)
    used = sum(_consumed(e) for e in key)
    pieces: list[Any] = []  # per entry: a tuple of dims, or "ADV" for an advanced entry
    axis = 0
    for e in key:
        if e is Ellipsis:
            rest = len(shape) - used
            pieces.append(tuple(shape[axis:axis + rest]))
            axis += rest
        elif e is None:
            pieces.append((1,))
        elif isinstance(e, slice):
            pieces.append((range_length(e.start, -1 if e.stop is None else e.stop, e.step),))
            axis += 1
        elif isinstance(e, int) and not isinstance(e, bool) and not advanced:
            pieces.append(())
            axis += 1
        else:
            pieces.append("ADV")
            axis += _consumed(e)
    trailing = tuple(shape[axis:])
    if not advanced:
        return tuple(d for p in pieces for d in p) + trailing
    adv_entries = [e for e, p in zip(key, pieces) if p == "ADV"]
    adv_shapes = [_advanced_length(e) for e in adv_entries]
    try:
        # An index array of symbolic shape (``table[tokens]``) keeps its sizes.
        b = symbolic_broadcast(adv_shapes) if is_symbolic(adv_shapes) \
            else tuple(np.broadcast_shapes(*adv_shapes))
    except ValueError:
        shapes = " ".join(str(s) for s in adv_shapes)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {shapes}") from None
    if all(isinstance(d, Sym) or d for d in b):  # symbols are never 0
        _check_bounds(key, shape)  # NumPy checks only the indices it will visit
    positions = [i for i, p in enumerate(pieces) if p == "ADV"]
    # Any other entry between two advanced ones separates them, even an
    # Ellipsis that stands for no axes; then B goes to the front.
    adjacent = positions[-1] - positions[0] == len(positions) - 1
    out: list[int] = [] if adjacent else list(b)
    for i, p in enumerate(pieces):
        if p != "ADV":
            out.extend(p)
        elif adjacent and i == positions[0]:
            out.extend(b)
    return tuple(out) + trailing


def _check_bounds(key: tuple, shape: tuple[int, ...]) -> None:
    """Constant integer index arrays must hold in-bounds indices."""
    axis = 0
    used = sum(_consumed(e) for e in key)
    for e in key:
        if e is Ellipsis:
            axis += len(shape) - used
            continue
        if _is_constant_array(e) and _array_meta(e)[1] != np.bool_:
            flat, n = np.asarray(e).ravel(), shape[axis]
            bad = flat[(flat < -n) | (flat >= n)]
            if bad.size:
                raise IndexError(f"index {bad[0]} is out of bounds for axis {axis} with size {n}")
        axis += _consumed(e)


def gives_scalar(key: tuple, shape: tuple[int, ...]) -> bool:
    """NumPy returns a NumPy scalar for a 0-d ``x[key]`` unless the key holds an
    Ellipsis (then it is a 0-d view)."""
    return Ellipsis not in key


def setitem_value_check(key: tuple, shape: tuple[int, ...], value: Any) -> None:
    """``x[key] = value`` needs ``value`` to broadcast to the indexed shape
    (NumPy also drops extra leading axes of length 1 from ``value``)."""
    value_shape = tuple(value.shape) if _is_array(value) else np.shape(value)
    try:
        target = result_shape(key, shape)
    except DataDependent:
        # x[mask] = v is fine, whatever the count, when v is one value.
        if int(np.prod(value_shape)) == 1:
            return
        raise
    if target == () and gives_scalar(key, shape) and value_shape != ():
        # One element (``x[0] = v``, ``x[1, 2] += v``): NumPy takes no array for it,
        # not even one of size 1 (``x[0, ...] = v`` is a 0-d view, which broadcasts).
        raise ValueError("setting an array element with a sequence.")
    vs = value_shape
    while len(vs) > len(target) and vs[0] == 1:
        vs = vs[1:]
    if len(vs) > len(target) or any(v not in (1, t) for v, t in zip(vs[::-1], target[::-1])):
        raise ValueError(f"could not broadcast input array from shape {value_shape} "
                         f"into shape {target}")
