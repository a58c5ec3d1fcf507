"""What every code generator shares: kernel lines, wrapper names, Extern calls.

The C++ and the Triton generators both walk loop-IR values into SSA-style lines;
:class:`LineWriter` holds the bookkeeping they have in common — the lines written
so far, temporaries numbered in order (so generated code is deterministic), the
parameter a buffer is read or written through, and a load's flat offset.  Both
wrappers (the Python that runs a schedule) name their locals with :class:`Names`
and call an Extern's NumPy reference through :func:`extern_call`.
"""
from __future__ import annotations

import keyword
from typing import Any, Callable

from ...ir.graph import format_value
from .. import loop_ir as L
from ..scheduler import Buffer


class LineWriter:
    def __init__(self, buffers: dict[str, Buffer], written: set[str] | frozenset[str], depth: int = 1):
        self.buffers = buffers
        self.written = written
        self.lines: list[str] = []
        self.depth = depth
        self.memo: dict[L.Value, str] = {}
        self.forwarded: dict[tuple[str, tuple], str] = {}
        self.reads: list[str] = []  # buffers read, in first-use order: the kernel's inputs
        self.counter = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter - 1}"

    def param(self, buffer: str) -> str:
        """The parameter a buffer is accessed through: out_ when written here, else in_."""
        if buffer in self.written:
            return f"out_{buffer}"
        if buffer not in self.reads:
            self.reads.append(buffer)
        return f"in_{buffer}"

    def offset(self, buffer: str, index: tuple[L.Expr, ...]) -> str:
        return self.render_index(L.linearize(index, self.buffers[buffer].strides))

    @staticmethod
    def render_index(expr: L.Expr) -> str:
        """An index expression in the backend's language (each backend sets its own)."""
        raise NotImplementedError


class Names:
    """Wrapper-local variable names: readable, unique, clear of globals."""

    def __init__(self, reserved: set[str]):
        self.used = set(reserved) | set(keyword.kwlist)

    def new(self, base: str) -> str:
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def extern_call(ext: L.Extern, array: Callable[[str], str]) -> str:
    """``_op_<name>(args)``: an Extern's NumPy call, buffers named by ``array``."""
    def arg(a: Any) -> str:
        if isinstance(a, L.BufferRef):
            return f"{array(a.name)}[()]" if a.scalar else array(a.name)  # a NumPy scalar, as eagerly
        if isinstance(a, list):  # a list stays a list: np.add.at(x, [0, 0], 1) is not x[0, 0]
            return "[" + ", ".join(arg(v) for v in a) + "]"
        if isinstance(a, tuple):
            inner = ", ".join(arg(v) for v in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        return format_value(a)

    return f"_op_{ext.op_name}({', '.join(arg(a) for a in ext.args)})"
