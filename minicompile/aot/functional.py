"""``mc.grad``, ``mc.value_and_grad``, ``mc.jacobian``, ``mc.hessian``: the functional forms, on the tape.

``mc.grad(f, argnums)(*args)`` wraps the chosen arguments — arrays, or
pytrees of them (tuples, lists, dicts) — in tensors that require gradients,
calls ``f``, runs the backward pass from its scalar result and returns the
gradients in the same structure as the arguments (zeros for an argument the
result does not depend on, or only through integer or boolean values), each
an array of its argument's module (CuPy arrays give CuPy gradients).

They compose.  Given a tensor that is itself on a tape (it is how an outer
``mc.grad`` calls an inner one), a function enters it through a fresh tape
node — an identity, so the inner derivative is taken with respect to that
node alone, never to the outer variable's other uses — and records its
backward pass on the tape (``create_graph``): its result is a tensor the
outer function differentiates again.  So ``mc.grad(mc.grad(f))`` is the
second derivative, ``mc.hessian(f) = mc.jacobian(mc.grad(f))``, and a
Hessian-vector product is ``mc.grad(lambda x: np.sum(mc.grad(f)(x) * v))``
(torch: ``create_graph=True``, ``torch.func.hessian``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir.ops.registry import as_array
from .tensor import Tensor, apply, backward_pass


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a named tuple
        return type(tree)(*(tree_map(fn, v) for v in tree))
    if isinstance(tree, (tuple, list)):
        return type(tree)(tree_map(fn, v) for v in tree)
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


def tree_leaves(tree: Any) -> list:
    leaves: list = []
    tree_map(leaves.append, tree)
    return leaves


def _on_tape(x: Any) -> bool:
    return isinstance(x, Tensor) and x.requires_grad


def _enter(x: Any) -> Tensor:
    """The tensor a function differentiates with respect to, for argument ``x``."""
    if _on_tape(x):  # from an outer function: a node of its own on the outer tape
        return apply("positive", (x,), {})
    array = as_array(x.data if isinstance(x, Tensor) else x)  # a CuPy array stays one
    if array.dtype.kind != "f":
        raise TypeError(f"gradients need floating-point inputs, got {array.dtype}")
    return Tensor(array, requires_grad=True)


def _zeros_like(t: Tensor, nested: bool) -> Any:
    zeros = np.zeros_like(t.data)
    return Tensor(zeros) if nested else zeros


def _wrap(args: tuple, nums: tuple[int, ...]) -> tuple[list, list, bool]:
    """(the arguments with those in ``nums`` entered, the entered tensors, nested?)."""
    nested = any(_on_tape(leaf) for i in nums for leaf in tree_leaves(args[i]))
    wrapped = list(args)
    for i in nums:
        wrapped[i] = tree_map(_enter, args[i])
    return wrapped, [t for i in nums for t in tree_leaves(wrapped[i])], nested


def _closes_over_tape(out: Any, inputs: list[Tensor]) -> bool:
    """Does ``out`` depend on a tensor that requires grad other than through ``inputs``
    (a variable of an outer function, read from a closure)?  Then its gradient is a
    function of that variable, to be recorded for the outer function's pass."""
    if not isinstance(out, Tensor):
        return False
    stop = {id(t) for t in inputs}
    seen, todo = set(stop), [out]
    while todo:
        t = todo.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t._node is None:
            if t.requires_grad:
                return True
            continue
        todo.extend(t._node.tensors.values())
    return False


def _gradients(out: Any, inputs: list[Tensor], seed: Any, nested: bool, retain: bool) -> list:
    """d(out . seed)/d(input) for each input: zeros where out does not depend on it."""
    if not (isinstance(out, Tensor) and out.requires_grad):
        # out is computed without the inputs, or through integers and booleans only
        # (np.sum(x > 0)): piecewise constant, its gradient is zero.
        return [_zeros_like(t, nested) for t in inputs]
    grads = backward_pass([(out, seed)], inputs=inputs, create_graph=nested, retain_graph=retain)
    return [g if g is not None else _zeros_like(t, nested) for g, t in zip(grads, inputs)]


def _unflatten(args: list, nums: tuple[int, ...], values: list) -> tuple:
    """``values`` (one per entered leaf, in order) in the structure of each argument."""
    it = iter(values)
    return tuple(tree_map(lambda _: next(it), args[i]) for i in nums)


def _value(out: Any, nested: bool) -> Any:
    if nested and isinstance(out, Tensor):
        return out
    data = out.data if isinstance(out, Tensor) else as_array(out)
    return data[()] if data.ndim == 0 else data


def value_and_grad(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """``(value, grads)`` of a function whose result is a scalar."""
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)

    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        wrapped, inputs, nested = _wrap(args, nums)
        out = fn(*wrapped, **kwargs)
        nested = nested or _closes_over_tape(out, inputs)
        size = out.data.size if isinstance(out, Tensor) else np.size(out)
        if size != 1:
            raise TypeError(f"grad needs a scalar result, got shape {np.shape(out)}")
        seed = np.ones_like(out.data) if isinstance(out, Tensor) else None
        # nested: an outer pass goes through this forward again (the gradient depends on it)
        grads = _unflatten(wrapped, nums, _gradients(out, inputs, seed, nested, retain=nested))
        return _value(out, nested), (grads if many else grads[0])

    return run


def grad(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The gradient of a scalar function with respect to argument(s) ``argnums``."""
    vg = value_and_grad(fn, argnums)
    return lambda *args, **kwargs: vg(*args, **kwargs)[1]


def jacobian(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Jacobian of an array-valued function: for an output of shape S and an
    argument of shape I, an array of shape S + I (one backward pass per output element)."""
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)

    def run(*args: Any, **kwargs: Any) -> Any:
        wrapped, inputs, nested = _wrap(args, nums)
        out = fn(*wrapped, **kwargs)
        nested = nested or any(_closes_over_tape(o, inputs) for o in tree_leaves(out))
        if isinstance(out, (tuple, list)):  # several outputs (a gradient by several argnums)
            return type(out)(_jacobian_of(o, wrapped, inputs, nums, many, nested) for o in out)
        return _jacobian_of(out, wrapped, inputs, nums, many, nested)

    return run


def _jacobian_of(out: Any, wrapped: list, inputs: list, nums: tuple, many: bool, nested: bool) -> Any:
    data = out.data if isinstance(out, Tensor) else as_array(out)
    rows: list[list] = []  # per output element, the gradient of each input
    for k in range(data.size):
        seed = np.zeros_like(data).reshape(-1)
        seed[k] = 1
        rows.append(_gradients(out, inputs, seed.reshape(data.shape), nested, retain=True))
    jacobians = []
    for j, t in enumerate(inputs):
        shape = tuple(data.shape) + tuple(t.shape)
        column = [row[j] for row in rows]
        if not column:  # an empty output
            jacobians.append(_zeros_like(Tensor(np.zeros(shape, t.dtype)), nested))
        elif nested:
            jacobians.append(apply("reshape", (apply("stack", (column,), {}), shape), {}))
        else:
            jacobians.append(np.stack(column).reshape(shape))
    result = _unflatten(wrapped, nums, jacobians)
    return result if many else result[0]


def hessian(fn: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The Hessian of a scalar function: the Jacobian of its gradient (shape I + I)."""
    return jacobian(grad(fn, argnums), argnums)
