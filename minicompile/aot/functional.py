"""``mc.grad`` and ``mc.value_and_grad``: the functional form, built on the tape.

``mc.grad(f, argnums)(*args)`` wraps the chosen arguments — arrays, or
pytrees of them (tuples, lists, dicts) — in tensors that require gradients,
calls ``f``, runs ``backward()`` from its scalar result and returns the
gradients in the same structure as the arguments (zeros for an argument the
result does not depend on, or only through integer or boolean values), each
an array of its argument's module (CuPy arrays give CuPy gradients).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.ops.registry import as_array
from .tensor import Tensor


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a named tuple
        return type(tree)(*(tree_map(fn, v) for v in tree))
    if isinstance(tree, (tuple, list)):
        return type(tree)(tree_map(fn, v) for v in tree)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _as_leaf(x: Any) -> Tensor:
    array = as_array(x)  # a CuPy array stays one
    if array.dtype.kind != "f":
        raise TypeError(f"gradients need floating-point inputs, got {array.dtype}")
    return Tensor(array, requires_grad=True)


def value_and_grad(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """``(value, grads)`` of a function whose result is a scalar."""
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)

    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        wrapped = list(args)
        for i in nums:
            wrapped[i] = tree_map(_as_leaf, args[i])
        out = fn(*wrapped, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError("the function must return a result computed from its inputs (a Tensor)")
        if out.data.size != 1:
            raise TypeError(f"grad needs a scalar result, got shape {out.shape}")
        if out.requires_grad:
            out.backward()
        # else the result depends on the arguments only through integers or booleans
        # (np.sum(x > 0)): piecewise constant, its gradient is zero — the zeros below.
        grads = tuple(
            tree_map(lambda t: t.grad if t.grad is not None else np.zeros_like(t.data), wrapped[i])
            for i in nums
        )
        return out.data[()], (grads if many else grads[0])

    return run


def grad(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The gradient of a scalar function with respect to argument(s) ``argnums``."""
    vg = value_and_grad(fn, argnums)
    return lambda *args, **kwargs: vg(*args, **kwargs)[1]
