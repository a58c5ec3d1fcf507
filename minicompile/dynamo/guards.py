"""Guards: the assumptions a cache entry was compiled under, as one function.

Each :class:`Guard` is a Python boolean expression over the frame (``L`` for
locals, ``G`` for globals, ``B`` for builtins, ``CLOSURE`` for closure cells),
remembered with the user line that made the interpreter rely on it.  A cache
entry's guards are compiled into a single ``guard(L, G)`` function — one
``and`` chain, cheapest checks first per source — so a cache hit costs one
Python call.  On a miss, :func:`first_failure` re-checks them one by one to say
which assumption broke (``L['x'].shape == (8, 16): got (16, 16)``).
"""
from __future__ import annotations

import math
import types
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .source import Source


@dataclass(frozen=True)
class Guard:
    source: Source
    check: str          # e.g. "L['x'].shape == (8, 16)"
    subject: str        # the expression whose value the check looks at
    lineno: int | None  # user source line that made us rely on it
    # What a failure means to automatic dynamic shapes (see dynamic_shapes.py):
    # "shape" (a whole static shape, ``expected`` holds it), "strides", "dim"
    # (sizes: ``dims`` lists the (array source, axis) pairs it relates; axis None
    # for a Python int used as a size), "int" (an int argument's value); "" otherwise.
    kind: str = ""
    dims: tuple = ()
    expected: Any = None
    text: str | None = None  # the readable form over size symbols (``2 <= s0``)

    def __str__(self) -> str:
        where = f"  # line {self.lineno}" if self.lineno else ""
        return f"{self.text or self.check}{where}"


@dataclass
class GuardSet:
    guards: list[Guard] = field(default_factory=list)
    # Objects a guard compares against by identity or equality, by name.
    constants: dict[str, Any] = field(default_factory=dict)
    # Frame expressions minicompile made up (a resume function's stack parameters,
    # ``L['___stack0']``) -> how they read to the user (``<x.item()>``).
    names: dict[str, str] = field(default_factory=dict)

    def readable(self, text: str) -> str:
        """``text`` with the expressions minicompile made up in the user's words."""
        for expr, name in self.names.items():
            text = text.replace(expr, name)
        return text

    def rename(self, names: dict[str, str]) -> None:
        """Print the guards that read ``names``' expressions in the user's words."""
        self.names.update(names)
        self.guards = [g if self.readable(g.text or g.check) == (g.text or g.check)
                       else replace(g, text=self.readable(g.text or g.check)) for g in self.guards]

    def add(self, source: Source, check: str, subject: str, lineno: int | None, **what: Any) -> None:
        if any(g.check == check for g in self.guards):
            return
        self.guards.append(Guard(source, check, subject, lineno, **what))

    def forget_after(self, count: int, keep: set[str]) -> None:
        """Drop the guards added after the first ``count``, except those on the sources
        in ``keep``.  A graph break runs the instruction that broke in CPython, so
        what the trace assumed while it tried to follow that instruction (inside a
        library function, say) no longer matters; the graph's inputs still do."""
        self.guards = self.guards[:count] + [g for g in self.guards[count:] if g.source.expr in keep]

    def constant(self, value: Any) -> str:
        """A name under which ``value`` is visible to the guard function."""
        for name, existing in self.constants.items():
            if existing is value:
                return name
        label = getattr(value, "__name__", None) or (value.name if isinstance(value, np.dtype) else "")
        kind = ("dtype" if isinstance(value, np.dtype) else "type" if isinstance(value, type)
                else "module" if isinstance(value, types.ModuleType) else "obj")
        base = f"___{kind}_{label}" if label.isidentifier() else f"___{kind}"
        name, i = base, 0
        while name in self.constants:
            i += 1
            name = f"{base}_{i}"
        self.constants[name] = value
        return name

    # -- the guard kinds the interpreter installs ----------------------------

    def array(self, source: Source, value: np.ndarray, lineno: int | None) -> None:
        """An array-like input (ndarray, mc.Tensor, CuPy array): type, shape, dtype, strides."""
        s = source.expr
        self._array_type(source, value, lineno)
        self.add(source, f"{s}.shape == {tuple(value.shape)!r}", f"{s}.shape", lineno,
                 kind="shape", expected=tuple(value.shape))
        self.add(source, f"{s}.dtype == {self.constant(value.dtype)}", f"{s}.dtype", lineno)
        self.add(source, f"{s}.strides == {tuple(value.strides)!r}", f"{s}.strides", lineno, kind="strides")

    def dynamic_array(self, source: Source, value: Any, shape: tuple, lineno: int | None) -> None:
        """An ndarray (or CuPy array) input with symbolic sizes: type, rank, each static size,
        ``2 <= s`` per symbol, dtype, and C-contiguity in place of exact strides."""
        s = source.expr
        self._array_type(source, value, lineno)
        self.add(source, f"len({s}.shape) == {len(shape)}", f"len({s}.shape)", lineno)
        for axis, n in enumerate(shape):
            dim = f"{s}.shape[{axis}]"
            if isinstance(n, int):
                self.add(source, f"{dim} == {n}", dim, lineno, kind="dim", dims=((s, axis),))
            else:
                self.add(source, f"{dim} >= 2", dim, lineno, kind="dim", dims=((s, axis),),
                         text=f"2 <= {n}  # {n} = {dim}")
        self.add(source, f"{s}.dtype == {self.constant(value.dtype)}", f"{s}.dtype", lineno)
        self.add(source, f"{s}.flags.c_contiguous", f"{s}.flags.c_contiguous", lineno, kind="strides")

    def _array_type(self, source: Source, value: Any, lineno: int | None) -> None:
        """``type(x) is ...``: ndarray by its global name, another array type as a constant."""
        s = source.expr
        kind = "___ndarray" if type(value) is np.ndarray else self.constant(type(value))
        self.add(source, f"type({s}) is {kind}", f"type({s})", lineno)

    def size_int(self, source: Source, sym: Any, lineno: int | None) -> None:
        """A Python int argument that is a size symbol: ``2 <= s`` (after its type)."""
        s = source.expr
        self.add(source, f"{s} >= 2", s, lineno, kind="dim", dims=((s, None),),
                 text=f"2 <= {sym}  # {sym} = {s}")

    def value(self, source: Source, value: Any, lineno: int | None) -> None:
        """Type and value of a Python or NumPy scalar (or None, str, dtype)."""
        s = source.expr
        self.add(source, f"type({s}) is {self.constant(type(value))}", f"type({s})", lineno)
        if isinstance(value, float) and value != value:
            self.add(source, f"{s} != {s}", s, lineno)  # NaN is the only float != itself
        elif isinstance(value, (float, np.floating)) and value == 0:
            # 0.0 == -0.0, but x * 0.0 and x * -0.0 differ in the sign of zeros.
            check = f"{s} == 0 and ___copysign(1.0, {s}) == {float(np.copysign(1.0, value))!r}"
            self.add(source, check, s, lineno)
        elif type(value) is int and s.startswith("L["):
            # An int argument: when only its value changes, automatic dynamic
            # shapes may make it a size symbol (dynamic_shapes.changed_dims).
            self.add(source, f"{s} == {value!r}", s, lineno, kind="int", dims=((s, None),))
        elif type(value) in (int, bool, str) or (type(value) is float and math.isfinite(value)):
            self.add(source, f"{s} == {value!r}", s, lineno)  # readable: the literal itself
        elif value is None:
            self.add(source, f"{s} is None", s, lineno)
        else:
            self.add(source, f"{s} == {self.constant(value)}", s, lineno)

    def identity(self, source: Source, value: Any, lineno: int | None) -> None:
        s = source.expr
        self.add(source, f"{s} is {self.constant(value)}", f"id({s})", lineno)

    def type_of(self, source: Source, value: Any, lineno: int | None) -> None:
        s = source.expr
        self.add(source, f"type({s}) is {self.constant(type(value))}", f"type({s})", lineno)

    def dict_keys(self, source: Source, value: dict, lineno: int | None) -> None:
        """Type and the keys in order (iteration order is part of what was traced)."""
        s = source.expr
        self.type_of(source, value, lineno)
        self.add(source, f"tuple({s}) == {tuple(value)!r}", f"tuple({s})", lineno)

    def length(self, source: Source, value: Any, lineno: int | None) -> None:
        s = source.expr
        self.add(source, f"type({s}) is {self.constant(type(value))}", f"type({s})", lineno)
        self.add(source, f"len({s}) == {len(value)}", f"len({s})", lineno)

    # -- compiling -------------------------------------------------------------

    def source_code(self) -> str:
        body = "\n        and ".join(g.check for g in self.guards) or "True"
        legend = "".join(f"# {expr}: {name}\n" for expr, name in self.names.items()
                         if any(expr in g.check for g in self.guards))
        return f"{legend}def guard(L, G):\n    return (\n        {body}\n    )"

    def compile(self, builtins: dict, closure: tuple | None) -> Callable[[dict, dict], bool]:
        namespace = self._namespace(builtins, closure)
        exec(compile(self.source_code(), "<minicompile guards>", "exec"), namespace)
        fn = namespace["guard"]
        fn.source = self.source_code()
        return fn

    def _namespace(self, builtins: dict, closure: tuple | None) -> dict:
        import math

        from ..aot.tensor import grad_enabled
        from .functionalization import element_offset, may_share_memory, writeable

        return {
            "___ndarray": np.ndarray,
            "___grad_enabled": grad_enabled,
            "___may_share": may_share_memory,
            "___offset": element_offset,
            "___writeable": writeable,
            "___copysign": math.copysign,
            "B": builtins,
            "CLOSURE": closure or (),
            **self.constants,
        }

    def failing(self, L: dict, G: dict, builtins: dict, closure: tuple | None) -> list[Guard]:
        """Every guard that fails on this frame (for automatic dynamic shapes)."""
        namespace = {**self._namespace(builtins, closure), "L": L, "G": G}
        out = []
        for g in self.guards:
            try:
                ok = bool(eval(g.check, namespace))
            except Exception:
                ok = False
            if not ok:
                out.append(g)
        return out

    def evaluate(self, expr: str, L: dict, G: dict, builtins: dict, closure: tuple | None) -> Any:
        return eval(expr, {**self._namespace(builtins, closure), "L": L, "G": G})

    def first_failure(self, L: dict, G: dict, builtins: dict, closure: tuple | None) -> str | None:
        """The first guard that fails on this frame, with what it saw instead."""
        namespace = {**self._namespace(builtins, closure), "L": L, "G": G}
        for g in self.guards:
            try:
                ok = eval(g.check, namespace)
            except Exception as e:  # an earlier guard failing can make later ones raise
                ok, seen = False, f"{type(e).__name__}: {e}"
            else:
                seen = None
            if not ok:
                if seen is None:
                    try:
                        seen = repr(eval(g.subject, namespace))
                    except Exception as e:
                        seen = f"{type(e).__name__}: {e}"
                line = f" (guard from line {g.lineno})" if g.lineno else ""
                return self.readable(f"{g.check}: got {g.subject} = {seen}{line}")
        return None

    def __str__(self) -> str:
        return "\n".join(str(g) for g in self.guards)
