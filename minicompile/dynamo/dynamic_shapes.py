"""Automatic dynamic shapes: which array sizes a capture makes symbolic, and when.

In:  ``mc.compile(dynamic=...)`` and, after a cache miss, the guards of the
     newest cache entry that failed on the new call.
Out: a :class:`DynamicPolicy` the capture consults per array axis, and
     :func:`changed_dims`, which reads a miss as "only sizes changed" (then the
     next capture makes those axes symbolic) or as anything else (None).

torch.compile's rule, kept here:

* ``dynamic=None`` (default): the first capture is static.  When a call
  misses *only* because array sizes changed, the axes that changed become
  symbolic (``s0``) and the function is captured once more — a third size
  then hits that entry.
* ``dynamic=True``: every axis of size >= 2 is symbolic from the start.
* ``dynamic=False``: never; every size is specialized.

Python int arguments follow the same rule: an int (``L['n']``) is guarded by
value first; when a miss is caused only by its value changing (and, maybe,
array sizes), the next capture makes it a size symbol (axis ``None`` in
:class:`DynamicPolicy`), guarded ``2 <= s1`` (``dynamic=True``: from the
first call).  It
stays symbolic only through size arithmetic (``x[:n]``, ``reshape(-1, n)``,
``np.zeros((n, 4))``); any other use (``range(n)``, ``x * n``, ``str(n)``)
pins it to its value with a guard.  The graph receives a free int symbol as a
*size input* (``OutputGraph.add_size_inputs``), so it is bound from an input
shape like any array size.

Sizes 0 and 1 always stay specialized (broadcasting and empty arrays behave
differently there).  Axes of equal size in the example share one symbol
("duck sizing"), guarded equal; when a later call gives them different sizes
that guard fails, and the next capture gives each its own symbol.  Only
C-contiguous ``np.ndarray`` inputs get symbols: the compiled code then knows
every stride from the sizes alone.

The symbols themselves, their arithmetic and their guards are
:mod:`minicompile.ir.symbolic`; compiling the resulting graph once for every
size, or once per shape, is :mod:`minicompile.per_shape`'s part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ir import symbolic
from .guards import GuardSet
from .source import Source

Axis = tuple[str, int]  # (array source expression, axis)


@dataclass
class DynamicPolicy:
    mode: bool | None = None
    dims: set[Axis] = field(default_factory=set)      # automatic: axes seen changing
    distinct: set[Axis] = field(default_factory=set)  # axes that must get their own symbol

    def symbolic_axes(self, source: str, value: Any) -> list[int]:
        """The axes of ``value`` (at ``source``) this capture makes symbolic."""
        if self.mode is False or not _host_or_cupy_array(value) or not value.flags.c_contiguous:
            return []
        return [i for i, n in enumerate(value.shape)
                if n >= 2 and (self.mode is True or (source, i) in self.dims)]

    def symbolic_int(self, source: str, value: Any) -> bool:
        """Whether the Python int at ``source`` is a size symbol in this capture
        (``dynamic=True``, or automatic: its value changed between calls; >= 2)."""
        return type(value) is int and value >= 2 and self.mode is not False \
            and (self.mode is True or (source, None) in self.dims)

    @property
    def any(self) -> bool:
        return self.mode is True or bool(self.dims)


def is_cupy_array(value: Any) -> bool:
    """A CuPy (GPU) array: traced like an ndarray; cupy itself is never imported here."""
    return type(value).__module__.startswith("cupy") and type(value).__name__ == "ndarray"


def _host_or_cupy_array(value: Any) -> bool:
    """An ndarray or a CuPy array (same shape, strides and flags)."""
    return type(value) is np.ndarray or is_cupy_array(value)


class SymbolTable:
    """One capture's size symbols, shared by equal example sizes unless told apart."""

    def __init__(self, policy: DynamicPolicy):
        self.policy = policy
        self.env = symbolic.ShapeEnv()
        self.by_hint: dict[int, tuple[symbolic.Sym, str]] = {}
        self.axes: dict[str, Axis] = {}  # symbol name -> the axis it was read from

    def size(self, source: str, axis: int | None, hint: int, guards: GuardSet, src: Any,
             lineno: int | None) -> symbolic.Sym:
        """The symbol for axis ``axis`` of the array at ``source``, or (``axis``
        None) for the Python int at ``source`` itself."""
        expr = source if axis is None else f"{source}.shape[{axis}]"
        shared = self.by_hint.get(hint)
        if shared is not None and (source, axis) not in self.policy.distinct:
            sym, first = shared
            first_axis = self.axes[str(sym)]
            if first_axis not in self.policy.distinct:
                guards.add(src, f"{expr} == {first}", expr, lineno, kind="same_size",
                           dims=((source, axis), first_axis), text=f"{expr} == {sym}  # same size")
                return sym
        sym = self.env.create_symbol(hint, expr)
        self.axes[str(sym)] = (source, axis)
        self.by_hint.setdefault(hint, (sym, expr))
        return sym

    def int_symbols(self) -> list[tuple[str, str, bool]]:
        """``(symbol, source, pinned)`` for each symbol read from a Python int;
        ``pinned``: some use fixed it to its example value (guarded)."""
        return [(s, src, s in self.env.specialized) for s, (src, axis) in self.axes.items()
                if axis is None]

    def add_relation_guards(self, guards: GuardSet) -> None:
        """The relations the trace relied on (``s0 == s1``, ``s0 % 2 == 0``), as guards."""
        for check, text, syms, line in self.env.relation_guards():
            axes = tuple(self.axes[s] for s in syms)
            guards.add(Source(axes[0][0]), check, self.env.sources[syms[0]], line, kind="dim", dims=axes,
                       text=f"{text}  # " + ", ".join(f"{s} = {self.env.sources[s]}" for s in syms))


def changed_dims(guards: GuardSet, L: dict, G: dict, builtins: dict,
                 closure: tuple | None) -> tuple[set[Axis], set[Axis]] | None:
    """``(axes that changed, axes to give their own symbol)`` when every failing
    guard is about array sizes (same rank) or the value of a Python int
    argument (its axis is None), else None."""
    failing = guards.failing(L, G, builtins, closure)
    if not failing:
        return None
    dims: set[Axis] = set()
    split: set[Axis] = set()
    resized: set[str] = set()
    for g in failing:
        if g.kind == "shape":
            try:
                new = tuple(guards.evaluate(g.subject, L, G, builtins, closure))
            except Exception:
                return None
            if len(new) != len(g.expected):
                return None
            dims |= {(g.source.expr, i) for i, (a, b) in enumerate(zip(new, g.expected)) if a != b}
            resized.add(g.source.expr)
        elif g.kind == "int":  # a Python int's value changed (its type guard says it is an int)
            dims |= set(g.dims)
        elif g.kind in ("dim", "same_size"):
            dims |= set(g.dims)
            if g.kind == "same_size":
                split |= set(g.dims)
            resized |= {a for a, _ in g.dims}
        elif g.kind != "strides":
            return None
    if any(g.kind == "strides" and g.source.expr not in resized for g in failing):
        return None
    return (dims, split) if dims else None
