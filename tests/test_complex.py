"""Complex arrays through capture and every backend, compared with eager NumPy.

Each program runs eagerly and through ``mc.compile(fn, backend=B)`` for every
backend; the results must have NumPy's Python types (NumPy scalar or array),
dtypes, shapes and values (complex values compared part by part, NaN where
NumPy has NaN), and the arguments must end as NumPy leaves them.  The
programs cover arithmetic with Python complex scalars (weak, NEP 50), mixing
with float arrays, NaN/inf components, 0-d arrays and NumPy scalars; the
writes through ``z.real``/``z.imag`` (views in NumPy); ``explain`` showing
one graph and no break; and gradients, which refuse complex values.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minicompile as mc
from minicompile.benchmarks.loops import mandelbrot

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BACKENDS = ["eager", "aot_eager", "cpp", "triton", "spyre"]
# rtol per backend: Spyre computes float math in reduced precision; the others match
# NumPy up to the libm's rounding (complex nodes are NumPy's own loops).
RTOL = {"spyre": 2e-2}

NASTY = np.array([1 + 2j, complex(np.inf, 1), complex(1, -np.inf), complex(np.nan, 0), complex(0, -0.0),
                  -3.5 + 0.25j], dtype=np.complex128)


def rng_complex(shape, dtype=np.complex128, seed=0):
    r = np.random.default_rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)


def _parts(value):
    a = np.asarray(value)
    return (a.real, a.imag) if a.dtype.kind == "c" else (a,)


def assert_same(expected, got, rtol=1e-12):
    """NumPy's type, dtype, shape and values (NaN where NumPy has NaN, each part)."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for e, g in zip(expected, got):
            assert_same(e, g, rtol)
        return
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, (np.ndarray, np.generic)):
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        assert got.shape == expected.shape
    for e, g in zip(_parts(expected), _parts(got)):
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e)
        else:
            scale = np.max(np.abs(e[np.isfinite(e)]), initial=1.0)
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True)


def copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def run_both(fn, args, backend):
    eager_args, compiled_args = copies(args), copies(args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = fn(*eager_args)
        got = mc.compile(fn, backend=backend)(*compiled_args)
    rtol = RTOL.get(backend, 1e-12)
    assert_same(expected, got, rtol)
    assert_same(eager_args, compiled_args, rtol)  # the same writes into the arguments


Z, W = rng_complex((3, 4)), rng_complex((3, 4), seed=1)
Z64 = rng_complex((4,), np.complex64, seed=2)
X = np.random.default_rng(3).standard_normal((3, 4))
X32 = X.astype(np.float32)

PROGRAMS = {
    "arithmetic": (lambda z, w: (z + w, z - w, z * w, z / w, -z, +z), (Z, W)),
    "python_complex_scalars": (lambda z: (z * 1j + 2, 2.5 / z, z - (1 - 2j), 1j * z ** 2), (Z64,)),
    "weak_complex_promotes_float32": (lambda x: (x * 1j, x + (2 + 0j), x - 1j), (X32,)),
    "weak_complex_promotes_ints": (lambda i: i * 1j, (np.arange(6, dtype=np.int8),)),
    "mixed_with_float_arrays": (lambda z, x, x32: (z * x, x / z, z64 + x32 if (z64 := z.astype(np.complex64)) is not None
                                                   else None, x32 * Z64[:1]), (Z, X, X32)),
    "power": (lambda z, w: (z ** 2, z ** 0.5, z ** 3, np.power(z, w), z ** -1), (Z, W)),
    "parts": (lambda z: (np.abs(z), abs(z), np.angle(z), np.angle(z, deg=True), np.conj(z), z.conj(),
                         np.conjugate(z), z.real, z.imag, np.real(z), np.imag(z)), (Z,)),
    "parts_of_real_arrays": (lambda x: (np.real(x) * 2, np.imag(x), np.conj(x), x.imag + 1,
                                        np.angle(x)), (X,)),
    "transcendental": (lambda z: (np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.cos(z), np.tanh(z),
                                  np.square(z), np.reciprocal(z)), (Z,)),
    "nan_inf_components": (lambda z: (z * z, z / (z + 1), np.abs(z), np.sqrt(z), z + 1j, np.exp(z)), (NASTY,)),
    "comparisons": (lambda z, w: (z == w, z != z, z < w, z >= w, np.isnan(z), np.isinf(z), np.isfinite(z),
                                  np.isreal(z), np.iscomplex(z)), (NASTY, NASTY[::-1].copy())),
    "reductions": (lambda z: (z.sum(), z.sum(axis=0), np.prod(z, axis=1), z.mean(), np.mean(z, axis=-1),
                              np.cumsum(z, axis=1), np.cumsum(z)), (Z,)),
    "linalg": (lambda z, w: (z @ w.T, np.dot(z[0], w[0]), np.vdot(z, w), z.T @ X), (Z, W)),
    "astype_and_views": (lambda z: (z.astype(np.complex64), z.T.reshape(2, 6), z[1:, ::2] * 2,
                                    z.astype(np.complex64).real), (Z,)),
    "zero_d_array": (lambda z: (z * 2, z.real, np.abs(z), z + 1j, z.sum()), (np.array(1 - 2j),)),
    "numpy_scalars": (lambda s, t: (s * t, s.real, s.imag, np.abs(s), s + 1j, np.conj(t)),
                      (np.complex64(1 + 2j), np.complex128(-0.5 + 3j))),
    "mandelbrot": (lambda c: mandelbrot(c, 12), (rng_complex((16,), seed=4) * 1.5,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_numpy(name, backend):
    fn, args = PROGRAMS[name]
    run_both(fn, args, backend)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_is_one_graph(name):
    fn, args = PROGRAMS[name]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = mc.explain(fn)(*copies(args))
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]
    assert out.graph_count == (0 if name == "numpy_scalars" else 1)  # constants fold at trace time


# -- writes through the parts, which are views -----------------------------------------------

def zero_real(z):
    z.real[...] = 0
    return z


def bump_imag(z):
    z.imag += 1
    return z.sum()


def assign_real(z, x):
    z.real = x
    return z * 2


def slice_of_imag(z):
    z.imag[1:, ::2] = 5.0
    return z


def through_a_name(z):
    r = z.real
    r *= 2
    return z.real.sum(), z


def view_of_a_view(z):
    t = z.T
    t.imag[0] = -1.0
    return t


def read_after_write(z):
    im = z.imag
    z[0] = 7 + 7j  # a write to z is seen through im
    return im * 1


def returns_the_view(z):
    return z.real


def real_of_a_real_array(x):
    x.real[0] = 9.0  # x.real is x
    return x


VIEW_WRITES = [zero_real, bump_imag, slice_of_imag, through_a_name, view_of_a_view, read_after_write]


@pytest.mark.parametrize("backend", ["eager", "cpp", "triton", "spyre"])
@pytest.mark.parametrize("fn", VIEW_WRITES + [returns_the_view], ids=lambda f: f.__name__)
def test_writes_through_parts_reach_the_array(fn, backend):
    run_both(fn, (Z.copy(),), backend)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_assign_to_a_part_and_real_of_a_real_array(backend):
    run_both(assign_real, (Z.copy(), X), backend)
    run_both(real_of_a_real_array, (X.copy(),), backend)


@pytest.mark.parametrize("fn", VIEW_WRITES + [assign_real], ids=lambda f: f.__name__)
def test_writes_through_parts_are_captured(fn):
    args = (Z.copy(), X) if fn is assign_real else (Z.copy(),)
    out = mc.explain(fn)(*args)
    assert out.graph_break_count == 0, [r.reason for r in out.break_reasons]


def test_a_returned_part_is_a_view_of_the_argument():
    z = Z.copy()
    r = mc.compile(returns_the_view, backend="cpp")(z)
    assert np.shares_memory(r, z)
    r[0, 0] = 123.0
    assert z[0, 0].real == 123.0


def test_conj_method_of_a_real_array_is_the_array():
    def f(x, z):
        return x.conj() is x, z.conj() is z, x.conjugate()

    x, z = X.copy(), Z.copy()
    assert mc.compile(f, backend="cpp")(x, z)[:2] == (True, False)
    assert mc.compile(f, backend="cpp")(x, z)[2] is x


def test_imag_of_a_real_array_is_read_only():
    def f(x):
        x.imag[...] = 1.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        f(X.copy())
    with pytest.raises(ValueError, match="read-only"):
        mc.compile(f, backend="cpp")(X.copy())


def test_dtype_names_and_promotion():
    from minicompile.ir import dtypes as dt

    assert dt.short_name(np.complex64) == "c64" and dt.short_name(np.complex128) == "c128"
    for dtype in (np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64, np.complex64):
        for weak in (1j, 2.0, 3):
            assert dt.result_type(np.zeros(1, dtype), weak) == np.result_type(np.zeros(1, dtype), weak)
    assert dt.result_type(np.zeros(1, np.float32), 1j) == np.complex64
    assert dt.result_type(np.zeros(1, np.int8), 1j) == np.complex128


def test_graph_prints_complex_constants_that_read_back():
    from minicompile.ir.graph import format_value

    for value in (1j, complex(np.nan, np.inf), complex(-0.0, 1.0)):
        back = eval(format_value(value), {"nan": np.nan, "inf": np.inf})
        assert np.array_equal(np.array([back]).view(np.float64), np.array([value]).view(np.float64),
                              equal_nan=True)


def test_complex_multiply_by_one_is_not_simplified_away():
    """(re + inf j) * (1 + 0j) has a NaN real part in NumPy: x * 1 -> x is not exact for complex."""
    z = np.array([complex(1, np.inf)])
    run_both(lambda z: (z * 1, z / 1, z + (-0.0)), (z,), "cpp")


# -- gradients: out of scope, refused clearly ------------------------------------------------

def test_gradients_refuse_complex_inputs():
    with pytest.raises(TypeError, match="complex128"):
        mc.Tensor(Z, requires_grad=True)
    with pytest.raises(TypeError, match="complex128"):
        mc.grad(lambda z: np.abs(z).sum())(Z)


@pytest.mark.parametrize("compiled", [False, True])
def test_gradients_refuse_complex_values_on_the_path(compiled):
    def f(x):
        return np.abs(x * (1 + 1j)).sum()  # d/dx is sqrt(2) sign(x): never a silent zero

    fn = mc.compile(f, backend="aot_eager") if compiled else f
    with pytest.raises(Exception, match="through complex values are not supported"):
        mc.grad(fn)(X)
