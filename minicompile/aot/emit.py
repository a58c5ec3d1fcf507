"""One protocol for "apply an op": eagerly on arrays, or as a node of a graph.

Derivative rules are written once against an :class:`Emitter`; the eager tape
runs them with :class:`EagerEmitter` (now, in the arrays' own module: NumPy,
or CuPy on the GPU), the joint-graph tracer with
:class:`GraphEmitter` (graph nodes to compile later) — the Autodidax idea of
one interpreter protocol for every transformation.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import ir
from ..ir.ops import TensorMeta, get_op
from ..ir.ops.registry import as_array, is_array_value


def canonical_args(op_name: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind a call to the op's signature and canonicalize it, as Graph.call does."""
    op = get_op(op_name)
    bound = op.bind(args, kwargs)
    if op.canonicalize is None:
        return bound
    # Arrays (NumPy's or a device module's) are described by their metas; the rest canonicalized.
    metas = {k: (TensorMeta(tuple(v.shape), np.dtype(v.dtype)) if is_array_value(v) else v)
             for k, v in bound.items()}
    canonical = op.canonicalize(metas)
    return {k: (bound[k] if is_array_value(bound[k]) else canonical[k]) for k in bound}


class Emitter:
    def call(self, op_name: str, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    # -- helpers every rule needs ------------------------------------------------------

    def sum_to(self, g: Any, shape: tuple[int, ...]) -> Any:
        """Undo broadcasting: sum ``g`` down to ``shape`` (the input's shape)."""
        shape = tuple(shape)
        if tuple(g.shape) == shape:
            return g
        lead = len(g.shape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
        )
        if axes:
            g = self.call("sum", g, axis=axes, keepdims=True)
        return self.call("reshape", g, shape)

    def broadcast_to(self, x: Any, like: Any) -> Any:
        """``x`` broadcast to the shape of ``like`` (an array of that shape)."""
        if tuple(x.shape) == tuple(like.shape):
            return x
        if "broadcast_to" in ir.OPS:
            return self.call("broadcast_to", x, tuple(like.shape))
        # where(c, x, x) is x whatever c holds, broadcast to c's shape.
        return self.call("where", self.call("equal", like, like), x, x)


class EagerEmitter(Emitter):
    def call(self, op_name: str, *args: Any, **kwargs: Any) -> Any:
        op = get_op(op_name)
        bound = canonical_args(op_name, args, kwargs)
        return as_array(op.impl(*bound.values()))


class GraphEmitter(Emitter):
    def __init__(self, graph: ir.Graph):
        self.graph = graph

    def call(self, op_name: str, *args: Any, **kwargs: Any) -> Any:
        return self.graph.call(op_name, *args, **kwargs)
