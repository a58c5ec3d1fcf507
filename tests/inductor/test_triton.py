"""The triton backend in Triton's interpreter (CPU): every kernel kind and fusion pattern against NumPy.

Programs are small (the interpreter runs a block as NumPy operations) but have
tails (sizes that are not multiples of the block), broadcasting, strided and
transposed inputs, and float16/float32/float64, integer and bool dtypes.
Structural tests check the fusion itself: ``gelu(x @ w + b)`` is one template
kernel, a looped reduction is a loop, names are deterministic.
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")

import minicompile as mc  # noqa: E402
from minicompile import ir  # noqa: E402
from minicompile.inductor.codegen.triton import compile as triton_compile, kernel as tg  # noqa: E402
from minicompile.inductor.codegen.triton import versions as triton_versions  # noqa: E402
from minicompile.ir import TensorMeta  # noqa: E402

from inductor_testing import assert_same  # noqa: E402
from test_inductor_properties import ALL_DTYPES, BINARY, UNARY, programs, random_values, with_layout  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("MINICOMPILE_TEST_EXAMPLES", 25)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------
# The programs: each written once, run eagerly and compiled (also on the GPU,
# by test_triton_gpu.py, at larger sizes)
# ---------------------------------------------------------------------------


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


def relu_residual(x, w, r):
    return np.maximum(x @ w, 0.0) * 0.5 + r


def matmul_and_product(x, w):
    y = x @ w
    return y, np.exp(y)


def row_stats(x):
    return x.sum(axis=1), x.max(axis=1), np.maximum(x, 0).min(axis=0), x.prod(axis=1)


def ints(a, b):
    return (a * 3 + b) ^ a, np.floor_divide(a, 3), (a > b).sum(axis=0)


def strided(x):
    return np.exp(x.T) + x.T.sum(axis=1, keepdims=True)


def _f32(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


CASES = {
    "gelu": (gelu, lambda r: (_f32(r, 33, 47),)),
    "softmax": (softmax, lambda r: (_f32(r, 9, 100),)),
    "layer_norm": (layer_norm, lambda r: (_f32(r, 7, 130),)),
    "row_stats": (row_stats, lambda r: (_f32(r, 5, 37),)),
    "strided": (strided, lambda r: (_f32(r, 6, 10)[:, ::2],)),
    "mlp_f32": (mlp, lambda r: (_f32(r, 20, 30), _f32(r, 30, 17), _f32(r, 17))),
    "mlp_f16": (mlp, lambda r: (_f32(r, 24, 40).astype(np.float16), (_f32(r, 40, 20) / 4).astype(np.float16),
                                _f32(r, 20).astype(np.float16))),
    "relu_residual": (relu_residual, lambda r: (_f32(r, 16, 64), _f32(r, 64, 24), _f32(r, 16, 24))),
    "matmul_and_product": (matmul_and_product, lambda r: (_f32(r, 8, 16), _f32(r, 16, 12) / 4)),
    "ints": (ints, lambda r: (r.integers(-100, 100, (7, 9)).astype(np.int32),
                              r.integers(-100, 100, (7, 9)).astype(np.int32))),
}


def compiled_graph(fn):
    return fn.cache[0].compiled


@pytest.mark.parametrize("name", list(CASES))
def test_program_matches_numpy(name):
    fn, make = CASES[name]
    args = make(np.random.default_rng(0))
    compiled = mc.compile(fn, backend="triton", fullgraph=True)
    expected, actual = fn(*args), compiled(*args)
    as_tuple = (lambda v: v if isinstance(v, tuple) else (v,))
    assert_same(as_tuple(expected), as_tuple(actual), name)
    assert compiled_graph(compiled).device == "interpreter"


# ---------------------------------------------------------------------------
# Structure: what got fused, and how it is named
# ---------------------------------------------------------------------------


def _compile(fn, args):
    compiled = mc.compile(fn, backend="triton", fullgraph=True)
    compiled(*args)
    return compiled_graph(compiled)


def test_gelu_of_matmul_plus_bias_is_one_kernel():
    r = np.random.default_rng(1)
    cg = _compile(mlp, (_f32(r, 20, 30), _f32(r, 30, 17), _f32(r, 17)))
    assert cg.kernels == ["g0_triton_tem_fused_matmul_add_multiply_tanh_0"]
    # float32: three TF32 products per product, and exact ones again for a tile with an inf or NaN
    assert "tl.dot(a, b, acc, input_precision='tf32x3')" in cg.kernel_source
    assert "tl.dot(a, b, acc, input_precision='ieee')" in cg.kernel_source
    assert "extern" not in cg.schedule  # the matmul is no longer a library call
    assert "buf_matmul" not in cg.wrapper_source  # the product never reaches memory


def test_float16_matmul_uses_tensor_core_precision():
    r = np.random.default_rng(2)
    x = _f32(r, 16, 32).astype(np.float16)
    cg = _compile(lambda a, b: a @ b * 2.0, (x, x.T.copy()))
    assert len(cg.kernels) == 1 and "input_precision" not in cg.kernel_source


def test_product_needed_elsewhere_is_stored_by_the_template():
    r = np.random.default_rng(3)
    cg = _compile(matmul_and_product, (_f32(r, 8, 16), _f32(r, 16, 12)))
    assert len(cg.kernels) == 1
    assert "tl.store(out_matmul" in cg.kernel_source


def test_matmul_of_views_reads_them_at_their_strides():
    """A transposed, sliced or broadcast operand is read from its buffer at the
    view's strides: one template, no copy of the view, no library call."""
    r = np.random.default_rng(4)
    for fn, args in [(lambda a, b: a @ b.T + 1.0, (_f32(r, 8, 16), _f32(r, 12, 16))),
                     (lambda a, b: a[1:7, ::2] @ b[2:], (_f32(r, 9, 10), _f32(r, 7, 3))),
                     (lambda q, k: q @ k.transpose(0, 1, 3, 2), (_f32(r, 2, 3, 5, 4), _f32(r, 2, 3, 6, 4)))]:
        cg = _compile(fn, args)
        np.testing.assert_allclose(cg(*args)[0], fn(*args), rtol=1e-5, atol=1e-5)
        assert len(cg.kernels) == 1 and "_triton_tem_" in cg.kernels[0], cg.schedule
    # A reshape of a transpose is a copy in NumPy, at no fixed strides: a pointwise
    # kernel lays it out, then the template reads it.
    args = (_f32(r, 3, 4), _f32(r, 3, 8))
    cg = _compile(lambda a, b: a @ b.T.reshape(4, 6), args)
    np.testing.assert_allclose(cg(*args)[0], args[0] @ args[1].T.reshape(4, 6), rtol=1e-5, atol=1e-5)
    assert "extern matmul" not in cg.schedule and "copied by a kernel (no fixed strides)" in cg.schedule
    assert [k.split("_")[2] for k in cg.kernels] == ["poi", "tem"]  # g0_triton_poi_...


@SETTINGS
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(0, 2), st.integers(0, 2), st.integers(0, 15),
       st.integers(1, 9), st.integers(1, 9), st.integers(1, 12), st.booleans(), st.booleans(),
       st.sampled_from([np.float16, np.float32]), st.integers(0, 2**32 - 1))
def test_matmul_of_any_batch_rank_and_views(lead, a_rank, b_rank, ones, m, n, k, a_transposed, b_sliced,
                                            dtype, seed):
    """np.matmul's batch broadcasting over up to two batch dimensions per operand
    (each a suffix of ``lead``, some sizes 1), operands given as views (a
    transposed ``a``, every other column of ``b``)."""
    rng = np.random.default_rng(seed)
    a_lead = [1 if ones >> i & 1 else d for i, d in enumerate(lead[len(lead) - min(a_rank, len(lead)):])]
    b_lead = [1 if ones >> (i + 2) & 1 else d for i, d in enumerate(lead[len(lead) - min(b_rank, len(lead)):])]
    a = (rng.standard_normal(tuple(a_lead) + ((k, m) if a_transposed else (m, k))) / math.sqrt(k)).astype(dtype)
    b = rng.standard_normal(tuple(b_lead) + (k, 2 * n if b_sliced else n)).astype(dtype)

    def f(a, b):
        return (np.swapaxes(a, -1, -2) if a_transposed else a) @ (b[..., ::2] if b_sliced else b) * 2

    cg = _compile(f, (a, b))
    got, expected = cg(a, b)[0], f(a, b)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
    assert "extern matmul" not in cg.schedule


def test_pointwise_chain_is_one_kernel_with_a_tail_mask():
    cg = _compile(gelu, (np.ones((3, 7), np.float32),))
    assert cg.kernels == ["g0_triton_poi_fused_multiply_add_tanh_0"]
    assert "xmask = xindex < xnumel" in cg.kernel_source and "xnumel = 21" in cg.kernel_source


def test_broadcast_and_transpose_are_index_arithmetic():
    cg = _compile(lambda x, b: x.T * b, (np.ones((4, 6), np.float32), np.ones(4, np.float32)))
    assert len(cg.kernels) == 1
    assert "x1 = xindex % 4" in cg.kernel_source and "x0 = (xindex // 4)" in cg.kernel_source


def test_persistent_and_looped_reductions(monkeypatch):
    r = np.random.default_rng(5)
    x = _f32(r, 6, 300)
    assert compiled_kernels(softmax, x)[0].startswith("g0_triton_per_fused_max")
    monkeypatch.setattr(tg, "PERSISTENT_MAX", 64)  # rows of 300 now need a loop
    mc.reset()
    cg = _compile(softmax, (x,))
    assert cg.kernels[0].startswith("g0_triton_red_fused_max")
    assert "for roffset in range(0, rnumel, RBLOCK):" in cg.kernel_source
    np.testing.assert_allclose(cg(x)[0], softmax(x), rtol=1e-5, atol=1e-6)


def test_softmax_and_layer_norm_are_one_persistent_kernel():
    x = np.random.default_rng(6).standard_normal((9, 100), dtype=np.float32)
    for fn in (softmax, layer_norm):
        mc.reset()
        cg = _compile(fn, (x,))
        assert len(cg.kernels) == 1 and cg.kernels[0].startswith("g0_triton_per_fused")
        assert "kept in registers" in cg.schedule
        assert cg.wrapper_source.count("_empty(") == 1  # only the output reaches memory


def test_row_fusion_stores_what_is_needed_outside():
    def two_outputs(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e, e / e.sum(axis=1, keepdims=True)

    x = np.random.default_rng(7).standard_normal((5, 33), dtype=np.float32)
    cg = _compile(two_outputs, (x,))
    assert len(cg.kernels) == 1 and "tl.store(out_exp" in cg.kernel_source
    assert_same(two_outputs(x), cg(x), "two outputs")


def test_column_reductions_are_not_row_fused():
    x = np.random.default_rng(8).standard_normal((6, 10), dtype=np.float32)
    cg = _compile(lambda x: x - x.max(axis=0), (x,))
    assert len(cg.kernels) == 2


def compiled_kernels(fn, *args):
    return _compile(fn, args).kernels


@pytest.mark.parametrize("length, kind", [(9, "unr"), (40, "per")])  # a short row across the layout is written out
def test_reduction_epilogue_shares_the_kernel(length, kind):
    cg = _compile(lambda x: np.sqrt(x.sum(axis=0) + 1.0), (np.ones((length, 5), np.float32),))
    assert len(cg.kernels) == 1 and cg.kernels[0].startswith(f"g0_triton_{kind}_fused_sum_add_sqrt")


def test_names_and_source_are_deterministic():
    x = np.ones((5, 9), np.float32)
    first = _compile(layer_norm, (x,))
    mc.reset()
    second = _compile(layer_norm, (x,))
    assert first.kernel_source == second.kernel_source and first.wrapper_source == second.wrapper_source


def test_ops_without_exact_triton_form_fall_back_to_numpy():
    a = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    cg = _compile(lambda a: np.floor_divide(a, 4) + np.remainder(a, 3) * 2, (a,))
    assert "fallback: no exact Triton form of floor_divide" in cg.schedule
    assert len(cg.kernels) == 1  # the add and the multiply are still a kernel
    f = np.arange(1, 7, dtype=np.float32)
    cg = _compile(lambda f, g: np.power(f, g) + 1.0, (f, f / 3))
    assert "fallback: no exact Triton form of power" in cg.schedule
    np.testing.assert_allclose(cg(f, f / 3)[0], np.power(f, f / 3) + 1.0, rtol=1e-6)


def test_backend_registered_and_auto_keeps_numpy_on_cpp():
    assert "triton" in mc.api.BACKENDS
    f = mc.compile(lambda x: x + 1.0)
    f(np.ones(4, np.float32))
    assert type(compiled_graph(f)).__name__ == "CompiledGraph"


def test_version_table_answers_for_the_installed_triton():
    assert triton_versions.feature("input_precision")
    assert set(triton_versions.FEATURES) >= {"driver_without_torch", "interpreter_numpy_2_4"}


# ---------------------------------------------------------------------------
# Properties: random graphs, every op and dtype
# ---------------------------------------------------------------------------


def _run_both(graph: ir.Graph, inputs: list):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            expected = ir.dead_code_elimination(graph)(*inputs)
        except Exception as why:
            expected = why
        compiled = triton_compile.compile_graph(graph, inputs)
        try:
            actual = compiled(*inputs)
        except Exception as why:
            actual = why
    return expected, actual, compiled


@SETTINGS
@given(programs(), st.integers(0, 2**32 - 1), st.sampled_from(["contiguous", "reversed", "strided", "transposed"]))
def test_random_graph_matches_numpy(graph: ir.Graph, seed: int, layout: str):
    rng = np.random.default_rng(seed)
    inputs = [with_layout(rng, random_values(rng, p.shape, p.dtype), layout) for p in graph.placeholders]
    expected, actual, compiled = _run_both(graph, inputs)
    assert_same(expected, actual, f"\n{graph}\n{compiled}")


@SETTINGS
@given(st.sampled_from(UNARY + BINARY), st.sampled_from(ALL_DTYPES), st.sampled_from(ALL_DTYPES), st.integers(0, 2**32 - 1))
def test_every_ufunc_and_dtype_pair(op: str, dt1: np.dtype, dt2: np.dtype, seed: int):
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
    expected, actual, compiled = _run_both(g, inputs)
    assert_same(expected, actual, f"\n{g}\n{compiled}")


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 70), st.sampled_from(["sum", "mean", "max", "min", "prod"]),
       st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.bool_]), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_reductions_with_tails(rows: int, cols: int, rtype: str, dtype, looped: bool, seed: int):
    rng = np.random.default_rng(seed)
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((rows, cols), np.dtype(dtype)))
    try:
        out = g.call(rtype, x, axis=1, keepdims=True)
    except Exception:
        return
    g.output([g.call("add", out, 1) if out.dtype.kind != "b" else out])
    values = random_values(rng, (rows, cols), np.dtype(dtype))
    if rtype == "prod" and np.dtype(dtype).kind == "f":
        values = np.clip(values, -1.5, 1.5).astype(dtype)  # keep products finite and meaningful
    saved = tg.PERSISTENT_MAX
    tg.PERSISTENT_MAX = 16 if looped else saved
    try:
        expected, actual, compiled = _run_both(g, [values])
    finally:
        tg.PERSISTENT_MAX = saved
    assert_same(expected, actual, f"\n{g}\n{compiled}")


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 70), st.sampled_from([np.float16, np.float32]),
       st.sampled_from(["bias", "relu", "residual", "scale", "none"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_matmul_template_with_epilogues(m: int, n: int, k: int, dtype, epilogue: str, specials: bool, seed: int):
    """``specials`` plants inf, -inf and NaN in the operands (the float32 template
    computes such a tile again with exact products)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta((m, k), dt))
    b = g.placeholder("b", TensorMeta((k, n), dt))
    extra = g.placeholder("c", TensorMeta((n,) if epilogue == "bias" else (m, n), dt))
    y = g.call("matmul", a, b)
    y = {"bias": lambda: g.call("add", y, extra), "relu": lambda: g.call("maximum", y, 0.0),
         "residual": lambda: g.call("add", g.call("multiply", y, 0.5), extra),
         "scale": lambda: g.call("multiply", y, 0.125), "none": lambda: y}[epilogue]()
    g.output([y])
    scale = 1.0 / math.sqrt(k)
    inputs = [(rng.standard_normal((m, k)) * scale).astype(dt), rng.standard_normal((k, n)).astype(dt),
              rng.standard_normal((n,) if epilogue == "bias" else (m, n)).astype(dt)]
    if specials:
        for x in inputs[:2]:
            flat = x.reshape(-1)
            flat[rng.integers(0, flat.size, 3)] = rng.choice([np.inf, -np.inf, np.nan], 3)
    with np.errstate(invalid="ignore"):
        expected, actual, compiled = _run_both(g, inputs)
    assert_same(expected, actual, f"\n{g}\n{compiled}")
    assert len(compiled.kernels) == 1 and compiled.kernels[0].startswith("triton_tem_fused_matmul")


def test_specialization_key_is_tritons_alignment_and_one_classes():
    key = triton_versions.specialization_key
    assert key((0x7F0000000000, 0x7F0000000010)) == ("D", "D")
    assert key((0x7F0000000004, 0x7F0000000010)) == (None, "D")
    assert key((64,), (1, 32, 7)) == ("D", "1", "D", None)
    assert key((1,)) == (None,)  # a pointer is never specialized on being 1


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 24), st.integers(1, 24), st.integers(1, 40),
       st.sampled_from(["3d@3d", "3d@2d", "2d@3d", "1@3d", "3d@1"]), st.sampled_from([np.float16, np.float32]),
       st.sampled_from(["none", "bias", "residual", "per_matrix", "relu"]), st.booleans(), st.integers(0, 2**32 - 1))
def test_batched_matmul_template(batch: int, m: int, n: int, k: int, form: str, dtype, epilogue: str,
                                 transposed_b: bool, seed: int):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    a_lead, b_lead = {"3d@3d": ((batch,), (batch,)), "3d@2d": ((batch,), ()), "2d@3d": ((), (batch,)),
                      "1@3d": ((1,), (batch,)), "3d@1": ((batch,), (1,))}[form]
    extra_shape = {"bias": (n,), "residual": (batch, m, n), "per_matrix": (batch, 1, 1)}.get(epilogue, (1,))
    g = ir.Graph()
    a = g.placeholder("a", TensorMeta(a_lead + (m, k), dt))
    b = g.placeholder("b", TensorMeta(b_lead + (k, n), dt))
    c = g.placeholder("c", TensorMeta(extra_shape, dt))
    y = g.call("matmul", a, b)
    y = {"none": lambda: y, "bias": lambda: g.call("add", y, c), "residual": lambda: g.call("add", y, c),
         "per_matrix": lambda: g.call("multiply", y, c), "relu": lambda: g.call("maximum", y, 0.0)}[epilogue]()
    g.output([y])
    b_value = rng.standard_normal(b_lead + (k, n)).astype(dt)
    if transposed_b:  # the same values, stored column-major
        b_value = np.swapaxes(np.ascontiguousarray(np.swapaxes(b_value, -1, -2)), -1, -2)
    inputs = [(rng.standard_normal(a_lead + (m, k)) / math.sqrt(k)).astype(dt), b_value,
              rng.standard_normal(extra_shape).astype(dt)]
    expected, actual, compiled = _run_both(g, inputs)
    assert_same(expected, actual, f"\n{g}\n{compiled}")
    assert len(compiled.kernels) == 1 and compiled.kernels[0].startswith("triton_tem_fused_matmul")


def test_batched_matmul_is_one_template_with_the_batch_in_the_program_id():
    r = np.random.default_rng(9)
    cg = _compile(lambda q, k: (q @ k) * 0.125, (_f32(r, 3, 10, 16), _f32(r, 3, 16, 12)))
    assert cg.kernels == ["g0_triton_tem_fused_matmul_multiply_0"]
    assert "batch = pid // (tiles_m * tiles_n)" in cg.kernel_source
    assert "template matmul [3, 10, 12] x [16]" in cg.schedule
    w = _compile(lambda x, w: x @ w, (_f32(r, 2, 8, 16), _f32(r, 16, 4)))  # w is shared by the batch
    assert "in_w + (k + rk)" in w.kernel_source


# ---------------------------------------------------------------------------
# Tiled pointwise kernels: transposed reads and contiguous writes
# ---------------------------------------------------------------------------


def test_transpose_is_a_tiled_kernel():
    x = np.random.default_rng(10).standard_normal((37, 45), dtype=np.float32)
    cg = _compile(lambda x: x.T + 1.0, (x,))
    assert len(cg.kernels) == 1 and cg.module.kernels and "tl.arange(0, YBLOCK)[:, None]" in cg.kernel_source
    (kernel,) = cg.module.kernels.values()
    assert kernel.kind == "tiled" and kernel.grid == ("tiles", 1, 45, 37)  # the output is 45 x 37
    assert "tl.load(in_x + (x0 + 45*x1)" in cg.kernel_source  # read along the input's rows ...
    assert "tl.store(out_add + (37*x0 + x1)" in cg.kernel_source  # ... written along the output's
    np.testing.assert_array_equal(cg(x)[0], x.T + 1.0)


def test_contiguous_and_broadcast_reads_stay_flat():
    r = np.random.default_rng(11)
    for fn, args in [(lambda x, b: x * b + 1.0, (_f32(r, 30, 40), _f32(r, 30, 1))),
                     (lambda x: x.T + 1.0, (_f32(r, 40, 4),))]:  # inner loop too short for a tile
        mc.reset()
        cg = _compile(fn, args)
        assert [k.kind for k in cg.module.kernels.values()] == ["pointwise"]


@SETTINGS
@given(st.lists(st.integers(1, 24), min_size=2, max_size=3), st.randoms(use_true_random=False),
       st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.int8, np.bool_]),
       st.sampled_from(["add", "multiply", "maximum"]), st.integers(0, 2**32 - 1))
def test_tiled_pointwise_matches_numpy(shape: list[int], random, dtype, op: str, seed: int):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    perm = list(range(len(shape)))
    random.shuffle(perm)
    out_shape = tuple(shape[p] for p in perm)
    # The second operand: the output's shape with some axes broadcast, itself read transposed or not.
    other = tuple(n if random.random() < 0.6 else 1 for n in out_shape)
    other_perm = list(range(len(shape)))
    random.shuffle(other_perm)
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta(tuple(shape), dt))
    y = g.placeholder("y", TensorMeta(tuple(other[p] for p in other_perm), dt))
    back = tuple(int(i) for i in np.argsort(other_perm))
    xt = g.call("transpose", x, axes=tuple(perm))
    g.output([g.call(op, xt, g.call("transpose", y, axes=back))])
    inputs = [random_values(rng, tuple(shape), dt), random_values(rng, tuple(other[p] for p in other_perm), dt)]
    expected, actual, compiled = _run_both(g, inputs)
    assert_same(expected, actual, f"\n{g}\n{compiled}")
    kinds = [k.kind for k in compiled.module.kernels.values()]
    assert kinds in (["pointwise"], ["tiled"])


def test_on_the_gpu_arrays_made_from_python_values_stay_numpy_arrays():
    """np.triu_indices(3) beside CuPy arrays is a NumPy array eagerly: on the GPU its
    nodes are Externs (NumPy, on the host); with like=x they are made where x is."""
    from minicompile.inductor.codegen.triton.compile import OWN_FORMS, schedule_for_triton
    from minicompile.inductor.decompositions import before_lowering

    def f(x):
        rows, cols = np.triu_indices(3, 1)
        return rows * 2 + cols, x + 1.0, np.arange(3, like=x) * 2

    x = np.ones(3)
    graph = before_lowering(mc.explain(f)(x).graphs[0], keep=OWN_FORMS)
    for on_gpu in (False, True):
        sched = schedule_for_triton(graph, [x], on_gpu)
        externs = [s.reason for s in sched.steps if not hasattr(s, "ranges")]
        kernels = [s for s in sched.steps if hasattr(s, "ranges")]
        constant_externs = [r for r in externs if "Python values only" in r]
        assert bool(constant_externs) is on_gpu, externs
        assert len(kernels) >= 2  # x + 1.0 and arange(like=x) * 2 stay kernels
    assert_same = np.testing.assert_array_equal
    for got, want in zip(mc.compile(f, backend="triton")(x), f(x)):
        assert_same(got, want)


@settings(max_examples=10, deadline=None)
@given(lead=st.lists(st.integers(1, 4), min_size=2, max_size=4), k=st.integers(1, 9), n=st.integers(1, 9),
       dtype=st.sampled_from([np.float32, np.float16]), epilogue=st.booleans(), transposed=st.booleans(),
       seed=st.integers(0, 99))
def test_stacked_matmul_is_one_template_whose_epilogue_unravels_the_row(lead, k, n, dtype, epilogue,
                                                                        transposed, seed):
    """``[..., M, K] @ [K, N]`` (a 1x1 convolution) is one template over rows = the
    leading dimensions together, when they lie in memory as one axis; an operand
    whose do not (a transpose) is the batched template, ``w`` broadcast over the batch."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(tuple(lead) + (k,)).astype(dtype)
    if transposed:
        x = np.swapaxes(x, 0, 1)
    w, b = rng.standard_normal((k, n)).astype(dtype), rng.standard_normal(n).astype(dtype)

    def f(x, w, b):
        return np.minimum(np.maximum(x @ w + b, 0), 6) if epilogue else x @ w

    compiled = mc.compile(f, backend="triton")
    got, want = compiled(x, w, b), f(x, w, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    templates = [s for s in compiled.cache[0].compiled.scheduled.steps if type(s).__name__ == "MatmulTemplate"]
    assert len(templates) == 1, compiled.cache[0].compiled.schedule
    # 3-D is the batched template, whatever the strides
    stacked = len(lead) > 2 and (not transposed or 1 in (x.shape[0], x.shape[1]))
    assert (templates[0].rows is not None) is stacked
