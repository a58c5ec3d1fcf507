"""C++/OpenMP code generation: scheduled kernels -> one C++ translation unit.

In:  a :class:`~minicompile.inductor.scheduler.Schedule` (kernels whose bodies
     are loop-IR values, and the layout of every buffer they touch).
Out: :func:`generate` returns the C++ source and, per kernel, the buffers its
     ``extern "C"`` function takes as data pointers, in parameter order.

Shapes and strides are baked in as constants: the caller's guards promise the
same layouts on every call.  NumPy's semantics are kept exactly:

* integer ops wrap (compiled with ``-fwrapv``); integer floor_divide/remainder
  by zero give 0 and ``INT_MIN // -1`` wraps instead of trapping;
* float floor_divide/remainder follow NumPy's ``npy_divmod``;
* maximum/minimum and max/min reductions propagate NaN;
* float16 is stored as ``_Float16`` and each op computes in float and rounds
  back, as NumPy's half loops do;
* no fast-math, no FP contraction (``-ffp-contract=off``).
"""
from __future__ import annotations

import math

import numpy as np

from ... import config
from .. import loop_ir as L
from ..scheduler import Buffer, Kernel, Schedule

# Below this many loop iterations a kernel runs on one thread: forking an
# OpenMP team costs microseconds, more than the work itself.
PARALLEL_MIN_WORK = 1 << 15

CTYPES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t",
    np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t",
    np.dtype(np.uint8): "uint8_t", np.dtype(np.uint16): "uint16_t",
    np.dtype(np.uint32): "uint32_t", np.dtype(np.uint64): "uint64_t",
    np.dtype(np.float16): "_Float16",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}
HALF = np.dtype(np.float16)

PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// NumPy's integer floor division: x // 0 == 0, and INT_MIN // -1 wraps
// (C's '/' would trap on both).
template <typename T> static inline T mc_floordiv_int(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == (T)-1) return (T)(0 - a);
        T q = (T)(a / b);
        if ((a % b != 0) && ((a < 0) != (b < 0))) q = (T)(q - 1);
        return q;
    } else {
        return (T)(a / b);
    }
}

// NumPy's integer remainder: the sign of the divisor, x % 0 == 0.
template <typename T> static inline T mc_remainder_int(T a, T b) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
        if (b == (T)-1) return 0;
        T r = (T)(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
        return r;
    } else {
        return (T)(a % b);
    }
}

// NumPy's npy_divmod for floats: floor quotient, remainder with the sign of b.
template <typename T> static inline T mc_divmod_float(T a, T b, T* modulus) {
    T mod = std::fmod(a, b);
    if (!b) { *modulus = mod; return a / b; }
    T div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; }
    } else {
        mod = std::copysign((T)0, b);
    }
    T floordiv;
    if (div) {
        floordiv = std::floor(div);
        if (div - floordiv > (T)0.5) floordiv += (T)1;
    } else {
        floordiv = std::copysign((T)0, a / b);
    }
    *modulus = mod;
    return floordiv;
}
template <typename T> static inline T mc_floordiv_float(T a, T b) {
    if (!b) return a / b;
    T mod;
    return mc_divmod_float(a, b, &mod);
}
template <typename T> static inline T mc_remainder_float(T a, T b) {
    if (!b) return std::fmod(a, b);
    T mod;
    mc_divmod_float(a, b, &mod);
    return mod;
}

// Integer power by squaring; the exponent is a known non-negative constant.
template <typename T> static inline T mc_ipow(T base, int64_t exponent) {
    T result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = (T)(result * base);
        base = (T)(base * base);
        exponent >>= 1;
    }
    return result;
}

// float32 exp, log and tanh, written so that the compiler vectorizes them
// (glibc's expf/logf/tanhf are scalar calls; NumPy's own are SIMD).  Each
// computes in double, where short polynomials leave an error far below a
// float32 ulp, so the result rounded to float32 is within 1 ulp of the exact
// value.  Special values (NaN, +-inf, 0, negatives for log) are selected at
// the end, without branches.
static inline double mc_bits_to_double(uint64_t bits) { double d; __builtin_memcpy(&d, &bits, 8); return d; }
static inline uint64_t mc_double_to_bits(double d) { uint64_t b; __builtin_memcpy(&b, &d, 8); return b; }

// e^x for |x| <= 200: x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor
// series to r^10 (truncation < 1e-12 relative), times 2^n built from bits.
static inline double mc_exp_core(double x) {
    const double n = std::nearbyint(x * 1.4426950408889634);
    const double r = (x - n * 0.6931471803691238) - n * 1.9082149292705877e-10;
    double p = 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * mc_bits_to_double((uint64_t)((int64_t)n + 1023) << 52);
}

static inline float mc_exp_f32(float xf) {
    const double x = xf;
    // e^x overflows float32 above 88.8 and underflows to 0 below -103.9.
    const double clamped = x < -120.0 ? -120.0 : (x > 100.0 ? 100.0 : x);
    const float y = (float)mc_exp_core(clamped);
    return xf != xf ? xf : y;
}

// log x = e ln2 + log m with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s),
// s = (m-1)/(m+1), |s| < 0.172, by its odd series to s^15.
static inline float mc_log_f32(float xf) {
    const double x = xf;  // every positive float32 is a normal double
    const uint64_t bits = mc_double_to_bits(x);
    int64_t e = (int64_t)((bits >> 52) & 0x7ff) - 1023;
    double m = mc_bits_to_double((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    const bool big = m > 1.4142135623730951;
    const double half = m * 0.5;
    m = big ? half : m;
    e = big ? e + 1 : e;
    const double s = (m - 1.0) / (m + 1.0);
    const double s2 = s * s;
    double p = 1.0 / 15.0;
    p = p * s2 + 1.0 / 13.0;
    p = p * s2 + 1.0 / 11.0;
    p = p * s2 + 1.0 / 9.0;
    p = p * s2 + 1.0 / 7.0;
    p = p * s2 + 1.0 / 5.0;
    p = p * s2 + 1.0 / 3.0;
    p = p * s2 + 1.0;
    const float y = (float)((double)e * 0.6931471805599453 + 2.0 * s * p);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    return xf > 0 ? (xf == inf ? inf : y) : (xf == 0 ? -inf : (xf != xf ? xf : nan));
}

// tanh x = (e^2|x| - 1) / (e^2|x| + 1) with the sign of x; below 2^-7 the
// subtraction would cancel, so the odd series x - x^3/3 + 2x^5/15 - 17x^7/315
// takes over.  Past |x| = 10, tanh rounds to 1 in float32.
static inline float mc_tanh_f32(float xf) {
    const double x = xf;
    const double a = std::fabs(x);
    const double e = mc_exp_core(2.0 * (a < 10.0 ? a : 10.0));
    const double a2 = a * a;
    const double series = a * (1.0 + a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 - a2 * (17.0 / 315.0))));
    const double ratio = (e - 1.0) / (e + 1.0);
    const double t = a < 0.0078125 ? series : ratio;
    const float y = (float)std::copysign(t, x);
    return xf != xf ? xf : y;
}

// np.maximum / np.minimum: a NaN on either side wins.
template <typename T> static inline T mc_maximum(T a, T b) { return (a >= b || a != a) ? a : b; }
template <typename T> static inline T mc_minimum(T a, T b) { return (a <= b || a != a) ? a : b; }
"""


# float32 (and float16, which computes in float) transcendentals that vectorize;
# float64 keeps the C library's functions.
FLOAT32_MATH: dict[str, str] = {
    "exp": "mc_exp_f32({0})",
    "log": "mc_log_f32({0})",
    "tanh": "mc_tanh_f32({0})",
}
FLOAT32_KIND = (np.dtype(np.float32), np.dtype(np.float16))


def _by_kind(**templates: str) -> dict[str, str]:
    """``_by_kind(iu="...")`` -> ``{"i": "...", "u": "..."}``."""
    return {k: t for kinds, t in templates.items() for k in kinds}


# Scalar C++ for each lowered op, by the dtype kind of its loop inputs.  The
# kinds listed here are exactly lowering.POINTWISE_KINDS (checked in tests).
CPP_OPS: dict[str, dict[str, str]] = {
    "add": _by_kind(b="{0} || {1}", iuf="{0} + {1}"),
    "subtract": _by_kind(iuf="{0} - {1}"),
    "multiply": _by_kind(b="{0} && {1}", iuf="{0} * {1}"),
    "divide": _by_kind(f="{0} / {1}"),
    "floor_divide": _by_kind(iu="mc_floordiv_int({0}, {1})", f="mc_floordiv_float({0}, {1})"),
    "remainder": _by_kind(iu="mc_remainder_int({0}, {1})", f="mc_remainder_float({0}, {1})"),
    "power": _by_kind(iu="mc_ipow({0}, (int64_t){1})", f="std::pow({0}, {1})"),
    "square": _by_kind(iuf="{0} * {0}"),
    "negative": _by_kind(iuf="-{0}"),
    "positive": _by_kind(biuf="{0}"),
    "absolute": _by_kind(b="{0}", i="({0} < 0 ? -{0} : {0})", u="{0}", f="std::fabs({0})"),
    "maximum": _by_kind(b="{0} || {1}", iu="({0} >= {1} ? {0} : {1})", f="mc_maximum({0}, {1})"),
    "minimum": _by_kind(b="{0} && {1}", iu="({0} <= {1} ? {0} : {1})", f="mc_minimum({0}, {1})"),
    "less": _by_kind(biuf="{0} < {1}"),
    "less_equal": _by_kind(biuf="{0} <= {1}"),
    "greater": _by_kind(biuf="{0} > {1}"),
    "greater_equal": _by_kind(biuf="{0} >= {1}"),
    "equal": _by_kind(biuf="{0} == {1}"),
    "not_equal": _by_kind(biuf="{0} != {1}"),
    "logical_not": _by_kind(biuf="!{0}"),
    "bitwise_and": _by_kind(biu="{0} & {1}"),
    "bitwise_or": _by_kind(biu="{0} | {1}"),
    "bitwise_xor": _by_kind(biu="{0} ^ {1}"),
    "invert": _by_kind(b="!{0}", iu="~{0}"),
    "exp": _by_kind(f="std::exp({0})"),
    "log": _by_kind(f="std::log({0})"),
    "tanh": _by_kind(f="std::tanh({0})"),
    "sqrt": _by_kind(f="std::sqrt({0})"),
    "sin": _by_kind(f="std::sin({0})"),
    "cos": _by_kind(f="std::cos({0})"),
    "where": _by_kind(biuf="{0} ? {1} : {2}"),
}

# Reductions: (initial accumulator, combine step) by reduction type and kind.
REDUCTION_INIT: dict[tuple[str, str], str] = {
    **{("sum", k): "0" for k in "biuf"}, **{("mean", k): "0" for k in "biuf"},
    **{("prod", k): "1" for k in "biuf"},
    ("max", "f"): "-INFINITY", ("min", "f"): "INFINITY",
    ("max", "b"): "false", ("min", "b"): "true",
    ("max", "i"): "std::numeric_limits<{t}>::lowest()", ("max", "u"): "0",
    ("min", "i"): "std::numeric_limits<{t}>::max()", ("min", "u"): "std::numeric_limits<{t}>::max()",
}
REDUCTION_COMBINE: dict[str, str] = {
    "sum": "{acc} + {v}",
    "mean": "{acc} + {v}",
    "prod": "{acc} * {v}",
    "max": "{v} > {acc} ? {v} : {acc}",
    "min": "{v} < {acc} ? {v} : {acc}",
}
# Every reduction is also an OpenMP reduction, so its inner loop vectorizes and
# a full reduction splits across threads.  For float max/min, OpenMP's max
# ignores NaN; NumPy's result is NaN if any element is, so a second
# accumulator ORs "saw a NaN" and wins at the end.
OMP_REDUCTION_OP = {"sum": "+", "mean": "+", "prod": "*", "max": "max", "min": "min"}


def ctype(dtype: np.dtype) -> str:
    return CTYPES[np.dtype(dtype)]


def literal(value: object, dtype: np.dtype) -> str:
    """A C++ literal of exactly ``value`` in ``dtype`` (hex floats: no rounding)."""
    dtype = np.dtype(dtype)
    t = ctype(dtype)
    if dtype.kind == "b":
        return "true" if value else "false"
    if dtype.kind == "f":
        v = float(value)
        if math.isnan(v):
            return f"(({t})NAN)"
        if math.isinf(v):
            return f"(({t}){'-' if v < 0 else ''}INFINITY)"
        suffix = "" if dtype == np.float64 else "f"
        return f"(({t}){v.hex()}{suffix})"
    v = int(value)
    if dtype.kind == "u":
        return f"(({t}){v}ULL)"
    if v == -(1 << 63):
        return f"(({t})(-9223372036854775807LL - 1))"
    return f"(({t}){v}LL)"


def render_index(expr: L.Expr) -> str:
    """An index expression as C++ over int64_t loop variables (all operands >= 0)."""

    def atom(a: L.Atom) -> str:
        if isinstance(a, L.Var):
            return a.name
        op = "/" if isinstance(a, L.FloorDiv) else "%"
        return f"({render_index(a.base)} {op} {a.divisor})"

    return expr.render(atom)


class _KernelWriter:
    """Writes one kernel's C++ function."""

    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer]):
        self.kernel = kernel
        self.buffers = buffers
        self.lines: list[str] = []
        self.depth = 1
        self.memo: dict[L.Value, str] = {}
        self.forwarded: dict[tuple[str, tuple], str] = {}
        self.counter = 0
        self.written = kernel.buffers_written
        self.reads: list[str] = []

    # -- small helpers ---------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter - 1}"

    def param(self, buffer: str) -> str:
        if buffer in self.written:
            return f"out_{buffer}"
        if buffer not in self.reads:
            self.reads.append(buffer)
        return f"in_{buffer}"

    def offset(self, buffer: str, index: tuple[L.Expr, ...]) -> str:
        return render_index(L.linearize(index, self.buffers[buffer].strides))

    # -- values -----------------------------------------------------------------

    def value(self, v: L.Value) -> str:
        if isinstance(v, L.Constant):
            return literal(v.value, v.dtype)
        if v in self.memo:
            return self.memo[v]
        if isinstance(v, L.Load):
            fwd = self.forwarded.get((v.buffer, v.index))
            if fwd is not None:
                return fwd
            expr = f"{self.param(v.buffer)}[{self.offset(v.buffer, v.index)}]"
        elif isinstance(v, L.Cast):
            expr = f"({ctype(v.dtype)})({self.compute(v.value)})"
        else:
            loop_dtype = v.args[-1].dtype
            template = FLOAT32_MATH.get(v.name) if loop_dtype in FLOAT32_KIND else None
            template = template or CPP_OPS[v.name][loop_dtype.kind]
            operands = [self.compute(a) for a in v.args]
            expr = f"({ctype(v.dtype)})({template.format(*operands)})"
        name = self.tmp()
        self.line(f"{ctype(v.dtype)} {name} = {expr};")
        self.memo[v] = name
        return name

    def compute(self, v: L.Value) -> str:
        """``v`` in its compute type: float16 computes in float."""
        text = self.value(v)
        return f"(float){text}" if v.dtype == HALF else text

    # -- loops ------------------------------------------------------------------

    def open_loops(self, variables: list[L.Var], pragmas: dict[int, str]) -> None:
        for i, var in enumerate(variables):
            if i in pragmas:
                self.line(pragmas[i])
            self.line(f"for (int64_t {var.name} = 0; {var.name} < {var.size}; ++{var.name})")
            self.line("{")
            self.depth += 1

    def close_loops(self, count: int) -> None:
        for _ in range(count):
            self.depth -= 1
            self.line("}")

    def parallel(self, extra: str = "") -> str:
        threads = f" num_threads({config.num_threads})" if config.num_threads > 0 else ""
        return f"#pragma omp parallel for{extra}{threads}"

    # -- the kernel -------------------------------------------------------------

    def generate(self) -> tuple[str, list[str]]:
        k = self.kernel
        out_vars = [v for v in L.loop_vars("x", k.ranges) if v.size != 1]
        red_vars = [v for v in L.loop_vars("r", k.reduction_ranges) if v.size != 1]
        big = k.work >= PARALLEL_MIN_WORK
        pragmas: dict[int, str] = {}
        inner = len(out_vars) - 1
        simd = bool(out_vars) and not k.reductions and self._contiguous_store(out_vars[-1])
        if big and out_vars:
            pragmas[0] = self.parallel(" simd" if simd and inner == 0 else "")
        if simd and inner not in pragmas:
            pragmas[inner] = "#pragma omp simd"
        accs = [(self.tmp("acc"), s) for s in k.reductions]
        if not out_vars:
            # A full reduction: split the reduction loop itself across threads.
            self._declare_accumulators(accs)
        self.open_loops(out_vars, pragmas)
        if out_vars:
            self._declare_accumulators(accs)
        if accs:
            self._reduction_loops(accs, red_vars, parallel=big and not out_vars)
        identity = L.loop_index("x", k.ranges)
        for acc, store in accs:
            red = store.reduction
            final = acc
            if self._tracks_nan(red):
                final = f"{acc}_nan ? ({ctype(red.acc_dtype)})NAN : {acc}"
            if red.reduction_type == "mean":
                count = math.prod(red.reduction_ranges)
                final = f"{acc} / (double){count}"
            self._store(store.buffer, identity, f"({ctype(red.dtype)})({final})", red.dtype)
        for store in k.pointwise:
            self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        self.close_loops(len(out_vars))
        params = [f"const {ctype(self.buffers[b].dtype)}* __restrict in_{b}" for b in self.reads]
        outs = [s.buffer for s in k.stores]
        params += [f"{ctype(self.buffers[b].dtype)}* __restrict out_{b}" for b in outs]
        header = f'extern "C" void {k.name}({", ".join(params)})'
        return "\n".join([header, "{"] + self.lines + ["}"]), self.reads + outs

    def _contiguous_store(self, var: L.Var) -> bool:
        identity = L.loop_index("x", self.kernel.ranges)
        return all(
            L.linearize(identity, self.buffers[s.buffer].strides).coeff(var) == 1 for s in self.kernel.pointwise
        )

    @staticmethod
    def _tracks_nan(red: L.Reduction) -> bool:
        return red.reduction_type in ("max", "min") and red.acc_dtype.kind == "f"

    def _declare_accumulators(self, accs: list[tuple[str, object]]) -> None:
        for acc, store in accs:
            red = store.reduction
            init = REDUCTION_INIT[(red.reduction_type, red.acc_dtype.kind)].format(t=ctype(red.acc_dtype))
            self.line(f"{ctype(red.acc_dtype)} {acc} = {init};")
            if self._tracks_nan(red):
                self.line(f"int {acc}_nan = 0;")

    def _reduction_loops(self, accs: list[tuple[str, object]], red_vars: list[L.Var], parallel: bool) -> None:
        clauses = ""
        for acc, store in accs:
            clauses += f" reduction({OMP_REDUCTION_OP[store.reduction.reduction_type]}:{acc})"
            if self._tracks_nan(store.reduction):
                clauses += f" reduction(|:{acc}_nan)"
        pragmas: dict[int, str] = {}
        if red_vars:
            pragmas[len(red_vars) - 1] = "#pragma omp simd" + clauses
            if parallel:
                pragmas[0] = self.parallel(clauses) if len(red_vars) > 1 else self.parallel(" simd" + clauses)
        saved = dict(self.memo)
        self.open_loops(red_vars, pragmas)
        for acc, store in accs:
            red = store.reduction
            v = f"({ctype(red.acc_dtype)})({self.compute(store.body)})"
            step = self.tmp("v")
            self.line(f"{ctype(red.acc_dtype)} {step} = {v};")
            combine = REDUCTION_COMBINE[red.reduction_type].format(acc=acc, v=step)
            self.line(f"{acc} = ({ctype(red.acc_dtype)})({combine});")
            if self._tracks_nan(red):
                self.line(f"{acc}_nan |= ({step} != {step});")
        self.close_loops(len(red_vars))
        # Values computed inside the reduction loop are out of scope after it.
        self.memo = saved

    def _store(self, buffer: str, index: tuple[L.Expr, ...], expr: str, dtype: np.dtype) -> None:
        name = self.tmp("s")
        self.line(f"{ctype(dtype)} {name} = {expr};")
        self.line(f"out_{buffer}[{self.offset(buffer, index)}] = {name};")
        self.forwarded[(buffer, index)] = name


def generate(schedule: Schedule) -> tuple[str, dict[str, list[str]]]:
    """The translation unit for all kernels, and each kernel's pointer arguments."""
    parts = [
        "// Generated by minicompile's inductor (C++/OpenMP backend).",
        PRELUDE.strip(),
    ]
    args: dict[str, list[str]] = {}
    for kernel in schedule.kernels:
        text, params = _KernelWriter(kernel, schedule.buffers).generate()
        parts.append(text)
        args[kernel.name] = params
    return "\n\n".join(parts) + "\n", args
