"""The triton backend on a real GPU: CuPy arrays in, CuPy arrays out, results as NumPy's.

Skipped unless CuPy sees a CUDA device and Triton is installed.  Each program
runs eagerly in NumPy on host copies and compiled on the device.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpu_device import cp, requires_gpu  # noqa: E402  (skips without CuPy and Triton)

pytestmark = requires_gpu

import minicompile as mc  # noqa: E402
from minicompile import config  # noqa: E402

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x):
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + 1e-5)


def mlp(x, w, b):
    return gelu(x @ w + b)


def residual(x, w, r):
    return (x @ w) * 0.5 + r


def row_stats(x):
    return x.sum(axis=1), x.max(axis=1), np.maximum(x, 0).min(axis=0)


def ints(a, b):
    return (a * 3 + b) ^ a, np.floor_divide(a, 3)


def strided(x):
    return np.exp(x.T) + x.T.sum(axis=1, keepdims=True)


def transposed_sum(x, y):
    return np.transpose(x, (0, 2, 1)) * 2.0 + y


def scores(q, k):
    return (q @ k) * 0.125


def arg_extremes(x):
    return np.argmax(x * 2.0 + 1.0, axis=-1), np.argmin(x, axis=0)


def _with_nans_and_ties(shape):
    x = np.round(_f32(*shape) * 2.0)  # few distinct values: many ties
    x[3, 7] = np.nan
    x[5, :] = np.nan  # a row of NaNs: position 0
    x[:, 11] = np.float32(np.nan)
    return x


RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape, dtype=np.float32)


CASES = [
    ("gelu", gelu, lambda: (_f32(1000, 257),), 1e-5),
    ("softmax", softmax, lambda: (_f32(300, 1000),), 1e-5),
    ("softmax_looped", softmax, lambda: (_f32(8, 20000),), 1e-5),
    ("layer_norm", layer_norm, lambda: (_f32(513, 768),), 1e-4),
    ("row_stats", row_stats, lambda: (_f32(129, 5000),), 1e-3),
    ("strided", strided, lambda: (_f32(64, 96),), 1e-4),
    ("mlp_f32", mlp, lambda: (_f32(200, 300), _f32(300, 170), _f32(170)), 1e-4),
    ("mlp_f16", mlp, lambda: (_f32(256, 512).astype(np.float16), (_f32(512, 384) / 16).astype(np.float16),
                              _f32(384).astype(np.float16)), 2e-2),
    ("residual", residual, lambda: (_f32(128, 256), _f32(256, 64), _f32(128, 64)), 1e-4),
    ("ints", ints, lambda: (RNG.integers(-100, 100, (77, 33)).astype(np.int32),
                            RNG.integers(-100, 100, (77, 33)).astype(np.int32)), 0),
    ("transposed_tiles", transposed_sum, lambda: (_f32(3, 300, 129), _f32(3, 129, 1)), 1e-6),
    ("arg_extremes", arg_extremes, lambda: (_f32(300, 1000),), 0),
    ("arg_extremes_nan_ties", arg_extremes, lambda: (_with_nans_and_ties((64, 3000)),), 0),
    ("batched_f32", scores, lambda: (_f32(5, 100, 72), _f32(5, 72, 90)), 1e-4),
    ("batched_f16_shared", scores, lambda: (_f32(6, 128, 64).astype(np.float16),
                                           _f32(64, 96).astype(np.float16)), 2e-2),
]


@pytest.mark.parametrize("name,fn,make,tol", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_on_gpu(name, fn, make, tol, tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    host = make()
    expected = fn(*host)
    compiled = mc.compile(fn, backend="triton")
    device = tuple(cp.asarray(a) for a in host)
    got = compiled(*device)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected, got):
        assert isinstance(g, cp.ndarray), type(g)  # stays on the device
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(cp.asnumpy(g).astype(np.float64), e.astype(np.float64), rtol=tol, atol=tol)


def test_auto_picks_triton_for_cupy_and_one_kernel(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    x, w, b = cp.asarray(_f32(64, 128)), cp.asarray(_f32(128, 64)), cp.asarray(_f32(64))
    fn = mc.compile(mlp)  # backend="auto"
    out = fn(x, w, b)
    assert isinstance(out, cp.ndarray)
    compiled = fn.cache[0].compiled
    assert type(compiled).__name__ == "TritonCompiledGraph" and compiled.device == "cuda"
    assert len(compiled.kernels) == 1 and compiled.kernels[0].startswith("g0_triton_tem_fused_matmul")


def test_autotune_result_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    x = cp.asarray(_f32(4096, 1024))
    mc.compile(gelu, backend="triton")(x)
    files = list((tmp_path / "triton_autotune").glob("*.json"))
    assert files, "no autotune record written"
    record = json.loads(files[0].read_text())
    assert record["best"] in [t["config"] for t in record["timings"]]


def _launcher(fn):
    compiled = fn.cache[0].compiled
    (launcher,) = compiled.launchers.values()
    return launcher


def test_direct_launch_after_the_first_call(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(lambda x: x * 2.0 + 1.0, backend="triton")
    x = cp.arange(1000, dtype=cp.float32)
    cp.testing.assert_array_equal(fn(x), x * 2.0 + 1.0)
    launcher = _launcher(fn)
    assert launcher.fast is not None and "p0 = a0.data.ptr" in launcher.fast.source
    for n in (1, 7, 1000):  # later calls go through the generated function
        y = cp.full(1000, n, dtype=cp.float32)
        cp.testing.assert_array_equal(fn(y), y * 2.0 + 1.0)


def test_misaligned_view_gets_its_own_specialization(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(lambda x: x + 1.0, backend="triton")
    base = cp.arange(1025, dtype=cp.float32)
    aligned, shifted = base[:1024], base[1:]  # same shape and strides: the same guards hold
    cp.testing.assert_array_equal(fn(aligned), aligned + 1.0)
    cp.testing.assert_array_equal(fn(shifted), shifted + 1.0)  # 4 bytes off 16-byte alignment
    cp.testing.assert_array_equal(fn(aligned), aligned + 1.0)
    keys = {key for _, key in _launcher(fn).compiled}
    assert keys == {("D", "D"), (None, "D")}


def test_kernels_run_on_the_current_cupy_stream(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(gelu, backend="triton")
    x = cp.asarray(_f32(512, 256))
    fn(x)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        x2 = cp.asarray(_f32(512, 256))
        got = fn(x2)
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(got), gelu(cp.asnumpy(x2)), rtol=1e-5, atol=1e-5)


def test_dynamic_sizes_are_kernel_arguments_on_gpu(tmp_path, monkeypatch):
    """After one size change the kernels take the sizes as arguments: later sizes reuse them."""
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(softmax, backend="triton")
    for rows, cols in ((64, 300), (96, 500), (7, 1000), (130, 33)):
        host = _f32(rows, cols)
        got = fn(cp.asarray(host))
        np.testing.assert_allclose(cp.asnumpy(got), softmax(host), rtol=1e-5, atol=1e-6)
    assert len(fn.cache) == 2  # the first shape, then one symbolic entry for every later size


def test_scatter_add_runs_as_atomic_adds_on_the_gpu():
    """np.add.at on CuPy arrays: a Triton kernel of atomic adds.  Integer sums are
    exact; float sums of repeated rows equal CuPy's up to the order of the adds."""
    def embedding_grad(table, tokens, g):
        grad = np.zeros_like(table)
        np.add.at(grad, tokens, g)
        return grad

    rng = np.random.default_rng(0)
    tokens = cp.asarray(rng.integers(-64, 64, (8, 256)))  # many repeats, negatives from the end
    fn = mc.compile(embedding_grad, backend="triton")
    for dtype in (np.float32, np.int64):
        table = cp.zeros((64, 32), dtype)
        g = cp.asarray((rng.standard_normal((8, 256, 32)) * 100).astype(dtype))
        got, expected = fn(table, tokens, g), embedding_grad(table, tokens, g)
        if dtype == np.int64:
            cp.testing.assert_array_equal(got, expected)
        else:
            cp.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
    assert "template scatter-add" in fn.cache[0].compiled.schedule


def test_float32_matmul_keeps_float32_accuracy_and_non_finite_values(tmp_path, monkeypatch):
    """The template's tf32x3 products: within float32's error of a float64 product
    (plain TF32 would be some 1e-4 off here), and where an operand holds inf, NaN or a value
    that TF32 rounds to inf, the values NumPy gives."""
    monkeypatch.setattr(config, "cache_dir", tmp_path)
    fn = mc.compile(lambda x, w: x @ w, backend="triton")
    x, w = _f32(256, 4096), _f32(4096, 192)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    got = cp.asnumpy(fn(cp.asarray(x), cp.asarray(w)))
    assert np.abs(got - exact).max() / np.abs(exact).max() < 2e-6
    x, w = _f32(64, 128), _f32(128, 96) / 4
    x[0, 5], x[1, 7], x[2, 9], x[4, 3] = np.inf, np.nan, -np.inf, np.inf
    x[3], x[3, 4] = 0.0, np.float32(3.4025e38)  # TF32 rounds it to inf: this row's tile runs again
    w[3, 0] = 0.0  # inf * 0: NaN, as NumPy's
    expected = x @ w
    got = cp.asnumpy(fn(cp.asarray(x), cp.asarray(w)))
    assert np.isfinite(expected[3]).all()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
