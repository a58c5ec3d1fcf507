"""Property tests of compiled functions: hypothesis strategies for their inputs, and ``check``.

In:  your NumPy function and a hypothesis strategy per argument (or a strategy
     of whole programs).
Out: :func:`arrays` — a strategy drawing NumPy arrays in the layouts compiled
     code gets wrong most easily: C-contiguous, Fortran, strided (every other
     element), negative strides, read-only broadcast views; 0-d and empty shapes
     included.  :func:`aliasing_groups` — several arguments at once, all views
     of one base array (the same array twice, overlapping windows, a reversed
     or transposed view, interleaved elements).  :func:`shape_sequences` —
     the arguments of several calls whose sizes change from call to call, for
     dynamic shapes.  :func:`check` — draws arguments, runs
     :func:`~minicompile.testing.assert_same` on each backend, and on failure
     raises with hypothesis's smallest failing example written out as a
     ready-to-paste reproducer: each array as an ``np.array(...)`` literal with
     its dtype and the view that gives its layout (a shared base once, and
     each argument as a view of it), then the call.  ``check(programs(...))``
     runs drawn programs (:mod:`minicompile.testing.random_programs`) instead.

Each drawn array is made by evaluating its recipe (``np.array([...],
dtype=np.float32)[::2]``), so the reproducer builds exactly the array that
failed.  Needs hypothesis (``pip install 'minicompile[testing]'``).
"""
from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minicompile as mc

from .compare import DEFAULTS, assert_same, backend_name

LAYOUTS = ("C", "F", "strided", "reversed", "broadcast")
DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_)


@dataclass
class Recipe:
    """How a drawn array was made: ``view`` (source with ``{base}``) of ``base``
    (source of an ``np.array`` literal); arrays of one group share ``group``."""

    array: np.ndarray
    view: str
    base: str
    note: str = ""
    group: int | None = None


# id(array) -> its Recipe, for the reproducer (forgotten after each example).
_RECIPES: dict[int, Recipe] = {}


def _literal(values: Any) -> str:
    """Python source for nested lists of numbers, NaN and infinities included."""
    if isinstance(values, list):
        return "[" + ", ".join(_literal(v) for v in values) + "]"
    if isinstance(values, float) and not math.isfinite(values):
        return "np.nan" if math.isnan(values) else ("np.inf" if values > 0 else "-np.inf")
    return repr(values)


def array_literal(values: np.ndarray) -> str:
    """``np.array([...], dtype=np.float32)``: source that builds ``values`` again."""
    if values.size == 0:  # np.array([]) would lose the shape
        return f"np.empty({values.shape!r}, dtype=np.{values.dtype.name})"
    return f"np.array({_literal(values.tolist())}, dtype=np.{values.dtype.name})"


# layout -> (the base's shape for the array's shape, the view of `{base}` that gives the array)
def _view(layout: str, shape: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    if layout == "F" and len(shape) >= 2:
        return shape, "np.asfortranarray({base})"
    if layout == "strided" and shape:
        return shape[:-1] + (2 * shape[-1],), "{base}[..., ::2]"
    if layout == "reversed" and shape:
        return shape, "{base}[::-1]"
    if layout == "broadcast" and shape:
        return (1,) + shape[1:], f"np.broadcast_to({{base}}, {shape!r})"
    return shape, "{base}"


def _elements(dtype: np.dtype, allow_nan: bool) -> st.SearchStrategy:
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "u":
        return st.integers(0, 16)
    if dtype.kind == "i":
        return st.integers(-8, 8)
    width = min(64, dtype.itemsize * 8)
    if allow_nan:
        return st.floats(width=width, allow_nan=True, allow_infinity=True, min_value=None)
    return st.floats(-10, 10, width=width)


def _draw_array(draw: Any, dtype: np.dtype, shape: tuple[int, ...], layout: str, allow_nan: bool) -> np.ndarray:
    base_shape, view = _view(layout, shape)
    base = draw(hnp.arrays(dtype, base_shape, elements=_elements(dtype, allow_nan)))
    array = eval(view.format(base="base"), {"np": np, "base": base})  # the source the reproducer shows
    _RECIPES[id(array)] = Recipe(array, view, array_literal(base), layout if view != "{base}" else "")
    return array


def _shapes(shapes: Any) -> st.SearchStrategy:
    if shapes is None:
        return hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    if isinstance(shapes, st.SearchStrategy):
        return shapes
    return st.sampled_from([tuple(s) for s in shapes])


@st.composite
def arrays(draw: Any, dtypes: Sequence[Any] = DTYPES, shapes: Any = None, layouts: Sequence[str] = LAYOUTS,
           allow_nan: bool = False) -> np.ndarray:
    """An array of one of ``dtypes``, of a shape drawn from ``shapes`` (a strategy,
    or a list of shapes; default: 0 to 3 dimensions of sizes 0 to 4), laid out as
    one of ``layouts``: "C", "F" (Fortran), "strided" (every other element of a
    wider array), "reversed" (a negative stride), "broadcast" (a read-only
    ``np.broadcast_to`` view).  Values are small (floats in [-10, 10], integers
    in [-8, 8]); ``allow_nan=True`` draws any float, NaN and infinities included."""
    dtype = np.dtype(draw(st.sampled_from(list(dtypes))))
    shape = tuple(draw(_shapes(shapes)))
    return _draw_array(draw, dtype, shape, draw(st.sampled_from(list(layouts))), allow_nan)


# ---------------------------------------------------------------------------
# Arguments that alias
# ---------------------------------------------------------------------------


class Group(tuple):
    """Several arguments drawn together (:func:`aliasing_groups`): ``check`` passes
    them as that many consecutive positional arguments."""


# kind -> (the base's shape for the members' shape and their number n, member i's view of {base})
ALIASING = {
    "same": (lambda shape, n: shape, lambda i, n: "{base}"),
    "overlapping": (lambda shape, n: (shape[0] + n - 1,) + shape[1:],
                    lambda i, n: f"{{base}}[{i}:{i - n + 1 or None}]"),
    "reversed": (lambda shape, n: shape, lambda i, n: "{base}[::-1]" if i % 2 else "{base}"),
    "transposed": (lambda shape, n: shape, lambda i, n: "{base}.T" if i % 2 else "{base}"),
    "interleaved": (lambda shape, n: shape[:-1] + (shape[-1] * n,), lambda i, n: f"{{base}}[..., {i}::{n}]"),
}


def _aliasing_kinds(shape: tuple[int, ...]) -> list[str]:
    kinds = ["same"]
    if shape:
        kinds += ["overlapping", "reversed", "interleaved"]
    if len(shape) == 2 and shape[0] == shape[1]:
        kinds.append("transposed")
    return kinds


_group_count = [0]  # numbers the groups drawn, so that a reproducer names each base once


@st.composite
def aliasing_groups(draw: Any, size: int = 2, dtypes: Sequence[Any] = DTYPES, shapes: Any = None,
                    kinds: Sequence[str] = tuple(ALIASING), allow_nan: bool = False) -> Group:
    """``size`` arrays of one dtype and one shape (drawn as in :func:`arrays`), all
    views of one base: "same" (one array passed ``size`` times), "overlapping"
    (windows of the base shifted by one along the first axis), "reversed" (the
    array and its reversal, alternating), "transposed" (a square array and its
    transpose), "interleaved" (every ``size``-th element, each from its own
    offset: no element shared, one buffer).  A kind the shape cannot take
    (0-d: only "same") is not drawn.  A write through one is a write into the
    others: the compiled function must see it where NumPy does, in the result
    and in every argument afterwards."""
    dtype = np.dtype(draw(st.sampled_from(list(dtypes))))
    shape = tuple(draw(_shapes(shapes)))
    usable = [k for k in _aliasing_kinds(shape) if k in kinds] or ["same"]
    kind = draw(st.sampled_from(usable))
    base_shape, member = ALIASING[kind]
    base = draw(hnp.arrays(dtype, base_shape(shape, size), elements=_elements(dtype, allow_nan)))
    _group_count[0] += 1
    out = []
    for i in range(size):
        view = member(i, size)
        array = eval(view.format(base="base"), {"np": np, "base": base})
        _RECIPES[id(array)] = Recipe(array, view, array_literal(base), kind, _group_count[0])
        out.append(array)
    return Group(out)


# ---------------------------------------------------------------------------
# Calls whose sizes change: dynamic shapes
# ---------------------------------------------------------------------------


class Calls(list):
    """The argument tuples of successive calls of one compiled function (:func:`shape_sequences`)."""

    def __repr__(self) -> str:
        return "Calls(" + "; ".join(", ".join(str(np.shape(a)) for a in call) for call in self) + ")"


def _layout_of(array: np.ndarray) -> str:
    if 0 in array.strides and array.size > 1:
        return "broadcast"
    if any(s < 0 for s in array.strides):
        return "reversed"
    if array.ndim >= 2 and array.flags.f_contiguous and not array.flags.c_contiguous:
        return "F"
    return "C" if array.flags.c_contiguous else "strided"


def _another_size(draw: Any, size: int, low: int, high: int) -> int:
    """A size in [low, high] other than ``size`` (when the range has another)."""
    if not low <= size <= high or low == high:
        return draw(st.integers(low, high))
    other = draw(st.integers(low, high - 1))
    return other + (other >= size)


@st.composite
def shape_sequences(draw: Any, *first: Any, dtypes: Sequence[Any] = DTYPES, layouts: Sequence[str] = ("C", "F", "reversed"),
                    allow_nan: bool = False, min_calls: int = 2, max_calls: int = 4, min_side: int = 2,
                    max_side: int = 8) -> Calls:
    """:class:`Calls`: the arguments of ``min_calls`` to ``max_calls`` calls.  The
    first call's are ``first``: each a shape (an array of it is drawn, of one of
    ``dtypes`` and ``layouts``) or an array (passed as it is).  On each later
    call some of the sizes of 2 or more that the first call's arrays have (at
    least one) take another value in ``[min_side, max_side]``, on every axis of
    that size in every argument, so that arrays that broadcast together still
    do; each array keeps its dtype and layout, with new values.  This is what
    automatic dynamic shapes meets: the first call compiles for its sizes, a
    later one with other sizes compiles once more with those axes symbolic.
    Without a size of 2 or more there is one call.  Arguments that are not
    arrays are passed unchanged to every call."""
    args, plans = [], []  # plans: (dtype, layout) of each array argument, None for the others
    for item in first:
        if isinstance(item, np.ndarray):
            args.append(item)
            plans.append((item.dtype, _layout_of(item)))
        elif isinstance(item, tuple):
            dtype = np.dtype(draw(st.sampled_from(list(dtypes))))
            layout = draw(st.sampled_from(list(layouts)))
            args.append(_draw_array(draw, dtype, item, layout, allow_nan))
            plans.append((dtype, layout))
        else:
            args.append(item)
            plans.append(None)
    calls = Calls([tuple(args)])
    sizes = sorted({d for a, p in zip(args, plans) if p for d in a.shape if d >= 2})
    if not sizes:
        return calls
    varying = draw(st.lists(st.sampled_from(sizes), min_size=1, max_size=len(sizes), unique=True))
    for _ in range(draw(st.integers(min_calls, max_calls)) - 1):
        new = {d: _another_size(draw, d, min_side, max_side) for d in varying}
        call = []
        for a, plan in zip(args, plans):
            if plan is None:
                call.append(a)
                continue
            dtype, layout = plan
            call.append(_draw_array(draw, dtype, tuple(new.get(d, d) for d in a.shape), layout, allow_nan))
        calls.append(tuple(call))
    return calls


# ---------------------------------------------------------------------------
# Reproducers
# ---------------------------------------------------------------------------


def _sources(values: Sequence[Any]) -> tuple[list[str], list[str]]:
    """(setup lines, one expression per value): a base shared by several arrays
    (a group) is named once, ``g1 = np.array(...)``, and each array views it."""
    setup: list[str] = []
    names: dict[int, str] = {}  # group -> the name of its base

    def source(value: Any) -> str:
        known = _RECIPES.get(id(value))
        if known is not None and known.array is value:
            if known.group is None:
                text = known.view.format(base=known.base)
                return f"{text}  # {known.note}" if known.note else text
            if known.group not in names:
                names[known.group] = f"g{len(names)}"
                setup.append(f"{names[known.group]} = {known.base}  # {known.note}")
            return known.view.format(base=names[known.group])
        if isinstance(value, (list, tuple)):
            inner = ", ".join(source(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {source(v)}" for k, v in value.items()) + "}"
        if isinstance(value, np.ndarray):
            return array_literal(value)
        if isinstance(value, np.generic):
            return f"np.{value.dtype.name}({_literal(value.item())})"
        return repr(value)

    exprs = [source(v) for v in values]
    return setup, exprs


def _header(fn: Callable) -> tuple[str, str]:
    name = getattr(fn, "__name__", "fn")
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", name)
    if module and module != "__main__" and "<" not in qualname:
        return f"from {module} import {qualname.split('.')[0]}", qualname
    return f"# {qualname} is defined in {module or 'your script'}: paste it here", \
        qualname if "<" not in qualname else name


def _how(backend: Any) -> str:
    return repr(backend) if isinstance(backend, str) else backend_name(backend)


def reproducer(fn: Callable, args: Sequence[Any], backend: Any) -> str:
    """Python source that rebuilds ``args`` and makes the failing call again."""
    header, name = _header(fn)
    setup, exprs = _sources(args)
    lines = ["import numpy as np", "from minicompile.testing import assert_same", header, "", *setup]
    lines += [f"x{i} = {e}" for i, e in enumerate(exprs)]
    lines.append(f"assert_same({name}, {', '.join(f'x{i}' for i in range(len(exprs)))}, backend={_how(backend)})")
    return "\n".join(lines)


def _calls_reproducer(fn: Callable, calls: Calls, backend: Any, dynamic: Any) -> str:
    header, name = _header(fn)
    lines = ["import numpy as np", "import minicompile as mc", "from minicompile.testing import assert_same",
             header, "", f"compiled = mc.compile({name}, backend={_how(backend)}, dynamic={dynamic!r})"]
    for n, call in enumerate(calls):
        setup, exprs = _sources(call)
        lines += [f"# call {n + 1}", *setup] + [f"x{i} = {e}" for i, e in enumerate(exprs)]
        lines.append(f"assert_same(compiled, {', '.join(f'x{i}' for i in range(len(exprs)))})")
    return "\n".join(lines)


def _program_reproducer(program: Any, backend: Any) -> str:
    return "\n".join(["import numpy as np", "from minicompile.testing import assert_same", "", str(program),
                      "args, _ = make_args()", f"assert_same(f, *args, backend={_how(backend)})"])


# ---------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------


def _spliced(drawn: tuple) -> tuple:
    return tuple(a for value in drawn for a in (value if isinstance(value, Group) else (value,)))


def _failing(run: Callable[[], Any], reproduce: Callable[[], str]) -> None:
    try:
        run()
    except AssertionError as error:
        raise AssertionError(f"{error}\n\nReproducer:\n{reproduce()}") from None


def check(fn: Any, *strategies: st.SearchStrategy, backends: Sequence[Any] | None = None,
          max_examples: int = 50, seed: int | None = None, dynamic: bool | None = None) -> None:
    """Draw arguments from ``strategies`` (one per positional argument; an
    :func:`aliasing_groups` draw gives several) and
    :func:`~minicompile.testing.assert_same` ``fn`` on each backend (``None``:
    ``DEFAULTS["backends"]``, eager and cpp unless pytest's
    ``--minicompile-backend`` says otherwise).  A :func:`shape_sequences` draw
    (the only strategy) calls one compiled function (``dynamic`` as in
    ``mc.compile``) with each of its argument sets in turn.  ``fn`` may itself
    be a strategy of programs (:func:`~minicompile.testing.random_programs.programs`):
    each drawn program runs on its own arguments (what it prints is not
    compared).  A failure raises ``AssertionError`` with the difference and a
    reproducer of the smallest failing example.  ``seed`` fixes the examples
    drawn (the same failure on every run)."""
    backends = DEFAULTS["backends"] if backends is None else backends
    drawing_programs = isinstance(fn, st.SearchStrategy)
    if drawing_programs and strategies:
        raise TypeError("check(programs(...)) draws the arguments too: give no other strategy")

    def one_call(args: tuple, backend: Any) -> None:
        _failing(lambda: assert_same(fn, *args, backend=backend), lambda: reproducer(fn, args, backend))

    def successive_calls(sequence: Calls, backend: Any) -> None:
        compiled = mc.compile(fn, backend=backend, dynamic=dynamic)

        def run() -> None:
            for n, call in enumerate(sequence):
                try:
                    assert_same(compiled, *call)
                except AssertionError as error:
                    raise AssertionError(f"call {n + 1} of {len(sequence)}, {sequence!r}: {error}") from None

        _failing(run, lambda: _calls_reproducer(fn, sequence, backend, dynamic))

    def program(drawn: Any, backend: Any) -> None:
        def run() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                assert_same(drawn.function(), *drawn.arguments(), backend=backend)

        _failing(run, lambda: _program_reproducer(drawn, backend))

    @settings(max_examples=max_examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(fn if drawing_programs else st.tuples(*strategies))
    def run(drawn: Any) -> None:
        try:
            args = None if drawing_programs else _spliced(drawn)
            for backend in backends:
                if drawing_programs:
                    program(drawn, backend)
                elif len(args) == 1 and isinstance(args[0], Calls):
                    successive_calls(args[0], backend)
                else:
                    one_call(args, backend)
        finally:
            _forget(drawn)

    if seed is not None:
        run = hypothesis_seed(seed)(run)
    run()


def _forget(value: Any) -> None:
    if isinstance(value, (list, tuple)):
        for v in value:
            _forget(v)
    elif isinstance(value, dict):
        _forget(list(value.values()))
    elif id(value) in _RECIPES and _RECIPES[id(value)].array is value:
        del _RECIPES[id(value)]
