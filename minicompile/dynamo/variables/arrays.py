"""Arrays: what Python's operators, subscripts and attributes do on an array.

An :class:`ArrayVariable` never holds data: it stands for the ``ir.Node`` of
the array's current value in the graph being built.

In:  array variables and the other operand, key or attribute name, from the
     opcode handlers (through the dispatch in builtins.py).
Out: the result's variable, a new node of the graph: ``x + y`` is an ``add``
     node, ``x[key]`` a ``getitem``, ``x.T`` a ``transpose``; ``x.shape`` and
     ``x.dtype`` are constants (they are guarded on every array input).  A
     write — ``x[key] = v``, ``x += y`` — is functional in the graph and
     written back after it: :func:`update_array` hands the new value to
     functionalization.py, which keeps every view of the same memory in step.

Calls of NumPy functions and array methods are numpy_calls.py's.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...ir import OPS, Node
from ...ir.symbolic import Sym
from ..exc import Unsupported
from ..source import Source
from .base import ConstantVariable, MethodVariable, VariableTracker, specialize_sizes
from .containers import (DictVariable, IteratorVariable, ListVariable, TupleVariable, is_constant, python_value,
                         wrap_value)

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator


# Iterating over an array unrolls one view per row, up to this many rows.
MAX_UNROLLED_ROWS = 1024


class ArrayVariable(VariableTracker):
    """An array: it stands for the ``ir.Node`` of its current value.

    ``storage`` is the memory it lives in and ``view`` the chain of view ops
    from that storage's base (see functionalization.py).  A write to the
    storage through any variable bumps its version; reading ``node`` then
    re-derives this variable's value from the base's new one.  ``storage`` is
    None for values without memory of their own to write to: NumPy scalars
    and ``mc.Tensor``, whose writes the tape records (``+=`` on one that nothing
    else holds is its new value; see ``binary``).

    ``scalar`` is True where eager NumPy would hold a NumPy scalar
    (np.float32(...)) rather than an array: the 0-d result of a ufunc or a
    reduction, and methods of such a scalar.  ``layout`` is the memory layout
    NumPy would give it (byte strides, "C", or None: unknown); ``readonly``
    whether NumPy refuses writes through it.

    ``python`` is a Python type (``bool``) where eager holds a Python value
    computed from array data (``np.allclose(a, b)``): the 0-d node becomes that
    value where it leaves the graph (returned, or at a graph break), and any
    other use breaks the graph first, since Python would compute with the
    bool itself (``True + 1`` is the int 2, not an array).
    """

    def __init__(self, node: Node, source: Source | None = None, scalar: bool = False, *,
                 storage: Any = None, view: tuple = (), layout: Any = None, readonly: bool = False,
                 python: type | None = None):
        self._node = node
        self.source = source
        self.scalar = scalar or python is not None
        self.python = python
        self.storage = storage
        self.tensor_viewed = False  # (an mc.Tensor's variable) a view of it was taken in the trace
        self.tensor_view_of: ArrayVariable | None = None  # (an mc.Tensor's variable) the one it views
        self.view = view
        self.layout = layout
        self.readonly = readonly
        self._seen = (storage, storage.version) if storage is not None else None

    # Set on a loop's index and on Python arithmetic of it (loop_capture.py): eager
    # holds a Python number there, ``(int | float | bool, low, high)`` (its bounds
    # where known), which NumPy converts to the other operand's dtype (NEP 50).
    weak: Any = None

    @property
    def eager_python(self) -> type | None:
        """The Python type eager code holds for this value (None: an array or NumPy scalar)."""
        return self.python or (self.weak[0] if self.weak is not None else None)

    def python_type(self) -> type:
        if self.weak is not None:
            return self.weak[0]
        # eager holds a NumPy scalar where ``scalar`` is set (an mc.Tensor counts as an array here)
        # (a Python value, np.allclose's bool, where ``python`` says so)
        return (self.python or self.node.meta.dtype.type) if self.scalar else np.ndarray

    @property
    def node(self) -> Node:
        storage = self.storage
        if storage is not None:
            root = storage.forward[0] if storage.forward is not None else storage
            if self._seen[0] is not root or self._seen[1] != root.version:
                storage.owner.refresh(self)  # written since: replay the view on the new base
        return self._node

    def set_node(self, node: Node, root: Any) -> None:
        """``node`` is this variable's value as of ``root``'s current version."""
        self._node = node
        self._seen = (root, root.version)

    def describe(self) -> str:
        if self.python is not None:
            return f"Python {self.python.__name__} computed from arrays"
        return f"{'NumPy scalar' if self.scalar else 'array'} {self.node.meta}"

    def unpack(self, tx: "InstructionTranslator") -> list[VariableTracker]:
        """``for row in x`` and ``i, j = np.indices(shape)``: the views ``x[0]``, ``x[1]``...
        (NumPy scalars for a 1-d ``x``), unrolled over the first size (guarded)."""
        meta = self.node.meta
        if self.python is not None or meta.ndim == 0:
            raise Unsupported("TypeError: iteration over a 0-d array", numpy_error=True)
        return list(RowItems(tx, RowIteration([self]), specialize_sizes(meta.shape[0])))

    def iterate_rows(self, tx: "InstructionTranslator") -> "IteratorVariable | None":
        """``iter(x)``: its rows, counted (a long loop over them may be a loop node)."""
        return row_iterator(tx, [self])

    def __repr__(self) -> str:
        return f"ArrayVariable({self._node!r}, {self.source}, view={[s.op for s in self.view]})"


# -- iterating over rows -------------------------------------------------------------------

@dataclass(eq=False)
class RowIteration:
    """``for row in x`` / ``enumerate(x, start)`` / ``zip(x, y, ...)`` over arrays with one
    known first size: the items, made as they are read (unrolled: the views ``x[k]``),
    or, in a loop node's body, from the loop's index."""

    arrays: list  # ArrayVariables, each iterated along its first axis
    start: int | None = None  # enumerate's start (None: no index in the items)

    def item(self, tx: "InstructionTranslator", k: Any) -> VariableTracker:
        rows = [getitem(tx, a, ConstantVariable(k)) for a in self.arrays]
        return self._pack(rows, ConstantVariable(self.start + k) if self.start is not None else None)

    def _pack(self, rows: list, index: Any) -> VariableTracker:
        """``row``, ``(row_x, row_y)`` (zip), or ``(index, row)`` (enumerate)."""
        core = rows[0] if len(rows) == 1 else TupleVariable(rows)
        return core if index is None else TupleVariable([index, core])


class RowItems(Sequence):
    """The items of a :class:`RowIteration`, made as they are read."""

    def __init__(self, tx: "InstructionTranslator", rows: RowIteration, n: int):
        self.tx, self.rows, self.n = tx, rows, n
        self.made: dict[int, VariableTracker] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.n))]
        k = range(self.n)[k]
        if self.n > MAX_UNROLLED_ROWS:
            raise Unsupported(f"iterating over the {self.n} rows of an array (more than "
                              f"{MAX_UNROLLED_ROWS} are not unrolled)")
        if k not in self.made:
            self.made[k] = self.rows.item(self.tx, k)
        return self.made[k]


def row_iterator(tx: "InstructionTranslator", arrays: list, start: int | None = None) -> IteratorVariable | None:
    """An iterator over the rows of ``arrays`` (one known first size, at least 1; not 0-d, not a
    Python value): counted, so that a long loop over it may become a loop node.  None: anything
    else, iterated as before."""
    if not arrays or not all(isinstance(a, ArrayVariable) and a.python is None and a.weak is None
                             and a.node.meta.ndim >= 1 and isinstance(a.node.meta.shape[0], int)
                             for a in arrays):
        return None
    sizes = {a.node.meta.shape[0] for a in arrays}
    n = min(sizes)  # zip stops at the shortest
    rows = RowIteration(list(arrays), start)
    # (a loop node counts from 0: enumerate's index is start plus its index)
    return IteratorVariable(RowItems(tx, rows, n), counted=range(n), rows=rows)


# -- operators ------------------------------------------------------------------------------

def binary(tx: "InstructionTranslator", symbol: str, op: str | None, a: VariableTracker, b: VariableTracker,
           inplace: bool) -> VariableTracker:
    """``a symbol b`` (``a symbol= b``) where the operands are not both known at trace
    time: the ufunc ``op`` as a graph node; in place, written into ``a``."""
    if inplace and isinstance(a, ArrayVariable) and a.storage is not None:
        result = binary(tx, symbol, op, a, b, inplace=False)
        return update_array(tx, a, cast_in_place(tx, result, a, op or symbol), f"'{symbol}='")
    if inplace and isinstance(a, ArrayVariable) and not a.scalar:
        # An mc.Tensor (no storage: capture keeps no views of it) written in place.  Where
        # nothing else can see the write, the new value in its place is the write; else
        # the tape does it, where the caller and the tensor's views see it.
        seen_by = _seen_elsewhere(tx, a)
        if seen_by is not None:
            raise Unsupported(f"'{symbol}=' on an mc.Tensor that {seen_by} (a write the tape records, eagerly)")
        return cast_in_place(tx, binary(tx, symbol, op, a, b, inplace=False), a, op or symbol)
    for v in (a, b):
        if isinstance(v, (TupleVariable, ListVariable)):
            raise Unsupported(f"'{symbol}' between an array and a Python {v.describe()}")
    if op is None:
        raise Unsupported(f"operator '{symbol}' on arrays is not supported yet")
    if is_python_number(a) and is_python_number(b):
        return python_arithmetic(tx, symbol, op, (a, b))
    fast = _fast_power(a, b) if symbol == "**" else None
    if fast is not None:
        return tx.output.call(fast, {"x": a})
    return tx.output.call(op, {"x1": a, "x2": b})


def compare(tx: "InstructionTranslator", op: str, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """``a < b`` and the other comparisons: the ufunc ``op`` (``less``) as a graph node."""
    if is_python_number(a) and is_python_number(b):
        return python_arithmetic(tx, op, op, (a, b))
    return tx.output.call(op, {"x1": a, "x2": b})


def unary(tx: "InstructionTranslator", op: str, var: VariableTracker) -> VariableTracker:
    """``-x``, ``+x``, ``~x``: the ufunc ``op`` as a graph node."""
    if is_python_number(var):
        return python_arithmetic(tx, op, op, (var,))
    return tx.output.call(op, {"x": var})


# -- Python numbers the graph computes: a loop's index --------------------------------------

def is_python_number(var: VariableTracker) -> bool:
    """A Python number: known now, or computed in the graph from a loop's index."""
    if isinstance(var, ArrayVariable):
        return var.weak is not None
    return isinstance(var, ConstantVariable) and type(var.value) in (int, float, bool)


def python_arithmetic(tx: "InstructionTranslator", symbol: str, op: str, operands: tuple) -> ArrayVariable:
    """``i * dt``, ``i + 1``, ``-i`` on a loop's index: Python arithmetic, computed in
    int64/float64 (what a Python int or float becomes on its own), and a Python number
    again (weak) for what it meets next.  What Python and NumPy disagree on refuses."""
    if symbol in ("**", "<<", ">>", "pow", "left_shift", "right_shift"):
        raise Unsupported(f"'{symbol}' on the loop index (Python's unbounded ints)")
    if op in ("floor_divide", "remainder", "true_divide") and any(
            isinstance(v, ConstantVariable) and v.value == 0 for v in operands[1:]):
        raise Unsupported("division of the loop index by zero (Python raises)")
    names = ("x1", "x2") if len(operands) == 2 else ("x",)
    result = tx.output.call(op, dict(zip(names, operands)))
    kind = result.node.meta.dtype.kind
    result.weak = ({"b": bool, "i": int, "f": float}[kind], None, None) if kind in "bif" else None
    if result.weak is None:
        raise Unsupported(f"'{symbol}' on the loop index gives {result.node.meta.dtype}")
    return result


def _fast_power(base: VariableTracker, exponent: VariableTracker) -> str | None:
    """The ufunc ``ndarray.__pow__`` uses instead of np.power for a Python-number exponent.

    NumPy computes ``x ** 2`` as ``np.square(x)`` (so ``bool ** 2`` is int8) and,
    for float arrays, ``x ** 0.5`` as ``np.sqrt(x)`` (so ``-inf ** 0.5`` is nan);
    its other shortcuts agree with np.power.  NumPy scalars take no shortcut.
    """
    if not isinstance(base, ArrayVariable) or base.scalar or not isinstance(exponent, ConstantVariable):
        return None
    value = exponent.value
    if type(value) not in (int, float):
        return None
    if base.node.meta.dtype.kind == "f":
        return {0.5: "sqrt", 2: "square"}.get(value)
    return "square" if type(value) is int and value == 2 else None


# -- subscripts -----------------------------------------------------------------------------

def index_key(index: VariableTracker) -> Any:
    """An array subscript as the getitem op takes it: constants, arrays as variables, and
    a Python int the graph computes (the loop index, ``i - 1``) as a *position*: its 0-d
    int64 node, which indexing reads as the int it holds (negative counts from the end,
    out of bounds raises IndexError), see :func:`getitem` for the view it makes."""
    if isinstance(index, ArrayVariable):
        if index.weak is not None:
            if index.weak[0] is not int:  # x[True] adds an axis; a float raises TypeError
                raise Unsupported(f"a Python {index.weak[0].__name__} computed from the loop index as an index")
            return index.node
        return index
    if isinstance(index, TupleVariable):
        return tuple(index_key(v) for v in index.items)
    if isinstance(index, ListVariable):  # x[[0, 2]]: an integer-array index
        if not is_constant(index):
            raise Unsupported("indexing an array with a list of arrays is not supported yet")
    return python_value(index)


def getitem(tx: "InstructionTranslator", arr: ArrayVariable, index: VariableTracker) -> VariableTracker:
    """``arr[index]``: a ``getitem`` node (a view of ``arr`` where NumPy's is one).

    A key with positions (Python ints the graph computes) is an integer-array key in
    the graph, whose result NumPy copies; eager's key holds Python ints, so where the
    rest of the key is basic the result is a view of ``arr`` all the same: a write
    through it reaches ``arr``, and a write to ``arr`` shows through it."""
    if "getitem" not in OPS:
        raise Unsupported("array indexing is not supported yet")
    key = index_key(index)
    result = tx.output.call("getitem", {"a": arr, "key": key})
    if _positions(key) and _basic_key(key) and not result.scalar and arr.storage is not None:
        return tx.output.functional.position_view(arr, result.node)
    return result


def _positions(key: Any) -> bool:
    return any(isinstance(p, Node) for p in (key if isinstance(key, tuple) else (key,)))


def setitem(tx: "InstructionTranslator", arr: ArrayVariable, key: VariableTracker, value: VariableTracker) -> None:
    """``arr[key] = value``: a ``setitem`` node computes ``arr``'s new value, written into its memory."""
    if "setitem" not in OPS:
        raise Unsupported("array item assignment is not supported yet")
    if arr.storage is None:
        raise Unsupported(f"TypeError: {arr.describe()} does not support item assignment",
                          numpy_error=True)
    canonical = index_key(key)
    if _basic_key(canonical):  # an integer or boolean array key casts the value as an array
        value = stored_strictly(tx, value, arr.node.meta.dtype)
    updated = tx.output.call("setitem", {"a": arr, "key": canonical, "value": value})
    update_array(tx, arr, updated, "item assignment")


def _basic_key(key: Any) -> bool:
    """A key of integers, slices, ``None`` and ``...`` only (NumPy's basic indexing);
    a position (an ``ir.Node`` here: a Python int the graph computes) is an integer."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, (slice, Sym, Node))
               or (isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))) for p in parts)


def stored_strictly(tx: "InstructionTranslator", value: VariableTracker, dtype: np.dtype) -> VariableTracker:
    """``value`` as written into an array of ``dtype``: a NumPy float scalar the graph
    computed (not on CuPy arrays), stored into a signed integer array (by basic indexing or ``fill``;
    an array key casts it as an array), is converted as Python's ``int()``
    converts (NaN, an infinity or a value outside the integer's range raise,
    where a 0-d array would be cast silently), so the graph checks it first.  The
    check runs even when nothing reads the write; a failed one runs the frame as
    Python, where NumPy raises its own error."""
    if not (isinstance(value, ArrayVariable) and value.scalar and value.node.meta.dtype.kind == "f"
            and np.dtype(dtype).kind == "i") or tx.output.on_device:
        # (NumPy casts a float scalar into an unsigned array unsafely, never raising; on
        # CuPy arrays the value is a 0-d array, cast as arrays are)
        return value
    # int() truncates toward zero: v fits when -2**(bits-1) - 1 < v < 2**(bits-1),
    # compared in float64 (for int64, -2**63 - 1 is no float64, and none lies
    # between it and -2**63, so v >= -2**63 says the same).
    bits = np.dtype(dtype).itemsize * 8
    high = np.float64(2.0 ** (bits - 1))
    if bits == 64:
        above = tx.output.call("greater_equal", {"x1": value, "x2": np.float64(-(2.0 ** 63))})
    else:
        above = tx.output.call("greater", {"x1": value, "x2": np.float64(-(2.0 ** (bits - 1)) - 1)})
    inside = tx.output.call("logical_and", {"x1": above, "x2": tx.output.call("less", {"x1": value, "x2": high})})
    bad = tx.output.call("logical_not", {"x": inside})
    checked = tx.output.call("check", {"a": value, "bad": bad, "error": "ValueError",
                                       "message": f"cannot convert the value to {np.dtype(dtype)}"})
    return ArrayVariable(checked.node, scalar=True)  # a NumPy scalar stays one


def delitem(tx: "InstructionTranslator", arr: ArrayVariable, key: VariableTracker) -> None:
    """``del arr[key]``: NumPy's error."""
    raise Unsupported("ValueError: cannot delete array elements", numpy_error=True)


# -- in-place updates: functional in the graph, written back after it ------------------------

def _seen_elsewhere(tx: "InstructionTranslator", tensor: ArrayVariable) -> str | None:
    """Who besides the one local being written would see a write into ``tensor`` (an
    mc.Tensor's variable): the caller (an argument), a view of it, the tensor it views
    where anything can still read that one, another local, a container, an object's
    attribute or a function's default of any frame being traced, or anything the trace
    handed to the caller (its side effects: attributes, globals, items of the caller's
    containers); None when nobody.  (A closure reads the frame's name itself, which the
    write rebinds.)"""
    if tensor.source is not None:
        return "the caller passed"
    if tensor.tensor_viewed:
        return "a view was taken of"
    base = tensor.tensor_view_of
    if base is not None:
        # A view of a value nothing reads any more (``np.cov``'s ``c = dot(...).squeeze()``)
        # is that value's only way in: its write is its new value, as for a fresh tensor.
        if base.source is not None or base.tensor_view_of is not None or _holders(
                tx, lambda v: v is base or (v is not tensor and getattr(v, "tensor_view_of", None) is base)):
            return "is a view of another mc.Tensor, which"
    if _holders(tx, lambda v: v is tensor) > 1:
        return "another name, a container, an attribute or a global holds"
    return None


def _holders(tx: "InstructionTranslator", match: Any) -> int:
    """How many places of the frames being traced, and of what the trace handed to the
    caller, hold a variable ``match`` accepts."""
    holders, seen = 0, set()

    def count(value: Any) -> None:
        nonlocal holders
        if not isinstance(value, VariableTracker) or id(value) in seen:
            return
        if match(value):
            holders += 1
            return
        seen.add(id(value))
        if isinstance(value, (TupleVariable, ListVariable)):
            items = value.items
        elif isinstance(value, DictVariable):
            items = list(value.items.values())
        else:  # an object the trace made (its attributes), a function's defaults and bound object
            items = [*getattr(value, "attrs", {}).values(), *getattr(value, "defaults", ()),
                     getattr(value, "bound_self", None)]
        for item in items:
            count(item)

    frame = tx
    while frame is not None:
        for value in (*frame.locals.values(), *frame.stack):
            count(value)
        frame = frame.parent
    effects = tx.output.side_effects
    for value in (*effects.attributes.values(), *effects.globals.values(),
                  *(a for e in effects.log for a in e.args)):
        count(value)
    return holders


def cast_in_place(tx: "InstructionTranslator", result: ArrayVariable, target: ArrayVariable,
                  op: str) -> ArrayVariable:
    """``x op= y`` stores into x: NumPy casts the result with 'same_kind' and never
    changes x's shape."""
    have, want = result.node.meta, target.node.meta
    if have.shape != want.shape:
        raise Unsupported(f"non-broadcastable output operand with shape {want.shape} doesn't match "
                          f"the broadcast shape {have.shape}", numpy_error=True)
    if have.dtype == want.dtype:
        return result
    if not np.can_cast(have.dtype, want.dtype, casting="same_kind"):
        raise Unsupported(f"Cannot cast ufunc '{op}' output from {have.dtype!r} to {want.dtype!r} "
                          f"with casting rule 'same_kind'", numpy_error=True)
    return tx.output.call("astype", {"x": result, "dtype": want.dtype})


def update_array(tx: "InstructionTranslator", target: ArrayVariable, new: ArrayVariable, what: str) -> ArrayVariable:
    """``target`` now holds ``new``'s values (same shape and dtype), and so does the
    memory it shares with every other array: functionalized, see functionalization.py."""
    if target.storage is None:
        raise Unsupported(f"TypeError: {what}: {target.describe()} cannot be written in place",
                          numpy_error=True)
    tx.output.mutations += 1
    tx.output.functional.mutate(target, new.node, what)
    return target


# -- attributes ------------------------------------------------------------------------------

def get_attr(tx: "InstructionTranslator", arr: ArrayVariable, name: str) -> VariableTracker:
    """``arr.name``: a fact of its shape and dtype, ``.T``, or a method to be called."""
    if arr.python is not None or arr.weak is not None:
        raise Unsupported(f"attribute .{name} of a {arr.describe()}: its value is known once the graph has run")
    meta = arr.node.meta
    # shape, dtype and strides are guarded on every array input, so these
    # are constants of this cache entry.
    facts = {
        "shape": meta.shape, "ndim": meta.ndim, "size": meta.size, "dtype": meta.dtype,
        "itemsize": meta.dtype.itemsize, "nbytes": meta.size * meta.dtype.itemsize,
    }
    if name in facts:
        return wrap_value(facts[name])
    if name == "T":
        return tx.output.call("transpose", {"a": arr, "axes": ConstantVariable(None)})
    if name in ("real", "imag"):
        return complex_part(tx, arr, name)
    if callable(getattr(np.ndarray, name, None)):
        # Every method, supported or not (numpy_calls.METHODS): an unsupported
        # one breaks the graph where it is called, not here.
        return MethodVariable(arr, name)
    raise Unsupported(f"ndarray attribute .{name} is not supported yet")


def complex_part(tx: "InstructionTranslator", arr: ArrayVariable, part: str) -> VariableTracker:
    """``arr.real`` / ``arr.imag``.  Of a complex array, a view (writes through it
    change ``arr``: functionalization.py scatters them back); of a real array,
    ``.real`` is the array itself and ``.imag`` a new read-only array of zeros."""
    if arr.node.meta.dtype.kind != "c" and part == "real":
        return arr
    result = tx.output.call(part, {"val": arr})
    if arr.node.meta.dtype.kind != "c" and isinstance(result, ArrayVariable) and not result.scalar:
        result.readonly = True
    if arr.scalar and isinstance(result, ArrayVariable):
        result.scalar = True  # a NumPy scalar's part is a NumPy scalar
    return result


def set_complex_part(tx: "InstructionTranslator", arr: ArrayVariable, part: str, value: VariableTracker) -> None:
    """``arr.real = value`` / ``arr.imag = value``: NumPy writes ``value`` into the
    part's view, as ``arr.real[...] = value`` does."""
    if part == "imag" and arr.node.meta.dtype.kind != "c":
        raise Unsupported("TypeError: array does not have imaginary part to set", numpy_error=True)
    if arr.scalar or arr.storage is None:
        raise Unsupported(f"AttributeError: attribute '{part}' of {arr.describe()} is not writable",
                          numpy_error=True)
    view = complex_part(tx, arr, part)
    setitem(tx, view, ConstantVariable(Ellipsis), value)
