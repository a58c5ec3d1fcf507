"""backend="spyre" runs comparisons, np.where, masks, int8/16/32 data, strided and
transposed reads and reductions over any axis on the card, never on the host.

Float inputs here are multiples of 1/16 of magnitude below 8: exact in fp16, so
the card's fp16 copy of them equals NumPy's and comparisons are exact; integer
and boolean results must equal NumPy's exactly, float ones within fp16 rounding.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile.inductor.codegen.spyre.compile import HostStep, compile_graph

RNG = np.random.default_rng(2)
TOL = 2e-2


def exact(*shape, dtype=np.float32):
    """Values exactly representable in fp16 (or integers of dtype's range)."""
    if np.dtype(dtype).kind == "f":
        return (RNG.integers(-127, 128, shape) / 16).astype(dtype)
    if np.dtype(dtype) == bool:
        return RNG.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -2**20), min(info.max, 2**20), shape,
                        endpoint=True).astype(dtype)


def on_card(fn, *args, scale=1.0, config=None):
    """Compile fn for the card; check it equals NumPy and ran no host step. Returns it."""
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs,
                                      **({"config": config} if config else {})))
        return compiled[-1]
    mc.reset()
    out = mc.compile(lambda *a: fn(*a), backend=backend)(*args)
    ref = fn(*args)
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert np.asarray(o).dtype == np.asarray(r).dtype and np.shape(o) == np.shape(r)
        if np.asarray(r).dtype.kind in "biu":
            np.testing.assert_array_equal(o, r)
        else:
            np.testing.assert_allclose(o, r, rtol=TOL, atol=TOL * scale)
    program = compiled[-1].program
    assert not [s for s in program.steps if isinstance(s, HostStep)], str(program)
    assert not compiled[-1].report.host_steps
    return compiled[-1]


COMPARISONS = {
    "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal,
}
MASKS = {
    "where_leaky": lambda x, y: np.where(x > 0, x, 0.1 * x),
    "where_two_arrays": lambda x, y: np.where(x < y, x * y, y - x),
    "where_scalars": lambda x, y: np.where(x >= y, 1.0, -2.0).astype(np.float32),
    "where_row": lambda x, y: np.where(x > 0, y[0], x),
    "and_or_not": lambda x, y: ((x > 0) & (y < 1)) | ~(x == y),
    "xor_not": lambda x, y: ((x > 0) ^ (y > 0)) | np.logical_not(x),
    "mask_sum": lambda x, y: (x > y).astype(np.float32).sum(axis=1),
    "clip": lambda x, y: np.clip(x, -1.0, 1.5),
    "relu_mask_grad": lambda x, y: y * (x > 0),
    # Regression: True + True is True in NumPy; the card made a 2, and == 1 said False.
    "bool_add": lambda x, y: ((x > 0) + (y > 0)) == 1,
}


MASK_OPS = [lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b, lambda a, b: a + b,
            lambda a, b: a * b, lambda a, b: a == b, lambda a, b: a != b,
            lambda a, b: np.maximum(a, b), lambda a, b: np.where(a, b, ~b),
            lambda a, b: ~a, lambda a, b: (a + b) == 1, lambda a, b: (a.astype(np.int8) - b) > 0]


@settings(max_examples=20, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, len(MASK_OPS) - 1), st.integers(0, 3),
                              st.integers(0, 3)), min_size=1, max_size=5))
def test_random_mask_programs(ops):
    """Programs of up to five mask operations, each on any two earlier values."""
    def fn(x, y):
        values = [x > 0, y > 0, x > y, x == y]
        for op, i, j in ops:
            values.append(MASK_OPS[op](values[-1 - i % len(values)], values[j % len(values)]))
        return values[-1]
    x, y = exact(23, 31), exact(23, 31)
    y[::4] = x[::4]
    on_card(fn, x, y)


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("other", [(37, 45), (45,), (37, 1), ()])
def test_comparisons(name, other):
    x = exact(37, 45)
    y = x.copy() if other == (37, 45) else exact(*other)
    if other == (37, 45):
        y[::3] = exact(13, 45)  # some equal, some not
    on_card(COMPARISONS[name], x, y)


@pytest.mark.parametrize("name", MASKS)
def test_masks_and_where(name):
    on_card(MASKS[name], exact(37, 45), exact(37, 45), scale=45)


def test_boolean_inputs_and_outputs():
    on_card(lambda m, x: (np.where(m, x, -x), ~m, m & (x > 0)), exact(20, 33, dtype=bool),
            exact(20, 33))


INTEGER_PROGRAMS = {
    "affine": lambda a, b: a * 3 + b - 7,
    "max_min_abs": lambda a, b: np.maximum(np.abs(a), b) - np.minimum(a, -b),
    "square_neg": lambda a, b: -(a ** 2) + b ** 3,
    "where": lambda a, b: np.where(a > b, a, b * 2),
    "compare": lambda a, b: (a == b) | (a < 0),
    "row_max": lambda a, b: a.max(axis=1),
    "col_min": lambda a, b: (a - b).min(axis=0),
    # float results live in DRAM as fp16: kept below its largest value, 65504
    "to_float": lambda a, b: a * 2.0**-12 + b.astype(np.float32) / 4096,
    "mean_as_float": lambda a, b: (a.astype(np.float32) / 2**16).mean(axis=1),
}


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8, np.uint16])
@pytest.mark.parametrize("name", INTEGER_PROGRAMS)
def test_integer_programs(name, dtype):
    """int8/16/32 and uint8/16 arithmetic wraps on overflow exactly as NumPy does."""
    a, b = exact(29, 41, dtype=dtype), exact(29, 41, dtype=dtype)
    with np.errstate(over="ignore"):
        on_card(INTEGER_PROGRAMS[name], a, b, scale=100)


INT_OPS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum,
           lambda a, b: np.where(a > b, a, b * 3), lambda a, b: -a, lambda a, b: np.abs(a),
           lambda a, b: a * a - b, lambda a, b: a.astype(np.int8) + b.astype(np.int8),
           lambda a, b: a.astype(np.int16) - b, lambda a, b: (a == b) + a]
INT_TYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint16]


@settings(max_examples=25, deadline=None)
@given(types=st.tuples(st.sampled_from(INT_TYPES), st.sampled_from(INT_TYPES)),
       ops=st.lists(st.tuples(st.integers(0, len(INT_OPS) - 1), st.integers(0, 3),
                              st.integers(0, 3)), min_size=1, max_size=5))
def test_random_integer_programs(types, ops):
    """Up to five integer operations on mixed widths: NumPy's promotions and wraparound."""
    def fn(a, b):
        values = [a, b]
        for op, i, j in ops:
            values.append(INT_OPS[op](values[-1 - i % len(values)], values[j % len(values)]))
        return values[-1]
    a, b = exact(19, 27, dtype=types[0]), exact(19, 27, dtype=types[1])
    with np.errstate(over="ignore"):
        ref = fn(a, b)
        if ref.dtype not in [np.dtype(t) for t in INT_TYPES]:
            return  # a promotion to int64 (uint16 with int16, ...): not this test's subject
        on_card(fn, a, b)


FLOAT16_OPS = [np.add, np.subtract, np.multiply, np.maximum, np.minimum,
               lambda a, b: np.where(a > b, a, b * 3), lambda a, b: a * a - b, lambda a, b: -a,
               lambda a, b: a / 3, lambda a, b: a - a.sum(axis=1, keepdims=True),
               lambda a, b: (a.astype(np.float32) * 100).astype(np.float16) - b]


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, len(FLOAT16_OPS) - 1), st.integers(0, 3),
                              st.integers(0, 3)), min_size=1, max_size=5))
def test_random_float16_programs(ops):
    """float16 arithmetic rounds each op's result to float16 as NumPy does: a product
    past 65504 is inf and a sum loses what float16 cannot hold, even mid-kernel
    (the card kept float16 intermediates in fp32: 300 * 300 / 300 was 300, not inf)."""
    def fn(a, b):
        values = [a, b]
        for op, i, j in ops:
            values.append(FLOAT16_OPS[op](values[-1 - i % len(values)], values[j % len(values)]))
        return values[-1]
    a, b = exact(19, 27, dtype=np.float16) * 16, exact(19, 27, dtype=np.float16) * 16
    with np.errstate(all="ignore"):
        mc.reset()
        out = mc.compile(fn, backend="spyre")(a, b)
        ref = fn(a, b)
    assert out.dtype == ref.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_integer_narrowing_cast_wraps():
    on_card(lambda a: (a * 5).astype(np.int8) + np.int8(1), exact(30, 30, dtype=np.int32))


STRIDED = {
    "transpose": lambda x: x.T * 2,
    "transpose_add": lambda x: x.T[:20, :30] + x[:30, :20].T,
    "step_slice": lambda x: x[::2, 1::3] - 1,
    "reversed": lambda x: x[::-1] + x[:, ::-1],
    "sum_axis0": lambda x: x.sum(axis=0),
    "max_axis0_keepdims": lambda x: x.max(axis=0, keepdims=True),
    "mean_axis0": lambda x: np.exp(x * 0.1).mean(axis=0),
    "softmax_axis0": lambda x: np.exp(x - x.max(axis=0)) / np.exp(x - x.max(axis=0)).sum(axis=0),
    "middle_axis": lambda x: x.reshape(3, 15, 37).sum(axis=1),
    "first_of_three": lambda x: x.reshape(5, 9, 37).min(axis=0),
}


@pytest.mark.parametrize("name", STRIDED)
def test_strided_and_transposed_reads(name):
    on_card(STRIDED[name], exact(45, 37), scale=45)


@pytest.mark.parametrize("shape", [(256, 64), (2048, 256)])
def test_a_transposed_read_moves_whole_bursts_and_turns_round_on_the_core(shape):
    """The second shape once read 8x its bytes: tiles of 8 output rows over 32 cores
    make 16-byte bursts; now a tile is 64 rows (128 bytes), the reduced axis in chunks."""
    x = exact(*shape)
    compiled = on_card(lambda x: x.sum(axis=0), x, scale=shape[0])
    text = str(compiled.program)
    assert "dma.gather" in text and "retile.transpose" in text
    # Every byte of x once (whole 128-byte rows), not a 128-byte unit per element.
    assert compiled.report.dram_bytes_read == x.size * 2


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 70), cols=st.integers(1, 70),
       dtype=st.sampled_from([np.float32, np.int8, np.int16, np.int32, np.uint8]))
def test_every_kind_on_shapes_that_do_not_divide(rows, cols, dtype):
    """Shapes that divide neither over 32 cores nor into tiles."""
    x, y = exact(rows, cols, dtype=dtype), exact(rows, cols, dtype=dtype)
    with np.errstate(over="ignore"):
        on_card(lambda x, y: (np.where(x > y, x, y - x), x.T * 2, x.max(axis=0), x != y[:1],
                              (x < y).sum(axis=0), (x == y).any(axis=1)),
                x, y, scale=rows)
        if dtype == np.float32:
            on_card(lambda x: (x.sum(axis=0), np.where(x > 0, x, 0.5 * x).sum(axis=1)), x,
                    scale=max(rows, cols))


def test_small_card_with_many_gather_tiles():
    """3 cores with 24 KiB of scratchpad: transposed tiles are double-buffered too."""
    from minicompile.spyre import SpyreConfig
    on_card(lambda x, y: (x.T * y.T).sum(axis=1), exact(300, 40), exact(300, 40), scale=300,
            config=SpyreConfig(cores=3, scratchpad_usable_bytes=24 * 1024))


def uniform(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("a,b", [((3, 4, 5), (3, 5, 6)), ((3, 4, 5), (5, 6)), ((4, 5), (3, 5, 6)),
                                 ((2, 3, 9, 17), (2, 3, 17, 40)), ((5, 100, 300), (5, 300, 90))])
def test_batched_matmul(a, b):
    compiled = on_card(lambda a, b: a @ b, uniform(*a), uniform(*b), scale=a[-1])
    assert "mm " in str(compiled.program)


def test_batched_matmul_with_epilogue_splits_batches_over_the_cores():
    compiled = on_card(lambda a, b, c: np.maximum(a @ b + c, 0), uniform(7, 33, 70),
                       uniform(7, 70, 20), uniform(20), scale=70)
    (step,) = compiled.program.device_steps
    assert "epilogue on the accumulator" in step.plan
    assert sum(1 for body in step.program.cores if body) == 32


def test_product_read_transposed_is_its_own_kernel():
    """Regression: a square product read transposed was taken for an epilogue, and
    planning it failed the compile."""
    on_card(lambda a, b: (a @ b).T + 1, uniform(16, 16), uniform(16, 16), scale=16)
    on_card(lambda a, b: (a @ b).T + 1, uniform(9, 17), uniform(17, 40), scale=17)


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 5), m=st.integers(1, 40), k=st.integers(1, 70),
       n=st.integers(1, 40), shared=st.booleans())
def test_batched_matmul_shapes_that_do_not_divide(batch, m, k, n, shared):
    b = uniform(k, n) if shared else uniform(batch, k, n)
    on_card(lambda a, b: np.tanh(a @ b), uniform(batch, m, k), b, scale=k)


SMALL = dict(cores=4, scratchpad_usable_bytes=16 * 1024)  # rows of > ~1000 do not fit


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, w, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


LONG_ROWS = {
    "sum": (lambda x: x.sum(axis=1), 3000),
    "max_min_mean": (lambda x: (x.max(axis=1), x.min(axis=1), x.mean(axis=1)), 10),
    "softmax": (softmax, 1),
    "layer_norm": (lambda x: layer_norm(x, x[0] * 0.5, x[1]), 3),
    "sum_axis0": (lambda x: x.T.sum(axis=1), 3000),
    "softmax_axis0": (lambda x: softmax(x.T).T, 1),  # the row pass stores transposed
}


@pytest.mark.parametrize("name", LONG_ROWS)
def test_rows_longer_than_the_scratchpad_are_reduced_in_chunks(name):
    from minicompile.spyre import SpyreConfig
    fn, scale = LONG_ROWS[name]
    x = uniform(3001, 7) if name.endswith("axis0") else uniform(7, 3001)
    compiled = on_card(fn, x, scale=scale, config=SpyreConfig(**SMALL))
    assert "chunks per pass" in compiled.program.device_steps[-1].plan


def test_integer_max_over_long_rows():
    from minicompile.spyre import SpyreConfig
    on_card(lambda a: (a.max(axis=1), a.min(axis=1)), exact(5, 3001, dtype=np.int32),
            config=SpyreConfig(**SMALL))


def test_softmax_over_a_row_of_300k_on_the_full_card():
    compiled = on_card(softmax, uniform(2, 300_000))
    (step,) = compiled.program.device_steps
    assert "chunks per pass" in step.plan


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1000, 2600))
def test_chunked_rows_of_any_length(rows, cols):
    from minicompile.spyre import SpyreConfig
    on_card(lambda x: (softmax(x), x.sum(axis=1)), uniform(rows, cols), scale=cols,
            config=SpyreConfig(**SMALL))


VIEW_MATMULS = {
    "x @ W.T": (lambda x, w: x @ w.T, (33, 70), (20, 70)),
    "x.T @ W": (lambda x, w: x.T @ w, (70, 33), (70, 20)),
    "attention scores": (lambda q, k: np.exp(q @ k.transpose(0, 2, 1) * 0.1), (3, 17, 64),
                         (3, 19, 64)),
    "strided slices": (lambda x, w: x[:, ::2] @ w[1:], (33, 70), (36, 20)),
    "row of a batch": (lambda x, w: x[1] @ w[0].T, (4, 6, 5), (4, 7, 5)),
}


@pytest.mark.parametrize("name", VIEW_MATMULS)
def test_matmul_reads_views_by_strided_dma(name):
    fn, a, b = VIEW_MATMULS[name]
    compiled = on_card(fn, uniform(*a), uniform(*b), scale=a[-1])
    assert "dma.gather" in str(compiled.program)


def test_a_transposed_weight_moves_the_same_bytes_as_a_contiguous_one():
    x, w = uniform(128, 256), uniform(192, 256)
    viewed = on_card(lambda x, w: x @ w.T, x, w, scale=256)
    plain = on_card(lambda x, w: x @ w, x, np.ascontiguousarray(w.T), scale=256)
    assert "retile.transpose" in str(viewed.program)
    assert viewed.report.dram_bytes_read == plain.report.dram_bytes_read
    assert viewed.report.total_cycles <= 1.05 * plain.report.total_cycles


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 4), m=st.integers(1, 40), k=st.integers(1, 70), n=st.integers(1, 40))
def test_attention_shaped_matmuls(batch, m, k, n):
    on_card(lambda q, kk, v: (q @ kk.transpose(0, 2, 1)) @ v, uniform(batch, m, k),
            uniform(batch, n, k), uniform(batch, n, 8), scale=k * n)


BOUNDED_INT64 = {
    "any": lambda m, a: (m.any(axis=1), m.all(axis=0)),
    "mask count": lambda m, a: ((m & (a > 0)).sum(axis=1), m.sum(axis=0), m.sum()),
    "int8 sum": lambda m, a: a.astype(np.int8).sum(axis=1),
    "int16 sum over axis 0": lambda m, a: a.astype(np.int16).sum(axis=0),
    "accuracy": lambda m, a: (m == (a > 3)).mean(),
}


@pytest.mark.parametrize("name", BOUNDED_INT64)
def test_int64_results_that_fit_32_bits_run_exactly_in_int32(name):
    """NumPy widens masks and small integers to int64 for sums and comparisons; the
    card computes those in int32 when every value fits, the host widens the result."""
    on_card(BOUNDED_INT64[name], exact(37, 45, dtype=bool), exact(37, 45, dtype=np.int16))


def test_int64_sums_that_may_not_fit_32_bits_stay_on_the_host():
    from minicompile.inductor.codegen.spyre.compile import HostStep
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs))
        return compiled[-1]
    a = exact(2, 70_000, dtype=np.int16)  # 2^15 * 70000 > 2^31
    mc.reset()
    np.testing.assert_array_equal(mc.compile(lambda a: a.sum(axis=1), backend=backend)(a),
                                  a.sum(axis=1))
    (host,) = [s for s in compiled[-1].program.steps if isinstance(s, HostStep)]
    assert "may not fit 32 bits" in host.reason


def heads_merged(x):
    """(heads, seq, d) -> (seq, heads * d): a reshape of a transpose, whose index needs
    // and % of the row and col."""
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)


def test_reads_through_a_reshaped_transpose():
    """Regression: such an index (floor/mod of loop variables) crashed the planner."""
    x, w = uniform(4, 32, 16), uniform(64, 24)
    on_card(lambda x: heads_merged(x) * 2, x)
    compiled = on_card(lambda x, w: heads_merged(x) @ w, x, w, scale=64)
    assert "dma.gather" in str(compiled.program)


def test_empty_arrays_compile_and_are_reported():
    """Regression: a kernel or matmul over zero elements divided by zero in the planner."""
    from minicompile.inductor.codegen.spyre.compile import HostStep
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs))
        return compiled[-1]
    fns = [(lambda c: (c + c, np.logical_not(c)), (exact(2, 0, dtype=np.int16),)),
           (lambda a, b: a @ b, (uniform(3, 0), uniform(0, 4))),
           (lambda a: a.sum(axis=1), (uniform(3, 0),))]
    for fn, args in fns:
        mc.reset()
        out, ref = mc.compile(fn, backend=backend)(*args), fn(*args)
        for o, r in zip(out if isinstance(ref, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
            assert o.dtype == r.dtype and o.shape == r.shape
            np.testing.assert_array_equal(o, r)
        steps = compiled[-1].program.steps
        assert all("zero elements" in s.reason for s in steps if isinstance(s, HostStep))


def test_a_card_too_small_for_any_tile_falls_back_and_says_so():
    """Regression: a fused chain whose smallest tile overflows a tiny scratchpad failed
    the compile; it runs on the host, with the reason in the report."""
    from minicompile.spyre import SpyreConfig
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs,
                                      config=SpyreConfig(cores=2, scratchpad_usable_bytes=2048)))
        return compiled[-1]
    x = uniform(50, 300)
    fn = lambda x: (np.tanh(x * 0.7 + x ** 3) * np.exp(x)).sum(axis=1)  # noqa: E731
    mc.reset()
    np.testing.assert_allclose(mc.compile(fn, backend=backend)(x), fn(x), rtol=1e-5)
    assert "does not fit the scratchpad" in str(compiled[-1].report)


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.int16, np.uint8, np.uint16]),
       d=st.integers(-300, 300).filter(lambda d: d != 0))
def test_floor_divide_and_remainder_by_a_constant(dtype, d):
    """No integer divider: // and % by a constant go through fp32, exact for 8- and
    16-bit data (min // -1 wraps as NumPy's does)."""
    info = np.iinfo(dtype)
    if not info.min <= d <= info.max:
        return
    a = RNG.integers(info.min, info.max, (23, 37), endpoint=True).astype(dtype)
    a[0, :2] = info.min, info.max
    with np.errstate(over="ignore"):
        on_card(lambda a: (a // dtype(d), a % dtype(d)), a)


CONCATENATIONS = {
    "rotate halves": lambda x: np.concatenate([-x[:, 15:], x[:, :15]], axis=-1) * 2,
    "rows": lambda x: np.concatenate([x, x * 2, x[:3]], axis=0),
    "middle axis": lambda x: np.concatenate([x.reshape(4, 10, 30),
                                             np.exp(x).reshape(4, 10, 30)], axis=1),
    "transposed pieces": lambda x: np.concatenate([x.T, x[:30].T], axis=1),
    "masks": lambda x: np.concatenate([x > 0, x < 1], axis=1),
}


@pytest.mark.parametrize("name", CONCATENATIONS)
def test_concatenate_moves_through_the_scratchpad(name):
    compiled = on_card(CONCATENATIONS[name], exact(40, 30), scale=3)
    assert "concatenate" in " ".join(s.plan for s in compiled.program.device_steps)


@settings(max_examples=10, deadline=None)
@given(rows=st.integers(1, 40), a=st.integers(1, 70), b=st.integers(1, 70),
       axis=st.sampled_from([0, 1, -1]))
def test_concatenate_of_any_shapes(rows, a, b, axis):
    x, y = uniform(rows, a), uniform(rows, b)
    if axis == 0:
        y = uniform(b, a)
    on_card(lambda x, y: np.concatenate([x, np.tanh(y)], axis=axis), x, y)


def test_concatenate_skips_empty_pieces():
    """Regression: a piece of zero elements (an empty argument, an empty slice) made a
    tile zero columns wide and the planner divided by zero; it adds no columns."""
    x, empty = exact(40, 30), exact(0, 30)
    compiled = on_card(lambda x, e: np.concatenate([x[:0], e, x, -x, e]), x, empty)
    assert "concatenate: 5 pieces" in " ".join(s.plan for s in compiled.program.device_steps)
    on_card(lambda x: np.concatenate([x[:, 3:3], x * 2, x[:, :0]], axis=1), x)


@pytest.mark.parametrize("fn,args", [
    (lambda a, b: np.ediff1d(a, to_begin=b), (exact(0), exact(1))),  # an empty difference
    (lambda a, b: np.append(a, b), (exact(0, 3), exact(1, 3))),
    (lambda a: np.geomspace(1, a + 10, 2, axis=-1), (exact(4) ** 2,)),  # an empty middle
])
def test_numpy_functions_that_concatenate_an_empty_piece(fn, args):
    mc.reset()
    out, ref = mc.compile(fn, backend="spyre")(*args), fn(*args)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=TOL, atol=TOL)
