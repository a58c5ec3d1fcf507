"""Sources: where a traced value came from, as a Python expression.

``L['x']`` is the frame's local ``x``, ``G['W']`` the global ``W``,
``CLOSURE[0].cell_contents`` a closure cell; items and attributes nest
(``L['cfg'][1]``, ``G['np'].float32``).  A source's expression is evaluated
against the frame in guard functions and input extractors, so everything the
compiled code reads or assumes can be traced back to the user's names.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    expr: str

    def __str__(self) -> str:
        return self.expr


def local_source(name: str) -> Source:
    return Source(f"L[{name!r}]")


def global_source(name: str) -> Source:
    return Source(f"G[{name!r}]")


def builtin_source(name: str) -> Source:
    return Source(f"B[{name!r}]")


def closure_source(index: int) -> Source:
    return Source(f"CLOSURE[{index}].cell_contents")


def item_source(base: Source, index: object) -> Source:
    return Source(f"{base.expr}[{index!r}]")


def attr_source(base: Source, attr: str) -> Source:
    return Source(f"{base.expr}.{attr}")
