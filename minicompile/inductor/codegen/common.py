"""What every kernel writer shares: indented lines, fresh names, buffer parameters.

The C++ and the Triton generators both walk loop-IR values into SSA-style lines;
this base class holds the bookkeeping they have in common — the lines written
so far, temporaries numbered in order (so generated code is deterministic), the
parameter a buffer is read or written through, and a load's flat offset.
"""
from __future__ import annotations

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
