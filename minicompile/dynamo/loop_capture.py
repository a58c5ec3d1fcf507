"""Counted loops as one loop node: the body traced once instead of unrolled.

In:  the interpreter at a ``FOR_ITER`` whose iterator walks a ``range`` longer
     than ``config.loop_unroll_limit`` (``for t in range(steps)``), or the rows
     of arrays that long (``for row in x``, ``enumerate(x)``, ``zip(x, y)``), or
     a ``range`` of a size symbol (``range(s0)``: an int argument that changed
     between calls, any length).
Out: True when the loop became one ``loop`` node of the graph
     (:mod:`minicompile.ir.ops.control`): the frame's locals then hold its
     results and the interpreter continues after the loop; False when it
     unrolls, as every other loop does.  A body found not to be one graph
     raises :class:`~.exc.RestartAnalysis`: the capture starts over with this
     loop unrolled, so nothing the trial changed has to be undone by hand.

This is how torch's ``while_loop``/``scan`` higher-order ops and JAX's
``lax.fori_loop`` see a loop, built into capture: TorchDynamo itself unrolls.
The body is traced once, from the state at the loop's head, with

* each array the frame's locals hold as a *body input*: a placeholder of a
  graph of its own (arrays sharing one memory — ``u`` and ``u[1:-1]`` — are
  one input, the memory's base, and the locals stay views of it);
* the index as a 0-d ``int64`` input that behaves as the Python int it is in
  eager code: Python arithmetic on it stays a Python number (``i * dt``), and
  it meets an array as NumPy's weak Python scalars do (NEP 50).

At the back edge the state must have the same shape as at the head, which is
what makes every iteration the same graph: the same Python values, each array
local an array of the same shape, dtype, layout and view of the same memory
(up to renaming: ``u, un = un, u`` rotates two buffers), no container or
object changed, no write to an array the loop does not carry.  Arrays whose
value changed are *carried*; the others are *invariant*; arrays the body
reads from outside (a global, an attribute) become invariant inputs too.
Anything else — a ``break`` or ``return``, a branch on the index, a graph
break, a growing list, a Python number that changes — unrolls the loop, and
the ``loops`` log says why.

A Python float that changes from one iteration to the next (``t += dt``) is
found at the first trial's back edge; the trial then starts over with it
*carried*: a 0-d float64 value of the loop that the body sees as a Python
float (NEP 50's weak scalar), and the frame holds as one after the loop
(returned, it is a Python float again).  A Python int that changes (``k += 1``,
``prev = i``) is carried as int64, and its arithmetic is also run at capture for
every iteration (loop_numbers.py): each value must fit in int64, and after the
loop the local holds the last one, a Python int.  ``while`` loops on Python
numbers reuse this trial from their body's start (while_loops.py).

Attributes of the caller's objects that the body sets (``self.u = ...`` in a
method called from the loop) or writes in place after reading them first in
the body are carried the same way, found by a first trial: from the next
trial's head they are locals of the loop named by their source
(``L['self'].u``), the body's stores to them leave the side-effect log, and
one store of each attribute's last value follows the loop.

Over arrays' rows, the body's item is ``np.take(x, index, axis=0)``: a copy
where eager's row is a view, so it is read-only in the body (a write through
it unrolls) and a write to ``x`` itself unrolls; a row kept after the loop is
the view of the last row.

A subscript at the index (``x[i]``, ``out[i - 1, 1:] = v``) is a *position*: the
graph indexes with the 0-d index as an integer array, and the result stays a view
of ``x``, as eager's is (``variables.arrays.getitem``).  A local the body stores
before reading it (``r = x[i]``, ``j = i + 1``: ``bytecode.stored_before_read``)
is the body's own: its value at the head is never read, and after the loop it
holds the last iteration's view or value, computed now from the index alone.

A loop inside the body is tried the same way while the body is traced, and
becomes a loop node of the body's graph: its writes are checked against the
outer loop too, and the outer index is a value it reads from outside.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import config, ir, logs
from ..ir import passes
from ..ir.graph import _flatten, _map_nodes
from ..ir.ops.control import INDEX_META
from ..ir.symbolic import is_symbolic
from .bytecode import CURRENT as VERSION
from .bytecode import stored_before_read
from .exc import RestartAnalysis, Unsupported
from .functionalization import Storage, ViewStep
from .loop_numbers import CarriedNumber, evaluate, number_var, python_kind, simulate
from .variables.arrays import ArrayVariable, getitem, python_arithmetic
from .variables.base import ConstantVariable, VariableTracker
from .variables.containers import DictVariable, IteratorVariable, ListVariable, SymbolicRange

if TYPE_CHECKING:
    from .symbolic_convert import InstructionTranslator

MAX_BODY_STEPS = 50_000  # instructions of one iteration before the trial gives up


def as_loop_node(tx: "InstructionTranslator", inst: Any) -> bool:
    """At ``FOR_ITER``: capture the whole loop as one node, or say it unrolls (False)."""
    it = tx.stack[-1] if tx.stack else None
    if not isinstance(it, IteratorVariable) or it.counted is None:
        return False
    key = (tx.code, inst.offset)
    output = tx.output
    how = output.unrolled_loops.get(key)
    # ("carry", floats, attributes): locals holding Python floats, and attributes of the
    # caller's objects the body rebinds, carried as values of the loop
    carry, attributes = (how[1], how[2]) if isinstance(how, tuple) else ((), ())
    if it.position != (1 if how == "peel" else 0) or how == "unroll":
        return False
    ints = any(python_kind(tx.locals.get(name)) is int for name in carry)
    if isinstance(it.counted, SymbolicRange) and (output.loop_scope is not None or output.gradients_wanted
                                                   or it.counted[it.position:].length is None or ints):
        # Pinned to its value (guarded): only the graph's own loops count a size input, a
        # gradient writes the loop out, the example may run no iteration at all, and the
        # ints the loop changes are run now, for a known count (loop_numbers.simulate).
        it.counted = it.items.values
    if isinstance(it.counted, SymbolicRange):
        n = it.counted[it.position:].length  # any count: one node, whatever the unroll limit
    else:
        n = len(it.counted) - it.position
        if n == 0 or n <= config.loop_unroll_limit:
            return False
    return try_as_node(tx, LoopTrace(tx, inst, it, key, carry, attributes))


def try_as_node(tx: "InstructionTranslator", trace: "LoopTrace") -> bool:
    """Run ``trace``'s trial: True when the loop became one node; a body that is not one
    graph restarts the capture (RestartAnalysis) with the loop tried another way."""
    try:
        trace.run()
    except Unsupported as e:
        raise RestartAnalysis(trace.key, e.reason, peel=getattr(e, "peel", False) and trace.can_peel,
                              carry=getattr(e, "carry", trace.carry),
                              attributes=getattr(e, "attributes", trace.attributes)) from None
    except RestartAnalysis:
        raise
    except Exception as e:  # a bug here must not cost the user the capture: unroll
        if config.strict:
            raise
        raise RestartAnalysis(trace.key, f"internal error: {type(e).__name__}: {e}") from None
    logs.log("loops", lambda: f"{tx.code.co_name}:{tx.lineno}: {trace.count} iterations as one loop node")
    return True


class _Group:
    """Locals that share one memory (or one immutable value) at the loop's head."""

    def __init__(self, names: list[str], var: ArrayVariable):
        self.names = names
        self.root: Storage | None = var.storage.resolve()[0] if var.storage is not None else None
        self.var = var  # the value itself, for one without storage (a NumPy scalar)
        self.head: ir.Node = self.root.node if self.root is not None else var.node
        self.placeholder: ir.Node | None = None
        self.back: Any = None  # the storage (or variable) the locals hold at the back edge
        self.result: ir.Node | None = None  # the loop's result node, when carried


def _key(var: ArrayVariable) -> Any:
    return var.storage.resolve()[0] if var.storage is not None else var


def _same_value(a: VariableTracker, b: VariableTracker) -> bool:
    if a is b:
        return True
    if isinstance(a, ConstantVariable) and isinstance(b, ConstantVariable):
        try:
            return type(a.value) is type(b.value) and bool(a.value == b.value)
        except Exception:
            return False
    return False


def _python_number(var: ArrayVariable) -> bool:
    """A Python value the graph computes (an outer loop's index, ``i * dt``, a bool of
    ``np.allclose``): eager code holds a Python number, capture a 0-d node."""
    return var.weak is not None or var.python is not None


def _view_key(var: ArrayVariable) -> tuple:
    return (tuple((s.op, s.args) for s in var.view), var.layout, var.readonly, var.scalar,
            tuple(var.node.meta.shape), var.node.meta.dtype)


class LoopTrace:
    """One trial: trace the body once, check the back edge, build the node."""

    can_peel = True  # a value that changes kind in the first iteration: run it unrolled, then try

    def __init__(self, tx: "InstructionTranslator", inst: Any, it: IteratorVariable, key: tuple,
                 carry: tuple[str, ...] = (), attributes: tuple[str, ...] = ()):
        self.tx, self.inst, self.it, self.key = tx, inst, it, key
        # The carried ints after the loop, and the index and numbers at the start of its
        # last iteration, once run (_count)
        self.finals: dict[str, Any] = {}
        self.last_values: dict[ir.Node, Any] = {}
        self.carry = carry  # locals holding Python floats that change from one iteration to the next
        # Attributes the body rebinds (self.u = ...), by their source (``L['self'].u``):
        # locals of the loop under that name while the body is traced.
        self.attributes = attributes
        self.stored: set[str] = set()  # those of them the body stores (the others it writes in place)
        self.output = tx.output
        self.range = it.counted[it.position:] if it is not None else None  # (a while loop's: once run)
        self.count = None if it is None else self.range.length if isinstance(self.range, SymbolicRange) \
            else len(self.range)
        self.writes = 0  # array writes in the body (they count as mutations too)
        # The memories the body writes (a version alone does not say: a nested loop
        # moves a memory's version on when it hands back the value it started from).
        self.written: set[Storage] = set()
        self.parent: LoopTrace | None = tx.output.loop_scope  # the loop whose body holds this one
        self.objects: dict[str, tuple[Any, str]] = {}  # carried attribute -> (object, attribute name)
        self.row_items: list[ArrayVariable] = []  # the rows the body reads (for row in x)
        self.row_names: dict[str, int] = {}  # locals holding one of them at the back edge

    # -- what the body may write ----------------------------------------------------------

    def check_write(self, storage: Storage, what: str) -> None:
        """Called by functionalization for every write in the body (one mutation of the
        trace, counted by this loop and every loop around it)."""
        scope: LoopTrace | None = self
        while scope is not None:
            scope.writes += 1
            scope = scope.parent
        self.note_write(storage, what)

    def note_write(self, storage: Storage, what: str) -> None:
        """``storage`` is written in the body: allowed only for the loop's own memories,
        and a write in a nested body is one in the outer body too."""
        self.written.add(storage)
        if storage.forward is not None or len(storage.group.members) > 1:
            raise Unsupported(f"{what} in a loop body writes to arguments that share memory")
        if storage.source is not None and storage.serial >= self.first_serial:
            self._first_read_in_body(storage, what)
        if storage.serial < self.first_serial and storage not in self.carried_roots:
            raise Unsupported(f"{what} in a loop body writes to an array that is not a local of the loop")
        if self.parent is not None:
            self.parent.note_write(storage, what)

    # -- the trial ------------------------------------------------------------------------

    # -- what kind of loop: a for loop here, a while loop in while_loops.py -------------------

    def _bounds(self) -> tuple[int, int, int, int]:
        """``(lo, hi, first, exit)``: the back edge lands in ``[lo, hi]``, the body runs from
        ``first`` and leaves the loop at ``exit``.  A for loop's back edge jumps to its
        FOR_ITER, or to the EXTENDED_ARG before it when its jump past the loop needs one."""
        tx = self.tx
        for_index = head = tx.ip - 1
        while head > 0 and tx.instructions[head - 1].opname == "EXTENDED_ARG":
            head -= 1
        return head, for_index, for_index + 1, tx.index_of[self.inst.argval]

    def _index_bounds(self) -> tuple:
        """The index's bounds (None: a symbolic count), for NumPy's rule on a Python int
        meeting a small int dtype."""
        if isinstance(self.range, SymbolicRange):
            return (int, None, None)
        return (int, min(self.range), max(self.range))

    def _enter(self, index: ArrayVariable) -> None:
        self.tx.push(self._item(index))

    def _before_step(self) -> bool:
        """Called before each instruction of the body (a while loop reads its condition
        here); True when it has taken the instruction's place."""
        return False

    def _count(self, numbers: list[CarriedNumber], body: ir.Graph, index: ir.Node, kept: list[ir.Node]) -> None:
        """The ints the loop changes, run now (loop_numbers.simulate) for the known count,
        with the numbers the ``kept`` nodes are computed from (locals kept after the loop)."""
        self.finals, self.last_values = {}, {}
        if any(num.kind is int for num in numbers) or (numbers and kept):
            if isinstance(self.range, SymbolicRange):
                raise Unsupported("a Python int changes in a loop of symbolic count")
            self.finals, _, self.last_values = simulate(numbers, index, body, self.range, also=kept)

    def _leave(self) -> None:
        """Continue after the loop: the iterator is exhausted and popped."""
        self.it.items, self.it.position = [], 0  # exhausted (its length would pin a symbolic count)
        self.tx.pop()
        self.tx.ip = self.tx.index_of[self.inst.argval] + VERSION.for_iter_exhausted_skip

    @property
    def rows(self) -> Any:
        return self.it.rows if self.it is not None else None

    # -- the trial ------------------------------------------------------------------------

    def run(self) -> None:
        tx, output = self.tx, self.output
        lands_lo, lands_hi, first, exit_index = self._bounds()
        self._load_arguments()
        self._load_attributes()
        # A local the body stores before reading it (r = x[i], j = i + 1) is made by the
        # body: the value it held at the head is never read, and it need not stay the same.
        made_in_body = stored_before_read(tx.instructions[first:exit_index])
        head_locals = {name: v for name, v in tx.locals.items() if name not in made_in_body}
        head_stack = list(tx.stack)
        lengths = [len(v.items) for v in head_stack if isinstance(v, (ListVariable, DictVariable))]
        groups = self._groups(head_locals)
        if any(is_symbolic(g.head.meta.shape) for g in groups):
            raise Unsupported("a loop over arrays of symbolic sizes")
        main, body = output.current, ir.Graph()
        self.first_serial = next(Storage.serials)
        self.carried_roots = {g.root for g in groups if g.root is not None}
        saved_mutations, saved_effects = output.mutations, len(output.side_effects.log)
        saved_stores, saved_kept = output.side_effects.attribute_stores, output.side_effects.kept
        output.side_effects.kept = saved_effects  # a store in the body never replaces one before the loop
        # (Before the memories become the body's placeholders: reading a view's node after
        # that would replay the view on a placeholder, into the graph before the loop.)
        head_views = {name: _view_key(v) for name, v in head_locals.items() if isinstance(v, ArrayVariable)}
        for g in groups:
            g.placeholder = body.placeholder(g.names[0], g.head.meta)
            if g.root is not None:
                g.root.node = g.placeholder
                g.root.version += 1
            else:
                fresh = ArrayVariable(g.placeholder, scalar=g.var.scalar)
                for name in g.names:
                    tx.locals[name] = fresh
                g.body_var = fresh
        numbers = [CarriedNumber(name, head_locals.get(name), body) for name in self.carry]
        for num in numbers:
            tx.locals[num.name] = num.var
        for name, (obj, attr) in self.objects.items():  # the body reads them as the loop's values
            output.side_effects.attributes[(obj.source.expr, attr)] = tx.locals[name]
        index_node = body.placeholder("index", INDEX_META)
        index = ArrayVariable(index_node, scalar=True)
        index.weak = self._index_bounds()
        output.current, output.loop_scope = body, self
        try:
            self._enter(index)
            stepped = False
            for _ in range(MAX_BODY_STEPS):
                if stepped and lands_lo <= tx.ip <= lands_hi:
                    break
                if not first <= tx.ip < exit_index:
                    raise Unsupported("the loop body leaves the loop (break)")
                if not self._before_step():  # (a while loop's condition moves on by itself)
                    tx.step()
                stepped = True
                if tx.return_value is not None:
                    raise Unsupported("the loop body returns")
            else:
                raise Unsupported(f"a loop body longer than {MAX_BODY_STEPS} instructions")
            if len(tx.stack) != len(head_stack) or any(a is not b for a, b in zip(tx.stack, head_stack)) \
                    or lengths != [len(v.items) for v in head_stack if isinstance(v, (ListVariable, DictVariable))]:
                raise Unsupported("the loop body changes the stack (a comprehension that grows)")
            self._attribute_stores(saved_mutations, saved_effects, saved_stores)
            # Still with the body as the current graph: reading a local may replay its view.
            self._finish(main, body, groups, head_locals, head_views, index, numbers)
        finally:
            output.current, output.loop_scope = main, self.parent
            output.side_effects.kept = saved_kept
        self._rows_after_the_loop()

    def _load_arguments(self) -> None:
        """Read every argument now, so that none first enters the graph inside the body."""
        tx = self.tx
        for name in list(tx.frame_locals):
            if name not in tx.locals and name not in tx.deleted:
                try:
                    tx.load_local(name)
                except Unsupported:
                    pass  # a value capture cannot hold: the body must not read it either

    # -- iterating over arrays' rows ---------------------------------------------------------

    def _item(self, index: ArrayVariable) -> VariableTracker:
        """What FOR_ITER hands the body: the index, or for ``for row in x`` (``enumerate``,
        ``zip``) the rows at it, ``np.take(x, index, axis=0)``.  Eager's row is a view of
        ``x``: a write through it, or to ``x`` itself, unrolls the loop (read-only here,
        and checked at the back edge), so a copy reads the same values."""
        rows = self.rows
        if rows is None:
            return index
        position = ArrayVariable(index.node, scalar=True)  # an int64 array for np.take, not a Python int
        for a in rows.arrays:
            item = self.output.call("take", {"a": a, "indices": position, "axis": ConstantVariable(0)})
            item.readonly = True
            self.row_items.append(item)
        if rows.start:  # enumerate(x, start): the index it hands out counts from start
            index = python_arithmetic(self.tx, "+", "add", (index, ConstantVariable(rows.start)))
        return rows._pack(self.row_items, index if rows.start is not None else None)

    def _check_rows(self, back: dict, head_locals: dict) -> None:
        rows = self.rows
        if rows is None:
            return
        for a in rows.arrays:
            root = a.storage.resolve()[0] if a.storage is not None else None
            if root is not None and root in self.written:
                raise Unsupported("the loop body writes to the array it iterates over (its rows are views)")
        for name, value in back.items():
            if name in head_locals:  # read before it is stored (prev = row): the next iteration reads it
                continue
            for j, item in enumerate(self.row_items):
                if value is item:
                    self.row_names[name] = j

    def _rows_after_the_loop(self) -> None:
        """A local holding a row after the loop is the view eager holds: the last row."""
        if self.rows is None:
            return
        last = ConstantVariable(self.range[-1])
        for name, j in self.row_names.items():
            self.tx.locals[name] = getitem(self.tx, self.it.rows.arrays[j], last)

    def _first_read_in_body(self, storage: Storage, what: str) -> None:
        """A write to an array of the caller's that the body read first (``self.u[1:] += 1``):
        an attribute of an object read before the loop is carried from the loop's head on
        the next trial; anything else unrolls."""
        from .variables.user_objects import UserObjectVariable

        expr, _, attr = storage.source.expr.rpartition(".")
        if attr.isidentifier() and isinstance(self.output._wrapped.get(expr), UserObjectVariable):
            e = Unsupported(f"{what} in a loop body writes to {storage.source.expr}, first read in the body")
            e.attributes = tuple(sorted({storage.source.expr, *self.attributes}))
            raise e
        raise Unsupported(f"{what} in a loop body writes to {storage.source.expr}, an array of the caller's "
                          "first read in the body")

    def _load_attributes(self) -> None:
        """Each carried attribute's value at the head, as a local named by its source."""
        from .variables.user_objects import UserObjectVariable, get_attr

        for name in self.attributes:
            expr, attr = name.rsplit(".", 1)
            obj = self.output._wrapped.get(expr)
            if not isinstance(obj, UserObjectVariable) or obj.source is None:
                raise Unsupported(f"the loop body sets {name}, on an object not read before the loop")
            self.tx.locals[name] = get_attr(self.tx, obj, attr)
            self.objects[name] = (obj, attr)

    def _attribute_stores(self, saved_mutations: int, saved_effects: int, saved_stores: int) -> None:
        """At the back edge: the body's changes to Python objects must be stores to
        carried attributes (their values become those locals' back-edge values, and
        the stores leave the log: the loop stores each once, after it).  A store to
        another attribute of the caller's objects starts the trial over, carrying it."""
        from .variables.user_objects import UserObjectVariable

        effects = self.output.side_effects
        new = effects.log[saved_effects:]
        mutations = self.output.mutations - saved_mutations - self.writes
        if not new and not mutations:
            return
        stores = [e for e in new if e.kind == "setattr" and isinstance(e.target, UserObjectVariable)
                  and e.target.source is not None]
        if len(stores) != len(new) or not stores or mutations != effects.attribute_stores - saved_stores:
            # (each mutation that is not a write to an array must be one of these stores)
            raise Unsupported("the loop body changes a Python list, dict or object")
        names = {f"{e.target.source.expr}.{e.name}" for e in stores}
        self.stored = names  # stored again once, after the loop (the others are written in place)
        if not names <= set(self.objects):
            e = Unsupported(f"the loop body sets {', '.join(sorted(names - set(self.objects)))}")
            e.attributes = tuple(sorted(names | set(self.objects)))
            raise e
        for name, (obj, attr) in self.objects.items():
            self.tx.locals[name] = effects.attributes[(obj.source.expr, attr)]
        del effects.log[saved_effects:]
        self.output.mutations = saved_mutations + self.writes
        effects.attribute_stores = saved_stores  # (the loop stores each attribute once, after it)

    def _groups(self, head_locals: dict) -> list[_Group]:
        by_key: dict[int, _Group] = {}
        for name, var in head_locals.items():
            if not isinstance(var, ArrayVariable):
                continue
            if _python_number(var):
                continue  # invariant if the body keeps it (checked at the back edge)
            if var.storage is not None and (var.storage.entangled or var.storage.forward is not None
                                            or len(var.storage.group.members) > 1):
                raise Unsupported(f"{name!r} shares memory with another argument")
            key = _key(var)
            if id(key) in by_key:
                by_key[id(key)].names.append(name)
            else:
                by_key[id(key)] = _Group([name], var)
        return list(by_key.values())

    # -- the back edge ----------------------------------------------------------------------

    def _finish(self, main: ir.Graph, body: ir.Graph, groups: list[_Group], head_locals: dict,
                head_views: dict, index: ArrayVariable, numbers: list[CarriedNumber]) -> None:
        tx = self.tx
        back = dict(tx.locals)
        temps: list[str] = []
        changed_numbers: list[str] = []
        kept_numbers: dict[str, ir.Node] = {}
        self._check_rows(back, head_locals)
        for name in set(head_locals) | set(back):
            h, b = head_locals.get(name), back.get(name)
            if name in self.carry or name in self.row_names:
                continue  # a carried Python number, or a row of the iterated arrays
            kind = python_kind(h)
            if kind is not None and python_kind(b) is kind and b is not h and not _same_value(h, b):
                changed_numbers.append(name)  # t += dt, k += 1, prev = i: the loop can carry it
                continue
            if b is None:
                raise Unsupported(f"the loop body deletes {name!r}")
            if b is index:
                if h is not None:  # read before it is stored: the next iteration reads this one's index
                    raise Unsupported(f"{name!r} holds the loop index of the iteration before")
                continue
            if isinstance(h, ArrayVariable) and _python_number(h):
                if b is not h:
                    raise Unsupported(f"the Python value {name!r}, computed by the graph, changes from one "
                                      "iteration to the next")
                continue  # the body reads it from outside, as an array from outside (lifted)
            if isinstance(h, ArrayVariable):
                if not isinstance(b, ArrayVariable) or b.weak is not None or b.python is not None:
                    raise Unsupported(f"{name!r} stops being an array in the loop body")
                if _view_key(b) != head_views[name]:
                    raise Unsupported(f"{name!r} changes shape, dtype, layout or view in the loop body")
                continue
            if isinstance(b, ArrayVariable) and h is None:
                if b.weak is not None and b.python is None:  # j = i - 1: its value in the last iteration
                    kept_numbers[name] = b.node  # (computed once the loop's numbers have run)
                    continue
                if b.python is not None or b.source is not None:
                    raise Unsupported(f"{name!r} holds a Python value computed from the loop's arrays")
                temps.append(name)
                continue
            if h is None and isinstance(b, ConstantVariable):
                continue  # made by the body (an inner loop's index): the same in every iteration
            if h is None or not _same_value(h, b):
                e = Unsupported(f"the Python value {name!r} changes from one iteration to the next")
                e.peel = isinstance(b, ArrayVariable)  # 0 before the loop, an array after the first pass
                raise e
        if changed_numbers:
            e = Unsupported(f"the Python numbers {', '.join(sorted(changed_numbers))} change from one iteration "
                            "to the next")
            e.carry = tuple(sorted(changed_numbers))
            raise e
        for num in numbers:
            num.back_edge(back.get(num.name), body)
        self._count(numbers, body, index.node, list(kept_numbers.values()))
        for name, node in kept_numbers.items():
            back[name] = ConstantVariable(self._at_last_index(node, body, index.node))
        body_nodes = set(body.nodes)
        back_keys: dict[int, _Group] = {}
        for g in groups:
            keys = {id(_key(back[name])) for name in g.names}
            if len(keys) != 1:
                raise Unsupported(f"{', '.join(g.names)} stop sharing memory in the loop body")
            g.back = _key(back[g.names[0]])
            if (g.root is None) != isinstance(g.back, ArrayVariable):
                raise Unsupported(f"{g.names[0]!r} changes between array and NumPy scalar")
            if id(g.back) in back_keys:
                raise Unsupported("two arrays of the loop become one memory in the loop body")
            back_keys[id(g.back)] = g
        roots = {id(g.root): g for g in groups if g.root is not None}
        # Groups that take another group's memory: a rotation of buffers (u, un = un, u),
        # or a chain that ends in a fresh array (up, u = u, un).
        perm: dict[_Group, _Group] = {}
        for g in groups:
            if g.root is None or g.back is g.root:
                continue
            if id(g.back) in roots:
                perm[g] = roots[id(g.back)]
            elif g.back.serial < self.first_serial:
                raise Unsupported(f"{g.names[0]!r} takes the memory of an array from outside the loop")
            elif g.root in self.written and id(g.root) not in back_keys:
                raise Unsupported(f"the loop body writes to {g.names[0]!r} and then lets it go")
        self.cycles = {g for g in perm if self._in_cycle(perm, g)}
        for g in perm:
            chain = [g, perm[g]]
            if g not in self.cycles and any(h.root in self.written for h in chain):
                # The memory moves on and is written in a later iteration: an
                # intermediate value the loop's results do not hold.
                raise Unsupported(f"the loop body writes to memory that moves from "
                                  f"{chain[1].names[0]!r} to {g.names[0]!r}")
        # Temporaries: locals the body makes (un = u.copy()); they keep their last value.
        temp_groups: dict[int, _Group] = {}
        attached: dict[str, _Group] = {}
        external: list[str] = []
        for name in temps:
            v = back[name]
            k = _key(v)
            if id(k) in back_keys:
                attached[name] = back_keys[id(k)]  # a view of a carried array (inner = u[1:-1])
            elif id(k) in roots or any(v is g.var for g in groups):
                raise Unsupported(f"{name!r} holds an array of an earlier iteration")
            elif (v.storage is not None and k.serial < self.first_serial) or (
                    v.storage is None and v.node not in body_nodes):
                external.append(name)  # an array from outside the loop (w = self.w)
            elif id(k) in temp_groups:
                temp_groups[id(k)].names.append(name)
            else:
                g = temp_groups[id(k)] = _Group([name], v)
                g.back, g.temp = k, True
                g.placeholder = body.placeholder(name, k.node.meta)
        carried = [g for g in groups if self._changed(g)] + list(temp_groups.values())
        invariant = [g for g in groups if not self._changed(g)]
        outs = [g.back.node for g in carried] + [num.out for num in numbers]
        # The body as a graph of its own: inputs in the loop op's order, values from outside lifted.
        body_nodes = set(body.nodes)
        lifted: dict[ir.Node, ir.Node] = {}

        def lift(value: Any) -> Any:
            if isinstance(value, ir.Node):
                if value not in body_nodes:
                    if value not in lifted:
                        lifted[value] = body.placeholder(value.name, value.meta)
                    return lifted[value]
                return value
            if isinstance(value, tuple):
                return tuple(lift(v) for v in value)
            if isinstance(value, list):
                return [lift(v) for v in value]
            return value

        for node in body.calls:
            node.args = lift(node.args)
        outs = [lift(o) for o in outs]
        order = ([g.placeholder for g in carried] + [num.placeholder for num in numbers]
                 + [g.placeholder for g in invariant] + list(lifted.values()))
        body.nodes = order + [index.node] + [n for n in body.nodes if n.kind != "placeholder"]
        body.output(outs)
        self.body = body  # (before dead code goes: a view after the loop may read a dropped position)
        body = passes.dead_code_elimination(body)
        # The node, in the graph the loop runs in.
        init = [self._zeros(main, g) if getattr(g, "temp", False) else g.head for g in carried]
        init += [num.initial(main) for num in numbers]
        fixed = [g.head for g in invariant] + list(lifted)
        n = self.count
        loop = main.call("loop", body, self.range.start, self.range.step, n, tuple(init), tuple(fixed))
        loop.user_stack = self.output.user_stack()
        for j, g in enumerate([*carried, *numbers]):
            g.result = main.call("loop_result", loop, j)
            g.result.user_stack = loop.user_stack
        # A rotation that wrote one of its buffers writes all of them, in some iteration.
        if any(g.root in self.written for g in self.cycles):
            for g in self.cycles:
                g.root.written = True
                if self.parent is not None:  # the loop around sees every buffer of it written
                    self.parent.note_write(g.root, "a rotation of buffers")
        self._rebind(groups, carried, perm, temp_groups, attached, external, back, index, n, numbers)

    def _at_last_index(self, node: ir.Node, body: ir.Graph, index: ir.Node) -> Any:
        """The value ``node`` of the body takes in the last iteration, computed now from
        the index alone (``i - 1``, ``2 * i + 1``): what a local holding it, or a view
        at it, holds after the loop.  A value that depends on anything else refuses."""
        last = self.range[-1]
        if not isinstance(last, int):
            raise Unsupported("a value computed from the loop index outlives a loop of symbolic count")
        return evaluate(node, {index: last, **self.last_values}, set(body.nodes))

    def _after_the_loop(self, var: Any, body: ir.Graph, index: ir.Node) -> Any:
        """A local holding a view at a position the body computed (``r = x[i]``): after the
        loop, the view at that position's last value, replayed on its memory when read."""
        inside = set(body.nodes)
        if not isinstance(var, ArrayVariable) or var.storage is None or not any(
                isinstance(n, ir.Node) and n in inside for s in var.view for n in _flatten(s.args)):
            return var
        view = tuple(ViewStep(s.op, _map_nodes(s.args, lambda n: int(self._at_last_index(n, body, index))
                                               if n in inside else n)) for s in var.view)
        root = var.storage.resolve()[0]
        new = ArrayVariable(root.node, storage=var.storage, view=view, layout=var.layout,
                            readonly=var.readonly, scalar=var.scalar)
        new._seen = (root, -1)
        return new

    def _changed(self, g: _Group) -> bool:
        if getattr(g, "temp", False):
            return True
        if g.root is None:
            return g.back is not g.body_var
        return g.back is not g.root or g.root in self.written

    @staticmethod
    def _zeros(main: ir.Graph, g: _Group) -> ir.Node:
        """The value a temporary starts from: never read (the body writes it first)."""
        meta = g.back.node.meta
        return main.call("full", tuple(meta.shape), np.zeros((), meta.dtype)[()], dtype=meta.dtype)

    # -- after the loop -------------------------------------------------------------------

    def _rebind(self, groups, carried, perm, temp_groups, attached, external, back, index, n, numbers) -> None:
        tx, functional = self.tx, self.output.functional
        # Every memory the loop saw goes back to its value before the loop ...
        for g in groups:
            if g.root is not None:
                g.root.node = g.head
                g.root.version += 1
        # ... and a carried one takes its value after it: in place, in a fresh
        # memory, or in the buffer the rotation leaves it in after n iterations.
        final: dict[_Group, Storage | None] = {}
        for g in carried:
            if g.root is None:
                final[g] = None
                continue
            if g in self.cycles:
                h = g
                for _ in range(n % self._cycle(perm, g)):
                    h = perm[h]
                memory = h.root
            elif g in perm:  # a chain: no memory on it is written; where does g end up?
                h, steps = g, 0
                while h in perm and steps < n:
                    h, steps = perm[h], steps + 1
                if h in perm or h.back is h.root or steps == n:
                    final[g] = h.root  # an unwritten memory of the head: its value stays
                    continue
                memory = Storage(functional, g.result, layout=h.back.layout)
            elif g.back is g.root:
                memory = g.root
            else:
                memory = Storage(functional, g.result, layout=g.back.layout)
            memory.node = g.result
            memory.version += 1
            final[g] = memory
        new_locals = dict(back)

        def rebind(name: str, g: _Group) -> None:
            v = back[name]
            if g not in final:  # invariant: its memory went back to its value, and v reads it again
                if g.root is None:
                    new_locals[name] = g.var
                return
            memory = final[g]
            if memory is None:
                new_locals[name] = ArrayVariable(g.result, scalar=v.scalar)
                return
            new = ArrayVariable(memory.node, storage=memory, view=v.view, layout=v.layout,
                                readonly=v.readonly, scalar=v.scalar)
            new._seen = (memory, -1)  # replays its view on the memory's value when read
            new_locals[name] = new

        for g in [*groups, *temp_groups.values()]:
            for name in g.names:
                rebind(name, g)
        for name, g in attached.items():
            rebind(name, g)
        for name in external:
            v = back[name]
            if v.storage is not None:
                v._seen = (v.storage.resolve()[0], -1)
        for num in numbers:  # a float stays a graph value; an int is its value after the loop
            new_locals[num.name] = number_var(num.result, float) if num.kind is float \
                else ConstantVariable(self.finals[num.name])
        for name, v in back.items():
            if v is index:
                new_locals[name] = ConstantVariable(self.range[-1])
        for name, v in new_locals.items():
            new_locals[name] = self._after_the_loop(v, self.body, index.node)
        tx.locals.clear()
        tx.locals.update(new_locals)
        for name, (obj, attr) in self.objects.items():  # one store of each attribute's last value
            value = tx.locals.pop(name)
            if name in self.stored:
                self.output.side_effects.store_attr(obj, attr, value)
                self.output.mutations += 1
        self._leave()

    @staticmethod
    def _in_cycle(perm: dict, g: _Group) -> bool:
        h = perm.get(g)
        for _ in range(len(perm)):
            if h is g:
                return True
            h = perm.get(h)
        return False

    @staticmethod
    def _cycle(perm: dict, g: _Group) -> int:
        length, h = 1, perm[g]
        while h is not g:
            h, length = perm[h], length + 1
        return length
