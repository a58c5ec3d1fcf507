"""Dynamic shapes in the triton backend (Triton's interpreter on the CPU): sizes are kernel arguments.

A graph with symbolic sizes compiles once: every kernel takes the size symbols
as trailing int parameters (``s0, s1``), the wrapper reads them off the input
shapes, allocates outputs from them and computes each grid from them; masks
use the runtime sizes; a row of symbolic length is reduced by the looped
form.  Graphs whose sizes the kernels cannot express (a strided slice) still
compile once per shape.  Results equal NumPy for every size.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile.inductor.codegen.triton import compile as triton_compile, runtime as triton_runtime  # noqa: E402
from minicompile.inductor.codegen.triton import versions as triton_versions  # noqa: E402
from minicompile.inductor.codegen.triton.kernel import TritonKernel  # noqa: E402
from minicompile.per_shape import PerShapeCompiled  # noqa: E402
from minicompile.ir.symbolic import ShapeEnv  # noqa: E402
from inductor_testing import assert_close  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 10)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
RNG = np.random.default_rng(5)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)



@pytest.fixture
def compiles(monkeypatch):
    """Counts the triton backend's compiles (each one generates and loads a kernel module)."""
    calls = []
    original = triton_compile.compile_graph

    def counted(graph, example_inputs, sizes_as_args=False):
        calls.append(sizes_as_args)
        return original(graph, example_inputs, sizes_as_args)

    monkeypatch.setattr(triton_compile, "compile_graph", counted)
    return calls


def broadcast(x, w, b):  # pointwise with broadcasting: [n, m] * [m] + [n, 1]
    return np.maximum(x * w, 0.0) + b


def softmax(x, w, b):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def row_stats(x, w, b):
    y = x * w
    return y.mean(axis=1), y.max(axis=0), y.sum()


def matmul_epilogue(x, w, b):  # [n, m] @ [m, m] + bias, then tanh: one template kernel
    return np.tanh(x @ np.outer(w, w) + w)


def transpose(x, w, b):
    return x.T * 2.0 + b.T


PROGRAMS = [broadcast, softmax, row_stats, matmul_epilogue, transpose]


def inputs(n, m, dtype=np.float32):
    return rand(n, m, dtype=dtype), rand(m, dtype=dtype), rand(n, 1, dtype=dtype)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_several_sizes_one_compile(fn, compiles):
    compiled = mc.compile(fn, backend="triton", dynamic=True)
    for n, m in [(3, 5), (17, 9), (2, 16), (33, 7), (5, 40)]:
        args = inputs(n, m)
        assert_close(compiled(*args), fn(*args))
    assert len(compiled.cache) == 1
    entry = compiled.cache[0].compiled
    assert isinstance(entry, triton_compile.TritonCompiledGraph), entry
    assert compiles == [True]  # one compile, kernels taking the sizes
    assert entry.kernels and all(k.sizes == ["s0", "s1"] for k in entry.module.kernels.values())
    assert "s0 = " in entry.wrapper_source


def test_sizes_are_kernel_arguments_and_grids_follow_them():
    compiled = mc.compile(softmax, backend="triton", dynamic=True)
    compiled(*inputs(4, 6))
    entry = compiled.cache[0].compiled
    source = entry.kernel_source
    assert "s0, s1, XBLOCK: tl.constexpr" in source
    # A row of symbolic length is walked RBLOCK at a time (no persistent block can follow it).
    assert "for roffset in range(0, rnumel, RBLOCK)" in source
    kinds = {k.kind for k in entry.module.kernels.values()}
    assert "persistent" not in kinds and "looped" in kinds


def test_matmul_template_takes_m_n_k_at_run_time(compiles):
    def f(a, b, c):
        return np.maximum(a @ b + c, 0.0)

    compiled = mc.compile(f, backend="triton", dynamic=True)
    for m, k, n in [(3, 5, 7), (17, 64, 2), (9, 33, 16), (64, 16, 65)]:
        args = rand(m, k), rand(k, n), rand(n)
        assert_close(compiled(*args), f(*args))
    entry = compiled.cache[0].compiled
    assert compiles == [True] and [k.kind for k in entry.module.kernels.values()] == ["matmul"]
    assert "M, N, K = s0, s2, s1" in entry.kernel_source


def test_batched_matmul_and_float64(compiles):
    def f(a, b):
        return (a @ b) * 0.5

    compiled = mc.compile(f, backend="triton", dynamic=True)
    for batch, m in [(2, 3), (5, 8), (3, 17)]:
        args = rand(batch, m, 4), rand(batch, 4, m)
        assert_close(compiled(*args), f(*args))
    g = mc.compile(transpose, backend="triton", dynamic=True)
    for n, m in [(3, 9), (20, 2), (8, 8)]:
        args = inputs(n, m, np.float64)
        assert_close(g(*args), transpose(*args))
    assert compiles == [True, True]


def test_automatic_dynamic_after_a_size_change(compiles):
    compiled = mc.compile(broadcast, backend="triton")
    for n in (4, 6, 9, 31):
        args = inputs(n, 8)
        assert_close(compiled(*args), broadcast(*args))
    assert len(compiled.cache) == 2 and compiles == [False, True]
    assert isinstance(compiled.cache[1].compiled, triton_compile.TritonCompiledGraph)


def test_a_strided_slice_still_compiles_per_shape():
    def f(x):
        return np.tanh(x[::2]) * 2

    compiled = mc.compile(f, backend="triton", dynamic=True)
    for n in (4, 6, 4, 10):
        x = rand(n, 3)
        assert_close(compiled(x), f(x))
    entry = compiled.cache[0].compiled
    assert isinstance(entry, PerShapeCompiled) and len(entry.compiled) == 3


@SETTINGS
@given(st.lists(st.tuples(st.integers(2, 40), st.integers(2, 40)), min_size=1, max_size=5),
       st.sampled_from(PROGRAMS))
def test_random_size_sequences_equal_numpy(sizes, fn):
    compiled = mc.compile(fn, backend="triton", dynamic=True)
    for n, m in sizes:
        args = inputs(n, m)
        assert_close(compiled(*args), fn(*args))
    # Equal sizes on the first call share one symbol (duck sizing, as torch.compile
    # does): a later call with unequal ones fails that guard and compiles once more.
    (n0, m0), later = sizes[0], sizes[1:]
    assert len(compiled.cache) == (2 if n0 == m0 and any(n != m for n, m in later) else 1)
    assert all(isinstance(e.compiled, triton_compile.TritonCompiledGraph) for e in compiled.cache)


def test_specialization_key_covers_int_arguments():
    key = triton_versions.specialization_key
    assert key((16, 32), (1,)) == ("D", "D", "1")
    assert key((16,), (32,)) != key((16,), (33,)) != key((16,), (1,))
    assert key((16,), (48,)) == key((16,), (64,))


@pytest.mark.parametrize("grid", ["flat", "tiles", "matmul"])
def test_grid_source_matches_grid_size(grid):
    """The fast launch path computes the grid from the sizes as Python; it must agree."""
    env = ShapeEnv()
    s0, s1 = env.create_symbol(5, "a"), env.create_symbol(7, "b")
    shape = {"flat": ("flat", s0 * s1 + 3, "XBLOCK"), "tiles": ("tiles", s0, s1, 2 * s0),
             "matmul": ("matmul", s0, s1 * 3, s0)}[grid]
    cfg = dict(XBLOCK=64, YBLOCK=32, BLOCK_M=16, BLOCK_N=32)
    kernel = TritonKernel("k", "pointwise", [], shape, [cfg], sizes=["s0", "s1"])
    launcher = triton_runtime.Launcher(kernel, None, on_gpu=False)
    source = launcher.grid_source(cfg)
    for a, b in [(2, 2), (5, 7), (16, 33), (100, 3)]:
        assert eval(source, {"s0": a, "s1": b}) == triton_runtime.grid_size(kernel, cfg, (a, b))


def test_fast_launch_path_follows_sizes_and_their_specialization(monkeypatch):
    """The GPU launcher's fast path, driven with stand-ins for CuPy arrays and
    the compiled kernel (no GPU here): the grid follows the sizes, and a size
    that leaves its class (1, a multiple of 16, neither) takes the general path."""
    import types

    env = ShapeEnv()
    s0, s1 = env.create_symbol(5, "a"), env.create_symbol(7, "b")
    kernel = TritonKernel("k", "pointwise", ["x", "out"], ("flat", s0 * s1, "XBLOCK"),
                          [dict(XBLOCK=64, num_warps=4)], sizes=["s0", "s1"])
    fn = types.SimpleNamespace(arg_names=["in_x", "out_out", "s0", "s1", "XBLOCK"])
    launcher = triton_runtime.Launcher(kernel, fn, on_gpu=True)
    launcher.config = kernel.configs[0]
    runs, compiled_keys = [], []

    def compiled_launch(cfg, arrays, pointers, sizes=()):
        compiled_keys.append(triton_versions.specialization_key(tuple(pointers), sizes))
        return lambda grid, stream, *args: runs.append((grid, args))

    stream = types.SimpleNamespace(ptr=0)
    fake_cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    monkeypatch.setattr(triton_runtime, "cupy_module", lambda: fake_cupy)
    monkeypatch.setattr(triton_versions, "launch_hooks_active", lambda: False)
    monkeypatch.setattr(launcher, "compiled_launch", compiled_launch)

    def array(ptr):
        return types.SimpleNamespace(data=types.SimpleNamespace(ptr=ptr))

    a, b = array(4096), array(8192)
    launcher(a, b, 5, 7)  # first call: general path, then the fast path is built
    assert launcher.fast is not None and runs[-1] == (1, (4096, 8192, 5, 7, 64))
    launcher(a, b, 33, 9)  # same classes (neither 1 nor a multiple of 16): fast path, new grid
    assert runs[-1] == (-(-33 * 9 // 64), (4096, 8192, 33, 9, 64)) and len(compiled_keys) == 2
    launcher(a, b, 32, 9)  # s0 now a multiple of 16: the general path, its own specialization
    assert runs[-1][0] == -(-32 * 9 // 64) and compiled_keys[-1] == ("D", "D", "D", None)


def test_a_dynamic_batch_of_1x1_convolutions_stays_a_matmul_template(compiles):
    """[batch, H, W, C] @ [C, O] with the batch symbolic: the rows (batch * H * W) lie as one
    axis whatever the batch, so the template reads them; before, every such product of a
    dynamic batch (MobileNetV2's 1x1 convolutions) was a BLAS call through the array module."""
    def conv(x, w, b):
        return np.clip(x @ w + b, 0, 6)

    compiled = mc.compile(conv, backend="triton")  # the batch becomes symbolic at its second value
    w, b = rand(16, 24), rand(24)
    for n in (2, 3, 5):
        x = rand(n * 49, 16).reshape(n, 7, 7, 16)
        assert_close(compiled(x, w, b), conv(x, w, b))
    entry = compiled.cache[-1].compiled
    assert compiled.cache[-1].capture.graph.is_dynamic
    assert "template matmul [s0, 7, 7, 24] x [16] + epilogue" in entry.schedule
    assert "extern" not in entry.schedule


def test_the_im2col_of_a_dynamic_batch_is_copied_for_the_template(compiles):
    """A 3x3 convolution as a matmul of windows (a reshape of a window view, at no fixed
    strides): with the batch symbolic, a kernel lays the windows out for the template, as
    for a static batch.  Before, that product was a BLAS call through the array module."""
    def stem(x, w):
        windows = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))), (3, 3),
                                                           axis=(1, 2))[:, ::2, ::2]
        n, h, wd = windows.shape[:3]
        return (windows.reshape(n * h * wd, -1) @ w).reshape(n, h, wd, -1)

    compiled = mc.compile(stem, backend="triton")  # the batch becomes symbolic at its second value
    w = rand(27, 8)
    for n in (1, 2, 3):
        x = rand(n * 8 * 8 * 3).reshape(n, 8, 8, 3)
        assert_close(compiled(x, w), stem(x, w))
    schedule = compiled.cache[-1].compiled.schedule
    assert compiled.cache[-1].capture.graph.is_dynamic and "extern" not in schedule, schedule
    assert "copied by a kernel (no fixed strides), an operand of template matmul" in schedule
