"""Is the compiled function right?  Compiled against eager NumPy, every value the caller sees.

In:  a function, its arguments and a backend (a name or any callable
     ``(graph, example_inputs) -> callable``).
Out: :func:`assert_same` returns the compiled result, or raises an
     ``AssertionError`` that says where the two differ (a path into the result,
     ``result[1]['h']``, or ``argument x`` for an array the call wrote into), by
     how much (largest absolute and relative error, the first index that
     differs, and the two values there), which backend computed it, and the
     graphs capture made of the call (``mc.explain``).

The function runs twice, eagerly and compiled, each on its own copy of the
arguments; the copies keep every array's strides and read-only flag, and
arguments that share memory (the same array twice, views of one base) share
it in the copies too, so in-place writes through aliases are compared as well.

:func:`assert_close` is the comparison alone: Python type at every level (a
tuple stays a tuple, a NumPy scalar is not a 0-d array, a Python ``bool`` is
not ``np.bool_``), then dtype, shape and values, exact for bools, integers and
strings, within :data:`TOLERANCE` for floating point, NaN equal to NaN.

A backend that computes floats in a narrower dtype than the values' own
declares it (``precision``: the Spyre card keeps floats as fp16; see
:func:`backend_precision`); its float results are compared with that dtype's
tolerance at least, and where NumPy's value lies beyond that dtype's range, the
infinity it becomes there is the right answer.
"""
from __future__ import annotations

import copy
import ctypes
import dataclasses
import inspect
import types
import warnings
from typing import Any, Callable

import numpy as np

import minicompile as mc
from minicompile.dynamo import OptimizedFunction

# (rtol, atol) per floating dtype: |compiled - eager| <= atol + rtol * |eager|.
# Loose enough for a backend that reorders a sum or computes a float16 result in
# float32; far tighter than any wrong formula.  Complex dtypes use their parts'.
TOLERANCE: dict[np.dtype, tuple[float, float]] = {
    np.dtype(np.float16): (2e-3, 1e-3),
    np.dtype(np.float32): (2e-5, 1e-5),
    np.dtype(np.float64): (1e-9, 1e-10),
    np.dtype(np.longdouble): (1e-9, 1e-10),
}

# What ``backend=None`` (assert_same) and ``backends=None`` (check) mean; the
# pytest plugin's --minicompile-backend=NAME sets both to NAME.
DEFAULTS: dict[str, Any] = {"backend": "auto", "backends": ("eager", "cpp")}


def tolerance(dtype: np.dtype, table: dict | None = None, precision: Any = None) -> tuple[float, float] | None:
    """The (rtol, atol) of a floating or complex dtype in ``table`` (default
    :data:`TOLERANCE`), loosened to ``precision``'s (a backend's float dtype)
    when that is looser; None: compared exactly."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        dtype = np.empty(0, dtype).real.dtype
    if dtype.kind != "f":
        return None
    rtol, atol = (table or TOLERANCE).get(dtype, (1e-9, 1e-10))
    if precision is not None:
        floor = TOLERANCE.get(np.dtype(precision), (1e-9, 1e-10))
        rtol, atol = max(rtol, floor[0]), max(atol, floor[1])
    return rtol, atol


def backend_precision(backend: Any) -> np.dtype | None:
    """The float dtype ``backend`` computes in when narrower than each value's own:
    what it declares (:class:`minicompile.per_shape.Backend`'s ``precision``; a
    callable backend's ``precision`` attribute), ``None`` for full precision."""
    from minicompile.api import lookup_backend

    return lookup_backend(backend)[0].precision


# ---------------------------------------------------------------------------
# Comparing values
# ---------------------------------------------------------------------------


def differences(actual: Any, expected: Any, where: str = "result", rtol: float | None = None,
                atol: float | None = None, tolerances: dict | None = None, precision: Any = None) -> list[str]:
    """Every place where ``actual`` is not ``expected``, one line each (empty: the same)."""
    out: list[str] = []
    _compare(actual, expected, where, (rtol, atol, tolerances, precision), out)
    return out


def assert_close(actual: Any, expected: Any, where: str = "result", rtol: float | None = None,
                 atol: float | None = None, tolerances: dict | None = None, precision: Any = None) -> None:
    """Raise ``AssertionError`` listing the differences (see :func:`differences`).
    ``tolerances`` (a dtype -> (rtol, atol) table) replaces :data:`TOLERANCE`;
    ``precision`` (a float dtype: the one ``actual`` was computed in) loosens it
    to that dtype's and lets a value beyond its range be infinite;
    ``rtol``/``atol`` override all of them for every floating value."""
    found = differences(actual, expected, where, rtol, atol, tolerances, precision)
    if found:
        raise AssertionError("\n".join(found))


def _name(value: Any) -> str:
    return type(value).__qualname__ if type(value).__module__ == "builtins" else \
        f"{type(value).__module__}.{type(value).__qualname__}"


def _compare(actual: Any, expected: Any, where: str, tol: tuple, out: list[str]) -> None:
    if type(actual) is not type(expected):
        out.append(f"{where}: compiled gives {_name(actual)} {_short(actual)}, "
                   f"NumPy {_name(expected)} {_short(expected)}")
        return
    if isinstance(expected, (np.ndarray, np.generic)):
        _compare_arrays(np.asarray(actual), np.asarray(expected), where, tol, out)
    elif isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            out.append(f"{where}: compiled gives length {len(actual)}, NumPy {len(expected)}")
            return
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, f"{where}[{i}]", tol, out)
    elif isinstance(expected, dict):
        if list(actual) != list(expected):
            out.append(f"{where}: compiled gives keys {list(actual)}, NumPy {list(expected)}")
            return
        for k in expected:
            _compare(actual[k], expected[k], f"{where}[{k!r}]", tol, out)
    elif isinstance(expected, float):
        _compare_arrays(np.float64(actual), np.float64(expected), where, tol, out)
    elif isinstance(expected, complex):
        _compare_arrays(np.complex128(actual), np.complex128(expected), where, tol, out)
    elif isinstance(expected, types.GeneratorType):  # a generator stays one: its items compared
        _compare(list(actual), list(expected), f"{where} (its items)", tol, out)
    elif dataclasses.is_dataclass(expected) or (hasattr(expected, "__dict__") and not callable(expected)
                                                and type(expected).__eq__ is object.__eq__):
        _compare(vars(actual), vars(expected), f"{where}.__dict__", tol, out)
    elif type(expected).__eq__ is object.__eq__:
        return  # a function, a sentinel: nothing to compare but the type
    elif actual != expected:
        out.append(f"{where}: compiled gives {actual!r}, NumPy {expected!r}")


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    if isinstance(value, np.generic):
        return f"{value.dtype} {value!r}"
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _compare_arrays(actual: np.ndarray, expected: np.ndarray, where: str, tol: tuple, out: list[str]) -> None:
    if actual.dtype != expected.dtype:
        out.append(f"{where}: compiled gives dtype {actual.dtype}, NumPy {expected.dtype}")
        return
    if actual.shape != expected.shape:
        out.append(f"{where}: compiled gives shape {actual.shape}, NumPy {expected.shape}")
        return
    if expected.dtype.kind not in "biufc":  # strings, objects, datetimes: equal or not
        if not np.array_equal(actual, expected):
            out.append(f"{where}: compiled gives {actual!r}, NumPy {expected!r}")
        return
    rtol, atol, table, precision = tol
    default = tolerance(expected.dtype, table, precision)
    if default is None:
        wrong = actual != expected
    else:
        rtol = default[0] if rtol is None else rtol
        atol = default[1] if atol is None else atol
        with np.errstate(all="ignore"):
            wrong = ~np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
            if precision is not None and expected.dtype.kind == "f":
                wrong &= actual != expected.astype(precision)  # beyond its range: the infinity it holds
    if not wrong.any():
        return
    first = tuple(int(i) for i in np.argwhere(wrong)[0])
    text = (f"{where}: {int(wrong.sum())} of {expected.size} elements differ "
            f"({expected.dtype}{list(expected.shape)}); first at index {first}: "
            f"compiled {actual[first]!r}, NumPy {expected[first]!r}")
    if expected.dtype.kind in "fc":
        with np.errstate(all="ignore"):
            a, e = actual[wrong].astype(np.complex128 if expected.dtype.kind == "c" else np.float64), \
                expected[wrong].astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
            error = np.abs(a - e)
            finite = np.isfinite(error)
            if finite.any():
                rel = error[finite] / np.maximum(np.abs(e[finite]), np.finfo(np.float64).tiny)
                text += f"; max abs error {error[finite].max():.3g}, max rel error {rel.max():.3g}"
            if (~finite).any():
                text += f"; {int((~finite).sum())} differ in NaN or infinity"
        held = f", computed in {np.dtype(precision)}" if precision is not None else ""
        text += f" (rtol={rtol:g}, atol={atol:g}{held})"
    elif expected.dtype.kind in "iu":
        error = np.abs(actual[wrong].astype(np.float64) - expected[wrong].astype(np.float64))
        text += f"; max abs error {error.max():g}"
    out.append(text)


# ---------------------------------------------------------------------------
# Copying arguments, aliasing kept
# ---------------------------------------------------------------------------


def _root(array: np.ndarray) -> Any:
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return base


def _arrays_in(value: Any, found: dict[int, np.ndarray], seen: set[int]) -> None:
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        found[id(value)] = value
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _arrays_in(v, found, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _arrays_in(v, found, seen)
    elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        for v in vars(value).values():
            _arrays_in(v, found, seen)


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _rebuild(array: np.ndarray, buffer: np.ndarray, start: int) -> np.ndarray:
    """``array`` again, as a view of ``buffer`` whose first byte stands for address ``start``."""
    if array is buffer:
        return buffer
    view = np.ndarray(array.shape, array.dtype, buffer=buffer, offset=_address(array) - start,
                      strides=array.strides)
    view.flags.writeable = array.flags.writeable
    return view


def copy_args(value: Any) -> Any:
    """A deep copy of ``value`` whose arrays keep their strides, offsets, read-only
    flags and memory sharing: arrays over one base are views of one copy of it."""
    found: dict[int, np.ndarray] = {}
    _arrays_in(value, found, set())
    groups: dict[int, list[np.ndarray]] = {}
    for array in found.values():
        groups.setdefault(id(_root(array)), []).append(array)
    memo: dict[int, Any] = {}
    for arrays in groups.values():
        root = _root(arrays[0])
        if isinstance(root, np.ndarray) and (root.flags.c_contiguous or root.flags.f_contiguous):
            # The base itself, copied with its strides: views of the copy have a base
            # of the original's dtype and shape, as capture's guards expect.
            copied = root.copy(order="K")
            memo.update({id(a): _rebuild(a, copied, _address(root)) if a is not root else copied for a in arrays})
            continue
        # Memory NumPy does not own (a buffer, a mapped file): copy the bytes the arrays span.
        live = [a for a in arrays if a.size]
        memo.update({id(a): np.empty(a.shape, a.dtype) for a in arrays if not a.size})
        if live:
            bounds = [np.lib.array_utils.byte_bounds(a) for a in live]
            low, high = min(b[0] for b in bounds), max(b[1] for b in bounds)
            raw = np.frombuffer((ctypes.c_char * (high - low)).from_address(low), np.uint8).copy()
            memo.update({id(a): _rebuild(a, raw, low) for a in live})
    return copy.deepcopy(value, memo)


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------


def _call(fn: Callable, args: tuple, kwargs: dict) -> tuple[Any, BaseException | None]:
    try:
        return fn(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001  (compared with the other side's)
        return None, error


def _argument_names(fn: Callable, args: tuple, kwargs: dict) -> list[tuple[str, Any, Any]]:
    """(label, position or keyword) of each argument, named as the function names them."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(len(args)):
        p = params[i] if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                               params[i].POSITIONAL_OR_KEYWORD) else None
        names.append((f"argument {p.name}" if p else f"argument {i}", i, None))
    names += [(f"argument {k}", None, k) for k in kwargs]
    return names


def backend_name(backend: Any) -> str:
    return backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))


def _explained(fn: Callable, args: tuple, kwargs: dict) -> str:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = mc.explain(fn)(*copy_args(args), **copy_args(kwargs))
    except Exception as error:  # noqa: BLE001  (the report must still be made)
        return f"  (mc.explain raised {type(error).__name__}: {error})"
    return "\n".join("  " + line for line in str(out).splitlines())


def _table_for_inputs(args: Any) -> dict:
    """:data:`TOLERANCE`, loosened to the least precise floating input: a float64
    result computed from float32 arrays carries float32's rounding."""
    found: dict[int, np.ndarray] = {}
    _arrays_in(args, found, set())
    weakest = [tolerance(a.dtype) for a in found.values() if a.dtype.kind in "fc"]
    if not weakest:
        return TOLERANCE
    floor = max(weakest)
    return {dtype: max(tol, floor) for dtype, tol in TOLERANCE.items()}


def _arrays_with_paths(value: Any, where: str) -> list[tuple[str, np.ndarray]]:
    if isinstance(value, np.ndarray):
        return [(where, value)]
    if isinstance(value, (tuple, list)):
        return [p for i, v in enumerate(value) for p in _arrays_with_paths(v, f"{where}[{i}]")]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _arrays_with_paths(v, f"{where}[{k!r}]")]
    return []


def _aliasing(actual: Any, expected: Any, compiled_args: list, eager_args: list, out: list[str]) -> None:
    """A result array that is, or views, an argument in NumPy must be so compiled too
    (a later write through it reaches the argument), and the other way round."""
    for (where, a), (_, e) in zip(_arrays_with_paths(actual, "result"), _arrays_with_paths(expected, "result")):
        for (label, ca), (_, ea) in zip(compiled_args, eager_args):
            if (a is ca) != (e is ea):
                out.append(f"{where}: is {label}: compiled {a is ca}, NumPy {e is ea}")
            elif np.shares_memory(a, ca) != np.shares_memory(e, ea):
                out.append(f"{where}: shares memory with {label}: compiled {np.shares_memory(a, ca)}, "
                           f"NumPy {np.shares_memory(e, ea)}")


def assert_same(fn: Callable, *args: Any, backend: Any = None, **kwargs: Any) -> Any:
    """Compile ``fn`` with ``backend``, call it and ``fn`` itself on copies of the
    arguments, and raise ``AssertionError`` unless the results and the arguments
    afterwards agree (see the module docstring), and a result array is (or
    views) an argument exactly where NumPy's is; return the compiled result.

    ``backend``: a name (``"eager"``, ``"cpp"``, ...) or a callable backend;
    ``None`` means ``DEFAULTS["backend"]`` (``"auto"``), except for a function
    ``mc.compile`` already made, which is then called as it is (its backend,
    and its cache: successive calls with new sizes meet dynamic shapes, as
    :func:`~minicompile.testing.check` runs a ``shape_sequences`` draw).  When ``fn`` raises,
    the compiled function must raise the same exception type (and leave the
    arguments as ``fn`` left them).  Tolerances: :data:`TOLERANCE` for each
    value's dtype, or the least precise floating argument's, or the backend's
    declared precision's (:func:`backend_precision`), whichever is loosest.
    """
    reuse = isinstance(fn, OptimizedFunction) and backend is None
    backend = (fn.backend if reuse else DEFAULTS["backend"]) if backend is None else backend
    table = _table_for_inputs((args, kwargs))
    tol = (None, None, table, backend_precision(backend))
    original = fn.original if isinstance(fn, OptimizedFunction) else fn
    eager_args, eager_kwargs = copy_args((args, kwargs))
    compiled_args, compiled_kwargs = copy_args((args, kwargs))
    # NumPy's warnings (overflow, a mean of nothing) come from both sides alike: not shown.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected, eager_error = _call(original, eager_args, eager_kwargs)
        compiled = fn if reuse else mc.compile(original, backend=backend)
        actual, compiled_error = _call(compiled, compiled_args, compiled_kwargs)
    found: list[str] = []
    if type(eager_error) is not type(compiled_error):
        said = lambda e: "nothing" if e is None else f"{type(e).__name__}: {e}"  # noqa: E731
        found.append(f"raised: compiled raised {said(compiled_error)}; NumPy raised {said(eager_error)}")
    elif eager_error is None:
        _compare(actual, expected, "result", tol, found)
    compared: list[tuple[list, list]] = [[], []]
    for label, i, k in _argument_names(original, args, kwargs):
        a = compiled_args[i] if k is None else compiled_kwargs[k]
        e = eager_args[i] if k is None else eager_kwargs[k]
        _compare(a, e, f"{label} (after the call)", tol, found)
        compared[0] += _arrays_with_paths(a, label)
        compared[1] += _arrays_with_paths(e, label)
    if eager_error is None and compiled_error is None and not found:
        _aliasing(actual, expected, *compared, found)
    if not found:
        return actual
    name = getattr(original, "__qualname__", repr(original))
    shown = fn.backend_name if reuse else backend_name(backend)
    message = [f"compiled {name} (backend {shown!r}) differs from eager NumPy:"]
    message += ["  " + line for line in found]
    message.append("Captured graphs (mc.explain):")
    message.append(_explained(original, args, kwargs))
    error = AssertionError("\n".join(message))
    raise error from compiled_error
