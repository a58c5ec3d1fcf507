"""``mc.Tensor``: an array that records a tape, and ``backward()`` that replays it.

A Tensor wraps an array: a NumPy array, or an array of another module that
speaks NumPy's protocols, such as a CuPy array on the GPU, which stays in its
module (values and gradients are computed there, never copied to the host;
:func:`~minicompile.ir.ops.registry.array_module` tells which).  NumPy
functions and operators reach it through NumPy's own dispatch protocols
(``__array_ufunc__`` for ``np.exp(t)``, ``t + 1``, ``t @ w``;
``__array_function__`` for ``np.sum(t)``, ``np.where(...)``), and its methods
mirror ndarray's (``t.sum(axis=1)``, ``t.reshape(...)``, ``t.T``).  Each
operation runs the op's NumPy reference implementation now (which NumPy
hands to CuPy for a CuPy array) and, when an input requires a gradient,
records a tape node: the op, its canonical arguments and its output.
``backward()`` walks the tape in reverse topological order and applies the
derivative rules of :mod:`minicompile.aot.derivatives` — the same rules the
joint graph uses.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..ir import OPS
from ..ir.ops.registry import as_array
from .derivatives import DERIVATIVES, NonDifferentiable
from .emit import EagerEmitter, canonical_args

_GRAD_ENABLED = [True]


def grad_enabled() -> bool:
    return _GRAD_ENABLED[-1]
EAGER = EagerEmitter()

# NumPy functions that reach Tensor through __array_function__ under another op name;
# every other function maps to the op of its own name, when the registry has one.
FUNCTION_OPS = {"amax": "max", "amin": "min"}
# Ufuncs with several outputs: one op per output, each with its own derivative.
MULTI_OUTPUT_UFUNCS = {"divmod": ("floor_divide", "remainder")}


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """Within this block no tape is recorded (like ``torch.no_grad``)."""
    _GRAD_ENABLED.append(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.pop()


@dataclass(eq=False)
class TapeNode:
    op: str
    args: dict[str, Any]             # canonical arguments; arrays for tensors
    tensors: dict[str, "Tensor"]     # the arguments that were tensors, by parameter
    out: Any  # the output array, None once freed
    freed: bool = False
    # A compiled region supplies its own backward: grad of the output -> grads by key.
    backward: Any = None


class Tensor:
    __array_priority__ = 1000  # so ndarray + Tensor defers to Tensor

    def __init__(self, data: Any, requires_grad: bool = False, _node: TapeNode | None = None):
        self.data = as_array(data.data if isinstance(data, Tensor) else data)
        if requires_grad and self.data.dtype.kind != "f":
            raise TypeError(f"only floating-point tensors can require gradients, not {self.data.dtype}")
        self.requires_grad = requires_grad
        self.grad: Any = None  # an array of the data's module
        self._node = _node

    # -- ndarray-like surface ------------------------------------------------------------

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    strides = property(lambda self: self.data.strides)
    size = property(lambda self: self.data.size)
    T = property(lambda self: apply("transpose", (self,), {}))

    def numpy(self) -> Any:
        return self.data  # a CuPy tensor's CuPy array: no copy to the host behind the user's back

    def item(self) -> Any:
        return self.data.item()

    def __repr__(self) -> str:
        flag = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({np.array2string(self.data, separator=', ')}{flag})"

    def __getitem__(self, key: Any) -> "Tensor":
        if isinstance(key, tuple) and key == ():  # x[()] of a 0-d value: the value itself
            return self
        if "getitem" not in OPS:
            raise TypeError("indexing an mc.Tensor needs the getitem op")
        return apply("getitem", (self, _unwrap(key)), {})

    def __len__(self) -> int:
        return len(self.data)

    def __float__(self) -> float:
        return float(self.data)

    def sum(self, axis=None, dtype=None, keepdims=False):
        return apply("sum", (self,), {"axis": axis, "dtype": dtype, "keepdims": keepdims})

    def mean(self, axis=None, dtype=None, keepdims=False):
        return apply("mean", (self,), {"axis": axis, "dtype": dtype, "keepdims": keepdims})

    def prod(self, axis=None, dtype=None, keepdims=False):
        return apply("prod", (self,), {"axis": axis, "dtype": dtype, "keepdims": keepdims})

    def max(self, axis=None, keepdims=False):
        return apply("max", (self,), {"axis": axis, "keepdims": keepdims})

    def min(self, axis=None, keepdims=False):
        return apply("min", (self,), {"axis": axis, "keepdims": keepdims})

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return apply("reshape", (self, tuple(shape)), {})

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list, type(None))) else axes
        return apply("transpose", (self, tuple(axes) if axes else None), {})

    def astype(self, dtype):
        return apply("astype", (self, dtype), {})

    # Operators go through NumPy's ufuncs, hence through __array_ufunc__.
    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.divide(self, o)
    def __rtruediv__(self, o): return np.divide(o, self)
    def __pow__(self, o): return np.power(self, o)
    def __rpow__(self, o): return np.power(o, self)
    def __floordiv__(self, o): return np.floor_divide(self, o)
    def __rfloordiv__(self, o): return np.floor_divide(o, self)
    def __mod__(self, o): return np.remainder(self, o)
    def __rmod__(self, o): return np.remainder(o, self)
    def __divmod__(self, o): return np.divmod(self, o)
    def __rdivmod__(self, o): return np.divmod(o, self)
    def __matmul__(self, o): return np.matmul(self, o)
    def __rmatmul__(self, o): return np.matmul(o, self)
    def __neg__(self): return np.negative(self)
    def __abs__(self): return np.absolute(self)
    def __lt__(self, o): return np.less(self, o)
    def __le__(self, o): return np.less_equal(self, o)
    def __gt__(self, o): return np.greater(self, o)
    def __ge__(self, o): return np.greater_equal(self, o)

    # -- NumPy dispatch -----------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs:
            raise TypeError(f"mc.Tensor supports plain calls of np.{ufunc.__name__}, "
                            f"not .{method} or {sorted(kwargs)}")
        if ufunc.__name__ in MULTI_OUTPUT_UFUNCS:
            return tuple(apply(op, inputs, {}) for op in MULTI_OUTPUT_UFUNCS[ufunc.__name__])
        return apply(ufunc.__name__, inputs, {})

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        op = FUNCTION_OPS.get(func.__name__, func.__name__)
        if op not in OPS:
            raise TypeError(f"np.{func.__name__} is not supported on mc.Tensor")
        return apply(op, args, kwargs)

    # -- autograd -------------------------------------------------------------------------

    def backward(self, grad: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf tensor's ``.grad``."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs; "
                                   "pass backward(grad) for a non-scalar tensor")
            grad = np.ones_like(self.data)
        backward_pass([(self, as_array(grad, self.dtype, like=self.data))])


def _unwrap(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.data
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v) for v in value)
    return value


def apply(op: str, args: tuple, kwargs: dict) -> Any:
    """Run ``op`` on tensors eagerly and record it on the tape when it needs a gradient."""
    canonical = canonical_args(op, _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()})
    raw = as_array(OPS[op].impl(*canonical.values()))
    bound = OPS[op].bind(args, kwargs)
    # Tensors by parameter; a parameter holding several arrays contributes (name, i) keys.
    tensors: dict[Any, Tensor] = {}
    for k, v in bound.items():
        if _on_tape(v):
            tensors[k] = v
        elif isinstance(v, (tuple, list)):
            tensors.update({(k, i): t for i, t in enumerate(v) if _on_tape(t)})
    if not tensors or not _GRAD_ENABLED[-1]:
        return Tensor(raw)
    if raw.dtype.kind != "f":
        # An integer or boolean result (x > 0, argmax) carries no gradient: its derivative
        # is zero.  It stays on the tape without its values, so that a float computed
        # from it (np.sum(w * (x > 0))) still requires grad, and backward() gives zeros.
        return Tensor(raw, _node=TapeNode(op, {}, tensors, None))
    return Tensor(raw, requires_grad=True, _node=TapeNode(op, canonical, tensors, raw))


def _on_tape(value: Any) -> bool:
    return isinstance(value, Tensor) and (value.requires_grad or value._node is not None)


def _topological(roots: list[Tensor]) -> list[Tensor]:
    order, seen = [], set()
    stack = [(t, False) for t in roots]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        if t._node is not None:
            stack.extend((p, False) for p in t._node.tensors.values())
    return order[::-1]  # outputs first


def backward_pass(seeds: list[tuple[Tensor, Any]]) -> None:
    grads: dict[int, Any] = {}
    for t, g in seeds:
        grads[id(t)] = grads.get(id(t), 0) + g
    for t in _topological([t for t, _ in seeds]):
        g = grads.pop(id(t), None)
        node = t._node
        if g is None:
            # A leaf reached only through rules that return no gradient (floor, sign):
            # its gradient is zero, as a number, not "none".
            if node is None and t.grad is None:
                t.grad = np.zeros_like(t.data)
            continue
        if node is None:  # a leaf
            t.grad = g if t.grad is None else t.grad + g
            continue
        if node.freed:
            raise RuntimeError("trying to backward through the graph a second time: "
                               "its saved values were freed after the first backward")
        if node.backward is not None:
            input_grads = node.backward(g)
        else:
            rule = DERIVATIVES.get(node.op)
            if rule is None:
                raise NonDifferentiable(f"no derivative rule for np.{node.op}: cannot differentiate through it")
            input_grads = rule(EAGER, g, node.out, node.args)
        for param, parent in node.tensors.items():
            if isinstance(param, tuple):  # one array of a several-array parameter
                name, i = param
                gi = input_grads.get(name)
                gi = gi[i] if gi is not None else None
            else:
                gi = input_grads.get(param)
            if gi is not None and parent.requires_grad:  # not into an integer result
                gi = as_array(gi, parent.dtype, like=parent.data)
                grads[id(parent)] = grads[id(parent)] + gi if id(parent) in grads else gi
        node.freed, node.out, node.args = True, None, {}
