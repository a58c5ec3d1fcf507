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
joint graph uses.  ``backward(create_graph=True)`` (torch's flag) applies them
to tensors instead of arrays, through :class:`TapeEmitter`: the backward is
recorded on the tape in turn, and its gradients can be differentiated again
(``mc.grad(mc.grad(f))``, ``mc.hessian``).

An in-place write (``t[k] = v``) makes the tensor a new value on the tape;
the ops that read it before keep reading the old one (each tape node knows
its readers), so ``u[1:-1] = 0.5 * (u[:-2] + u[2:])`` differentiates through
the old ``u`` as NumPy computed it.  A view taken before the write
(``v = u[1:]``, a view in NumPy) sees it, as in NumPy: each live view is
taken again from the written tensor.

A NumPy function that is no op of the registry (``np.split``, ``np.gradient``,
``np.rollaxis``) runs as NumPy calls that come back here op by op: NumPy's own
source, or one written in tensor_functions.py.
"""
from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..ir import OPS
from ..ir.ops.linalg import einsum_call
from ..ir.ops.registry import array_module, as_array
from .derivatives import DERIVATIVES, NonDifferentiable, complex_on_path
from .emit import EagerEmitter, Emitter, canonical_args
from .tensor_functions import NUMPY_SOURCE, TAPE_FUNCTIONS

_GRAD_ENABLED = [True]


def grad_enabled() -> bool:
    return _GRAD_ENABLED[-1]
EAGER = EagerEmitter()

# NumPy functions and ufuncs that reach Tensor under another op name; every other one
# maps to the op of its own name, when the registry has one.  (conjugate: of real arrays.)
FUNCTION_OPS = {"amax": "max", "amin": "min", "degrees": "rad2deg", "radians": "deg2rad",
                "conjugate": "positive", "conj": "positive", "round_": "round", "around": "round"}
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
    # A compiled region supplies its own backward: grad of the output -> grads by key;
    # and, to be differentiated again, one on tensors that records itself on the tape.
    backward: Any = None
    backward_on_tape: Any = None

    def __post_init__(self) -> None:
        for t in self.tensors.values():  # a write into one of them later leaves this node its old value
            t._readers.append(weakref.ref(self))


class Tensor:
    __array_priority__ = 1000  # so ndarray + Tensor defers to Tensor

    def __init__(self, data: Any, requires_grad: bool = False, _node: TapeNode | None = None):
        self.data = as_array(data.data if isinstance(data, Tensor) else data)
        if requires_grad and self.data.dtype.kind != "f":
            raise TypeError(f"only floating-point tensors can require gradients, not {self.data.dtype}")
        self.requires_grad = requires_grad
        self.grad: Any = None  # an array of the data's module
        self._node = _node
        self._readers: list[weakref.ref] = []  # the tape nodes that read this value
        # The tensors that are views of this one (their data shares its memory), and, for a
        # view, how it was taken from its base: (op, args, kwargs).
        self._views: list[weakref.ref] = []
        self._view_of: tuple | None = None

    def _become(self, after: "Tensor") -> None:
        """Take ``after``'s value and place on the tape; the tape nodes that read this tensor
        so far read its old value, a tensor of its own from now on."""
        before = Tensor.__new__(Tensor)
        before.__dict__.update(self.__dict__)
        before._views, before._view_of, before._readers = [], None, []
        for ref in self._readers:
            node = ref()
            if node is not None:
                node.tensors = {k: before if t is self else t for k, t in node.tensors.items()}
                before._readers.append(ref)
        self.data, self._node, self.requires_grad = after.data, after._node, after.requires_grad
        self._readers = []  # (``after`` is new: nothing reads it yet)

    def _retake_views(self) -> None:
        """After an in-place write: each live view of this tensor is taken again from its new
        value, as NumPy's views see the write (and views of those views, in turn)."""
        views, self._views = self._views, []
        for ref in views:
            view = ref()
            if view is None:
                continue
            op, args, kwargs = view._view_of
            view._become(apply(op, (self,) + args, kwargs))
            self._views.append(ref)
            view._retake_views()

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

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """NumPy's conversion (``np.asarray(t)``, ``np.array([t, t])``).  A tensor that
        carries a gradient must not become plain numbers, which would silently cut the
        tape: it becomes an object array of its elements as 0-d tensors (each read off
        the tape), which the ops of any tensor turn back into one tensor.  Correct, and
        slow for large arrays: ``np.stack`` of tensors keeps one node."""
        if not self.requires_grad:
            data = self.data if not hasattr(self.data, "get") else self.data.get()
            return np.array(data, dtype=dtype, copy=True) if copy else np.asarray(data, dtype=dtype)
        if dtype is not None and np.dtype(dtype) != object:
            raise TypeError(f"np.asarray(t, dtype={np.dtype(dtype)}) would cut the tape of a tensor that "
                            "requires grad: use t.data (or t.detach()) for its values")
        elements = np.empty(self.shape, dtype=object)
        for index in np.ndindex(*self.shape):
            elements[index] = self[index] if index else self
        return elements

    def detach(self) -> "Tensor":
        return Tensor(self.data)

    @property
    def real(self) -> "Tensor":
        return self  # tensors hold real numbers

    @property
    def imag(self) -> "Tensor":
        return Tensor(array_module(self.data).zeros_like(self.data))  # constant: no gradient

    def __repr__(self) -> str:
        flag = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({np.array2string(self.data, separator=', ')}{flag})"

    def __getitem__(self, key: Any) -> "Tensor":
        if isinstance(key, tuple) and key == ():  # x[()] of a 0-d value: the value itself
            return self
        if "getitem" not in OPS:
            raise TypeError("indexing an mc.Tensor needs the getitem op")
        return apply("getitem", (self, _unwrap(key)), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        self._write("setitem", (key, value), {})

    def _write(self, op: str, args: tuple, kwargs: dict) -> None:
        """An in-place update (``t[k] = v``, ``np.copyto(t, v)``, ``np.add.at(t, i, v)``):
        the op's functional form applied to the tensor's value so far, which the tensor
        then becomes — on the tape, a new node whose input is the old value."""
        node = self._node
        if node is None and self.requires_grad and _GRAD_ENABLED[-1]:
            raise RuntimeError("a leaf tensor that requires grad is used in an in-place operation")
        if node is not None and node.op in OPS and (OPS[node.op].kind == "view" or node.op == "getitem"):
            raise TypeError(f"an in-place write into the result of np.{node.op} (a view in NumPy) is not "
                            "supported on mc.Tensor: the array it views would not see it")
        after = apply(op, (self,) + args, kwargs)
        if not _GRAD_ENABLED[-1]:  # (mc.no_grad(): an optimizer's step) into the memory itself
            array_module(self.data).copyto(self.data, after.data)
            return
        self._become(after)
        self._retake_views()

    def _in_place(self, ufunc: Any, other: Any) -> "Tensor":
        """``t op= o``: as in NumPy, the result is written into ``t`` (cast back to its dtype
        under 'same_kind'), and every view of ``t`` sees it."""
        result = ufunc(self, other)
        if tuple(result.shape) != tuple(self.shape):
            raise ValueError(f"non-broadcastable output operand with shape {tuple(self.shape)} doesn't match "
                             f"the broadcast shape {tuple(result.shape)}")
        if not np.can_cast(result.dtype, self.dtype, "same_kind"):
            raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {result.dtype!r} to "
                            f"{self.dtype!r} with casting rule 'same_kind'")
        self._write("copyto", (result,), {})
        return self

    def __iadd__(self, o): return self._in_place(np.add, o)
    def __isub__(self, o): return self._in_place(np.subtract, o)
    def __imul__(self, o): return self._in_place(np.multiply, o)
    def __itruediv__(self, o): return self._in_place(np.divide, o)
    def __ipow__(self, o): return self._in_place(np.power, o)
    def __ifloordiv__(self, o): return self._in_place(np.floor_divide, o)
    def __imod__(self, o): return self._in_place(np.remainder, o)

    def __len__(self) -> int:
        return len(self.data)

    def __float__(self) -> float:
        return float(self.data)  # a Python number: the tape ends here, as in torch

    def __int__(self) -> int:
        return int(self.data)

    def __bool__(self) -> bool:
        return bool(self.data)

    def __iter__(self) -> Iterator["Tensor"]:
        if self.data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

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

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return apply("var", (self,), {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": keepdims})

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        return apply("std", (self,), {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": keepdims})

    def ravel(self):
        return apply("ravel", (self,), {})

    def flatten(self):
        return apply("copy", (apply("ravel", (self,), {}),), {})

    def squeeze(self, axis=None):
        return apply("squeeze", (self, axis), {})

    def swapaxes(self, axis1, axis2):
        return apply("swapaxes", (self, axis1, axis2), {})

    def cumsum(self, axis=None, dtype=None):
        return apply("cumsum", (self, axis, dtype), {})

    def cumprod(self, axis=None, dtype=None):
        return apply("cumprod", (self, axis, dtype), {})

    def clip(self, min=None, max=None):
        return apply("clip", (self, min, max), {})

    def dot(self, b):
        return apply("dot", (self, b), {})

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None):
        return apply("trace", (self, offset, axis1, axis2, dtype), {})

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return apply("diagonal", (self, offset, axis1, axis2), {})

    def repeat(self, repeats, axis=None):
        return apply("repeat", (self, repeats, axis), {})

    def take(self, indices, axis=None):
        return apply("take", (self, _unwrap(indices), axis), {})

    def round(self, decimals=0):
        return apply("round", (self, decimals), {})

    def copy(self):
        return apply("copy", (self,), {})

    def argmax(self, axis=None, keepdims=False):
        return apply("argmax", (self, axis, keepdims), {})

    def argmin(self, axis=None, keepdims=False):
        return apply("argmin", (self, axis, keepdims), {})

    def argsort(self, axis=-1):
        return apply("argsort", (self, axis), {})

    def any(self, axis=None, keepdims=False):
        return apply("any", (self, axis, keepdims), {})

    def all(self, axis=None, keepdims=False):
        return apply("all", (self, axis, keepdims), {})

    def conj(self):
        return self
    conjugate = conj

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
    def __eq__(self, o): return np.equal(self, o)  # type: ignore[override]
    def __ne__(self, o): return np.not_equal(self, o)  # type: ignore[override]
    __hash__ = object.__hash__  # by identity (the tape keys tensors by id)
    def __pos__(self): return np.positive(self)
    def __invert__(self): return np.invert(self)
    def __and__(self, o): return np.bitwise_and(self, o)
    def __rand__(self, o): return np.bitwise_and(o, self)
    def __or__(self, o): return np.bitwise_or(self, o)
    def __ror__(self, o): return np.bitwise_or(o, self)
    def __xor__(self, o): return np.bitwise_xor(self, o)
    def __rxor__(self, o): return np.bitwise_xor(o, self)

    # -- NumPy dispatch -----------------------------------------------------------------

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "at" and not kwargs and f"{ufunc.__name__}_at" in OPS:  # np.add.at(t, i, v)
            return _write_into(inputs[0], f"{ufunc.__name__}_at", tuple(inputs[1:]), {})
        if method != "__call__" or kwargs:
            raise TypeError(f"mc.Tensor supports plain calls of np.{ufunc.__name__}, "
                            f"not .{method} or {sorted(kwargs)}")
        if ufunc.__name__ in MULTI_OUTPUT_UFUNCS:
            return tuple(apply(op, inputs, {}) for op in MULTI_OUTPUT_UFUNCS[ufunc.__name__])
        op = FUNCTION_OPS.get(ufunc.__name__, ufunc.__name__)
        if op not in OPS:
            raise TypeError(f"np.{ufunc.__name__} is not supported on mc.Tensor")
        return apply(op, inputs, {})

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        op = FUNCTION_OPS.get(func.__name__, func.__name__)
        if op == "einsum":  # np.einsum(subscripts, *operands) or its sublist form
            subscripts, operands = einsum_call(args)
            return apply("einsum", (subscripts, operands), kwargs)
        if op in IN_PLACE:  # np.copyto(dst, src), np.put_along_axis(arr, ...): they return None
            bound = OPS[op].bind(args, kwargs)
            target = bound.pop(IN_PLACE[op])
            return _write_into(target, op, tuple(bound.values()), {})
        if op in OPS:
            return apply(op, args, kwargs)
        if func in TAPE_FUNCTIONS:
            return TAPE_FUNCTIONS[func](*args, **kwargs)
        if func in NUMPY_SOURCE:  # NumPy's own Python source: its calls dispatch back here, op by op
            return _tensors_from_objects(func._implementation(*args, **kwargs))
        raise TypeError(f"np.{func.__name__} is not supported on mc.Tensor")

    # -- autograd -------------------------------------------------------------------------

    def backward(self, grad: Any = None, create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf tensor's ``.grad``.  With
        ``create_graph`` (torch's flag) the backward is recorded on the tape and
        each ``.grad`` is a tensor that can be differentiated again."""
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs; "
                                   "pass backward(grad) for a non-scalar tensor")
            grad = np.ones_like(self.data)
        if not isinstance(grad, Tensor):
            grad = as_array(grad, self.dtype, like=self.data)
        backward_pass([(self, grad)], create_graph=create_graph)


# NumPy functions that write into an argument (by name): ops of the registry in their
# functional form, applied to a tensor in place by Tensor._write.
IN_PLACE = {"copyto": "dst", "put_along_axis": "arr"}


def _write_into(target: Any, op: str, args: tuple, kwargs: dict) -> None:
    if isinstance(target, Tensor):
        target._write(op, args, kwargs)
        return None
    if any(isinstance(a, Tensor) and a.requires_grad for a in args):
        raise TypeError(f"np.{op} of a tensor that requires grad into an ndarray would cut the tape")
    target[...] = apply(op, (target,) + args, kwargs).data  # plain arrays: NumPy's own effect
    return None


# Ufuncs on an object array of tensors (np.exp(np.array([t, t]))) call each element's
# method of the ufunc's name: those of the registry's one-input ufuncs apply the op.
for _name, _op in OPS.items():
    if _op.ufunc is not None and _op.ufunc.nin == 1 and not hasattr(Tensor, _name):
        setattr(Tensor, _name, (lambda name: lambda self: apply(name, (self,), {}))(_name))


def _unwrap(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.data
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v) for v in value)
    return value


def _holds_tensors(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == object and any(
        isinstance(v, Tensor) for v in value.flat)


def _tensors_from_objects(value: Any) -> Any:
    """An object array of tensors (what ``np.array([t, t])`` of 0-d tensors makes) as one
    tensor stacked from them, on the tape; anything else unchanged (lists walked)."""
    if _holds_tensors(value):
        items = [v if isinstance(v, Tensor) else Tensor(np.asarray(v)) for v in value.flat]
        stacked = apply("stack", (items,), {})
        return apply("reshape", (stacked, value.shape + stacked.shape[1:]), {})
    if isinstance(value, (tuple, list)):
        return type(value)(_tensors_from_objects(v) for v in value)
    return value


def apply(op: str, args: tuple, kwargs: dict) -> Any:
    """Run ``op`` on tensors eagerly and record it on the tape when it needs a gradient."""
    if any(_holds_tensors(v) for v in args) or any(_holds_tensors(v) for v in kwargs.values()):
        args = tuple(_tensors_from_objects(v) for v in args)
        kwargs = {k: _tensors_from_objects(v) for k, v in kwargs.items()}
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
        result = Tensor(raw)
    elif raw.dtype.kind == "c":
        raise NonDifferentiable(complex_on_path(op, raw.dtype))
    elif raw.dtype.kind != "f":
        # An integer or boolean result (x > 0, argmax) carries no gradient: its derivative
        # is zero.  It stays on the tape without its values, so that a float computed
        # from it (np.sum(w * (x > 0))) still requires grad, and backward() gives zeros.
        result = Tensor(raw, _node=TapeNode(op, {}, tensors, None))
    else:
        result = Tensor(raw, requires_grad=True, _node=TapeNode(op, canonical, tensors, raw))
    first = args[0] if args else None
    if (isinstance(first, Tensor) and (op == "getitem" or OPS[op].kind == "view")
            and array_module(raw).may_share_memory(raw, first.data)):
        result._view_of = (op, args[1:], kwargs)
        first._views.append(weakref.ref(result))
    return result


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


class TapeEmitter(Emitter):
    """Applies ops to tensors, recording them: a derivative rule run through it is
    itself on the tape (the backward of ``create_graph=True``)."""

    def call(self, op_name: str, *args: Any, **kwargs: Any) -> Any:
        return apply(op_name, args, kwargs)


TAPE = TapeEmitter()


def _rule_args(node: TapeNode) -> dict[str, Any]:
    """The node's canonical arguments with its differentiable tensors in place of their
    arrays, so that a rule applied to them is recorded (the index arrays stay arrays)."""
    args = dict(node.args)
    for param, tensor in node.tensors.items():
        if not tensor.requires_grad:
            continue
        if isinstance(param, tuple):
            name, i = param
            args[name] = tuple(tensor if j == i else v for j, v in enumerate(args[name]))
        else:
            args[param] = tensor
    return args


def _reaching(roots: list[Tensor], targets: set[int]) -> set[int]:
    """The ids of the tensors on a path from ``roots`` down to one of ``targets``."""
    memo: dict[int, bool] = {}
    for t in reversed(_topological(roots)):  # inputs first: parents are decided before children
        memo[id(t)] = id(t) in targets or (t._node is not None and any(
            memo.get(id(p), False) for p in t._node.tensors.values()))
    return {k for k, v in memo.items() if v}


def backward_pass(seeds: list[tuple[Tensor, Any]], inputs: list[Tensor] | None = None,
                  create_graph: bool = False, retain_graph: bool | None = None) -> list[Any] | None:
    """Apply the chain rule from ``seeds`` (tensor, its gradient) down the tape.

    Without ``inputs``: accumulate into every leaf's ``.grad`` (``backward()``).  With
    them: return the gradient of each input (None where no path leads to it), touching
    no ``.grad`` and going no further down than the inputs (torch.autograd.grad).
    ``create_graph``: the rules are applied to tensors, through the tape, so the
    gradients are tensors that can be differentiated again.  The saved values are
    freed after the pass unless ``retain_graph`` (by default: ``create_graph``).
    """
    retain = create_graph if retain_graph is None else retain_graph
    emitter = TAPE if create_graph else EAGER
    targets = {id(t) for t in inputs} if inputs is not None else None
    roots = [t for t, _ in seeds]
    wanted = _reaching(roots, targets) if targets is not None else None
    grads: dict[int, Any] = {}
    for t, g in seeds:
        if create_graph and not isinstance(g, Tensor):
            g = Tensor(g)
        grads[id(t)] = grads[id(t)] + g if id(t) in grads else g
    found: dict[int, Any] = {}
    for t in _topological(roots):
        if wanted is not None and id(t) not in wanted:
            continue
        g = grads.pop(id(t), None)
        node = t._node
        if targets is not None and id(t) in targets:
            found[id(t)] = g
            continue  # the gradient of an input: nothing below it is asked for
        if g is None:
            # A leaf reached only through rules that return no gradient (floor, sign):
            # its gradient is zero, as a number, not "none".
            if targets is None and node is None and t.grad is None:
                t.grad = np.zeros_like(t.data)
            continue
        if node is None:  # a leaf
            t.grad = g if t.grad is None else t.grad + g
            continue
        if node.freed:
            raise RuntimeError("trying to backward through the graph a second time: "
                               "its saved values were freed after the first backward")
        input_grads = _apply_rule(node, t, g, emitter, create_graph)
        for param, parent in node.tensors.items():
            if isinstance(param, tuple):  # one array of a several-array parameter
                name, i = param
                gi = input_grads.get(name)
                gi = gi[i] if gi is not None else None
            else:
                gi = input_grads.get(param)
            if gi is None or not parent.requires_grad:  # not into an integer result
                continue
            if wanted is not None and id(parent) not in wanted:
                continue
            gi = _as_grad(gi, parent, create_graph)
            grads[id(parent)] = grads[id(parent)] + gi if id(parent) in grads else gi
        if not retain:
            node.freed, node.out, node.args = True, None, {}
    if inputs is None:
        return None
    return [found.get(id(t)) for t in inputs]


def _apply_rule(node: TapeNode, t: Tensor, g: Any, emitter: Any, create_graph: bool) -> dict:
    if create_graph:
        if node.backward is not None:
            if node.backward_on_tape is None:
                raise NonDifferentiable("this compiled region's backward cannot be differentiated again")
            return node.backward_on_tape(g)
        rule = DERIVATIVES.get(node.op)
        if rule is None:
            raise NonDifferentiable(f"no derivative rule for np.{node.op}: cannot differentiate through it")
        return rule(emitter, g, t, _rule_args(node))
    if node.backward is not None:
        return node.backward(g)
    rule = DERIVATIVES.get(node.op)
    if rule is None:
        raise NonDifferentiable(f"no derivative rule for np.{node.op}: cannot differentiate through it")
    return rule(emitter, g, node.out, node.args)


def _as_grad(gi: Any, parent: Tensor, create_graph: bool) -> Any:
    """A rule's gradient for ``parent``, in its dtype and module (a tensor, on the tape)."""
    if not create_graph:
        return as_array(_unwrap(gi), parent.dtype, like=parent.data)
    if not isinstance(gi, Tensor):
        return Tensor(as_array(gi, parent.dtype, like=parent.data))
    if gi.dtype != parent.dtype or tuple(gi.shape) != tuple(parent.shape):
        gi = apply("astype", (gi, parent.dtype), {})
        if tuple(gi.shape) != tuple(parent.shape):  # a scalar rule's broadcast value
            gi = apply("broadcast_to", (gi, tuple(parent.shape)), {})
    return gi
