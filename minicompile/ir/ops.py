"""The op registry: every array operation minicompile knows, defined once.

An entry (:class:`OpDef`) holds what each stage needs to know about an op:

* its **signature** — the NumPy reference function's own signature; a call is
  bound to it, so a node's ``args`` are all parameters in signature order;
* its **meta rule** — the output shape and dtype from the input shapes and
  dtypes (our stand-in for PyTorch's fake tensors), which also rejects what
  NumPy would reject (bad axis, mismatched shapes, integer overflow of a weak
  Python int) by raising the same exception type;
* its **reference implementation** — plain NumPy, used by the graph
  interpreter (the ``eager`` backend) and as the oracle for every other backend;
* its **kind** — ``pointwise``, ``reduction``, ``view`` or ``extern`` — which
  tells the inductor how to lower it.  Lowerings and derivative rules are
  attached by the stages that own them, keyed by op name.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

from . import dtypes as dt


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
    kind: str  # "pointwise" | "reduction" | "view" | "extern"
    impl: Callable[..., Any]
    meta: Callable[..., TensorMeta]
    # Rewrites bound arguments into one canonical form (axis=-1 -> axis=(1,),
    # shape=(-1, 4) -> (2, 4)) so that later stages see one spelling only.
    canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ufunc: np.ufunc | None = None
    # NumPy hands back a NumPy scalar, not a 0-d array, when this op's result is
    # 0-d (ufuncs, reductions, matmul do; where, reshape, astype do not).
    scalar_result: bool = False
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


OPS: dict[str, OpDef] = {}


class UnknownOp(KeyError):
    pass


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
    return tuple(np.broadcast_shapes(*(_shape_of(o) for o in operands)))


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


# ---------------------------------------------------------------------------
# Pointwise ops: NumPy ufuncs.  dtype rule = the ufunc's own loop resolution.
# ---------------------------------------------------------------------------


def ufunc_loop_dtypes(ufunc: np.ufunc, operands: tuple) -> tuple[np.dtype, ...]:
    """The dtypes of the ufunc inner loop NumPy picks: inputs..., output.

    Weak Python scalars are passed to NumPy as their type, exactly as NEP 50
    describes them; a Python int that does not fit the loop raises as in NumPy.
    """
    described = tuple(dt.operand_dtype(o) for o in operands)
    loop = ufunc.resolve_dtypes(described + (None,) * ufunc.nout)
    for value, loop_dtype in zip(operands, loop):
        dt.check_weak_int_fits(value, loop_dtype)
    return tuple(np.dtype(d) for d in loop)


COMPARISONS = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"})


def _exact_comparison_operands(args: dict[str, Any]) -> dict[str, Any]:
    """NumPy 2 compares an array with a Python int outside its dtype exactly
    (``int8_array < 300`` is all True).  A strong int64 operand gives the same
    exact answer through an int64 loop, so the weak int becomes np.int64."""
    x1, x2 = args["x1"], args["x2"]

    def widen(value: Any, other: Any) -> Any:
        other_dtype = getattr(other, "dtype", None)
        if (dt.is_weak_scalar(value) and isinstance(value, int) and other_dtype is not None
                and other_dtype.kind in "iu" and other_dtype != np.uint64):
            info = np.iinfo(other_dtype)
            if not info.min <= value <= info.max and -2**63 <= value < 2**63:
                return np.int64(value)
        return value

    return {"x1": widen(x1, x2), "x2": widen(x2, x1)}


def _pointwise(ufunc: np.ufunc) -> OpDef:
    def meta(**args: Any) -> TensorMeta:
        operands = tuple(args.values())
        loop = ufunc_loop_dtypes(ufunc, operands)
        return TensorMeta(broadcast_shapes(*operands), dt.check_supported(loop[-1]))

    # The reference takes exactly nin positional operands, named like NumPy's.
    names = ("x",) if ufunc.nin == 1 else ("x1", "x2")
    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]

    def impl(*operands: Any) -> Any:
        return ufunc(*operands)

    impl.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    impl.__name__ = ufunc.__name__
    canonicalize = _exact_comparison_operands if ufunc.__name__ in COMPARISONS else None
    return OpDef(ufunc.__name__, "pointwise", impl, meta, canonicalize=canonicalize, ufunc=ufunc,
                 scalar_result=True)


POINTWISE_UFUNCS = (
    # arithmetic
    np.add, np.subtract, np.multiply, np.divide, np.floor_divide, np.remainder,
    np.power, np.square, np.negative, np.positive, np.absolute, np.maximum, np.minimum,
    # comparisons and logic
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
    np.logical_not, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    # transcendental
    np.exp, np.log, np.tanh, np.sqrt, np.sin, np.cos,
)
for _uf in POINTWISE_UFUNCS:
    register(_pointwise(_uf))


def _where(condition: Any, x: Any, y: Any) -> Any:
    return np.where(condition, x, y)


def _where_meta(condition: Any, x: Any, y: Any) -> TensorMeta:
    dt.check_supported(dt.operand_dtype(condition) if hasattr(condition, "dtype") else np.bool_)
    return TensorMeta(broadcast_shapes(condition, x, y), dt.check_supported(dt.result_type(x, y)))


register(OpDef("where", "pointwise", _where, _where_meta))


def _astype(x: Any, dtype: Any) -> Any:
    return np.asarray(x).astype(dtype)


def _astype_meta(x: TensorMeta, dtype: np.dtype) -> TensorMeta:
    return TensorMeta(x.shape, dt.check_supported(dtype))


register(
    OpDef(
        "astype", "pointwise", _astype, _astype_meta,
        canonicalize=lambda a: {**a, "dtype": np.dtype(a["dtype"])},
    )
)


# ---------------------------------------------------------------------------
# Reductions.  Shape rule from the axes; dtype rule = NumPy's own answer on a
# one-element sample of the same rank (sum(int32) -> int64, mean(int) -> f64).
# ---------------------------------------------------------------------------


def _reduction(name: str, fn: Callable, has_dtype: bool, identity: bool) -> OpDef:
    if has_dtype:
        def impl(a, axis=None, dtype=None, keepdims=False):
            return fn(a, axis=axis, dtype=dtype, keepdims=keepdims)
    else:
        def impl(a, axis=None, keepdims=False):
            return fn(a, axis=axis, keepdims=keepdims)
    impl.__name__ = name

    def canonicalize(args: dict[str, Any]) -> dict[str, Any]:
        a = args["a"]
        args = {**args, "axis": normalize_axes(args["axis"], a.ndim), "keepdims": bool(args["keepdims"])}
        if has_dtype and args["dtype"] is not None:
            args["dtype"] = np.dtype(args["dtype"])
        return args

    def meta(a: TensorMeta, axis: tuple[int, ...], keepdims: bool, dtype: Any = None) -> TensorMeta:
        if not identity and any(a.shape[i] == 0 for i in axis):
            raise ValueError(
                f"zero-size array to reduction operation {fn.__name__} which has no identity"
            )
        shape = tuple(
            (1 if keepdims else None) if i in axis else n for i, n in enumerate(a.shape)
        )
        sample = np.ones((1,) * a.ndim, dtype=a.dtype)
        extra = {"dtype": dtype} if has_dtype else {}
        out_dtype = np.asarray(fn(sample, axis=axis, keepdims=keepdims, **extra)).dtype
        return TensorMeta(tuple(n for n in shape if n is not None), dt.check_supported(out_dtype))

    return OpDef(name, "reduction", impl, meta, canonicalize=canonicalize, scalar_result=True)


register(_reduction("sum", np.sum, has_dtype=True, identity=True))
register(_reduction("prod", np.prod, has_dtype=True, identity=True))
register(_reduction("mean", np.mean, has_dtype=True, identity=True))
register(_reduction("max", np.max, has_dtype=False, identity=False))
register(_reduction("min", np.min, has_dtype=False, identity=False))


# ---------------------------------------------------------------------------
# Views: no data moves, only the indexing changes.
# ---------------------------------------------------------------------------


def _transpose(a, axes=None):
    return np.transpose(a, axes)


def _transpose_canon(args: dict[str, Any]) -> dict[str, Any]:
    ndim = args["a"].ndim
    axes = args["axes"]
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    axes = tuple(int(x) for x in axes)
    if len(axes) != ndim:
        raise ValueError("axes don't match array")
    axes = tuple(normalize_axes(x, ndim)[0] for x in axes)
    if len(set(axes)) != ndim:
        raise ValueError("repeated axis in transpose")
    return {**args, "axes": axes}


def _transpose_meta(a: TensorMeta, axes: tuple[int, ...]) -> TensorMeta:
    return TensorMeta(tuple(a.shape[i] for i in axes), a.dtype)


register(OpDef("transpose", "view", _transpose, _transpose_meta, canonicalize=_transpose_canon))


def _reshape(a, shape):
    return np.reshape(a, shape)


def _reshape_canon(args: dict[str, Any]) -> dict[str, Any]:
    a = args["a"]
    shape = args["shape"]
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    shape = tuple(int(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or a.size % known:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
        shape = tuple(a.size // known if n == -1 else n for n in shape)
    if any(n < 0 for n in shape) or math.prod(shape) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
    return {**args, "shape": shape}


register(
    OpDef(
        "reshape", "view", _reshape,
        lambda a, shape: TensorMeta(shape, a.dtype),
        canonicalize=_reshape_canon,
    )
)


# ---------------------------------------------------------------------------
# Extern ops: run by a library call (BLAS through NumPy), never generated.
# ---------------------------------------------------------------------------


def _matmul(x1, x2):
    return np.matmul(x1, x2)


def _matmul_meta(x1: TensorMeta, x2: TensorMeta) -> TensorMeta:
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a = x1.shape if x1.ndim > 1 else (1,) + x1.shape
    b = x2.shape if x2.ndim > 1 else x2.shape + (1,)
    if a[-1] != b[-2]:
        raise ValueError(
            f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {b[-2]} is different from {a[-1]})"
        )
    batch = tuple(np.broadcast_shapes(a[:-2], b[:-2]))
    shape = batch + (a[-2],) * (x1.ndim > 1) + (b[-1],) * (x2.ndim > 1)
    loop = ufunc_loop_dtypes(np.matmul, (x1, x2))
    return TensorMeta(shape, dt.check_supported(loop[-1]))


register(OpDef("matmul", "extern", _matmul, _matmul_meta, ufunc=np.matmul, scalar_result=True))
