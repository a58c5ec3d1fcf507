"""backend="spyre": every op and fusion kind against eager NumPy, and what the card moves.

Tolerance: data is fp16 in DRAM and fp32 on the cores, so results carry fp16
rounding (about 1e-3 relative per stored value); values here are of order one
and compared with rtol = atol = 2e-2, sums relative to their number of terms.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minicompile as mc
from minicompile import logs
from minicompile.api import lookup_backend

RNG = np.random.default_rng(0)
TOL = 2e-2


def data(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def capture(**options):
    """A backend that compiles for the card and keeps the compiled graphs."""
    from minicompile.inductor.codegen.spyre.compile import compile_graph
    compiled = []

    def backend(graph, example_inputs):
        compiled.append(compile_graph(graph, example_inputs, **options))
        return compiled[-1]
    backend.compiled = compiled
    return backend


def check(fn, *args, scale=1.0, backend=None):
    """fn compiled for the card matches NumPy; unless a capturing backend is given,
    through backend="spyre" itself, and then every step must have run on the card."""
    mc.reset()
    out = mc.compile(lambda *a: fn(*a), backend=backend or "spyre")(*args)
    if backend is None:
        on_card = capture()
        mc.reset()
        mc.compile(lambda *a: fn(*a), backend=on_card)(*args)
        assert not on_card.compiled[-1].report.host_steps, str(on_card.compiled[-1].program)
    ref = fn(*args)
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert np.asarray(o).dtype == np.asarray(r).dtype and np.shape(o) == np.shape(r)
        np.testing.assert_allclose(o, r, rtol=TOL, atol=TOL * scale)


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def layer_norm(x, w, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


POINTWISE = {
    "exp": np.exp, "tanh": np.tanh, "negative": np.negative, "abs": np.abs,
    "square": np.square, "log": lambda x: np.log(np.abs(x) + 0.5),
    "sqrt": lambda x: np.sqrt(np.abs(x)), "cube": lambda x: x ** 3,
    "relu": lambda x: np.maximum(x, 0), "reciprocal": lambda x: 1 / (np.abs(x) + 0.5),
    "const_minus": lambda x: 1 - x, "gelu": gelu,
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: a / (np.abs(b) + 0.5), "maximum": np.maximum, "minimum": np.minimum,
}
REDUCTIONS = {
    "sum": lambda x: x.sum(axis=-1), "max": lambda x: x.max(axis=1, keepdims=True),
    "min": lambda x: x.min(axis=-1), "mean": lambda x: x.mean(axis=-1),
    "all": lambda x: x.sum(), "gelu_sum": lambda x: gelu(x).sum(axis=1),
    "softmax": softmax, "sum_then_scale": lambda x: x / x.sum(axis=1, keepdims=True).clip(1, None),
}


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise(name):
    check(POINTWISE[name], data(37, 45))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("other", [(37, 45), (45,), (37, 1), ()])
def test_binary_with_broadcasts(name, other):
    check(BINARY[name], data(37, 45), data(*other))


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name):
    check(REDUCTIONS[name], data(33, 70, low=0.0, high=1.0), scale=70)


def test_layer_norm_and_matmul_epilogue():
    x, w, b = data(40, 24), data(24), data(24)
    W, bias = data(24, 20), data(20)
    backend = capture()
    check(lambda x, w, b: layer_norm(x, w, b), x, w, b, backend=backend)
    assert "ring.bcast" in str(backend.compiled[-1].program)  # w and b: DRAM once, then the ring
    check(lambda x, w, b: layer_norm(x, w, b), x, w, b)
    check(lambda x, W, bias: np.maximum(x @ W + bias, 0), x, W, bias, scale=24)
    check(lambda x, w, b, W: layer_norm(gelu(x), w, b) @ W, x, w, b, W, scale=24)


def test_many_tiles_per_core_on_a_small_card():
    """3 cores with 24 KiB of scratchpad: every core walks many double-buffered tiles."""
    from minicompile.spyre import SpyreConfig
    backend = capture(config=SpyreConfig(cores=3, scratchpad_usable_bytes=24 * 1024))
    x, w, b, W = data(150, 40), data(40), data(40), data(40, 70)
    check(lambda x, w, b, W: (np.maximum(layer_norm(gelu(x), w, b) @ W + 1, 0), np.exp(x) * 2),
          x, w, b, W, scale=40, backend=backend)
    compiled = backend.compiled[-1]
    assert not compiled.report.host_steps
    assert "ld5" in str(compiled.program)  # a sixth tile on one core


def test_long_vector_is_cut_into_columns_over_the_cores():
    backend = capture()
    check(lambda v: np.tanh(v) * 3, data(5003), backend=backend)
    assert sum(1 for ins in backend.compiled[-1].program.device_steps[0].program.cores if ins) > 16


def test_matmul_shapes_that_split_k_over_the_ring():
    backend = capture()
    check(lambda a, b: a @ b, data(8, 512), data(512, 8), scale=512, backend=backend)
    text = str(backend.compiled[-1].program)
    assert "ring.send" in text and "ring.recv" in text


@pytest.mark.parametrize("fn,dtype,why", [
    (lambda x: x + 1, np.int64, "int64"),                 # 64-bit integers: not on the card
    (lambda x: x.sum(axis=1), np.int32, "int64"),        # NumPy sums int32 into int64
    (lambda x: x // 3, np.int32, "floor_divide"),        # no integer divider
    (lambda x: (x * 2.5).astype(np.int32), np.float32, "truncating"),  # fp16 copy, then trunc
    (lambda x: (x - x) * 1e40, np.float64, "beyond fp32"),  # 0 * inf would be NaN, NumPy's 0
], ids=["int64", "int_sum", "floor_divide", "float_to_int", "huge_constant"])
def test_unmapped_kernels_run_on_the_host(fn, dtype, why):
    backend = capture()
    mc.reset()
    x = RNG.integers(-50, 50, (12, 9)).astype(dtype)
    np.testing.assert_array_equal(mc.compile(fn, backend=backend)(x), fn(x))
    steps = backend.compiled[-1].program.steps
    assert backend.compiled[-1].report.host_steps
    assert any(why in getattr(s, "reason", "") for s in steps), str(backend.compiled[-1].program)


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 80), cols=st.integers(1, 70), n=st.integers(1, 40))
def test_shapes_that_do_not_divide_over_cores_or_tiles(rows, cols, n):
    x, w = data(rows, cols), data(cols)
    check(lambda x, w: (softmax(x * w), np.tanh(x).sum(axis=1)), x, w, scale=cols)
    check(lambda x, W: np.maximum(x @ W, 0), x, data(cols, n), scale=cols)


def test_fused_gelu_row_sum_never_stores_the_intermediate():
    backend = capture()
    x = data(2048, 64)  # rows of 128 bytes and 64 rows per core: whole transfer units
    out = mc.compile(lambda x: gelu(x).sum(axis=1), backend=backend)(x)
    report = backend.compiled[-1].report
    assert len(backend.compiled[-1].program.device_steps) == 1
    assert report.dram_bytes_written == out.size * 2  # fp16 on the card: the sums only
    assert report.dram_bytes_read == x.size * 2


def test_fused_chain_moves_fewer_bytes_than_unfused():
    def chain(x, w, b, W):
        return layer_norm(gelu(x), w, b) @ W
    args = data(64, 64), data(64), data(64), data(64, 48)
    moved = {}
    for fuse in (True, False):
        backend = capture(fuse=fuse)
        mc.reset()
        out = mc.compile(chain, backend=backend)(*args)
        np.testing.assert_allclose(out, chain(*args), rtol=TOL, atol=TOL * 64)
        moved[fuse] = backend.compiled[-1].report.dram_bytes
    assert moved[True] < moved[False]


def test_program_report_and_logs(capsys):
    logs.set_logs("spyre")
    try:
        backend = capture()
        mc.reset()
        mc.compile(lambda x, W: np.tanh(x @ W), backend=backend)(data(16, 8), data(8, 8))
    finally:
        logs.set_logs("")
    compiled = backend.compiled[-1]
    assert "core 0:" in capsys.readouterr().err
    report = compiled.report
    assert report.total_cycles > 0 and 0 < report.matrix_utilization <= 1
    assert max(report.scratchpad_high_water) > 0 and report.bottleneck in ("compute", "memory", "ring")
    assert "mm" in str(compiled.program) and "total cycles" in str(compiled)
    assert lookup_backend("spyre")[1] == "spyre"
