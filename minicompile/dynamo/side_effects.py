"""Side effects of traced code on the caller's Python objects, replayed after the graph.

Traced code may change objects it did not create: append to a list it was
given, set or delete a key of a dict, set or delete an attribute of an
object, rebind a global.  During the trace each change is applied to the
variable trackers (so later reads in the trace see it) and recorded, in
order, as an :class:`Effect`: the operation itself on the live object.  After
the graph has run the compiled code replays the log as Python statements —
``___v0.append(___v1)``, ``del ___v2['k']``, ``G['CALLS'] = ___v3`` — so the
caller observes exactly what eager execution would have left behind
(TorchDynamo's SideEffects).

Replaying the operations, not the final contents, is what makes compiled
code behave like Python under threads: ``log.append(t)`` replayed is one
append on whatever the list holds by then, where rewriting the whole list
would drop the appends of another thread made in between.  It also means a
change needs no guard on what it did not read.

In: :meth:`record` and the ``store_``/``delete_`` methods, called by the
interpreter and the variables' code (variables/containers.py for lists and
dicts, variables/user_objects.py for attributes).  Out: :meth:`emit`'s
statements, which the code after the graph runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .exc import Unsupported
from .variables.base import VariableTracker


@dataclass(frozen=True)
class Effect:
    """One change to an object the caller can see, as the statement that replays it.

    ``kind`` is "call" (``t.name(*args)``, the last ``len(keywords)`` arguments by
    keyword), "setitem" (``t[args[0]] = args[1]``), "delitem" (``del t[args[0]]``),
    "setattr" (``t.name = args[0]``), "delattr" (``del t.name``) or "global"
    (``G[name] = args[0]``; no target).  Arguments are variables; a key is a
    ConstantVariable.
    """

    kind: str
    target: VariableTracker | None
    name: str = ""
    args: tuple = ()
    keywords: tuple[str, ...] = ()

    def statement(self, expr: Callable[[VariableTracker], str]) -> str:
        args = [expr(a) for a in self.args]
        if self.kind == "global":
            return f"G[{self.name!r}] = {args[0]}"
        target = expr(self.target)
        if self.kind == "call":
            n = len(args) - len(self.keywords)
            parts = args[:n] + [f"{k}={a}" for k, a in zip(self.keywords, args[n:])]
            return f"{target}.{self.name}({', '.join(parts)})"
        if self.kind == "setitem":
            return f"{target}[{args[0]}] = {args[1]}"
        if self.kind == "delitem":
            return f"del {target}[{args[0]}]"
        if self.kind == "setattr":
            return f"{target}.{self.name} = {args[0]}"
        if self.kind == "delattr":
            return f"del {target}.{self.name}"
        raise ValueError(f"unknown effect kind {self.kind!r}")


class _DeletedAttribute(VariableTracker):
    def describe(self) -> str:
        return "a deleted attribute"


DELETED_ATTRIBUTE = _DeletedAttribute()  # the value of an attribute the trace deleted


@dataclass
class SideEffects:
    # every change to the caller's objects, in the order the trace made them
    log: list[Effect] = field(default_factory=list)
    # (object's source expression, attribute) -> its value now (DELETED_ATTRIBUTE once deleted)
    attributes: dict[tuple[str, str], VariableTracker] = field(default_factory=dict)
    # global name -> its value now (writes to the traced function's own module)
    globals: dict[str, VariableTracker] = field(default_factory=dict)
    # the caller's lists and dicts the trace has wrapped (variables/frame_containers.py)
    containers: list[Any] = field(default_factory=list)
    # how many attribute stores the trace made (a loop body's may be carried: loop_capture.py)
    attribute_stores: int = 0
    # the log's entries before this one are not merged with a later store (a loop's head:
    # the body's stores must stay entries of their own, see record)
    kept: int = 0

    def __bool__(self) -> bool:
        return bool(self.log)

    def record(self, effect: Effect) -> None:
        last = self.log[-1] if len(self.log) > self.kept else None
        if last is not None and effect.kind in ("setattr", "global") and last.kind == effect.kind \
                and last.target is effect.target and last.name == effect.name:
            self.log[-1] = effect  # a store right over the same store: only the last one shows
        else:
            self.log.append(effect)

    # -- attributes and globals ---------------------------------------------------------------

    def store_attr(self, obj: VariableTracker, name: str, value: VariableTracker) -> None:
        self.attributes[(obj.source.expr, name)] = value
        self.attribute_stores += 1
        self.record(Effect("setattr", obj, name, (value,)))

    def delete_attr(self, obj: VariableTracker, name: str) -> None:
        self.attributes[(obj.source.expr, name)] = DELETED_ATTRIBUTE
        self.record(Effect("delattr", obj, name))

    def read_attr(self, source_expr: str, name: str) -> VariableTracker:
        """The value the trace gave ``obj.name`` (a key of ``attributes``)."""
        value = self.attributes[(source_expr, name)]
        if value is DELETED_ATTRIBUTE:
            raise Unsupported(f"AttributeError: {name!r} was deleted", numpy_error=True)
        return value

    def store_global(self, name: str, value: VariableTracker) -> None:
        self.globals[name] = value
        self.record(Effect("global", None, name, (value,)))

    # -- replay ---------------------------------------------------------------------------------

    def emit(self, expr: Callable[[VariableTracker], str]) -> list[str]:
        """Python statements that replay the effects; ``expr(var)`` rebuilds a value.
        (Arrays written in place are not effects here: functionalization.py
        writes them back, before these statements run.)

        ``expr`` reads every value and every target object into a temporary
        before the first statement runs (see Reconstructor.expr), so a replayed
        value means what it meant at its point of the trace, and a statement
        changes the object the trace changed even if an earlier one rebound the
        name it was reached through.
        """
        return [effect.statement(expr) for effect in self.log]
