"""How NumPy calls in user code become graph ops.

Two tables map what the user wrote to an op in the IR registry:

* :data:`FUNCTIONS` — NumPy functions (``np.exp``, ``np.sum``, ``np.where``);
* :data:`METHODS` — ndarray methods (``x.sum``, ``x.reshape``, ``x.astype``).

Each entry pairs the op name with a *stub* whose signature is NumPy's own, so a
call is bound exactly as NumPy would bind it (positional order, keywords,
defaults).  Parameters the op does not model yet (``out=``, ``where=``,
``initial=``) must keep their defaults; otherwise the call is unsupported and
the interpreter reports it as a graph break instead of guessing.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..ir.ops import POINTWISE_UFUNCS
from .exc import Unsupported

_NO = object()  # NumPy's "no value given" default


@dataclass(frozen=True)
class CallRule:
    op: str
    stub: Callable[..., Any]
    # stub parameter name -> op parameter name, where they differ (self -> a)
    rename: dict[str, str] = field(default_factory=dict)
    # last touch on the op's keyword arguments (varargs shapes, for instance)
    post: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    return isinstance(value, (str, bool, type(None))) and type(value) is type(default) and value == default


def bind_call(rule: CallRule, args: tuple, kwargs: dict, what: str) -> dict[str, Any]:
    """NumPy-style call -> keyword arguments of ``rule.op`` (graph-break if unsupported)."""
    from ..ir import get_op

    sig = inspect.signature(rule.stub)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"{what}: {e}") from None
    bound.apply_defaults()
    op_params = get_op(rule.op).param_names
    op_kwargs: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        target = rule.rename.get(name, name)
        if target in op_params:
            op_kwargs[target] = value
        elif not _is_default(value, sig.parameters[name].default):
            raise Unsupported(f"{what}: argument {name}={value!r} is not supported yet")
    return rule.post(op_kwargs) if rule.post else op_kwargs


# -- stubs with NumPy's signatures ------------------------------------------------

def _unary(x, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None, subok=True): ...
def _binary(x1, x2, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None, subok=True): ...
def _sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO): ...
def _max(a, axis=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _where(condition, x, y, /): ...
def _matmul(x1, x2, /, out=None, *, casting="same_kind", order="K", dtype=None, subok=True): ...
def _transpose(a, axes=None): ...
def _reshape(a, shape, order="C", *, copy=None): ...
def _astype(x, dtype, /, *, copy=True, device=None): ...

# ndarray methods: the array arrives as ``self``.
def _m_sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _m_mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO): ...
def _m_max(self, axis=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _m_astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True): ...
def _m_reshape(self, *shape, order="C", copy=None): ...
def _m_transpose(self, *axes): ...


def _varargs(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` mean the same."""

    def post(kwargs: dict[str, Any]) -> dict[str, Any]:
        value = kwargs[name]
        if len(value) == 1 and isinstance(value[0], (tuple, list, type(None))):
            value = value[0]
        return {**kwargs, name: (None if value == () and name == "axes" else value)}

    return post


FUNCTIONS: dict[Any, CallRule] = {
    uf: CallRule(uf.__name__, _unary if uf.nin == 1 else _binary) for uf in POINTWISE_UFUNCS
}
FUNCTIONS.update({
    np.sum: CallRule("sum", _sum),
    np.prod: CallRule("prod", _sum),
    np.mean: CallRule("mean", _mean),
    np.max: CallRule("max", _max),
    np.amax: CallRule("max", _max),
    np.min: CallRule("min", _max),
    np.amin: CallRule("min", _max),
    np.where: CallRule("where", _where),
    np.matmul: CallRule("matmul", _matmul),
    np.transpose: CallRule("transpose", _transpose),
    np.reshape: CallRule("reshape", _reshape),
})
if hasattr(np, "astype"):  # NumPy >= 2.1
    FUNCTIONS[np.astype] = CallRule("astype", _astype)

_SELF_A = {"self": "a"}
METHODS: dict[str, CallRule] = {
    "sum": CallRule("sum", _m_sum, _SELF_A),
    "prod": CallRule("prod", _m_sum, _SELF_A),
    "mean": CallRule("mean", _m_mean, _SELF_A),
    "max": CallRule("max", _m_max, _SELF_A),
    "min": CallRule("min", _m_max, _SELF_A),
    "reshape": CallRule("reshape", _m_reshape, _SELF_A, _varargs("shape")),
    "transpose": CallRule("transpose", _m_transpose, _SELF_A, _varargs("axes")),
    "astype": CallRule("astype", _m_astype, {"self": "x"}),
}
