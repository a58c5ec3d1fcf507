"""Maximum flow / minimum cut (Edmonds-Karp): shortest augmenting paths by BFS.

Small and dependency-free, enough for the partitioner's flow networks (a few
hundred vertices).  Capacities may be ``math.inf``.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Hashable

Vertex = Hashable


class FlowNetwork:
    def __init__(self) -> None:
        self.capacity: dict[Vertex, dict[Vertex, float]] = {}

    def add_edge(self, u: Vertex, v: Vertex, capacity: float = math.inf) -> None:
        self.capacity.setdefault(u, {})
        self.capacity.setdefault(v, {})
        self.capacity[u][v] = self.capacity[u].get(v, 0.0) + capacity
        self.capacity[v].setdefault(u, 0.0)  # the residual edge

    def min_cut(self, source: Vertex, sink: Vertex) -> tuple[float, set[Vertex]]:
        """(value of the maximum flow, vertices on the source side of a minimum cut)."""
        residual = {u: dict(edges) for u, edges in self.capacity.items()}
        residual.setdefault(source, {})
        residual.setdefault(sink, {})
        flow = 0.0
        while True:
            parent = self._bfs(residual, source, sink)
            if sink not in parent:
                break
            bottleneck, v = math.inf, sink
            while v != source:
                u = parent[v]
                bottleneck = min(bottleneck, residual[u][v])
                v = u
            if bottleneck == math.inf:
                raise ValueError("infinite flow: every source-sink path has infinite capacity")
            v = sink
            while v != source:
                u = parent[v]
                residual[u][v] -= bottleneck
                residual[v][u] = residual[v].get(u, 0.0) + bottleneck
                v = u
            flow += bottleneck
        return flow, set(self._bfs(residual, source, None))

    @staticmethod
    def _bfs(residual, source, sink) -> dict:
        parent = {source: source}
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for v, cap in residual[u].items():
                if cap > 0 and v not in parent:
                    parent[v] = u
                    if v == sink:
                        return parent
                    queue.append(v)
        return parent
