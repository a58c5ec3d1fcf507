"""The registry itself: :class:`OpDef`, :class:`TensorMeta`, ``register``/``get_op``,
and the shape helpers every op family shares.

An entry (:class:`OpDef`) holds what each stage needs to know about an op:

* its **signature** — the NumPy reference function's own signature (minus
  ``out=`` and the other arguments an op does not model); a call is bound to
  it, so a node's ``args`` are all parameters in signature order;
* its **meta rule** — the output shape and dtype from the input shapes and
  dtypes (our stand-in for PyTorch's fake tensors), which also rejects what
  NumPy would reject (bad axis, mismatched shapes, integer overflow of a weak
  Python int, long-double/object/string/datetime dtypes) by raising the same
  exception type;
* its **reference implementation** — plain NumPy, used by the graph
  interpreter (the ``eager`` backend) and as the oracle for every other backend;
* its **kind**, which tells the inductor how to lower it (any kind it does not
  know becomes an ``Extern`` call of the reference implementation):

  ========== ==============================================================
  pointwise  elementwise, broadcasting (ufuncs, ``where``, ``astype``, ``clip``)
  reduction  folds axes away (``sum``, ``var``, ``argmax``, ``norm``)
  scan       keeps the shape, each element depends on a prefix (``cumsum``)
  view       moves no data in NumPy: only the indexing changes
  layout     copies data into a new arrangement (``concatenate``, ``tile``)
  creation   no array inputs at all: the node's inputs are empty (``zeros``)
  index      reads or writes through an index (``getitem``, ``setitem``, ``take``)
  extern     a library call (BLAS, sorting): never generated
  loop       a body graph run ``n`` times, and its results (``control``)
  ========== ==============================================================

Meta rules come in two styles.  The families the inductor lowers (ufuncs,
the five basic reductions, transpose/reshape, matmul) have explicit rules.
Every other op asks NumPy: :func:`numpy_meta` runs the reference
implementation on *ghost* inputs — zero-stride arrays of the real shape and
dtype that occupy one element of memory — and reads the shape and dtype of
the answer.  That is exact by construction, including NumPy's own exceptions,
as long as the op's output shape does not depend on input *values*; ops where
it would (``np.nonzero``, ``x[mask]``) raise :class:`DataDependent` instead.
"""
from __future__ import annotations

import inspect
import math
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

from .. import dtypes as dt
from ..symbolic import is_symbolic, size_hint


class TensorMeta(NamedTuple):
    """Shape and dtype of an array value: what every graph node carries."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"{dt.short_name(self.dtype)}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str  # see the table in the module docstring
    impl: Callable[..., Any]
    meta: Callable[..., TensorMeta]
    # Rewrites bound arguments into one canonical form (axis=-1 -> axis=(1,),
    # shape=(-1, 4) -> (2, 4)) so that later stages see one spelling only.
    canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ufunc: np.ufunc | None = None
    # NumPy hands back a NumPy scalar, not a 0-d array, when this op's result is
    # 0-d (ufuncs, reductions, matmul do; where, reshape, astype do not).  Ops
    # whose answer depends on the arguments (``x[0]`` is a scalar, ``x[0, ...]``
    # a 0-d array) give a rule over the canonical arguments in ``scalar_rule``.
    scalar_result: bool = False
    scalar_rule: Callable[[dict[str, Any]], bool] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.impl)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.signature.parameters)

    def bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Bind a call to the signature; a wrong call raises NumPy's TypeError."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def result_is_scalar(self, args: dict[str, Any]) -> bool:
        """Would NumPy return a NumPy scalar for a 0-d result of this call?"""
        if self.scalar_rule is not None:
            return self.scalar_rule(args)
        return self.scalar_result


OPS: dict[str, OpDef] = {}


class UnknownOp(KeyError):
    pass


class DataDependent(NotImplementedError):
    """The output shape would depend on array *values* (``x[mask]``, ``np.arange(n_array)``).

    Not a NumPy error: NumPy would run the call; minicompile cannot put it in a
    graph whose shapes are known before it runs.  Capture turns it into a
    graph break, and the call runs eagerly.
    """


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise UnknownOp(f"no op named {name!r} in the minicompile op registry") from None


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} registered twice")
    OPS[op.name] = op
    return op


# ---------------------------------------------------------------------------
# Shape helpers
# ---------------------------------------------------------------------------


def _shape_of(value: object) -> tuple[int, ...]:
    return tuple(value.shape) if hasattr(value, "shape") else ()


def broadcast_shapes(*operands: object) -> tuple[int, ...]:
    shapes = [_shape_of(o) for o in operands]
    if not any(is_symbolic(s) for s in shapes):
        return tuple(np.broadcast_shapes(*shapes))
    return symbolic_broadcast(shapes)


def symbolic_broadcast(shapes: list[tuple]) -> tuple:
    """NumPy's broadcasting rule, one dimension at a time, for symbolic sizes:
    ``s0`` against ``s1`` asks the shape environment ``s0 == s1`` (a guard)."""
    out: list = []
    for i in range(1, max(map(len, shapes), default=0) + 1):
        dim: Any = 1
        for shape in shapes:
            if i > len(shape):
                continue
            n = shape[-i]
            if n is dim or n == 1:
                continue
            if dim == 1:
                dim = n
                continue
            if dim == n:
                continue
            text = " ".join(str(tuple(s)) for s in shapes)
            raise ValueError(f"shape mismatch: objects cannot be broadcast to a single shape.  "
                             f"Mismatch is between arg shapes {text}")
        out.append(dim)
    return tuple(reversed(out))


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """``axis`` as NumPy accepts it -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"axis must be an integer or a tuple of integers, got {a!r}")
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(int(a), ndim)
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def normalize_axis(axis: Any, ndim: int) -> int:
    """One axis (an int, negative allowed) -> its non-negative value."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"'{type(axis).__name__}' object cannot be interpreted as an integer")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(int(axis), ndim)
    return int(axis) % ndim


def dtype_arg(dtype: Any) -> np.dtype | None:
    """A ``dtype=`` argument (``np.float32``, ``"int8"``, ``float``) as a supported dtype."""
    return None if dtype is None else dt.check_supported(np.dtype(dtype))


# ---------------------------------------------------------------------------
# NumPy's own answer: ghost inputs
# ---------------------------------------------------------------------------


def ghost(value: Any) -> Any:
    """Metas become read-only zero-stride zero arrays of their shape and dtype;
    containers are walked; Python values pass through unchanged."""
    if isinstance(value, TensorMeta):
        return np.broadcast_to(np.zeros((), value.dtype), value.shape)
    if isinstance(value, tuple):
        return tuple(ghost(v) for v in value)
    if isinstance(value, list):
        return [ghost(v) for v in value]
    return value


def result_meta(value: Any) -> TensorMeta:
    """The meta of a NumPy result, refusing dtypes minicompile does not handle."""
    arr = np.asarray(value)
    return TensorMeta(tuple(arr.shape), dt.check_supported(arr.dtype))


def run_on_ghosts(impl: Callable[..., Any], args: dict[str, Any]) -> Any:
    """``impl(**args)`` with metas replaced by ghosts; values are all zero, so
    NumPy's warnings (division by zero, empty slices) mean nothing here."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return impl(**{k: ghost(v) for k, v in args.items()})


def numpy_meta(impl: Callable[..., Any]) -> Callable[..., TensorMeta]:
    """A meta rule that asks NumPy (see the module docstring)."""

    def meta(**args: Any) -> TensorMeta:
        return result_meta(run_on_ghosts(impl, args))

    return meta


def symbolic_or_numpy(impl: Callable[..., Any], symbolic_rule: Callable[..., tuple],
                      at_hints: bool = False) -> Callable[..., TensorMeta]:
    """NumPy's answer on ghosts for concrete shapes; for symbolic ones, the
    shape from ``symbolic_rule`` and the dtype from NumPy on one-element
    samples of the same ranks (dtypes never depend on sizes) — or, with
    ``at_hints``, on samples of the example's sizes, for ops that check sizes
    against their arguments (a window no larger than its axis).  A rule raises
    NotImplementedError for a form it does not cover; ghosts then answer, and
    the sizes they need become plain ints (specialized, guarded)."""

    def sample(value: Any) -> Any:
        if isinstance(value, TensorMeta):
            return TensorMeta(size_hint(value.shape) if at_hints else (1,) * value.ndim, value.dtype)
        if isinstance(value, (tuple, list)):
            return type(value)(sample(v) for v in value)
        return value

    def meta(**args: Any) -> TensorMeta:
        if not any(is_symbolic(v) for v in args.values()):
            return result_meta(run_on_ghosts(impl, args))
        try:
            shape = symbolic_rule(**args)
        except NotImplementedError:  # a form the rule does not cover: ghosts specialize the sizes
            return result_meta(run_on_ghosts(impl, args))
        return TensorMeta(shape, result_meta(run_on_ghosts(impl, {k: sample(v) for k, v in args.items()})).dtype)

    return meta


def with_signature(fn: Callable[..., Any], like: Callable[..., Any], drop: tuple[str, ...] = ("out",),
                   name: str | None = None) -> Callable[..., Any]:
    """Give ``fn`` the signature of NumPy's ``like`` minus ``drop``, every
    parameter positional-or-keyword (nodes store all arguments in order) and no
    ``<no value>`` defaults (they cannot be printed as Python)."""
    params = []
    for p in inspect.signature(like).parameters.values():
        if p.name in drop or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.default is np._NoValue:
            raise ValueError(f"{like.__name__}: give {p.name} a real default or drop it")
        params.append(p.replace(kind=p.POSITIONAL_OR_KEYWORD))
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__name__ = name or like.__name__
    return fn


def simple_op(name: str, impl: Callable[..., Any], kind: str = "extern", *, scalar_result: bool = False,
              canonicalize: Callable | None = None, meta: Callable | None = None,
              scalar_rule: Callable | None = None, array_api: bool = False) -> OpDef:
    """Register an op whose meta rule, unless given, is NumPy's answer on ghosts.
    ``array_api``: the reference implementation works in the module of the array
    it is given (:func:`array_module`), so it runs on CuPy arrays as on NumPy's."""
    return register(OpDef(name, kind, impl, meta or numpy_meta(impl), canonicalize=canonicalize,
                          scalar_result=scalar_result, scalar_rule=scalar_rule,
                          extra={"array_api": True} if array_api else {}))


def array_module(a: Any) -> Any:
    """The array module of ``a``: the module of its type when that module's
    ``ndarray`` is its type (CuPy's for a CuPy array, found among the loaded
    modules: nothing is imported here), else NumPy (NumPy arrays and scalars,
    Python values, lists)."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    xp = sys.modules.get(type(a).__module__.split(".")[0])
    array_type = getattr(xp, "ndarray", None)
    return xp if isinstance(array_type, type) and isinstance(a, array_type) else np


def is_device_array(a: Any) -> bool:
    """An array of another array module than NumPy (a CuPy array): NumPy cannot
    read it without an explicit copy, so it is computed on in its own module."""
    return array_module(a) is not np


def is_array_value(a: Any) -> bool:
    """An array, of NumPy or of another array module (not a NumPy scalar)."""
    return isinstance(a, np.ndarray) or is_device_array(a)


def as_array(value: Any, dtype: Any = None, like: Any = None) -> Any:
    """``value`` as an array of ``like``'s array module (of its own, without
    ``like``): ``np.asarray`` for host values, and for a CuPy array CuPy's
    ``asarray``, which keeps it on the device (NumPy's would refuse it).  A
    NumPy scalar becomes a 0-d array; ``dtype`` casts, as ``asarray`` does."""
    return array_module(value if like is None else like).asarray(value, dtype=dtype)


def without_defaults(keywords: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``keywords`` less each one equal to its default in ``defaults`` (None, a
    bool, a number or a string of the same type): the call a user would write.

    An op's reference passes NumPy's keywords; left at their defaults they are
    dropped, so that CuPy, whose functions lack some of NumPy's newer keywords
    (``take``'s ``mode``, ``sort``'s ``stable``, ``count_nonzero``'s
    ``keepdims``), takes every call it takes eagerly."""
    def is_default(name: str, value: Any) -> bool:
        default = defaults.get(name, inspect.Parameter.empty)
        return value is default or (type(value) is type(default) and isinstance(value, (bool, int, float, str))
                                    and value == default)
    return {k: v for k, v in keywords.items() if not is_default(k, v)}


def key_in(xp: Any, key: Any) -> Any:
    """A canonical index key for an array of module ``xp``: its constant index
    arrays (nested tuples, which NumPy reads as arrays) as arrays of ``xp``, so
    another module (CuPy) gets the index arrays it expects."""
    if xp is np or not isinstance(key, tuple):
        return key
    return tuple(xp.asarray(k) if isinstance(k, tuple) else k for k in key)


def node_free(value: Any, what: str) -> Any:
    """Refuse an array where the output shape would depend on its values."""
    if isinstance(value, TensorMeta) or (isinstance(value, (tuple, list)) and any(
            isinstance(v, TensorMeta) for v in value)):
        raise DataDependent(f"{what} given as an array: the result's shape would depend on its values")
    return value
