"""``mc.explain(fn)(*args)``: what capture does with a call, without running it.

Like ``torch._dynamo.explain``, it reports the graphs, the graph breaks with
their reasons and source lines, the ops and the guards, so a user can see why
a function is (or is not) compiled whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import ir
from .convert_frame import capture
from .binder import make_binder
from .eval_frame import OptimizedFunction
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

    def __str__(self) -> str:
        lines = [
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
    target = fn.fn if isinstance(fn, OptimizedFunction) else fn
    bind = make_binder(target)

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        cap = capture(target, bind(*args, **kwargs))
        out = ExplainOutput(guards=list(cap.guards.guards), compile_seconds=cap.seconds)
        if cap.break_reason is not None:
            # Until resume functions exist, a break sends the whole call to eager.
            out.graph_break_count = 1
            out.break_reasons.append(cap.break_reason)
        elif cap.graph is not None:
            out.graphs.append(cap.graph)
            out.graph_count = 1
            out.ops_per_graph.append([n.op.name for n in cap.graph.calls])
            out.op_count = cap.graph.op_count()
        return out

    return run
