"""Side effects of traced code on the caller's Python objects, replayed after the graph.

Traced code may change objects it did not create: append to a list it was
given, set a key of a dict, assign an attribute of an object, rebind a global.
During the trace these changes happen only to the variable trackers (so later
reads in the trace see them); the compiled code then *replays* them on the
real objects after the graph has run, so the caller observes exactly what
eager execution would have left behind (TorchDynamo's SideEffects).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from .variables import DictVariable, ListVariable, VariableTracker


@dataclass
class SideEffects:
    # (object's source expression, attribute) -> new value, in order of first write
    attributes: dict[tuple[str, str], VariableTracker] = field(default_factory=dict)
    # global name -> new value (writes to the traced function's own module)
    globals: dict[str, VariableTracker] = field(default_factory=dict)
    # lists and dicts from the frame whose contents the trace changed
    containers: list[VariableTracker] = field(default_factory=list)
    # the caller's arrays updated in place (x += 1, x[i] = v): source -> new value
    arrays: dict[str, VariableTracker] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.attributes or self.globals or self.containers or self.arrays)

    def write_array(self, source_expr: str, value: VariableTracker) -> None:
        self.arrays[source_expr] = value

    def store_attr(self, source_expr: str, name: str, value: VariableTracker) -> None:
        self.attributes[(source_expr, name)] = value

    def mutated(self, container: VariableTracker) -> None:
        if all(c is not container for c in self.containers):
            self.containers.append(container)

    def emit(self, expr, array_value=None) -> list[str]:
        """Python statements that replay the effects; ``expr(var)`` rebuilds a value and
        ``array_value(var)`` names the graph output holding an updated array's values.

        Every new value is computed first, then all writes happen, so a write
        cannot change what a later value was read from.
        """
        values: list[tuple[str, str]] = []
        for var in self.containers:
            if isinstance(var, ListVariable):
                values.append((f"{var.source.expr}[:]", "[" + ", ".join(expr(v) for v in var.items) + "]"))
            elif isinstance(var, DictVariable):
                items = ", ".join(f"{k!r}: {expr(v)}" for k, v in var.items.items())
                values.append((f"___replace_dict({var.source.expr})", "{" + items + "}"))
        for (obj, name), var in self.attributes.items():
            values.append((f"{obj}.{name}", expr(var)))
        for name, var in self.globals.items():
            values.append((f"G[{name!r}]", expr(var)))
        for source, var in self.arrays.items():
            values.append((f"{source}[...]", array_value(var)))
        lines = [f"___effect{i} = {value}" for i, (_, value) in enumerate(values)]
        for i, (target, _) in enumerate(values):
            if target.startswith("___replace_dict("):
                lines.append(f"{target[len('___replace_dict('):-1]}.clear()")
                lines.append(f"{target[len('___replace_dict('):-1]}.update(___effect{i})")
            else:
                lines.append(f"{target} = ___effect{i}")
        return lines

