"""Complex arithmetic generated as C++ (mc_complex.h), and left to NumPy elsewhere.

The C++ backend computes complex64/complex128 ``+ - * /``, negation,
conjugation, squares, ``==``/``!=``, the real and imaginary parts and the
absolute value in its kernels, bit for bit as NumPy's array loops compute
them (its fused multiply-add/subtract for ``*``, Smith's algorithm for ``/``,
its SIMD loop's scaled square root for ``abs``), special values included.
Triton and Spyre leave every complex value to NumPy (an
Extern), and every other complex op (reductions, ``exp``, ``power``...) is an
Extern in all backends.
"""
from __future__ import annotations

import numpy as np
import pytest

from minicompile import ir
from minicompile.inductor import compile_graph
from minicompile.inductor.codegen.spyre.compile import compile_graph as spyre_compile
from minicompile.inductor.codegen.triton.compile import compile_graph as triton_compile
from minicompile.ir import TensorMeta

SPECIAL = [0.0, -0.0, 1.0, -2.5, 1e-300, 1e300, np.inf, -np.inf, np.nan]


def specials(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special parts as a, and the same values in another order as b."""
    parts = np.array(SPECIAL)
    re, im = np.meshgrid(parts, parts)
    a = (re.ravel() + 1j * im.ravel())
    a = np.concatenate([a, np.random.default_rng(0).standard_normal(200) * 10 + 3j]).astype(dtype)
    b = np.concatenate([a[::-1][:len(a) // 2], a[: len(a) - len(a) // 2]])
    return a, b


def graph_of(fn, *metas: TensorMeta) -> ir.Graph:
    g = ir.Graph()
    xs = [g.placeholder(f"x{i}", m) for i, m in enumerate(metas)]
    g.output(list(fn(g, *xs)))
    return g


def bits(a: np.ndarray) -> np.ndarray:
    """The parts of a complex array as floats, NaNs made one NaN (their payload may differ)."""
    f = np.stack([np.real(a), np.imag(a)]) if np.iscomplexobj(a) else np.asarray(a)
    return np.where(np.isnan(f), np.nan, f)


EXACT = {
    "add": lambda g, a, b: [g.call("add", a, b)],
    "subtract": lambda g, a, b: [g.call("subtract", a, b)],
    "multiply": lambda g, a, b: [g.call("multiply", a, b)],
    "divide": lambda g, a, b: [g.call("divide", a, b)],
    "unary": lambda g, a, b: [g.call("negative", a), g.call("conjugate", a), g.call("square", b),
                              g.call("real", a), g.call("imag", b)],
    "compare": lambda g, a, b: [g.call("equal", a, b), g.call("not_equal", a, a)],
    "absolute": lambda g, a, b: [g.call("absolute", a), g.call("absolute", b)],
    "python_scalar": lambda g, a, b: [g.call("multiply", a, 2 - 1j), g.call("divide", 1.5j, b)],
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_complex_arithmetic_is_generated_and_bit_exact(name, dtype):
    a, b = specials(dtype)
    g = graph_of(EXACT[name], TensorMeta(a.shape, a.dtype), TensorMeta(b.shape, b.dtype))
    compiled = compile_graph(g, [a, b])
    assert compiled.kernels and "_op_" not in compiled.wrapper_source, compiled.wrapper_source
    with np.errstate(all="ignore"):
        expected = g(a, b)
        got = compiled(a, b)
    for e, r in zip(expected, got):
        assert r.dtype == e.dtype and r.shape == e.shape
        np.testing.assert_array_equal(bits(r), bits(e))


def mandelbrot_step(g, z, c):
    z = g.call("add", g.call("multiply", z, z), c)
    return [z, g.call("less_equal", g.call("absolute", z), 2.0)]


def test_a_mandelbrot_step_is_one_kernel():
    c = (np.random.default_rng(1).standard_normal(300) + 1j * np.random.default_rng(2).standard_normal(300))
    z = np.zeros_like(c)
    g = graph_of(mandelbrot_step, TensorMeta(z.shape, z.dtype), TensorMeta(c.shape, c.dtype))
    compiled = compile_graph(g, [z, c])
    assert len(compiled.kernels) == 1 and "_op_" not in compiled.wrapper_source
    assert "mc_cmul" in compiled.kernel_source and "mc_cabs" in compiled.kernel_source
    for _ in range(20):
        expected, got = g(z, c), compiled(z, c)
        np.testing.assert_array_equal(bits(got[0]), bits(expected[0]))
        np.testing.assert_array_equal(got[1], expected[1])
        z = expected[0]


def test_mixing_real_and_complex_casts_in_the_kernel():
    x = np.linspace(-3, 3, 50)
    z = (x[::-1] + 0.5j * x).astype(np.complex64)

    def fn(g, x, z):
        return [g.call("add", x, z), g.call("multiply", g.call("astype", z, np.dtype(np.complex128)), x),
                g.call("where", g.call("less", x, 0.0), z, 1j)]

    g = graph_of(fn, TensorMeta(x.shape, x.dtype), TensorMeta(z.shape, z.dtype))
    compiled = compile_graph(g, [x, z])
    assert "_op_" not in compiled.wrapper_source
    for e, r in zip(g(x, z), compiled(x, z)):
        assert r.dtype == e.dtype
        np.testing.assert_array_equal(bits(r), bits(e))


def test_other_complex_ops_call_numpy():
    z = np.array([1 + 2j, -3 + 0.5j, 2j])
    g = graph_of(lambda g, z: [g.call("exp", z), g.call("sum", z), g.call("astype", z, np.dtype(np.float64))],
                 TensorMeta(z.shape, z.dtype))
    compiled = compile_graph(g, [z])
    assert compiled.wrapper_source.count("_op_") == 3, compiled.wrapper_source
    with np.errstate(all="ignore"), pytest.warns(np.exceptions.ComplexWarning):
        for e, r in zip(g(z), compiled(z)):
            np.testing.assert_allclose(r, e, rtol=1e-12)


@pytest.mark.parametrize("backend", ["triton", "spyre"])
def test_backends_without_complex_kernels_call_numpy(backend):
    c = (np.arange(8) - 4 + 1j).astype(np.complex128)
    z = np.zeros_like(c)
    g = graph_of(mandelbrot_step, TensorMeta(z.shape, z.dtype), TensorMeta(c.shape, c.dtype))
    compiled = (triton_compile if backend == "triton" else spyre_compile)(g, [z, c])
    for e, r in zip(g(z, c), compiled(z, c)):
        assert r.dtype == e.dtype
        np.testing.assert_array_equal(bits(r), bits(e))


LARGE = {  # big enough for OpenMP threads, streamed stores, tiled transposes and row kernels
    "elementwise": lambda g, a, b: [g.call("add", g.call("multiply", a, b), 1j)],
    "transposed": lambda g, a, b: [g.call("multiply", g.call("transpose", a, (1, 0)), g.call("transpose", b, (1, 0)))],
    "reduce_abs": lambda g, a, b: [g.call("sum", g.call("absolute", g.call("subtract", a, b)), axis=(1,))],
    "reduce_part": lambda g, a, b: [g.call("max", g.call("real", g.call("divide", a, b)), axis=(0,)),
                                    g.call("mean", g.call("imag", a))],
}


@pytest.mark.parametrize("name", sorted(LARGE))
def test_large_complex_kernels(name):
    r = np.random.default_rng(5)
    a = (r.standard_normal((256, 300)) + 1j * r.standard_normal((256, 300)))
    b = (r.standard_normal((256, 300)) + 1j * r.standard_normal((256, 300)))
    g = graph_of(LARGE[name], TensorMeta(a.shape, a.dtype), TensorMeta(b.shape, b.dtype))
    compiled = compile_graph(g, [a, b])
    assert compiled.kernels and "_op_" not in compiled.wrapper_source, compiled.wrapper_source
    for e, got in zip(g(a, b), compiled(a, b)):
        assert got.dtype == e.dtype and got.shape == e.shape
        np.testing.assert_allclose(bits(got), bits(e), rtol=1e-12, atol=1e-12)
