"""The caller's lists and dicts, read only as far as the traced code reads them.

In: a list or dict found in the frame (an argument, a global, an attribute, an
item of another container) and its source.  Out: a :class:`FrameListVariable`
or :class:`FrameDictVariable`, which the interpreter uses like any other
``ListVariable`` / ``DictVariable`` but which guards only what the trace reads.
Wrapping one guards its type alone; then

* ``len(lst)`` guards the length, ``lst[i]`` the length and that one item,
  ``if lst:`` only whether it is empty;
* ``d[k]``, ``k in d`` and ``d.get(k)`` guard whether ``k`` is a key (and its value);
* iterating, ``x in lst``, ``len(d)`` and anything else that needs every item
  (the ``items`` attribute) guards the length or the keys, and every item.

What the trace itself put there is known without reading: after
``lst.append(x)``, ``lst[-1]`` and ``lst.pop()`` read nothing; after
``d[k] = v``, ``d[k]`` reads nothing.  Changes made before a read are kept
as a short list and applied to the items once they are read, so a read after
a write sees the write, as Python would.  A list that is only appended to
therefore compiles once however long it grows, and an item the trace never
looked at is never guarded.

One more guard keeps reads honest: when the trace reads one of these
containers after changing another of the same type, the two must stay
different objects (``L['a'] is not L['b']``), or the read would have missed
the change.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

from ..exc import Unsupported
from ..source import Source, item_source
from .base import VariableTracker
from .containers import DictVariable, ListVariable

if TYPE_CHECKING:
    from ..output_graph import OutputGraph


class Unread:
    """An item of the caller's container the trace has not read: its key or base index."""

    __slots__ = ("key",)

    def __init__(self, key: Any):
        self.key = key

    def __repr__(self) -> str:
        return f"Unread({self.key!r})"


ABSENT = object()  # a key the trace knows is not in the dict


def literal_key(key: Any) -> bool:
    """Can a guard spell ``key`` as a literal (``'a' in L['d']``, ``L['d'][3]``)?"""
    if type(key) in (str, int, bool) or key is None:
        return True
    if type(key) is float:
        return math.isfinite(key)
    return type(key) is tuple and all(literal_key(k) for k in key)


class FrameContainer:
    """What the caller's lists and dicts share: the real object, how to read it, alias guards."""

    value: Any
    source: Source
    output: "OutputGraph"
    written: bool

    def _start(self, value: Any, source: Source, output: "OutputGraph") -> None:
        self.value = value  # the caller's object: untouched until the graph has run
        self.source = source
        self.output = output
        self.written = False
        self._apart: set[int] = set()  # ids of containers already guarded to be other objects

    def _lineno(self) -> int | None:
        return getattr(self.output.tracer, "lineno", None)

    def _read(self, key: Any) -> VariableTracker:
        """The caller's item at ``key`` (its base index or key), wrapped and guarded."""
        return self.output.wrap(self.value[key], item_source(self.source, key), self._lineno())

    def observed(self) -> None:
        """The trace is about to rely on what this container holds."""
        for other in self.output.side_effects.containers:
            if other is self or not other.written or type(other) is not type(self) \
                    or id(other) in self._apart:
                continue
            self._apart.add(id(other))
            self.output.guards.add(self.source, f"{self.source.expr} is not {other.source.expr}",
                                   f"id({self.source.expr})", self._lineno())

    def changed(self) -> None:
        self.written = True

    def _base_nonempty(self) -> bool:
        """Whether the caller's object is empty, guarded as just that (``if lst:``)."""
        self.observed()
        present = len(self.value) > 0
        s = self.source.expr
        self.output.guards.add(self.source, f"len({s}) {'>' if present else '=='} 0", f"len({s})", self._lineno())
        return present

    def __repr__(self) -> str:  # the dataclass repr would read every item
        return f"{type(self).__name__}({self.source})"


class FrameListVariable(FrameContainer, ListVariable):
    """A list of the caller's.  Its contents are one of:

    * unknown: the real list plus what the trace did to it since — while that is
      only appends, the appended items (``_tail``); else a list of changes
      (``_pending``) to apply once the items are read;
    * known (``_cells``): one entry per item, an :class:`Unread` for an item of the
      caller's not read yet.  Reading the length makes them known.
    """

    def __init__(self, value: list, source: Source, output: "OutputGraph"):
        self._start(value, source, output)
        self._cells: list | None = None
        self._tail: list | None = []
        self._pending: list[Callable[[list], None]] = []

    # -- reading -----------------------------------------------------------------------

    def cells(self) -> list:
        """The items, some possibly :class:`Unread`: the length is now guarded."""
        self.observed()
        if self._cells is None:
            self.output.guards.length(self.source, self.value, self._lineno())
            cells: list = [Unread(k) for k in range(len(self.value))]
            if self._tail is not None:
                cells.extend(self._tail)
            for change in self._pending:
                change(cells)
            self._cells, self._tail, self._pending = cells, None, []
        return self._cells

    def _resolve(self, cells: list, index: int) -> VariableTracker:
        cell = cells[index]
        if isinstance(cell, Unread):
            cell = cells[index] = self._read(cell.key)
        return cell

    def _in_tail(self, index: int) -> bool:
        return self._cells is None and self._tail is not None and -len(self._tail) <= index < 0

    @property
    def items(self) -> list[VariableTracker]:
        cells = self.cells()
        for i in range(len(cells)):
            self._resolve(cells, i)
        return cells

    @items.setter
    def items(self, value: list) -> None:
        self._cells, self._tail, self._pending = value, None, []

    def length(self) -> int:
        return len(self.cells())

    def nonempty(self) -> bool:
        if self._cells is not None:
            return bool(self._cells)
        if self._tail:  # something was appended: not empty, whatever the caller's list held
            self.observed()
            return True
        return self._base_nonempty() if self._tail is not None else self.length() > 0

    def item(self, index: int) -> VariableTracker:
        if self._in_tail(index):
            self.observed()
            return self._tail[index]
        cells = self.cells()
        cells[index]  # IndexError as Python's
        return self._resolve(cells, index)

    def describe(self) -> str:
        return f"list {self.source}"

    # -- changing ---------------------------------------------------------------------------

    def _change(self, change: Callable[[list], None]) -> None:
        """Apply ``change`` now if the items are known, else when they are read."""
        if self._cells is not None:
            change(self._cells)
            return
        if self._tail is not None:  # no longer only appends: remember them as a change
            tail = self._tail
            self._pending.append(lambda cells: cells.extend(tail))
            self._tail = None
        self._pending.append(change)

    def append_items(self, values: list) -> None:
        if self._cells is None and self._tail is not None:
            self._tail.extend(values)
        else:
            values = list(values)
            self._change(lambda cells: cells.extend(values))

    def insert_item(self, index: int, value: VariableTracker) -> None:
        self._change(lambda cells: cells.insert(index, value))  # insert never fails: no read

    def reverse_items(self) -> None:
        self._change(lambda cells: cells.reverse())

    def clear_items(self) -> None:
        if self._cells is not None:
            self._cells.clear()  # in place: a loop over the list sees it emptied
        else:
            self._cells, self._tail, self._pending = [], None, []

    def set_item(self, index: int, value: VariableTracker) -> None:
        if self._in_tail(index):
            self._tail[index] = value
            return
        self.cells()[index] = value

    def pop_item(self, index: int) -> VariableTracker:
        if self._in_tail(index):
            self.observed()
            return self._tail.pop(index)
        cells = self.cells()
        cells[index]  # IndexError as Python's
        value = self._resolve(cells, index)
        del cells[index]
        return value

    def delete_item(self, index: int | slice) -> None:
        cells = self.cells()
        if not isinstance(index, slice):
            cells[index]  # IndexError as Python's
        del cells[index]


class FrameDictVariable(FrameContainer, DictVariable):
    """A dict of the caller's.  Its contents are one of:

    * keys unknown: what the trace learnt of single keys (``_known``: a value, an
      :class:`Unread` for a key known to be there, or ``ABSENT``) and the changes it
      made in order (``_changes``), to apply once the keys are read;
    * keys known (``_entries``): key -> value, :class:`Unread` for a value not read.
    """

    def __init__(self, value: dict, source: Source, output: "OutputGraph"):
        self._start(value, source, output)
        self._entries: dict | None = None
        self._known: dict[Any, Any] = {}
        self._changes: list[tuple[Any, Any]] = []

    # -- reading -----------------------------------------------------------------------

    def entries(self) -> dict:
        """Key -> value or :class:`Unread`, in order: the keys are now guarded."""
        self.observed()
        if self._entries is None:
            if not all(literal_key(k) for k in self.value):
                raise Unsupported(f"{self.source} has keys that are not strings, numbers or tuples of them")
            self.output.guards.dict_keys(self.source, self.value, self._lineno())
            entries: dict = {k: Unread(k) for k in self.value}
            for key, value in self._changes:
                if value is ABSENT:
                    entries.pop(key, None)
                else:
                    entries[key] = value
            self._entries, self._known, self._changes = entries, {}, []
        return self._entries

    @property
    def items(self) -> dict[Any, VariableTracker]:
        entries = self.entries()
        for key, value in entries.items():
            if isinstance(value, Unread):
                entries[key] = self._read(key)
        return entries

    @items.setter
    def items(self, value: dict) -> None:
        self._entries, self._known, self._changes = value, {}, []

    def keys(self) -> list:
        return list(self.entries())

    def length(self) -> int:
        return len(self.entries())

    def nonempty(self) -> bool:
        if self._entries is not None:
            return bool(self._entries)
        if any(v is not ABSENT for v in self._known.values()):  # a key known to be there
            self.observed()
            return True
        return self.length() > 0 if self._changes else self._base_nonempty()

    def _state(self, key: Any) -> Any:
        """What the trace knows of ``key`` now: a value, :class:`Unread`, or ABSENT;
        asks the caller's dict (and guards the answer) when it knows nothing."""
        self.observed()
        if self._entries is not None:
            return self._entries.get(key, ABSENT)
        if key not in self._known:
            if not literal_key(key):
                return self.entries().get(key, ABSENT)
            present = key in self.value
            s = self.source.expr
            self.output.guards.add(self.source, f"{key!r} {'in' if present else 'not in'} {s}",
                                   f"{key!r} in {s}", self._lineno())
            self._known[key] = Unread(key) if present else ABSENT
        return self._known[key]

    def contains(self, key: Any) -> bool:
        return self._state(key) is not ABSENT

    def lookup(self, key: Any) -> VariableTracker | None:
        state = self._state(key)
        if state is ABSENT:
            return None
        if isinstance(state, Unread):
            state = self._read(key)
            (self._entries if self._entries is not None else self._known)[key] = state
        return state

    def describe(self) -> str:
        return f"dict {self.source}"

    # -- changing ---------------------------------------------------------------------------

    def set_item(self, key: Any, value: VariableTracker) -> None:
        if self._entries is not None:
            self._entries[key] = value
        else:
            self._known[key] = value
            self._changes.append((key, value))

    def delete_item(self, key: Any) -> None:
        """Remove ``key``, which the caller has checked is there."""
        if self._entries is not None:
            del self._entries[key]
        else:
            self._known[key] = ABSENT
            self._changes.append((key, ABSENT))

    def clear_items(self) -> None:
        if self._entries is not None:
            self._entries.clear()
        else:
            self._entries, self._known, self._changes = {}, {}, []
