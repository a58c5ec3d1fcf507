"""``mc.explain(fn)(*args)``: what capture does with a call, without running it.

Like ``torch._dynamo.explain``, it reports the graphs, the graph breaks with
their reasons and source lines, the ops and the guards, so a user can see why
a function is (or is not) compiled whole.  A generator or async function is
reported, not run: no graph, one break reason naming its kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import ir
from .callables import resolve
from .convert_frame import recording
from .eval_frame import OptimizedFunction, python_only_kind, python_only_reason
from .exc import BreakReason
from .guards import Guard


@dataclass
class ExplainOutput:
    graphs: list[ir.Graph] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[BreakReason] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[str]] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)
    compile_seconds: float = 0.0
    # "a generator function", "an async function ...", "an async generator function":
    # a kind that runs as Python, uncompiled; None for a function that is traced.
    python_only: str | None = None

    def __str__(self) -> str:
        lines = [f"Runs as Python, uncompiled: {self.python_only}"] if self.python_only else []
        lines += [
            f"Graph count: {self.graph_count}",
            f"Graph break count: {self.graph_break_count}",
            f"Op count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, r in enumerate(self.break_reasons, 1):
                lines.append(f"  {i}. {r.reason}\n     at {r.filename}:{r.lineno}")
        for i, (g, ops) in enumerate(zip(self.graphs, self.ops_per_graph)):
            lines.append(f"Graph {i} ({len(ops)} ops):")
            lines.extend("  " + line for line in g.python_code(f"graph_{i}").splitlines())
        if self.guards:
            lines.append("Guards:")
            lines.extend(f"  {g}" for g in self.guards)
        lines.append(f"Capture time: {self.compile_seconds * 1e3:.1f} ms")
        return "\n".join(lines)


def explain(fn: Callable) -> Callable[..., ExplainOutput]:
    """Run ``fn`` once under capture (eager backend) and report every frame it traced.

    Like ``torch._dynamo.explain`` it really runs the function, so that the code
    after each graph break (the resume functions) is traced and reported too.
    """
    original = fn.original if isinstance(fn, OptimizedFunction) else fn
    target = resolve(original).fn  # a method, an object with __call__, a partial: its function

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        kind = python_only_kind(target)
        if kind is not None:  # calling it would only make a generator or coroutine
            reason = python_only_reason(target, f"is {kind}")
            return ExplainOutput(graph_break_count=1, break_reasons=[reason], python_only=kind)
        with recording() as captures:
            dynamic = fn.dynamic.mode if isinstance(fn, OptimizedFunction) else None
            OptimizedFunction(original, lambda graph, example_inputs: graph, False, "eager", dynamic)(*args, **kwargs)
        out = ExplainOutput()
        for cap in captures:
            out.guards.extend(cap.guards.guards)
            out.compile_seconds += cap.seconds
            if cap.break_reason is not None:
                out.break_reasons.append(cap.break_reason)
            if cap.graph is not None and cap.graph.op_count() > 0:
                out.graphs.append(cap.graph)
                out.ops_per_graph.append([n.op.name for n in cap.graph.calls])
        out.graph_count = len(out.graphs)
        out.graph_break_count = len(out.break_reasons)
        out.op_count = sum(len(ops) for ops in out.ops_per_graph)
        return out

    return run
