"""Short reductions in the triton backend (Triton's interpreter): written out, one output per lane.

A reduction over at most ``UNROLL_MAX`` elements of static length becomes a
``triton_unr_*`` kernel (:mod:`minicompile.inductor.codegen.triton.unrolled`):
no ``RBLOCK`` tile, no ``tl.reduce``, one term per element.  Checked against
NumPy (values, dtype, shape, the sign of a zero sum, NaNs of max/min) for
sum/mean/prod/max/min over last and middle axes, with and without keepdims,
on float16/32/64, ints and bools; on depthwise 3x3 convolutions written as
MobileNetV2 writes them (padding, strides 1 and 2, bias and relu6, channel
counts that are no multiple of a block), also with a symbolic batch; and at
the threshold, where the persistent form takes over.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile.examples.mobilenet_v2 import depthwise3x3, relu6  # noqa: E402
from minicompile.inductor.codegen.triton import compile as triton_compile, unrolled  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 80)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
REDUCERS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}
TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


def kernels_of(compiled, entry: int = -1):
    """The Triton kernels of a compiled function's cache entry (the newest by default)."""
    graph = compiled.cache[entry].compiled
    assert isinstance(graph, triton_compile.TritonCompiledGraph), graph
    return list(graph.module.kernels.values())


def assert_matches(actual, expected, dtype: np.dtype, rtol: float | None = None, signs: bool = True) -> None:
    """Same dtype, shape and values; NaN where NumPy has NaN; a zero's sign as NumPy's (``signs``)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                             expected.dtype, expected.shape)
    if expected.dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected)
        return
    tol = TOLERANCE[np.dtype(dtype)] if dtype.kind == "f" else 1e-12
    tol = rtol or tol
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, equal_nan=True)
    zeros = (expected == 0) & signs
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]), "sign of a zero")


@st.composite
def reductions(draw):
    """(x, kind, axis, keepdims): a small array and a reduction over some of its axes,
    rows of 1..40 elements (both sides of the threshold)."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(sorted(REDUCERS)))
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float16, np.float64, np.int32, np.int64, np.bool_])))
    axes = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True).map(sorted))
    if draw(st.booleans()) and len(axes) > 1:
        axes = axes[:1]  # often a single axis, often a middle one
    if np.prod([shape[a] for a in axes]) > 40:
        axes = axes[:1]
    axis = None if (len(axes) == rank and draw(st.booleans())) else tuple(axes) if len(axes) > 1 else axes[0]
    keepdims = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    special = draw(st.sampled_from(["none", "nan", "negative_zeros"]))
    if dtype.kind == "f" and kind == "prod":
        # Powers of two (and signs, zeros) multiply exactly unless float16 overflows.
        choices = [-1.0, 1.0, -0.0] if dtype == np.float16 else [-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, -0.0]
        x = rng.choice(choices, shape).astype(dtype)
    elif dtype.kind == "f":
        x = (rng.integers(-16, 17, shape) / 8).astype(dtype)  # sums are exact in any order, float16 too
    elif dtype.kind == "b":
        x = rng.integers(0, 2, shape).astype(bool)
    else:
        x = rng.integers(-9, 10, shape).astype(dtype)
    if dtype.kind == "f" and special == "nan" and kind in ("max", "min"):
        x[rng.random(shape) < 0.1] = np.nan
    elif dtype.kind == "f" and special == "negative_zeros":
        x = np.where(rng.random(shape) < 0.8, -0.0, x).astype(dtype)  # whole rows of -0.0: sums are +0.0
    return x, kind, axis, keepdims


@SETTINGS
@given(reductions())
def test_small_reductions_equal_numpy_and_are_written_out(case):
    x, kind, axis, keepdims = case
    reducer = REDUCERS[kind]

    def f(x):
        return reducer(x, axis=axis, keepdims=keepdims)

    with np.errstate(all="ignore"):
        expected = f(x)
    compiled = mc.compile(f, backend="triton", fullgraph=True)
    actual = compiled(x)
    axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    rnumel = int(np.prod([x.shape[a] for a in axes]))
    kinds = {k.kind for k in kernels_of(compiled)}
    # The persistent form's max/min trees leave the sign of a tie of zeros open; the unrolled form keeps NumPy's.
    assert_matches(actual, expected, x.dtype, signs=kind not in ("max", "min") or kinds == {"unrolled"})
    # Rows along the contiguous axis stay persistent (coalesced there); others are written out.
    last = max((i for i, n in enumerate(x.shape) if n > 1), default=None)
    if 2 <= rnumel <= unrolled.UNROLL_MAX and expected.size > 0 and last not in axes:
        assert kinds == {"unrolled"}, (rnumel, kinds)
    assert rnumel <= unrolled.UNROLL_MAX or "unrolled" not in kinds


def test_the_threshold_contiguous_rows_and_argmax_keep_the_persistent_form():
    x = np.arange(33 * 2, dtype=np.float32).reshape(33, 2)
    for n, kind in ((unrolled.UNROLL_MAX, "unrolled"), (unrolled.UNROLL_MAX + 1, "persistent")):
        compiled = mc.compile(lambda x: x.sum(axis=0), backend="triton")
        np.testing.assert_allclose(compiled(x[:n]), x[:n].sum(axis=0))
        assert [k.kind for k in kernels_of(compiled)] == [kind]
    compiled = mc.compile(lambda x: x.sum(axis=1), backend="triton")  # rows lying contiguous
    np.testing.assert_allclose(compiled(x.T[:, :16].copy()), x.T[:, :16].sum(axis=1))
    assert [k.kind for k in kernels_of(compiled)] == ["persistent"]
    compiled = mc.compile(lambda x: np.argmax(x, axis=1), backend="triton")
    y = np.array([[1.0, np.nan, 3.0], [2.0, 2.0, 1.0]], np.float32)
    np.testing.assert_array_equal(compiled(y), np.argmax(y, axis=1))
    assert [k.kind for k in kernels_of(compiled)] == ["persistent"]


def test_several_reductions_of_one_row_share_a_kernel():
    def stats(x):
        return x.sum(axis=1), x.max(axis=1), x.mean(axis=1) * 2.0

    x = np.random.default_rng(1).standard_normal((6, 5, 7)).astype(np.float32)
    x[0, 2, 3] = np.nan
    compiled = mc.compile(stats, backend="triton")
    for got, want in zip(compiled(x), stats(x)):
        assert_matches(got, want, np.dtype(np.float32))
    (kernel,) = kernels_of(compiled)
    assert kernel.kind == "unrolled" and kernel.source.count("# r0 = ") == 5
    assert "RBLOCK" not in kernel.source and "tl.reduce" not in kernel.source


def depthwise_block(x, w, b, stride):
    """MobileNetV2's depthwise stage: padded 3x3 windows, bias, relu6."""
    return relu6(depthwise3x3(x, w, stride) + b)


def conv_inputs(rng, n, h, w, c, dtype):
    return (rng.standard_normal((n, h, w, c)).astype(dtype), rng.standard_normal((c, 3, 3)).astype(dtype),
            rng.standard_normal(c).astype(dtype))


@settings(SETTINGS, max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 25)))
@given(st.integers(1, 3), st.integers(3, 9), st.integers(3, 9), st.integers(1, 40), st.sampled_from([1, 2]),
       st.sampled_from([np.float32, np.float16, np.float64]), st.integers(0, 2**16))
def test_depthwise_convolution_is_one_unrolled_kernel(n, h, w, c, stride, dtype, seed):
    x, wt, b = conv_inputs(np.random.default_rng(seed), n, h, w, c, dtype)
    compiled = mc.compile(depthwise_block, backend="triton", fullgraph=True)
    expected = depthwise_block(x, wt, b, stride)
    assert_matches(compiled(x, wt, b, stride), expected, np.dtype(dtype), rtol=2e-2 if dtype == np.float16 else None)
    (kernel,) = kernels_of(compiled)
    if c == 1:  # one channel: the windows' rows lie along the contiguous axis, read by the persistent form
        assert kernel.kind == "persistent"
        return
    assert kernel.kind == "unrolled" and kernel.name.split("_")[2] == "unr"  # g0_triton_unr_...
    src = kernel.source
    assert src.count("# r0 = ") == 9 and "tl.reduce" not in src and "RBLOCK" not in src
    # The centre tap never crosses the border: the pad reads it unmasked.
    centre = src[src.index("# r0 = 1, r1 = 1"):src.index("# r0 = 1, r1 = 2")]
    assert "inside" not in centre and "xmask, other=0)" in centre


def test_depthwise_convolution_with_a_symbolic_batch():
    rng = np.random.default_rng(3)
    for stride in (1, 2):
        compiled = mc.compile(lambda x, w, b: depthwise_block(x, w, b, stride), backend="triton")
        for batch in (2, 3, 5):
            args = conv_inputs(rng, batch, 7, 6, 13, np.float32)
            assert_matches(compiled(*args), depthwise_block(*args, stride), np.dtype(np.float32))
        # The second size made the batch symbolic: one compile for batch 2, one for any batch.
        assert len(compiled.cache) == 2
        (kernel,) = kernels_of(compiled)
        assert kernel.kind == "unrolled" and kernel.sizes == ["s0"]
        assert "xnumel = 546*s0" in kernel.source if stride == 1 else "xnumel = 156*s0" in kernel.source
