"""The vectorizable float32 exp/log/tanh of codegen/cpp/include/mc_math_f32.h, held to stated ulp bounds.

Bound: within 1 ulp of the correctly rounded result (float64 math rounded to
float32), hence within NumPy's own error of NumPy (NumPy's SIMD float32 exp and
log are up to 2-3 ulp off; we allow 4).  Special values match exactly.
"""
import warnings

import numpy as np
import pytest

import inductor_testing

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38,
                     88.72, 88.73, 89.0, -103.9, -104.0, -150.0, 9.0, 8.99, 0.0078125,
                     0.0078124, -0.0078125, 1.0, -1.0, 0.5, 2.0, 3.4028235e38], np.float32)


def float32_sweep(n: int = 300_000) -> np.ndarray:
    rng = np.random.default_rng(1234)
    random_bits = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([SPECIALS, random_bits, np.linspace(-30, 30, 100_001, dtype=np.float32)])


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable float32 steps; NaN vs NaN is 0, NaN vs number is huge."""
    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(a) - ordered(b))
    d[np.isnan(a) & np.isnan(b)] = 0
    d[np.isnan(a) != np.isnan(b)] = 1 << 40
    return d


def compiled_unary(op: str, x: np.ndarray) -> np.ndarray:
    return inductor_testing.compiled_unary(op, x, f"mc_{op}_f32")


def within_bounds(op: str, x: np.ndarray, numpy_ulps: int | None = 4) -> tuple[np.ndarray, np.ndarray]:
    """The compiled ``op`` over ``x``, checked within 1 ulp of the correctly
    rounded result and ``numpy_ulps`` of NumPy's float32 ``op``; (ours, exact)."""
    ours = compiled_unary(op, x)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        exact = getattr(np, op)(x.astype(np.float64)).astype(np.float32)
        numpy = getattr(np, op)(x)
    assert ulp_distance(ours, exact).max() <= 1, x[ulp_distance(ours, exact) > 1][:10]
    if numpy_ulps is not None:
        assert ulp_distance(ours, numpy).max() <= numpy_ulps
    return ours, exact


@pytest.mark.parametrize("op", ["exp", "log", "tanh"])
def test_float32_math_ulp_bounds(op):
    x = float32_sweep()
    ours, exact = within_bounds(op, x)
    specials = slice(0, len(SPECIALS))
    np.testing.assert_array_equal(ours[specials], exact[specials])


def tanh_sweep() -> np.ndarray:
    """float32 inputs where mc_tanh_f32 can go wrong: every 1021st float32 in
    [-10, 10] (2.2e9 floats there, so 2.1M), every float32 within 2^13 of
    its switch point 0.55, of the 9.5 clamp and of 13 ln2 = 9.01091 (tanh
    rounds to 1 above it), of each a = (k + 1/2) ln2/2 where the exponent n of
    e^2a steps (k < 28), and of the largest error found over all 2^32 inputs
    (0.88 ulp at 0.87826663); and subnormals, tiny normals, +-0, +-inf, NaN."""
    pos = np.arange(0, np.float32(10.0).view(np.uint32), 1021, dtype=np.uint32)
    centers = [0.55, 9.5, 13 * np.log(2), 0.87826663] + [(k + 0.5) * np.log(2) / 2 for k in range(28)]
    near = [np.float32(c).view(np.uint32) + np.arange(-(1 << 13), 1 << 13, dtype=np.int64) for c in centers]
    tiny = np.concatenate([np.arange(0, 1 << 12), np.arange(0x007FF000, 0x00801000),  # subnormals up to 2^-126
                           np.arange(0x39000000, 0x39800000, 1023)])  # 2^-13 .. 2^-12: tanh x = x ends
    bits = np.concatenate([pos, *near, tiny]).astype(np.uint32)
    x = bits.view(np.float32)
    return np.concatenate([SPECIALS, x, -x, np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)])


def test_float32_tanh_dense_sweep():
    """tanh's ulp bound over the dense sweep above, and its special values
    bit for bit (the sign of zero included, which assert_array_equal skips)."""
    x = tanh_sweep()
    ours, _ = within_bounds("tanh", x)
    finite_or_inf = ~np.isnan(x)
    assert np.array_equal(np.signbit(ours[finite_or_inf]), np.signbit(x[finite_or_inf]))
    assert np.isnan(ours[np.isnan(x)]).all()
    big = np.abs(x) >= 9.0110
    np.testing.assert_array_equal(ours[big], np.sign(x[big]))
    small = np.abs(x) < 2.0**-12  # tanh x rounds to x (subnormals included)
    np.testing.assert_array_equal(ours[small].view(np.uint32), x[small].view(np.uint32))


def test_float32_log_dense_sweep():
    """log's ulp bound over every 4099th positive float32 (subnormals and
    +inf included), every float32 within 2^13 of 1, of its reduction's
    switch points sqrt(1/2) and sqrt(2) and of the largest error found over all
    positive inputs (0.84 ulp at 1.40545952), and its special values."""
    pos = np.arange(0, 0x7F800001, 4099, dtype=np.uint32)
    centers = [1.0, np.sqrt(0.5), np.sqrt(2.0), 1.40545952, 2.0**-126, 2.0**-149 * (1 << 13)]
    near = [np.float32(c).view(np.uint32) + np.arange(-(1 << 13), 1 << 13, dtype=np.int64) for c in centers]
    x = np.concatenate([pos, *near]).astype(np.uint32).view(np.float32)
    x = np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1e-45], np.float32)])
    ours, _ = within_bounds("log", x, numpy_ulps=None)
    np.testing.assert_array_equal(ours[-7:], np.array([-np.inf, -np.inf, np.inf, np.nan, np.nan, np.nan, np.nan],
                                                      np.float32))
    assert ours[x == 1].view(np.uint32).tolist() == [0]  # log 1 = +0


def exp_sweep() -> np.ndarray:
    """float32 inputs where mc_exp_f32 can go wrong: every 1021st float32 in
    [-110, 95], every 7th where results are subnormal ([-104, -87.34]), every
    float32 within 2^13 of its switch points -86.5 (the rescaled path), -104
    (zero lanes) and 89 (the clamp), of the overflow threshold 88.7228391, of
    ln(FLT_MIN) = -87.336544 and ln(2^-150) = -103.972077 (where results turn
    subnormal, and 0), and of the largest error found over all 2^32 inputs
    (0.91 ulp at 5.19979858); every float32 within 2^10 of each
    (k + 1/2) ln2 where the exponent n steps (-150 <= k < 128); and +-0,
    +-inf, NaN, -NaN, huge values and the zero lanes' stand-in -190 ln2."""
    def span(lo, hi, step):
        a, b = np.float32(lo).view(np.uint32), np.float32(hi).view(np.uint32)
        return np.arange(min(a, b), max(a, b), step, dtype=np.int64)
    wide = np.concatenate([span(-0.0, -110.0, 1021), span(0.0, 95.0, 1021)])
    subnormal_results = span(-87.34, -104.0, 7)
    centers = [-86.5, -104.0, 89.0, np.log(np.finfo(np.float32).max), np.log(2.0**-126), np.log(2.0**-150),
               5.19979858]
    near = [np.float32(c).view(np.uint32) + np.arange(-(1 << 13), 1 << 13, dtype=np.int64) for c in centers]
    steps = [np.float32((k + 0.5) * np.log(2)).view(np.uint32) + np.arange(-(1 << 10), 1 << 10, dtype=np.int64)
             for k in range(-150, 128)]
    bits = np.concatenate([wide, subnormal_results, *near, *steps]).astype(np.uint32)
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38, 1e-45, -1e-45,
                      -190 * np.log(2), 1e10, -1e10], np.float32)
    return np.concatenate([SPECIALS, bits.view(np.float32), extra])


def test_float32_exp_dense_sweep():
    """exp's ulp bound over the dense sweep above, and its special values:
    +0 (never -0) where the exact result rounds to 0, +inf from the overflow
    threshold on, 1 for +-0, NaN for NaN; and the subnormal results."""
    x = exp_sweep()
    ours, exact = within_bounds("exp", x)
    assert np.isnan(ours[np.isnan(x)]).all()
    assert not np.signbit(ours[~np.isnan(x)]).any()
    zero = x < -104  # the zero lanes; just above, results round to 0 or 2^-149 as the exact ones
    assert zero.sum() > 1000 and (ours[zero] == 0).all()
    np.testing.assert_array_equal(ours[(x < -103) & (exact == 0)], 0)
    over = x > 88.7228394
    assert over.sum() > 1000 and (ours[over] == np.inf).all()
    assert (ours[x == 0] == 1).all()
    subnormal = (ours > 0) & (ours < np.finfo(np.float32).tiny)
    assert subnormal.sum() > 100_000


@pytest.mark.parametrize("op", ["exp", "log", "tanh"])
def test_float16_math_goes_through_float32(op):
    with np.errstate(over="ignore"):
        specials = SPECIALS.astype(np.float16)
    x = np.concatenate([specials, np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)])
    ours = compiled_unary(op, x)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        numpy = getattr(np, op)(x)
    assert ours.dtype == np.float16
    close = np.isclose(ours.astype(np.float32), numpy.astype(np.float32), rtol=1e-3, atol=0, equal_nan=True)
    assert close.all(), x[~close][:10]


@pytest.mark.parametrize("fn", ["mc_exp_f32", "mc_log_f32", "mc_tanh_f32"])
def test_float32_math_vectorizes_on_this_host(fn, tmp_path):
    """A loop over each function compiles to vector code with the flags the
    cache uses (a double -> int64 conversion, which x86 has only with AVX-512,
    once kept tanh and log scalar on AVX2 machines: 4x slower than torch)."""
    from minicompile.inductor.codegen.cpp.ops import HEADERS, includes

    from inductor_testing import assert_loop_vectorizes

    assert_loop_vectorizes(includes(HEADERS) + "\n", fn, "float", tmp_path)
