"""Functionalization: in-place array updates captured as functional graph ops.

NumPy arrays share memory.  ``v = x[1:]`` is a *view*: a write through ``v``
changes ``x``, a write to ``x`` changes what ``v`` reads, and the caller sees
every write to an argument.  The captured graph is functional instead: each
node makes a new value.  This module keeps the two in step while the
interpreter traces, as torch's functionalization does for ``torch.compile``:

* Every array the trace holds lives in a :class:`Storage`, the memory eager
  NumPy would have: an argument's (or a global's, an attribute's), or the
  one an op allocated.  The storage holds the node of its base's *current*
  value.  A view holds the chain of view ops (:class:`ViewStep`) that took
  it from the base: ``x[1:].T`` is ``(getitem, transpose)``.
* A write (``v[k] = y``, ``v += y``, ``np.add(a, b, out=v)``, ``np.copyto``,
  ``ufunc.at``, ``v.sort()``, ``v.fill(c)``) computes ``v``'s new value, then
  *scatters* it back through the chain into a new value of the base
  (``getitem`` -> ``setitem``, ``transpose`` -> the inverse transpose, a
  reshape -> the reshape back) and bumps the storage's version.
* Every other variable of that storage notices the new version the next
  time it is read and re-derives itself by replaying its chain on the new
  base (view replay): no stale read, whichever name the write went through.
* When the trace ends, each written argument is written back once, with
  its final value: ``L['x'][...] = new_x`` — the memory NumPy changed, and
  nothing else.  A returned or live view of an argument is rebuilt as a
  real view of the caller's array, so identities and aliasing after the
  call are NumPy's too.

Arguments that share memory are grouped as *aliases*.  One array passed
twice is one variable already; two different arrays over one memory
(``f(b[:2], b[1:])``, ``f(b, b.T)``) start as two graph inputs, which is
right while they are only read.  The first write to one of them rewrites
the group as ``as_strided`` views of their common base array — an argument,
or ``L['x'].base`` read from the frame — guarded to stay that way.

Whether ``x.reshape(...)`` (or ``ravel``) is a view depends on ``x``'s memory
layout, so every variable carries one: byte strides for static shapes,
``"C"`` (C-contiguous, sizes symbolic), or unknown.  A reshape whose
view-ness the trace cannot tell, followed by a write that would make the
difference visible, refuses the capture (the function then runs as Python).

In:  the interpreter's calls (``OutputGraph.wrap`` for inputs,
     ``OutputGraph.call`` for op results, ``variables.arrays.update_array``
     for writes).
Out: array variables that know their storage and view chain; write-backs
     and guards for the compiled code (``write_backs``, ``install_guards``).
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ir
from ..ir import indexing as ix
from ..ir.ops.registry import array_module
from ..ir.symbolic import is_symbolic
from .exc import Unsupported
from .source import Source

if TYPE_CHECKING:
    from .output_graph import OutputGraph
    from .variables.arrays import ArrayVariable

# View ops whose result can never be written through (NumPy marks them read-only).
READONLY_VIEWS = frozenset({"broadcast_to", "sliding_window_view", "diagonal"})
# View ops that are views whatever the layout (reshape and ravel depend on it).
ALWAYS_VIEWS = frozenset({"getitem", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
                          "atleast_1d", "atleast_2d", "atleast_3d", "flip", "rot90", "as_strided",
                          *READONLY_VIEWS, *("real", "imag")})
# A complex array's parts: views of every other float of its memory (of a real
# array, ``imag`` is a new array: see _is_view_call).
PART_VIEWS = frozenset({"real", "imag"})
LAYOUT_VIEWS = frozenset({"reshape", "ravel"})
# Views of a C-contiguous array that are C-contiguous too (for symbolic sizes).
C_PRESERVING = frozenset({"reshape", "ravel", "expand_dims", "squeeze", "atleast_1d", "atleast_2d",
                          "atleast_3d"})

Layout = Any  # tuple of byte strides | "C" | None


@dataclass(frozen=True, eq=False)
class ViewStep:
    """One view op of a chain: its name and its canonical arguments after the array."""

    op: str
    args: tuple

    def apply(self, graph: ir.Graph, base: ir.Node) -> ir.Node:
        return graph.call(self.op, base, *self.args)

    def scatter(self, graph: ir.Graph, base: ir.Node, value: ir.Node) -> ir.Node:
        """The base's new value when its view by this step takes ``value``."""
        call, a = graph.call, self.args
        if self.op == "getitem":
            return call("setitem", base, a[0], value)
        if self.op == "as_strided":
            return call("as_strided_scatter", base, value, *a)
        if self.op == "transpose":
            return call("transpose", value, tuple(int(i) for i in np.argsort(a[0])))
        if self.op == "swapaxes":
            return call("swapaxes", value, *a)
        if self.op == "moveaxis":
            return call("moveaxis", value, a[1], a[0])
        if self.op == "flip":
            return call("flip", value, *a)
        if self.op == "rot90":
            return call("rot90", value, -a[0], a[1])
        if self.op in PART_VIEWS:  # the base with this part replaced
            return call(f"{self.op}_scatter", base, value)
        if self.op in C_PRESERVING:  # a reshape in all but name
            return call("reshape", value, base.meta.shape)
        raise AssertionError(f"no scatter for the view op {self.op}")

    def python(self, impl_name: str, base: str, const) -> str:
        """This step as Python source over ``base`` (for code that runs after the graph)."""
        return f"{impl_name}({', '.join([base] + [const(v) for v in self.args])})"


class Storage:
    """The memory of one array as eager NumPy would have it, and its current value.

    ``forward`` is set when an argument's storage was merged into the common
    base of its alias group: its own node is then no longer used, and its
    variables resolve through ``(root, chain)``."""

    serials = itertools.count()  # creation order: what a loop body made is younger than the loop

    def __init__(self, owner: "Functionalizer", node: ir.Node, source: Source | None = None,
                 value: Any = None, layout: Layout = None):
        self.serial = next(Storage.serials)
        self.owner = owner
        self.node = node
        self.version = 0
        self.source = source  # where the caller's array lives; None for one the trace made
        self.value = value    # the caller's array (its memory decides aliasing)
        self.layout = layout
        self.written = False
        self.forward: tuple[Storage, tuple[ViewStep, ...]] | None = None
        self.group = AliasGroup([self])
        self.entangled = False  # a reshape of it may or may not be a view (see module docstring)
        # For the result of such a reshape: (the array reshaped, the step), which
        # the code after the graph replays on the real array, so NumPy decides.
        self.maybe_view: tuple[Any, ViewStep] | None = None
        # For an mc.Tensor argument: the tensor, whose data is ``value`` (see Functionalizer.input).
        self.tensor: Any = None

    def resolve(self) -> tuple["Storage", tuple[ViewStep, ...]]:
        return self.forward if self.forward is not None else (self, ())


@dataclass(eq=False)
class AliasGroup:
    """Arguments whose memory may overlap; ``root`` once a write merged them."""

    members: list[Storage]
    root: Storage | None = None


def _static(shape: tuple) -> bool:
    return not is_symbolic(shape)


def c_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def _c_layout(node: ir.Node) -> Layout:
    """The layout of a C-contiguous array of ``node``'s shape."""
    shape = node.meta.shape
    return c_strides(shape, node.meta.dtype.itemsize) if _static(shape) else "C"


def _ghost(shape: tuple, strides: tuple, dtype: np.dtype) -> np.ndarray:
    """An array with this shape and these strides over one element: never read, only
    viewed, so NumPy computes a view's strides (and flags) for us."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), tuple(int(n) for n in shape), strides)


def is_c_ordered(layout: Layout, shape: tuple) -> bool:
    """Whether an array of this layout has its axes in C order in memory: the
    strides of the axes that move (longer than 1, stride not 0) decrease in size.
    NumPy allocates a new array in its operands' axis order (``order="K"``), so a
    result of operands that all are C-ordered is C-contiguous."""
    if layout == "C":
        return True
    if layout is None or not _static(shape):
        return False
    moving = [abs(s) for n, s in zip(shape, layout) if n > 1 and s != 0]
    return all(a > b for a, b in zip(moving, moving[1:]))


# Op kinds whose result's axis order follows only the order of the operands' strides,
# not their sizes: their layout is found on operands of at most two elements per axis.
# Other kinds run at full size, up to this many elements per operand.
ORDER_ONLY_KINDS = frozenset({"pointwise", "reduction", "scan"})
LAYOUT_PROBE_ELEMENTS = 1 << 16


def numpy_layout(node: ir.Node, arrays: list["ArrayVariable"]) -> Layout:
    """The strides of the new array NumPy allocates for ``node`` (``order="K"``
    follows the operands' axis order: ``a * 2`` of a Fortran-ordered ``a`` is
    Fortran-ordered), found by running the op's reference implementation on
    stand-in operands laid out as the real ones are.  None (unknown) for symbolic
    sizes, an operand of unknown layout, or a large operand of an op whose layout
    may depend on sizes.  A backend's buffers are C-contiguous; a graph output
    is laid out as this says before the caller sees it (``storage_array``)."""
    layouts = {}
    for a in arrays:
        if a.scalar:
            continue
        strides = numpy_strides(a.layout, a.node.meta.shape, a.node.meta.dtype)
        if not isinstance(strides, tuple):  # unknown, or symbolic sizes
            return None
        layouts[a.node] = strides
    if not _static(node.meta.shape):
        return None
    small = node.op.kind in ORDER_ONLY_KINDS
    if not small and any(n.meta.size > LAYOUT_PROBE_ELEMENTS for n in layouts):
        return None

    def stand_in(arg: Any) -> Any:
        if isinstance(arg, ir.Node):
            shape = tuple(min(int(n), 2) if small else int(n) for n in arg.meta.shape)
            strides = layouts.get(arg)
            if strides is None and arg.meta.ndim:
                raise LookupError(arg)  # an operand the variables do not show
            return _laid_out(shape, strides or (), arg.meta.dtype)
        if isinstance(arg, (tuple, list)):
            return type(arg)(stand_in(v) for v in arg)
        return arg

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = node.op.impl(*[stand_in(a) for a in node.args])
    except Exception:  # noqa: BLE001 - the op refuses stand-ins: the layout stays unknown
        return None
    if not isinstance(out, np.ndarray) or out.ndim != node.meta.ndim or min(out.strides, default=0) < 0:
        return None
    order = sorted(range(out.ndim), key=lambda i: (-out.strides[i], i))  # outermost axis first
    return dense_strides(tuple(int(n) for n in node.meta.shape), node.meta.dtype.itemsize, order)


def _broadcasts(var: "ArrayVariable") -> bool:
    """Has the variable an axis of stride 0 and more than one element (a broadcast)?"""
    layout = var.layout
    return isinstance(layout, tuple) and any(s == 0 and n != 1 for n, s in zip(var.node.meta.shape, layout))


def dense_strides(shape: tuple, itemsize: int, order: list[int]) -> tuple:
    """Strides of a dense array of ``shape`` whose axes lie in memory in ``order``
    (outermost first)."""
    strides, step = [0] * len(shape), itemsize
    for axis in reversed(order):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def _laid_out(shape: tuple, strides: tuple, dtype: np.dtype) -> np.ndarray:
    """A zero array of ``shape`` whose axes run in memory in the order and direction
    of ``strides`` (a stride 0 broadcasts): NumPy's choices follow only those."""
    moving = [i for i, (n, s) in enumerate(zip(shape, strides)) if s != 0]
    order = sorted(moving, key=lambda i: (-abs(strides[i]), i))
    dense = np.zeros([shape[i] for i in order], dtype)
    array = dense.transpose(np.argsort(order)) if order else dense
    array = array.reshape([shape[i] if strides[i] != 0 else 1 for i in range(len(shape))])
    array = array[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)]
    return np.broadcast_to(array, shape) if len(moving) < len(shape) else array


def numpy_strides(layout: Layout, shape: tuple, dtype: np.dtype) -> tuple | str | None:
    """The strides NumPy's array of this layout has (``"C"`` for C-contiguous
    with symbolic sizes), or None where the layout is unknown."""
    if layout == "C" and _static(shape):
        return c_strides(shape, dtype.itemsize)
    return layout


def array_address(value: Any) -> int:
    """The address of an array's first element (NumPy or CuPy)."""
    if isinstance(value, np.ndarray):
        return value.__array_interface__["data"][0]
    return int(value.data.ptr)


def _extent(value: Any) -> tuple[int, int]:
    start = array_address(value)
    low = start + sum(min(0, (n - 1) * s) for n, s in zip(value.shape, value.strides))
    high = start + sum(max(0, (n - 1) * s) for n, s in zip(value.shape, value.strides)) + value.itemsize
    return low, high


def may_share_memory(a: Any, b: Any) -> bool:
    """NumPy's ``np.may_share_memory`` (bounds overlap) for NumPy and CuPy arrays alike."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return bool(np.may_share_memory(a, b))
    a, b = getattr(a, "data", a) if _is_tensor(a) else a, getattr(b, "data", b) if _is_tensor(b) else b
    if a.size == 0 or b.size == 0 or type(a).__module__.split(".")[0] != type(b).__module__.split(".")[0]:
        return False
    (lo_a, hi_a), (lo_b, hi_b) = _extent(a), _extent(b)
    return lo_a < hi_b and lo_b < hi_a


def element_offset(view: Any, base: Any) -> int:
    """Where ``view``'s first element sits in ``base``, counted in elements."""
    return (array_address(view) - array_address(base)) // view.itemsize


def writeable(value: Any) -> bool:
    """NumPy's ``flags.writeable`` (CuPy arrays have no such flag: always writable)."""
    return getattr(value.flags, "writeable", True)


def storage_array(value: Any, strides: tuple | str | None) -> Any:
    """A graph output as the array of its storage: a 0-d array where a backend handed
    back a NumPy scalar (the storage can be written), and laid out as NumPy's array
    was (``strides``, when known), so a later reshape is a view, or a copy, as in NumPy."""
    if isinstance(value, np.generic):
        return np.asarray(value)
    if strides is None or value.strides == strides:
        return value
    if strides == "C":
        return value if value.flags.c_contiguous else value.copy(order="C")
    if all(s == t for n, s, t in zip(value.shape, value.strides, strides) if n > 1):
        return value
    if isinstance(value, np.ndarray):
        new = np.empty_like(_laid_out(value.shape, strides, value.dtype))  # base None, as NumPy's
    else:  # another array module's array (CuPy's): allocated in memory order, then transposed
        order = sorted(range(value.ndim), key=lambda i: (-strides[i], i))
        xp = array_module(value)
        new = xp.empty([value.shape[i] for i in order], value.dtype).transpose(tuple(np.argsort(order).tolist()))
    new[...] = value
    return new


def _is_tensor(value: Any) -> bool:
    return type(value).__name__ == "Tensor" and type(value).__module__.endswith("aot.tensor")


class Functionalizer:
    """The storages of one capture: inputs, op results, writes, write-backs."""

    def __init__(self, output: "OutputGraph"):
        self.output = output
        self.inputs: list[Storage] = []  # storages of arrays read from the frame, in order

    # -- variables ------------------------------------------------------------------------

    def input(self, value: Any, source: Source, node: ir.Node, scalar: bool = False) -> "ArrayVariable":
        """The variable of an array read from the frame (its own storage, grouped with
        every earlier input whose memory it may share)."""
        from .variables.arrays import ArrayVariable

        if scalar:
            return ArrayVariable(node, source, scalar=True)
        if _is_tensor(value):
            # An mc.Tensor: its variable has no storage (its writes are the tape's: capture
            # breaks at them).  Its data is memory all the same, which an array argument
            # (``f(mc.Tensor(a), a)``), ``t.data`` or another tensor may share: a storage
            # stands for it in their alias group, so that a write into the group is refused
            # (see ``mutate``), and a write elsewhere is guarded not to reach it.
            storage = Storage(self, node, source, value.data, None)
            storage.tensor = value
            for other in self.inputs:
                if other.value is not None and may_share_memory(value.data, other.value):
                    if other.group.root is not None or any(s.written for s in other.group.members):
                        self._refuse_tensor_write(storage, other, f"{source} is read after a write to "
                                                  f"{other.source}, whose memory its data shares")
                    self._join(storage, other)
            self.inputs.append(storage)
            return ArrayVariable(node, source)
        shape = node.meta.shape
        layout = tuple(value.strides) if _static(shape) else "C"
        storage = Storage(self, node, source, value, layout)
        for other in self.inputs:
            if other.value is not None and may_share_memory(value, other.value):
                if self.output.loop_scope is not None:
                    raise Unsupported(f"{source} shares memory with another argument, read in a loop body")
                self._join(storage, other)
        self.inputs.append(storage)
        var = ArrayVariable(node, source, storage=storage, layout=layout,
                            readonly=not writeable(value))
        if storage.forward is not None or storage.node is not node:
            self.refresh(var)  # joined a group already written to: read its current values
        return var

    def result(self, node: ir.Node, args: dict[str, Any], scalar: bool) -> "ArrayVariable":
        """The variable of an op's result: a view of its first argument's storage
        when NumPy would return a view, else a storage of its own."""
        from .variables.arrays import ArrayVariable

        op = node.op.name
        parent = next(iter(args.values()), None)
        arrays = _array_leaves(args)
        if any(a.storage is None and not a.scalar for a in arrays):
            var = ArrayVariable(node, scalar=scalar)  # an op on an mc.Tensor makes an mc.Tensor
            if isinstance(parent, ArrayVariable) and (op in ALWAYS_VIEWS or op in LAYOUT_VIEWS) \
                    and _is_view_call(node):
                parent.tensor_viewed = True  # a write into it must reach the view: the tape's
                var.tensor_view_of = parent  # and a write into the view must reach it
            return var
        if scalar or not arrays:  # a creation op: C order
            return self._fresh(node, scalar, None if scalar else _c_layout(node))
        if isinstance(parent, ArrayVariable) and not parent.scalar and _returns_its_input(node):
            return parent  # NumPy hands back the array itself: one object, as eager
        if isinstance(parent, ArrayVariable) and parent.storage is not None \
                and (op in ALWAYS_VIEWS or op in LAYOUT_VIEWS) and _is_view_call(node):
            kind, layout = _view_layout(node, parent)
            if kind == "view":
                step = ViewStep(op, tuple(node.args[1:]))
                return ArrayVariable(node, storage=parent.storage, view=parent.view + (step,),
                                     layout=layout, readonly=parent.readonly or op in READONLY_VIEWS)
            # NumPy copies (or may): say so in the graph, or a backend whose buffer has
            # another layout than NumPy's array could return a view of it.
            step = ViewStep(op, tuple(node.args[1:]))
            node = self.output.current.call("copy", node)
            node.user_stack = self.output.user_stack()
            if kind == "maybe":
                var = self._fresh(node, False, None)
                var.storage.entangled = parent.storage.entangled = True
                var.storage.maybe_view = (parent, step)
                return var
            return self._fresh(node, False, _c_layout(node))
        # A new array is allocated in its operands' memory order (NumPy's order="K"):
        # C-contiguous when every operand's axes run in C order, gaps or not (a * 2 of
        # a[::2] is contiguous, so its reshape is a view).  (A NumPy scalar operand has
        # no layout to pass on: it broadcasts.)
        operands = [a for a in arrays if not (a.scalar and a.storage is None)]
        known_c = all(a.storage is not None and is_c_ordered(a.layout, a.node.meta.shape) for a in operands)
        if not _static(node.meta.shape) or any(not _static(a.node.meta.shape) for a in operands):
            return self._fresh(node, False, _c_layout(node) if known_c else None)
        # Static sizes: C-ordered operands give a C-contiguous result, except through an
        # index (NumPy's fancy indexing lays its result out its own way) or a broadcast
        # axis (astype and copy put a stride-0 axis innermost): NumPy is asked then.
        if known_c and node.op.kind != "index" and not any(_broadcasts(a) for a in operands):
            return self._fresh(node, False, _c_layout(node))
        return self._fresh(node, False, numpy_layout(node, arrays))

    def position_view(self, parent: "ArrayVariable", node: ir.Node) -> "ArrayVariable":
        """``parent[key]`` where ``key`` holds positions (0-d int64 nodes standing for
        Python ints, see ``variables.arrays.getitem``) and is otherwise basic: a view
        of ``parent``'s storage, as eager's ``x[i]`` is.  Its step replays as a
        ``getitem`` and scatters back as a ``setitem``, whatever the position."""
        from .variables.arrays import ArrayVariable

        step = ViewStep("getitem", tuple(node.args[1:]))
        layout = parent.layout
        if layout == "C" and _static(parent.node.meta.shape):
            layout = c_strides(parent.node.meta.shape, node.meta.dtype.itemsize)
        if isinstance(layout, tuple) and _static(node.meta.shape) and 0 not in parent.node.meta.shape:
            # Every position gives the same strides: ask NumPy with position 0.
            ghost = _ghost(parent.node.meta.shape, layout, node.meta.dtype)
            key = tuple(0 if isinstance(e, ir.Node) else e for e in node.args[1])
            layout = tuple(ghost[key].strides)
        else:
            layout = None
        return ArrayVariable(node, storage=parent.storage, view=parent.view + (step,), layout=layout,
                             readonly=parent.readonly)

    def _fresh(self, node: ir.Node, scalar: bool, layout: Layout) -> "ArrayVariable":
        from .variables.arrays import ArrayVariable

        if scalar:  # a NumPy scalar: a copy, immutable
            return ArrayVariable(node, scalar=True)
        return ArrayVariable(node, storage=Storage(self, node, layout=layout), layout=layout)

    def refresh(self, var: "ArrayVariable") -> None:
        """Replay ``var``'s chain on its base's current value (view replay)."""
        root, prefix = var.storage.resolve()
        node = root.node
        for step in prefix + var.view:
            node = step.apply(self.output.current, node)
            node.user_stack = self.output.user_stack()
        var.set_node(node, root)

    # -- writes ---------------------------------------------------------------------------

    def mutate(self, var: "ArrayVariable", new: ir.Node, what: str) -> None:
        """``var`` now holds ``new`` (same shape and dtype): scatter it into the base."""
        if var.readonly:
            raise Unsupported(f"ValueError: {what}: assignment destination is read-only", numpy_error=True)
        storage = var.storage
        if storage.entangled:
            raise Unsupported(f"{what} writes to an array that a reshape of unknown memory layout may "
                              "or may not share (NumPy decides by the layout an earlier op chose)",
                              resumable=False)
        tensor = next((s for s in storage.group.members if s.tensor is not None), None)
        if tensor is not None:
            self._refuse_tensor_write(tensor, storage, f"{what} writes memory that the mc.Tensor "
                                                          f"{tensor.source} shares")
        if self.output.loop_scope is not None:  # a loop body may write only what it carries
            self.output.loop_scope.check_write(storage, what)
        if len(storage.group.members) > 1 and storage.group.root is None:
            self._merge(storage.group)
        root, prefix = storage.resolve()
        chain = prefix + var.view
        graph = self.output.current
        values = [root.node]
        for step in chain[:-1]:
            values.append(step.apply(graph, values[-1]))
        base_value = new
        for step, base in zip(reversed(chain), reversed(values)):
            base_value = step.scatter(graph, base, base_value)
            base_value.user_stack = self.output.user_stack()
        root.node = base_value
        root.version += 1
        storage.written = True
        var.set_node(new, root)  # what it was given: no replay needed to read it back

    # -- aliases ------------------------------------------------------------------------------

    def _refuse_tensor_write(self, tensor: Storage, written: Storage, why: str) -> None:
        """A write into memory an mc.Tensor argument's data shares (``f(mc.Tensor(a), a)``
        writing ``a``): eager's tensor reads whatever the memory holds when it reads it,
        and its tape keeps references to that memory.  The graph does not follow that:
        it breaks here, so the write runs in CPython and what follows is traced again on
        the memory as it then is; the whole frame runs as Python where a gradient is
        wanted (the tape's saved arrays see a later write, a compiled region's would
        not).  A guard says the memory is shared (where the two overlap directly, not
        through a third argument), so a call without the sharing gets a capture of its
        own, whose guards refuse the sharing (``install_guards``)."""
        if may_share_memory(tensor.value, written.value):
            a, b = tensor.source.expr, written.source.expr
            self.output.guards.add(tensor.source, f"___may_share({a}, {b})", f"___may_share({a}, {b})", None)
        raise Unsupported(f"{why} (eager's tensor reads the memory as it is then)",
                          resumable=not self.output.gradients_wanted)

    def _join(self, storage: Storage, other: Storage) -> None:
        """``storage`` (a new input) may share memory with ``other``: one group.
        A group already written to must show the new input its writes: it
        joins the common base at once."""
        group, mine = other.group, storage.group
        if mine is group:
            return
        if mine.root is not None and group.root is not None:
            raise Unsupported(f"{storage.source} joins two groups of arguments that share memory")
        if mine.root is not None:
            group, mine = mine, group
        for s in mine.members:
            group.members.append(s)
            s.group = group
            if group.root is not None:
                self._forward(s, group.root)
        if group.root is None and any(s.written for s in group.members):
            self._merge(group)

    def _merge(self, group: AliasGroup) -> None:
        """Rewrite a group of overlapping inputs as views of their common base array."""
        values = [s.value for s in group.members]
        base = values[0] if values[0].base is None else values[0].base
        root = next((s for s in group.members if s.value is base), None)
        if root is None:
            first = group.members[0]
            self._check_base(first, base)
            source = Source(f"{first.source.expr}.base")
            root = Storage(self, self.output.base_input(base, source), source, base, tuple(base.strides))
            root.group = group
        group.root = root
        for s in group.members:
            if s is not root:
                self._forward(s, root)
        root.version += 1

    def _check_base(self, s: Storage, base: Any) -> None:
        if not _static(s.node.meta.shape):
            raise Unsupported("arguments that share memory, written in place, with symbolic sizes")
        if (s.value if s.value.base is None else s.value.base) is not base:
            raise Unsupported(f"{s.source} shares memory with another argument but not their base array")
        if type(base) is not type(s.value) or not base.flags.c_contiguous or s.value.dtype != base.dtype:
            raise Unsupported(f"{s.source} shares memory with another argument through a base that is "
                              "not one C-contiguous array of its dtype")
        if any(st % base.itemsize for st in s.value.strides):
            raise Unsupported(f"{s.source} has strides that are not whole elements of its base")

    def _forward(self, s: Storage, root: Storage) -> None:
        """Make the input ``s`` an ``as_strided`` view of ``root`` (its group's base)."""
        base = root.value
        self._check_base(s, base)
        strides = tuple(st // base.itemsize for st in s.value.strides)
        offset = element_offset(s.value, base)
        step = ViewStep("as_strided", (tuple(s.node.meta.shape), strides, offset))
        if s.written:  # its writes so far move into the base
            root.node = step.scatter(self.output.current, root.node, s.node)
        s.forward = (root, (step,))
        expr, base_expr = s.source.expr, root.source.expr
        guards = self.output.guards
        if base_expr != f"{expr}.base":  # the base is read through this argument itself
            guards.add(s.source, f"{expr}.base is {base_expr}", f"id({expr}.base)", None)
        guards.add(s.source, f"___offset({expr}, {base_expr}) == {offset}",
                   f"___offset({expr}, {base_expr})", None)
        root.version += 1

    # -- after the trace ----------------------------------------------------------------------

    def write_backs(self) -> list[tuple[str, ir.Node]]:
        """``(target expression, node of its final value)`` for each argument written."""
        out = []
        for s in self.inputs:
            if not s.written or s.source is None:
                continue
            root, prefix = s.resolve()
            node = root.node
            for step in prefix:
                node = step.apply(self.output.current, node)
            out.append((s.source.expr, node))
        return out

    def write_backs_pending(self) -> bool:
        return any(s.written for s in self.inputs)

    def install_guards(self) -> None:
        """What the writes assumed about the arguments, as guards: each written one
        is writable, and shares no memory with any argument outside its group."""
        guards = self.output.guards
        written = [s for s in self.inputs if s.written]
        for s in written:
            guards.add(s.source, f"___writeable({s.source.expr})", f"___writeable({s.source.expr})", None)
            for other in self.inputs:
                if other is s or other.group is s.group:
                    continue
                a, b = s.source.expr, other.source.expr
                guards.add(other.source, f"not ___may_share({a}, {b})", f"___may_share({a}, {b})", None)

    def aliases(self, var: Any) -> bool:
        """Does this (returned) variable hold an argument or a view, whose identity or
        shared memory a graph output would lose?"""
        from .variables.arrays import ArrayVariable
        from .variables.containers import DictVariable, ListVariable, TupleVariable

        if isinstance(var, ArrayVariable):
            if var.storage is None and not var.scalar:
                # An mc.Tensor: the caller's own (identity) or a view of another one, which
                # is taken from it again, on the tape, so that it sees the writes NumPy's would.
                return var.source is not None or var.tensor_view_of is not None
            return var.storage is not None and (bool(var.view) or var.storage.source is not None
                                                or var.storage.maybe_view is not None)
        if var.source is not None:
            return False  # the caller's own object, returned as itself
        if isinstance(var, (TupleVariable, ListVariable)):
            return any(self.aliases(v) for v in var.items)
        if isinstance(var, DictVariable):
            return any(self.aliases(v) for v in var.items.values())
        return False


def _array_leaves(args: Any) -> list:
    from .variables.arrays import ArrayVariable
    from .variables.containers import ListVariable, TupleVariable

    out = []
    values = args.values() if isinstance(args, dict) else args
    for v in values:
        if isinstance(v, ArrayVariable):
            out.append(v)
        elif isinstance(v, (TupleVariable, ListVariable)):
            out.extend(_array_leaves(v.items))
        elif isinstance(v, (tuple, list)):
            out.extend(_array_leaves(v))
    return out


def _returns_its_input(node: ir.Node) -> bool:
    """Ops for which NumPy returns the very array it was given, not a new view, when
    they have nothing to do: ``np.squeeze`` of an array without length-1 axes,
    ``np.atleast_2d`` of a 2-d array, ``np.real`` of a real one.  Identity shows
    (``np.squeeze(v) is v``), and a view of a view would be rebuilt after a write as
    a second object."""
    op, a = node.op.name, node.args[0]
    if not isinstance(a, ir.Node):
        return False
    if op == "squeeze" or op.startswith("atleast_"):  # they only remove, or only add, axes
        return node.meta.ndim == a.meta.ndim
    return op == "real" and a.meta.dtype.kind != "c"


def _is_view_call(node: ir.Node) -> bool:
    """A getitem is a view for a basic key (ints, slices, None, ...) unless it picks
    one element (a NumPy scalar); other view ops always are, or depend on layout."""
    if node.op.name in PART_VIEWS:
        return node.args[0].meta.dtype.kind == "c"
    if node.op.name != "getitem":
        return True
    key = node.args[1]
    basic = all(e is None or e is Ellipsis or isinstance(e, slice)
                or (isinstance(e, int) and not isinstance(e, bool)) for e in key)
    return basic and not (node.meta.ndim == 0 and ix.gives_scalar(key, node.args[0].meta.shape))


def _view_layout(node: ir.Node, parent: "ArrayVariable") -> tuple[str, Layout]:
    """("view" | "copy" | "maybe", the result's layout) for a view op applied to ``parent``."""
    op, shape, dtype = node.op.name, node.args[0].meta.shape, node.meta.dtype
    layout = parent.layout
    if op == "ravel" and node.arg("order") == "F" and len(shape) > 1 and not _static(shape):
        return "maybe", None
    if not (_static(shape) and _static(node.meta.shape)):
        if op in C_PRESERVING:
            if layout == "C":
                return "view", "C"
            return ("maybe", None) if op in LAYOUT_VIEWS else ("view", None)
        return "view", None
    if layout == "C":
        layout = c_strides(shape, dtype.itemsize)
    if layout is None:
        return ("maybe", None) if op in LAYOUT_VIEWS else ("view", None)
    ghost = _ghost(shape, layout, dtype)
    if op == "ravel":
        # NumPy's ravel views only an array contiguous in the order asked for (any
        # other layout copies, even one a reshape could view); "K" also views some
        # permuted layouts, which the trace does not model.
        order, flags = node.arg("order"), ghost.flags
        if order in ("C", "A", "K") and flags.c_contiguous:
            order = "C"
        elif order in ("F", "A", "K") and flags.f_contiguous:
            order = "F"
        else:
            return ("maybe", None) if order == "K" else ("copy", None)
    else:
        order = "C"
    if op in LAYOUT_VIEWS:
        try:
            view = np.reshape(ghost, node.meta.shape, order=order, copy=False)
        except ValueError:  # NumPy would copy
            return "copy", None
        return "view", tuple(view.strides)
    view = node.op.impl(ghost, *node.args[1:])
    return "view", tuple(view.strides)
