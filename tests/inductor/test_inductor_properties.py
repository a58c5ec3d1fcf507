"""Property tests: random graphs compiled to C++ agree with the NumPy interpreter.

Graphs mix pointwise ufuncs, where/astype, reductions, transposes and reshapes
over small random shapes (0-d, size-1 and size-0 dimensions, broadcasting), the
dtypes bool/int32/int64/float32/float64, and Python or NumPy scalar constants.
Inputs are sometimes non-contiguous or negatively strided.  A program NumPy
rejects when the graph is built is skipped, as NumPy would refuse to run it.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minicompile import ir
from minicompile.ir import TensorMeta

from inductor_testing import assert_same, run_both

DTYPES = [np.dtype(t) for t in (np.bool_, np.int32, np.int64, np.float32, np.float64)]
# The single-op test also covers the narrow and unsigned types.
ALL_DTYPES = DTYPES + [np.dtype(t) for t in (np.int8, np.uint8, np.uint16, np.uint64, np.float16)]
UNARY = ["negative", "positive", "absolute", "logical_not", "invert", "exp", "log", "tanh", "sqrt", "sin", "cos"]
BINARY = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor",
]
REDUCTIONS = ["sum", "prod", "mean", "max", "min"]
CONSTANTS = [0, 1, 2, 3, -1, 0.5, -2.5, 0.1, True, False, np.float64(1.5), np.float32(0.25), np.int32(3), float("nan")]

# MINICOMPILE_TEST_EXAMPLES=2000 runs a deeper search locally.
SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 70)), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        values = rng.integers(-6 if dtype.kind == "i" else 0, 7, size=shape).astype(dtype)
        info = np.iinfo(dtype)
        extremes = np.array([info.min, info.max, 0, info.max // 2 + 1], dtype=dtype)
        mask = rng.random(shape) < 0.1
        return np.where(mask, rng.choice(extremes, size=shape), values).astype(dtype)
    values = (rng.standard_normal(shape) * 3).astype(dtype)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=dtype)
    mask = rng.random(shape) < 0.05
    return np.where(mask, rng.choice(specials, size=shape), values).astype(dtype)


def with_layout(rng: np.random.Generator, arr: np.ndarray, layout: str) -> np.ndarray:
    """The same values, laid out as ``layout`` says (a view into a larger array)."""
    if arr.ndim == 0 or layout == "contiguous":
        return arr
    if layout == "reversed":  # negative stride on the last axis
        big = np.ascontiguousarray(arr[..., ::-1])
        return big[..., ::-1]
    if layout == "strided":  # every other element of a twice-as-long last axis
        big = np.empty(arr.shape[:-1] + (arr.shape[-1] * 2,), arr.dtype)
        big[..., ::2] = arr
        return big[..., ::2]
    return np.ascontiguousarray(arr.T).T  # "transposed": Fortran order


@st.composite
def shapes(draw) -> tuple[int, ...]:
    rank = draw(st.integers(0, 3))
    return tuple(draw(st.sampled_from([0, 1, 1, 2, 3, 4])) for _ in range(rank))


def broadcastable(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against ``shape``: drop leading dims, set some to 1."""
    keep = draw(st.integers(0, len(shape)))
    tail = shape[len(shape) - keep:]
    return tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n for n in tail)


@st.composite
def programs(draw):
    base = draw(shapes())
    n_inputs = draw(st.integers(1, 3))
    g = ir.Graph()
    values = []
    for i in range(n_inputs):
        shape = base if i == 0 else broadcastable(draw, base)
        values.append(g.placeholder(f"in{i}", TensorMeta(shape, draw(st.sampled_from(DTYPES)))))
    n_ops = draw(st.integers(2, 7))
    for _ in range(n_ops):
        node = _random_op(draw, g, values)
        if node is not None:
            values.append(node)
    outputs = [values[-1]] + draw(st.lists(st.sampled_from(values), max_size=2))
    g.output(outputs)
    return g


def _random_op(draw, g: ir.Graph, values: list):
    kind = draw(st.sampled_from(["unary", "binary", "binary", "const", "reduce", "transpose", "reshape", "where", "astype"]))
    # Mostly extend the newest values, so that chains (and fusion) are long.
    a = draw(st.sampled_from(values[-2:] if draw(st.integers(0, 3)) else values))
    try:
        if kind == "unary":
            return g.call(draw(st.sampled_from(UNARY)), a)
        if kind == "binary":
            return g.call(draw(st.sampled_from(BINARY)), a, draw(st.sampled_from(values)))
        if kind == "const":
            c = draw(st.sampled_from(CONSTANTS))
            args = (a, c) if draw(st.booleans()) else (c, a)
            return g.call(draw(st.sampled_from(BINARY)), *args)
        if kind == "reduce":
            axes = tuple(sorted(draw(st.sets(st.integers(0, max(len(a.shape) - 1, 0)), max_size=len(a.shape)))))
            axis = None if draw(st.booleans()) else axes
            return g.call(draw(st.sampled_from(REDUCTIONS)), a, axis=axis, keepdims=draw(st.booleans()))
        if kind == "transpose":
            return g.call("transpose", a, tuple(draw(st.permutations(range(len(a.shape))))))
        if kind == "reshape":
            n = int(np.prod(a.shape))
            choices = [(n,), (-1,)] + ([(1, n), (n, 1)] if n else [(0, 3)]) + [tuple(reversed(a.shape))]
            return g.call("reshape", a, draw(st.sampled_from(choices)))
        if kind == "where":
            return g.call("where", a, draw(st.sampled_from(values)), draw(st.sampled_from(values + CONSTANTS[:6])))
        # astype: float -> integer of out-of-range values is undefined in C (and in NumPy)
        targets = [d for d in DTYPES if not (a.dtype.kind == "f" and d.kind in "iu")]
        return g.call("astype", a, draw(st.sampled_from(targets)))
    except Exception:  # NumPy rejects this program when the graph is built
        return None


@SETTINGS
@given(programs(), st.integers(0, 2**32 - 1), st.sampled_from(["contiguous", "contiguous", "reversed", "strided", "transposed"]))
def test_random_graph_matches_interpreter(graph: ir.Graph, seed: int, layout: str):
    rng = np.random.default_rng(seed)
    inputs = [with_layout(rng, random_values(rng, p.shape, p.dtype), layout) for p in graph.placeholders]
    expected, actual, compiled = run_both(graph, inputs)
    assert_same(expected, actual, f"\n{graph}\n{compiled}", graph)


@SETTINGS
@given(st.sampled_from(UNARY + BINARY), st.sampled_from(ALL_DTYPES), st.sampled_from(ALL_DTYPES), st.integers(0, 2**32 - 1))
def test_every_ufunc_and_dtype_pair(op: str, dt1: np.dtype, dt2: np.dtype, seed: int):
    """Each op on each dtype, special values included, through one kernel."""
    rng = np.random.default_rng(seed)
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3, 5), dt1))
    y = g.placeholder("y", TensorMeta((5,), dt2))
    try:
        out = g.call(op, x) if op in UNARY else g.call(op, x, y)
    except Exception:
        return
    g.output([out])
    inputs = [random_values(rng, (3, 5), dt1), random_values(rng, (5,), dt2)]
    expected, actual, compiled = run_both(g, inputs)
    assert_same(expected, actual, f"\n{g}\n{compiled}", g)
