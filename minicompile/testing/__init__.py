"""Checking compiled code against eager NumPy: for your own functions and your own backends.

In:  a NumPy function and its arguments (or hypothesis strategies for them),
     or a backend ``(graph, example_inputs) -> callable``.
Out: assertions that fail with a readable report, and counts to assert on.

* :func:`assert_same` — compiled and eager agree on the result and on every
  argument after the call (torch.testing.assert_close's role, applied to a call);
  :func:`assert_close` — the comparison alone; :data:`TOLERANCE` its tolerances;
* :class:`CompileCounter`, :func:`no_recompiles`, :func:`max_graph_breaks` —
  torch._dynamo.testing's counters;
* :func:`check_gradients` — ``mc.grad`` against central differences (JAX's check_grads);
* :func:`check_backend` — a backend over every op-info sample, reported per op and
  dtype as pass / wrong / raised (the role of torch's opcheck for a backend);
* :func:`check` and the hypothesis strategies it draws from (needing
  hypothesis: ``pip install 'minicompile[testing]'``) — property tests that
  print a ready-to-paste reproducer when they fail: :func:`arrays` (odd
  layouts, 0-d and empty shapes), :func:`aliasing_groups` (arguments that are
  views of one base), :func:`shape_sequences` (calls whose sizes change: dynamic
  shapes) — ``minicompile.testing.strategies`` — and :func:`programs` (random
  NumPy programs, with mutation, graph breaks, aliasing as options:
  ``minicompile.testing.random_programs``).

Importing this package needs neither pytest nor hypothesis.
"""
from __future__ import annotations

from typing import Any

from .backends import BackendReport, check_backend
from .compare import DEFAULTS, TOLERANCE, assert_close, assert_same, copy_args
from .counters import CompileCounter, max_graph_breaks, no_recompiles
from .gradients import check_gradients

__all__ = ["assert_same", "assert_close", "copy_args", "TOLERANCE", "DEFAULTS", "CompileCounter",
           "no_recompiles", "max_graph_breaks", "check_gradients", "check_backend", "BackendReport",
           "check", "arrays", "aliasing_groups", "shape_sequences", "programs"]

# name -> the module defining it; these import hypothesis, so only when asked for.
_STRATEGIES = {"check": "strategies", "arrays": "strategies", "aliasing_groups": "strategies",
               "shape_sequences": "strategies", "programs": "random_programs"}


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES:
        import importlib

        return getattr(importlib.import_module(f".{_STRATEGIES[name]}", __name__), name)
    raise AttributeError(f"module 'minicompile.testing' has no attribute {name!r}")
