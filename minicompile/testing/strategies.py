"""Property tests of compiled functions: hypothesis strategies for arrays, and ``check``.

In:  your NumPy function and a hypothesis strategy per argument.
Out: :func:`arrays` — a strategy drawing NumPy arrays in the layouts compiled
     code gets wrong most easily: C-contiguous, Fortran, strided (every other
     element), negative strides, read-only broadcast views; 0-d and empty shapes
     included.  :func:`check` — draws arguments, runs
     :func:`~minicompile.testing.assert_same` on each backend, and on failure
     raises with hypothesis's smallest failing example written out as a
     ready-to-paste reproducer: each array as an ``np.array(...)`` literal with
     its dtype and the view that gives its layout, then the call.

Each drawn array is made by evaluating its recipe (``np.array([...],
dtype=np.float32)[::2]``), so the reproducer builds exactly the array that
failed.  Needs hypothesis (``pip install 'minicompile[testing]'``).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .compare import DEFAULTS, assert_same, backend_name

LAYOUTS = ("C", "F", "strided", "reversed", "broadcast")
DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_)

# id(array) -> (the array, its recipe): how each drawn array was made, for the reproducer.
_RECIPES: dict[int, tuple[np.ndarray, str]] = {}


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


# layout -> (the base's shape for the array's shape, the view of `base` that gives the array)
def _view(layout: str, shape: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    if layout == "F" and len(shape) >= 2:
        return shape, "np.asfortranarray(base)"
    if layout == "strided" and shape:
        return shape[:-1] + (2 * shape[-1],), "base[..., ::2]"
    if layout == "reversed" and shape:
        return shape, "base[::-1]"
    if layout == "broadcast" and shape:
        return (1,) + shape[1:], f"np.broadcast_to(base, {shape!r})"
    return shape, "base"


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
    if shapes is None:
        shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    elif not isinstance(shapes, st.SearchStrategy):
        shapes = st.sampled_from([tuple(s) for s in shapes])
    shape = tuple(draw(shapes))
    layout = draw(st.sampled_from(list(layouts)))
    base_shape, view = _view(layout, shape)
    base = draw(hnp.arrays(dtype, base_shape, elements=_elements(dtype, allow_nan)))
    recipe = view.replace("base", array_literal(base), 1)
    array = eval(view, {"np": np, "base": base})  # the same source the reproducer shows
    _RECIPES[id(array)] = (array, f"{recipe}  # {layout}" if view != "base" else recipe)
    return array


def _source_of(value: Any) -> str:
    known = _RECIPES.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_source_of(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_source_of(v)}" for k, v in value.items()) + "}"
    if isinstance(value, np.ndarray):
        return array_literal(value)
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}({_literal(value.item())})"
    return repr(value)


def reproducer(fn: Callable, args: Sequence[Any], backend: Any) -> str:
    """Python source that rebuilds ``args`` and makes the failing call again."""
    name = getattr(fn, "__name__", "fn")
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", name)
    if module and module != "__main__" and "<" not in qualname:
        header = f"from {module} import {qualname.split('.')[0]}"
    else:
        header = f"# {qualname} is defined in {module or 'your script'}: paste it here"
    lines = ["import numpy as np", "from minicompile.testing import assert_same", header, ""]
    names = []
    for i, value in enumerate(args):
        names.append(f"x{i}")
        lines.append(f"x{i} = {_source_of(value)}")
    how = repr(backend) if isinstance(backend, str) else backend_name(backend)
    lines.append(f"assert_same({qualname if '<' not in qualname else name}, {', '.join(names)}, backend={how})")
    return "\n".join(lines)


def check(fn: Callable, *strategies: st.SearchStrategy, backends: Sequence[Any] | None = None,
          max_examples: int = 50, seed: int | None = None) -> None:
    """Draw arguments from ``strategies`` (one per positional argument) and
    :func:`~minicompile.testing.assert_same` ``fn`` on each backend (``None``:
    ``DEFAULTS["backends"]``, eager and cpp unless pytest's
    ``--minicompile-backend`` says otherwise).  A failure
    raises ``AssertionError`` with the difference and a reproducer of the smallest
    failing example.  ``seed`` fixes the examples drawn (the same failure on
    every run)."""

    backends = DEFAULTS["backends"] if backends is None else backends

    @settings(max_examples=max_examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(st.tuples(*strategies))
    def run(args: tuple) -> None:
        try:
            for backend in backends:
                try:
                    assert_same(fn, *args, backend=backend)
                except AssertionError as error:
                    raise AssertionError(f"{error}\n\nReproducer:\n{reproducer(fn, args, backend)}") from None
        finally:
            _forget(args)

    if seed is not None:
        run = hypothesis_seed(seed)(run)
    run()


def _forget(value: Any) -> None:
    if isinstance(value, (list, tuple)):
        for v in value:
            _forget(v)
    elif isinstance(value, dict):
        _forget(list(value.values()))
    elif _RECIPES.get(id(value), (None,))[0] is value:
        del _RECIPES[id(value)]
