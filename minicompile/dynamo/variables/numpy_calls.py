"""NumPy functions and array methods: how a call in user code becomes graph ops.

In:  a NumPy function or an array method and the call's argument variables,
     from the call dispatch in builtins.py.
Out: the result's variable — a node of the graph (:func:`call_numpy`), a list
     of pieces (:func:`call_split`), or the constant None after a call that
     writes into an argument (:func:`call_mutation`: a functional update of
     that array, see arrays.update_array).

Tables map what the user wrote to an op in the IR registry:

* :data:`FUNCTIONS` — NumPy functions (``np.exp``, ``np.sum``, ``np.linalg.norm``);
* :data:`METHODS` — ndarray methods (``x.sum``, ``x.reshape``, ``x.astype``);
* :data:`OPERATORS` — Python operators on arrays (``+``, ``<<``, ``x[key]``);
* :data:`SPLITS` — functions with several results (``np.split``): one
  ``getitem`` node per piece, keyword arguments from :func:`split_calls`;
* :data:`MUTATIONS` / :data:`METHOD_MUTATIONS` — calls that write into an
  argument (``np.copyto``, ``np.add.at``, ``x.sort()``, ``x.fill(v)``): the op
  computes the argument's new value, and capture writes it into the
  argument's memory (functionalization.py), so every view of it and the
  caller see it.

NumPy functions that are no single op are captured as their *polyfills*
(dynamo/polyfills/: NumPy's function written with the calls of these tables,
inlined in its place — ``np.cov``, ``np.fliplr``); :data:`BY_TYPE` functions
(``np.iinfo``, ``np.isscalar``) are answered at trace time from types, dtypes
and shapes; :data:`DATA_DEPENDENT` ones (``np.unique``) break the graph with
the reason: their result's shape depends on array values.

Each entry pairs the op name with a *stub* whose signature is NumPy's own —
most often the NumPy function itself — so a call is bound exactly as NumPy
would bind it (positional order, keywords, defaults).  Parameters the op does
not model (``out=``, ``where=``, ``initial=``) must keep their defaults;
otherwise the call is unsupported and the interpreter reports it as a graph
break instead of guessing.  Random numbers and I/O (``np.random.*``,
``np.load``, ``np.savetxt``) are deliberately absent: they must graph-break.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...ir import get_op
from ...ir.ops import AT_UFUNCS, POINTWISE_UFUNCS, broadcast_shapes, split_keys
from ...ir.ops.linalg import einsum_call
from ..exc import Unsupported
from ..polyfills import POLYFILLS, TRACE_TIME, checked, python_bool
from .arrays import ArrayVariable, stored_strictly, update_array
from .base import ConstantVariable, VariableTracker, specialize_sizes
from .containers import ListVariable, TupleVariable, is_constant, python_value, wrap_value
from .functions import UserFunctionVariable, inline_call

if TYPE_CHECKING:
    from ..symbolic_convert import InstructionTranslator

_NO = np._NoValue  # NumPy's own "no value given" default


@dataclass(frozen=True)
class CallRule:
    op: str
    stub: Callable[..., Any]
    # stub parameter name -> op parameter name, where they differ (self -> a)
    rename: dict[str, str] = field(default_factory=dict)
    # last touch on the op's keyword arguments (varargs shapes, for instance)
    post: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # The call copies even where the op could return a view (x.flatten() vs x.ravel()).
    copies: bool = False


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    return isinstance(value, (str, bool, type(None))) and type(value) is type(default) and value == default


def bind_call(rule: CallRule, args: tuple, kwargs: dict, what: str) -> dict[str, Any]:
    """NumPy-style call -> keyword arguments of ``rule.op`` (graph-break if unsupported)."""
    sig = inspect.signature(rule.stub)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"{what}: {e}") from None
    bound.apply_defaults()
    given: list[tuple[str, Any, Any]] = []  # (name, value, NumPy's default)
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if param.kind is param.VAR_KEYWORD:  # np.pad(..., constant_values=1), np.clip(..., min=0)
            given.extend((k, v, _NO) for k, v in value.items())
        else:
            given.append((name, value, param.default))
    op_params = get_op(rule.op).param_names
    op_kwargs: dict[str, Any] = {}
    for name, value, default in given:
        if value is _NO:
            continue  # NumPy's "not given": the op's own default applies
        target = rule.rename.get(name, name)
        if target in op_params:
            op_kwargs[target] = value
        elif not _is_default(value, default):
            raise Unsupported(f"{what}: argument {name}={value!r} is not supported yet")
    return rule.post(op_kwargs) if rule.post else op_kwargs


# -- stubs with NumPy's signatures, where the function itself offers none we can use --

def _unary(x, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None, subok=True): ...
def _binary(x1, x2, /, out=None, *, where=True, casting="same_kind", order="K", dtype=None, subok=True): ...
def _where(condition, x, y, /): ...
def _einsum(subscripts, /, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False): ...
def _at(a, indices, b=None, /): ...
def _one_array(a, /): ...

# ndarray methods: the array arrives as ``self``.
def _m_sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _m_mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=_NO): ...
def _m_var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=_NO, mean=_NO,
           correction=_NO): ...
def _m_max(self, axis=None, out=None, keepdims=False, initial=_NO, where=_NO): ...
def _m_any(self, axis=None, out=None, keepdims=False, *, where=_NO): ...
def _m_argmax(self, axis=None, out=None, *, keepdims=False): ...
def _m_cumsum(self, axis=None, dtype=None, out=None): ...
def _m_astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True): ...
def _m_reshape(self, *shape, order="C", copy=None): ...
def _m_transpose(self, *axes): ...
def _m_ravel(self, order="C"): ...
def _m_swapaxes(self, axis1, axis2, /): ...
def _m_squeeze(self, axis=None): ...
def _m_repeat(self, repeats, /, axis=None): ...
def _m_take(self, indices, /, axis=None, out=None, mode="raise"): ...
def _m_clip(self, min=None, max=None, out=None, **kwargs): ...
def _m_round(self, decimals=0, out=None): ...
def _m_dot(self, other, /, out=None): ...
def _m_copy(self, order="C"): ...
def _m_sort(self, axis=-1, kind=None, order=None, *, stable=None): ...
def _m_fill(self, value, /, *, _whole=(Ellipsis,)): ...  # the key of x[...] = value
def _m_searchsorted(self, v, /, side="left", sorter=None): ...
def _m_partition(self, kth, axis=-1, kind="introselect", order=None): ...
def _m_trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None): ...
def _m_conj(self, /): ...


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

# NumPy functions that are their own stub: (function, op).  Aliases (np.amax,
# np.around) are separate objects with the same op.
_SELF_STUBBED: list[tuple[Callable, str]] = [
    # reductions
    (np.sum, "sum"), (np.prod, "prod"), (np.mean, "mean"), (np.max, "max"), (np.amax, "max"),
    (np.min, "min"), (np.amin, "min"), (np.var, "var"), (np.std, "std"), (np.any, "any"),
    (np.all, "all"), (np.ptp, "ptp"), (np.argmax, "argmax"), (np.argmin, "argmin"),
    (np.nansum, "nansum"), (np.nanprod, "nanprod"), (np.nanmean, "nanmean"), (np.nanmax, "nanmax"),
    (np.nanmin, "nanmin"), (np.nanvar, "nanvar"), (np.nanstd, "nanstd"),
    (np.nanargmax, "nanargmax"), (np.nanargmin, "nanargmin"), (np.count_nonzero, "count_nonzero"),
    (np.linalg.norm, "norm"), (np.median, "median"), (np.nanmedian, "nanmedian"),
    (np.percentile, "percentile"), (np.quantile, "quantile"), (np.nanpercentile, "nanpercentile"),
    (np.nanquantile, "nanquantile"),
    # scans
    (np.cumsum, "cumsum"), (np.cumprod, "cumprod"), (np.nancumsum, "nancumsum"),
    (np.nancumprod, "nancumprod"), (np.diff, "diff"),
    # elementwise functions that are not ufuncs
    (np.clip, "clip"), (np.isclose, "isclose"), (np.round, "round"), (np.around, "round"), (np.nan_to_num, "nan_to_num"),
    # shape and layout
    (np.transpose, "transpose"), (np.reshape, "reshape"), (np.ravel, "ravel"),
    (np.swapaxes, "swapaxes"), (np.moveaxis, "moveaxis"), (np.expand_dims, "expand_dims"),
    (np.squeeze, "squeeze"), (np.broadcast_to, "broadcast_to"), (np.flip, "flip"),
    (np.lib.stride_tricks.sliding_window_view, "sliding_window_view"),
    (np.concatenate, "concatenate"), (np.stack, "stack"), (np.hstack, "hstack"),
    (np.vstack, "vstack"), (np.dstack, "dstack"), (np.column_stack, "column_stack"),
    (np.tile, "tile"), (np.repeat, "repeat"), (np.roll, "roll"), (np.pad, "pad"), (np.copy, "copy"),
    (np.triu, "triu"), (np.tril, "tril"), (np.diagonal, "diagonal"), (np.rot90, "rot90"),
    (np.diag, "diag"),
    # creation
    (np.zeros, "zeros"), (np.ones, "ones"), (np.empty, "empty"), (np.full, "full"),
    (np.zeros_like, "zeros_like"), (np.ones_like, "ones_like"), (np.empty_like, "empty_like"),
    (np.full_like, "full_like"), (np.arange, "arange"), (np.linspace, "linspace"),
    (np.eye, "eye"), (np.tri, "tri"), (np.asarray, "asarray"),
    # linear algebra
    (np.matmul, "matmul"), (np.dot, "dot"), (np.vdot, "vdot"), (np.inner, "inner"),
    (np.outer, "outer"), (np.tensordot, "tensordot"), (np.convolve, "convolve"),
    (np.correlate, "correlate"), (np.trace, "trace"), (np.kron, "kron"),
    (np.cross, "cross"),
    # indexing, sorting, searching
    (np.take, "take"), (np.take_along_axis, "take_along_axis"), (np.sort, "sort"),
    (np.argsort, "argsort"), (np.partition, "partition"), (np.argpartition, "argpartition"),
    (np.searchsorted, "searchsorted"), (np.digitize, "digitize"), (np.interp, "interp"),
]
for _fn, _op in _SELF_STUBBED:
    # np.clip's keyword spelling min=/max=, np.array's object=
    FUNCTIONS[_fn] = CallRule(_op, _fn, {"min": "a_min", "max": "a_max", "object": "a"})
# np.array copies by default (copy=True): never the array it was given.
FUNCTIONS[np.array] = CallRule("asarray", np.array, {"object": "a"}, copies=True)

# np.atleast_1d(*arys) returns a list for several arrays: one array only.
for _n in (1, 2, 3):
    FUNCTIONS[getattr(np, f"atleast_{_n}d")] = CallRule(f"atleast_{_n}d", _one_array)
FUNCTIONS.update({
    np.where: CallRule("where", _where),
    # *operands arrive as a Python tuple of variables: one tuple argument of the op.
    np.einsum: CallRule("einsum", _einsum, post=lambda kw: _einsum_operands(kw)),
})
for _alias, _op in (("concat", "concatenate"), ("permute_dims", "transpose"), ("astype", "astype")):
    if hasattr(np, _alias):  # NumPy 2 array-API spellings
        FUNCTIONS[getattr(np, _alias)] = CallRule(_op, getattr(np, _alias))

def _einsum_operands(kw: dict[str, Any]) -> dict[str, Any]:
    """np.einsum's operands as one tuple; its sublist form (arrays and lists of axis
    numbers, interleaved) spelled as the subscripts string it means."""
    subscripts, rest = kw["subscripts"], list(kw["operands"])
    if not isinstance(subscripts, ArrayVariable):
        return {**kw, "operands": TupleVariable(rest)}
    args = [subscripts] + rest
    # the sublists arrive as plain Python values (constants are made plain before binding)
    spec, operands = einsum_call(tuple(python_value(a) if isinstance(a, VariableTracker) and not
                                       isinstance(a, ArrayVariable) else a for a in args))
    return {**kw, "subscripts": ConstantVariable(spec), "operands": TupleVariable(list(operands))}


_SELF_A = {"self": "a"}
METHODS: dict[str, CallRule] = {
    "sum": CallRule("sum", _m_sum, _SELF_A),
    "prod": CallRule("prod", _m_sum, _SELF_A),
    "mean": CallRule("mean", _m_mean, _SELF_A),
    "var": CallRule("var", _m_var, _SELF_A),
    "std": CallRule("std", _m_var, _SELF_A),
    "max": CallRule("max", _m_max, _SELF_A),
    "min": CallRule("min", _m_max, _SELF_A),
    "any": CallRule("any", _m_any, _SELF_A),
    "all": CallRule("all", _m_any, _SELF_A),
    "argmax": CallRule("argmax", _m_argmax, _SELF_A),
    "argmin": CallRule("argmin", _m_argmax, _SELF_A),
    "cumsum": CallRule("cumsum", _m_cumsum, _SELF_A),
    "cumprod": CallRule("cumprod", _m_cumsum, _SELF_A),
    "reshape": CallRule("reshape", _m_reshape, _SELF_A, _varargs("shape")),
    "transpose": CallRule("transpose", _m_transpose, _SELF_A, _varargs("axes")),
    "ravel": CallRule("ravel", _m_ravel, _SELF_A),
    # flatten copies where ravel may not; in a functional graph the two agree.
    "flatten": CallRule("ravel", _m_ravel, _SELF_A, copies=True),
    "swapaxes": CallRule("swapaxes", _m_swapaxes, _SELF_A),
    "squeeze": CallRule("squeeze", _m_squeeze, _SELF_A),
    "repeat": CallRule("repeat", _m_repeat, _SELF_A),
    "take": CallRule("take", _m_take, _SELF_A),
    "clip": CallRule("clip", _m_clip, {"self": "a", "min": "a_min", "max": "a_max"}),
    "round": CallRule("round", _m_round, _SELF_A),
    "dot": CallRule("dot", _m_dot, {"self": "a", "other": "b"}),
    "copy": CallRule("copy", _m_copy, _SELF_A),
    "argsort": CallRule("argsort", _m_sort, _SELF_A),
    "argpartition": CallRule("argpartition", _m_partition, _SELF_A),
    "searchsorted": CallRule("searchsorted", _m_searchsorted, _SELF_A),
    "trace": CallRule("trace", _m_trace, _SELF_A),
    "astype": CallRule("astype", _m_astype, {"self": "x"}),
    "conj": CallRule("conjugate", _m_conj, {"self": "x"}),
    "conjugate": CallRule("conjugate", _m_conj, {"self": "x"}),
}
# Methods that hand back the array itself for a real dtype (no copy: ``x.conj() is x``).
REAL_IDENTITY_METHODS = frozenset({"conj", "conjugate"})


# -- Python's operators on arrays: the op each one calls --------------------------------

OPERATORS: dict[str, str] = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide",
    "%": "remainder", "**": "power", "@": "matmul", "&": "bitwise_and", "|": "bitwise_or",
    "^": "bitwise_xor", "<<": "left_shift", ">>": "right_shift",
    "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
    "==": "equal", "!=": "not_equal", "neg": "negative", "pos": "positive", "~": "invert",
    "abs": "absolute", "round": "round",  # abs(x), round(x, n): the builtins call x.__abs__/__round__
    "[]": "getitem", "[]=": "setitem",  # x[key], x[key] = v (functional: x is rebound)
}


# -- several results: one getitem node per piece -------------------------------------

SPLITS: dict[Any, bool] = {np.split: True, np.array_split: False}  # function -> equal pieces only


def split_calls(fn: Any, args: tuple, kwargs: dict, shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """``np.split(ary, ...)`` -> the ``getitem`` keyword arguments of each piece, in order.

    ``shape`` is the shape of ``ary``.  NumPy returns the pieces as a list.
    """
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    keys = split_keys(shape, a["indices_or_sections"], a["axis"], equal=SPLITS[fn])
    return [{"a": a["ary"], "key": key} for key in keys]


# -- writes into an argument: the op computes the new value of ``target`` --------------

@dataclass(frozen=True)
class MutationRule:
    rule: CallRule
    target: str  # the op parameter holding the array that is written to


MUTATIONS: dict[Any, MutationRule] = {
    np.copyto: MutationRule(CallRule("copyto", np.copyto), "dst"),
    np.put_along_axis: MutationRule(CallRule("put_along_axis", np.put_along_axis), "arr"),
    **{uf.at: MutationRule(CallRule(f"{uf.__name__}_at", _at), "a") for uf in AT_UFUNCS},
}
METHOD_MUTATIONS: dict[str, MutationRule] = {
    "sort": MutationRule(CallRule("sort", _m_sort, _SELF_A), "a"),
    "partition": MutationRule(CallRule("partition", _m_partition, _SELF_A), "a"),
    # x.fill(v) is x[...] = v (the same unsafe cast of v to x's dtype).
    "fill": MutationRule(CallRule("setitem", _m_fill, {"self": "a", "_whole": "key"}), "a"),
}


# -- calls -----------------------------------------------------------------------------------

def call_function(tx: "InstructionTranslator", fn: Any, name: str, args: list, kwargs: dict,
                  all_constant: bool) -> VariableTracker | None:
    """``np.fn(*args, **kwargs)`` in the graph; None where ``fn`` is no NumPy call of
    these tables, or one that runs at trace time on constants (builtins.py's)."""
    try:
        hash(fn)
    except TypeError:
        return None
    if fn in FUNCTIONS and (not all_constant or get_op(FUNCTIONS[fn].op).kind == "creation"):
        # Creation calls become graph nodes even on constants: arrays are not baked in.
        return call_numpy(tx, FUNCTIONS[fn], args, kwargs, f"np.{name}")
    if fn in SPLITS and not all_constant:
        return call_split(tx, fn, args, kwargs)
    if fn in MUTATIONS:
        return call_mutation(tx, MUTATIONS[fn], args, kwargs, f"np.{name}")
    return call_library(tx, fn, name, args, kwargs, all_constant)


def call_method(tx: "InstructionTranslator", obj: VariableTracker, name: str, args: list,
                kwargs: dict) -> VariableTracker:
    """``obj.name(*args, **kwargs)`` for an array (or NumPy scalar) ``obj``."""
    if name in METHOD_MUTATIONS:
        return call_mutation(tx, METHOD_MUTATIONS[name], [obj] + args, kwargs, f"ndarray.{name}")
    if name in DATA_DEPENDENT_METHODS:
        raise data_dependent(f"ndarray.{name}()", DATA_DEPENDENT_METHODS[name])
    if name not in METHODS:
        raise Unsupported(f"ndarray.{name}() is not supported (its result leaves the graph)")
    if name in REAL_IDENTITY_METHODS and isinstance(obj, ArrayVariable) and not obj.scalar \
            and obj.node.meta.dtype.kind != "c" and not args and not kwargs:
        return obj
    result = call_numpy(tx, METHODS[name], [obj] + args, kwargs, f"ndarray.{name}")
    if isinstance(obj, ArrayVariable) and obj.scalar and isinstance(result, ArrayVariable) \
            and result.node.meta.ndim == 0:
        result.scalar = True  # a NumPy scalar's methods return NumPy scalars
    return result


def plain(var: VariableTracker) -> Any:
    """An argument as the op binding takes it: a constant's Python value, else the variable."""
    return python_value(var) if is_constant(var) else var


def call_numpy(tx: "InstructionTranslator", rule: CallRule, args: list, kwargs: dict, what: str) -> VariableTracker:
    """A call bound by ``rule``: its op as a node of the graph."""
    out = kwargs.get("out")
    if isinstance(out, TupleVariable) and len(out.items) == 1:
        out = out.items[0]
    if isinstance(out, ArrayVariable) and get_op(rule.op).ufunc is not None:
        # ufunc(..., out=o, where=m) is copyto(o, ufunc(...), where=m): the result is
        # computed as usual, then written into o (and o is the result).
        where = kwargs.get("where", ConstantVariable(True))
        rest = {k: v for k, v in kwargs.items() if k not in ("out", "where")}
        result = call_numpy(tx, rule, args, rest, what)
        have, want = result.node.meta.shape, out.node.meta.shape
        try:  # the inputs broadcast against the output, which must hold all of them
            fits = broadcast_shapes(result.node.meta, out.node.meta) == tuple(want)
        except ValueError:
            fits = False
        if not fits:
            raise Unsupported(f"ValueError: non-broadcastable output operand with shape {tuple(want)} "
                              f"doesn't match the broadcast shape {tuple(have)}", numpy_error=True)
        new = tx.output.call("copyto", {"dst": out, "src": result, "casting": "same_kind",
                                        "where": where})
        return update_array(tx, out, new, f"{what}(..., out=)")
    # Constants reach the op binding as plain values, so defaults compare as NumPy's do.
    plain_args = [plain(a) for a in args]
    plain_kw = {k: plain(v) for k, v in kwargs.items()}
    op_kwargs = bind_call(rule, plain_args, plain_kw, what)
    a = op_kwargs.get("a")
    if rule.op == "asarray" and isinstance(a, ArrayVariable) and not a.scalar \
            and op_kwargs.get("dtype") in (None, a.node.meta.dtype):
        # np.asarray(x) is x itself (a write through either shows in both); np.array(x)
        # copies it: a copy node, never an asarray (which returns its input unchanged)
        return tx.output.call("copy", {"a": a}) if rule.copies else a
    if rule.copies and isinstance(a, ArrayVariable):  # x.flatten(), np.array(x): never x
        op_kwargs = {**op_kwargs, "a": tx.output.call("copy", {"a": a})}
    return tx.output.call(rule.op, op_kwargs)


def call_split(tx: "InstructionTranslator", fn: Any, args: list, kwargs: dict) -> VariableTracker:
    """np.split and friends: one getitem node per piece, in a list like NumPy's."""
    array = args[0] if args else kwargs.get("ary")
    if not isinstance(array, ArrayVariable):
        raise Unsupported(f"np.{fn.__name__} of {array.describe() if array else 'nothing'}")
    plain_args = [plain(a) for a in args]
    plain_kw = {k: plain(v) for k, v in kwargs.items()}
    try:
        pieces = split_calls(fn, tuple(plain_args), plain_kw, array.node.meta.shape)
    except Exception as e:
        raise Unsupported(f"np.{fn.__name__} raised {type(e).__name__}: {e}", numpy_error=True) from None
    return ListVariable([tx.output.call("getitem", piece) for piece in pieces])


def call_mutation(tx: "InstructionTranslator", mutation: MutationRule, args: list, kwargs: dict,
                  what: str) -> VariableTracker:
    """A call that writes into one of its arguments (np.copyto, np.add.at, x.sort())."""
    plain_args = [plain(a) for a in args]
    plain_kw = {k: plain(v) for k, v in kwargs.items()}
    op_kwargs = bind_call(mutation.rule, plain_args, plain_kw, what)
    target = op_kwargs.get(mutation.target)
    if not isinstance(target, ArrayVariable):
        raise Unsupported(f"{what} writes into {getattr(target, 'describe', lambda: target)()}")
    indices = op_kwargs.get("indices")
    if mutation.rule.op.endswith("_at") and tx.output.on_device \
            and not isinstance(indices, (ArrayVariable, int, np.integer)):
        # CuPy's ufunc.at takes arrays and scalars only: CuPy raises its own TypeError.
        raise Unsupported(f"TypeError: {what} on CuPy arrays takes an index array, not a "
                          f"{type(indices).__name__}", numpy_error=True)
    if mutation.rule.op == "setitem":  # x.fill(v): v converted as x[...] = v converts it
        op_kwargs["value"] = stored_strictly(tx, op_kwargs["value"], target.node.meta.dtype)
    update_array(tx, target, tx.output.call(mutation.rule.op, op_kwargs), what)
    return ConstantVariable(None)


# -- NumPy functions written in NumPy (polyfills), and the ones that must break -------------

# The result's shape depends on array values: NumPy runs these (a graph break).
# function -> what its result holds
DATA_DEPENDENT: dict[Any, str] = {
    np.extract: "one element per true value of the condition",
    np.nonzero: "one index per nonzero element",
    np.flatnonzero: "one index per nonzero element",
    np.argwhere: "one row per nonzero element",
    np.trim_zeros: "the elements between the leading and trailing zeros",
    np.bincount: "one bin per value up to the largest",
    **{getattr(np, f): "one element per distinct value"
       for f in ("unique", "unique_values", "unique_counts", "unique_inverse", "unique_all",
                 "union1d", "intersect1d", "setdiff1d", "setxor1d") if hasattr(np, f)},
}
DATA_DEPENDENT_METHODS = {"nonzero": DATA_DEPENDENT[np.nonzero]}


def data_dependent(what: str, holds: str) -> Unsupported:
    return Unsupported(f"{what}: the result holds {holds}, so its shape depends on array values")


# Their result depends on the types, dtypes and shapes of their arguments only (never
# on array values, for real dtypes: see COMPLEX_VALUE_TESTS): NumPy runs them at trace time,
# on stand-ins of the arguments.  Shapes and dtypes are guarded on every array.
BY_TYPE = frozenset({np.iinfo, np.finfo, np.isscalar, np.iscomplex, np.isreal, np.iscomplexobj,
                     np.isrealobj, np.result_type, np.promote_types, np.can_cast, np.ndim, np.shape,
                     np.broadcast_shapes})
# Of a complex array these read its values (is each imaginary part zero?): traced instead.
COMPLEX_VALUE_TESTS = frozenset({np.iscomplex, np.isreal})


def _reads_complex_values(fn: Any, args: list) -> bool:
    return fn in COMPLEX_VALUE_TESTS and any(
        isinstance(a, ArrayVariable) and a.node.meta.dtype.kind == "c" for a in args)


# On arguments all known at trace time, NumPy's own answer is a Python value: fold it.
FOLDED = BY_TYPE | {np.array_equal, np.allclose, np.array_equiv}


def call_library(tx: "InstructionTranslator", fn: Any, name: str, args: list, kwargs: dict,
                 all_constant: bool) -> VariableTracker | None:
    """A NumPy function captured through a polyfill (polyfills/), folded at trace
    time, or refused with the reason; None where ``fn`` is none of these."""
    if fn in TRACE_TIME:
        return _trace_time(fn, args, kwargs)
    if fn is python_bool:
        return _python_bool(args[0])
    if fn is checked:
        return _checked(tx, *args)
    if fn in DATA_DEPENDENT:
        raise data_dependent(f"np.{name}", DATA_DEPENDENT[fn])
    if fn in FOLDED and (all_constant or (fn in BY_TYPE and not _reads_complex_values(fn, args))):
        folded = _fold(fn, name, args, kwargs)
        if folded is not None:
            return folded
    if fn in POLYFILLS:
        return _call_polyfill(tx, fn, name, args, kwargs)
    return None


def _call_polyfill(tx: "InstructionTranslator", fn: Any, name: str, args: list,
                   kwargs: dict) -> VariableTracker:
    """Trace NumPy's function as its polyfill, a plain Python function written with
    the NumPy calls of the tables above."""
    try:
        return inline_call(tx, UserFunctionVariable(POLYFILLS[fn]), args, kwargs)
    except Unsupported as e:
        # A break inside the polyfill is the user's call breaking: the reason names
        # NumPy's function and (raised afresh, without a location) the user's line.
        reason = e.reason if e.reason.startswith(f"np.{name}") else f"np.{name}: {e.reason}"
        raise Unsupported(reason, numpy_error=e.numpy_error, resumable=e.resumable) from None


def _stand_in(var: VariableTracker) -> Any:
    """A value of ``var``'s type, dtype and shape (its own value where it is known)."""
    if isinstance(var, ArrayVariable):
        meta = var.node.meta
        if var.python is not None:
            return var.python()
        if var.scalar:
            return meta.dtype.type(0)
        return np.broadcast_to(np.zeros((), meta.dtype), specialize_sizes(meta.shape))
    if isinstance(var, (TupleVariable, ListVariable)):
        items = [_stand_in(v) for v in var.items]
        return tuple(items) if isinstance(var, TupleVariable) else items
    return specialize_sizes(python_value(var))


def _holds_array(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_array(v) for v in value)
    return isinstance(value, np.ndarray)


def _fold(fn: Any, name: str, args: list, kwargs: dict) -> VariableTracker | None:
    """NumPy's own answer at trace time; None when it is an array (arrays are not
    baked into the graph: the polyfill builds it instead)."""
    values = [_stand_in(a) for a in args]
    kw_values = {k: _stand_in(v) for k, v in kwargs.items()}
    try:
        result = fn(*values, **kw_values)
    except Exception as e:
        raise Unsupported(f"np.{name} raised {type(e).__name__}: {e}", numpy_error=True) from None
    return None if _holds_array(result) else wrap_value(result)


def _trace_time(fn: Any, args: list, kwargs: dict) -> VariableTracker:
    """A polyfill's helper on Python values, run for real (see polyfills/base.py)."""
    if not all(is_constant(a) for a in (*args, *kwargs.values())):
        raise Unsupported(TRACE_TIME[fn])
    values = specialize_sizes([python_value(a) for a in args])
    kw_values = {k: specialize_sizes(python_value(v)) for k, v in kwargs.items()}
    try:
        return wrap_value(fn(*values, **kw_values))
    except Exception as e:  # NumPy's own error for this call
        raise Unsupported(f"{type(e).__name__}: {e}", numpy_error=True) from None


def _python_bool(var: VariableTracker) -> VariableTracker:
    """``bool(x)`` of a 0-d boolean array, kept in the graph (see ArrayVariable.python)."""
    if is_constant(var):
        return ConstantVariable(bool(python_value(var)))
    if not (isinstance(var, ArrayVariable) and var.node.meta.ndim == 0):
        raise Unsupported(f"bool() of {var.describe()}")
    return ArrayVariable(var.node, python=bool)


def _checked(tx: "InstructionTranslator", value: VariableTracker, bad: VariableTracker,
             error: VariableTracker, message: VariableTracker) -> VariableTracker:
    """A check on array values (polyfills' ``checked``): a ``check`` op, raising when the graph runs."""
    error_type, text = python_value(error), python_value(message)
    if is_constant(bad):
        if np.any(python_value(bad)):
            raise Unsupported(f"{error_type.__name__}: {text}", numpy_error=True)
        return value
    result = tx.output.call("check", {"a": value, "bad": bad, "error": error_type.__name__, "message": text})
    if isinstance(value, ArrayVariable) and value.scalar:
        return ArrayVariable(result.node, scalar=True)  # a NumPy scalar stays one (a value, no memory)
    return result
