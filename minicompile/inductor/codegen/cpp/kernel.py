"""C++/OpenMP code generation: scheduled kernels -> one C++ translation unit.

In:  a :class:`~minicompile.inductor.scheduler.Schedule` (kernels whose bodies
     are loop-IR values, and the layout of every buffer they touch).
Out: :func:`generate` returns the C++ source and, per kernel, the buffers its
     ``extern "C"`` function takes as data pointers, in parameter order.

Shapes and strides are baked in as constants: the caller's guards promise the
same layouts on every call.  Symbolic sizes (dynamic shapes) are the exception:
each kernel takes them as trailing ``const int64_t s0, ...`` arguments.  Loop structure:

* the outer output loop is ``omp parallel for`` (above ``PARALLEL_MIN_WORK``),
  the innermost contiguous loop ``omp simd``;
* a reduction's inner loop is ``omp simd reduction(...)``; a row kernel runs
  one such loop per stage, then its row pass; a float32 sum over a long row
  adds into 32 partial sums (four vectors) per chunk instead, and a row
  kernel prefetches the next row's inputs at the top of each row;
* a reduction over a non-innermost axis (``x.sum(axis=0)``) keeps a block of
  accumulators along the contiguous output axis and streams rows through it;
* a padded read (``pad_select``) computes its value inside an ``if`` on
  its guard's bounds; a store that only its own kernel reads, at the same
  element (a convolution's window sum before its bias), stays a register;
* each kernel also gets an ``<name>_obj`` entry taking the NumPy arrays
  themselves, which reads their data pointers in C (cheaper than ctypes).

NumPy's semantics are kept exactly:

* integer ops wrap (compiled with ``-fwrapv``); integer floor_divide/remainder
  by zero give 0 and ``INT_MIN // -1`` wraps instead of trapping;
* float floor_divide/remainder follow NumPy's ``npy_divmod``;
* maximum/minimum and max/min reductions propagate NaN;
* argmax/argmin keep a (value, position) pair per row and return the position
  of the first NaN, else of the first extreme value; a row split across
  threads combines its partials by position, so ties still pick the lowest;
* float16 is stored as ``_Float16`` and each op computes in float and rounds
  back, as NumPy's half loops do;
* no fast-math, no FP contraction (``-ffp-contract=off``).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .... import config
from ... import loop_ir as L
from ...lowering import MASKED_OPS, data_loads, masked_parts
from ...scheduler import Buffer, Kernel, Schedule, Store
from ....ir.symbolic import input_symbols, is_symbolic, size_hint
from . import interleave, matmul, streaming, tiling
from .reductions import ArgBlockLoops, is_blocked
from ..common import LineWriter
from .math_f64 import PRELUDE_F64
from .prelude import ARRAY_DATA_OFFSET, PRELUDE

# Below this many loop iterations a kernel runs on one thread: forking an
# OpenMP team costs microseconds, more than the work itself.
PARALLEL_MIN_WORK = 1 << 15
# Outputs per block of a column reduction: its accumulators stay in L1.
COLUMN_BLOCK = 256
# A row kernel keeps an expensive value read by several of its passes
# (softmax's exp(x - max), read by the sum and by the division) in a per-thread
# row of this many elements at most, instead of recomputing it per pass.
ROW_SCRATCH_MAX = 1 << 14
# Elements a float32 sum adds in float32 before adding the partial sum to its
# float64 accumulator (see _KernelWriter._reduction_loops).
SUM_CHUNK = 256
# Within a chunk, a row kernel's float32 sums keep SUM_LANES partial sums, as
# SUM_LANES // SUM_VECTOR vectors of SUM_VECTOR floats added independently: a
# single accumulator waits on each vector add (3-4 cycles) and OpenMP's simd
# reduction then adds its lanes one by one; see _KernelWriter._lane_sum_loops.
SUM_VECTOR = 8
SUM_LANES = 32  # the prelude's mc_sum_lanes32 folds exactly this many
# A row kernel prefetches the next row of each input whose rows are at least
# PREFETCH_ROW_MIN bytes, if those rows come to at most PREFETCH_ROWS_MAX bytes
# (half of L1: they must stay there until the next row reads them).
PREFETCH_ROW_MIN = 1 << 10
PREFETCH_ROWS_MAX = 1 << 14
CACHE_LINE = 64
EXPENSIVE_OPS = frozenset({"exp", "log", "tanh", "sqrt", "sin", "cos", "power", "floor_divide", "remainder"})

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




# Transcendentals of our own that vectorize (prelude, math_f64): the
# C library's are scalar calls.  float16 computes in float.
FLOAT32_MATH: dict[str, str] = {
    "exp": "mc_exp_f32({0})",
    "log": "mc_log_f32({0})",
    "tanh": "mc_tanh_f32({0})",
}
FLOAT64_MATH: dict[str, str] = {
    "exp": "mc_exp_f64({0})",
    "log": "mc_log_f64({0})",
    "tanh": "mc_tanh_f64({0})",
}
FLOAT32_KIND = (np.dtype(np.float32), np.dtype(np.float16))


def vector_math(op: str, loop_dtype: np.dtype) -> str | None:
    """The template of our vectorizable ``op`` for a loop of ``loop_dtype``, if there is one."""
    if loop_dtype in FLOAT32_KIND:
        return FLOAT32_MATH.get(op)
    return FLOAT64_MATH.get(op) if loop_dtype == np.float64 else None


# float16 loops that differ from float32/float64 ones beyond precision.
HALF_OPS: dict[str, str] = {
    "maximum": "mc_maximum_half({0}, {1})",
    "minimum": "mc_minimum_half({0}, {1})",
}


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
# argmax/argmin start from max/min's identity at position INT64_MAX: any element
# beats it (an equal value by its lower position), so each row needs no first-element
# special case and an empty per-thread partial never wins.
REDUCTION_INIT.update({(f"arg{rtype}", k): init for (rtype, k), init in list(REDUCTION_INIT.items())
                       if rtype in ("max", "min")})
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
# argmax/argmin are user-declared OpenMP reductions over value-position pairs
# (the prelude's mc_argmax/mc_argmin); their loops are not ``simd``: the update
# is a compare-and-branch per element.
OMP_REDUCTION_OP = {"sum": "+", "mean": "+", "prod": "*", "max": "max", "min": "min",
                    "argmax": "mc_argmax", "argmin": "mc_argmin"}


def ctype(dtype: np.dtype) -> str:
    return CTYPES[np.dtype(dtype)]


# A bool array is read as bytes into an int: GCC does not vectorize a loop
# that loads C++ ``bool`` next to float math (a masked softmax ran 7x slower).
# NumPy bools are 0 or 1, so the value is the same.
BOOL = np.dtype(np.bool_)


def input_ctype(dtype: np.dtype) -> str:
    return "uint8_t" if np.dtype(dtype) == BOOL else ctype(dtype)


def temp_ctype(load: L.Load) -> str:
    return "int32_t" if load.dtype == BOOL else ctype(load.dtype)


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


class _KernelWriter(ArgBlockLoops, LineWriter):
    """Writes one kernel's C++ function."""

    render_index = staticmethod(render_index)
    symbols: tuple[str, ...] = ()  # size symbols the kernel takes as arguments
    parallel_if = ""  # an OpenMP if() clause when the work depends on sizes

    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer], internal: frozenset[str] = frozenset()):
        super().__init__(buffers, kernel.buffers_written)
        self.kernel = kernel
        self.internal = internal  # stores only this kernel reads: kept in registers
        # value -> (scratch array, the pass that writes it); see _plan_row_scratch.
        self.scratch: dict[L.Value, tuple[str, int]] = {}
        self.scratch_index = "0"
        # buffer -> the element a store writes instead of the output (a
        # streamed chunk's L1 buffer, see streaming); streams: any such.
        self.store_to: dict[str, str] = {}
        self.streams = False
        self.scheduled = False  # interleaved: compiled with GCC's early scheduler (interleave)

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
        elif v.name in MASKED_OPS:
            expr = self._masked(v)
        else:
            loop_dtype = v.args[-1].dtype
            template = vector_math(v.name, loop_dtype)
            template = HALF_OPS.get(v.name, template) if loop_dtype == HALF else template
            template = template or CPP_OPS[v.name][loop_dtype.kind]
            operands = [self.compute(a) for a in v.args]
            expr = f"({ctype(v.dtype)})({template.format(*operands)})"
        name = self.tmp()
        self.line(f"{temp_ctype(v) if isinstance(v, L.Load) else ctype(v.dtype)} {name} = {expr};")
        self.memo[v] = name
        return name

    def _masked(self, v: L.Op) -> str:
        """``pad_select``: the fill, or the guarded value computed inside an
        ``if`` on the guard's bounds, so a padded border never reads memory."""
        guard, value, fill, shape = masked_parts(v)
        checks = []
        for e, n in zip(guard.index, shape):
            lo, hi = e.bounds()
            if lo < 0:
                checks.append(f"{render_index(e)} >= 0")
            if hi >= n:
                checks.append(f"{render_index(e)} < {n}")
        if not checks:
            return self.value(value)
        name = self.tmp("m")
        self.line(f"{ctype(v.dtype)} {name} = {self.value(fill)};")
        self.line(f"if ({' && '.join(checks)})")
        self.line("{")
        self.depth += 1
        saved = dict(self.memo)
        self.line(f"{name} = {self.value(value)};")
        self.memo = saved  # values computed under the condition stay inside it
        self.depth -= 1
        self.line("}")
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
        return f"#pragma omp parallel for{extra}{self._team()}"

    def parallel_region(self) -> str:
        """A team whose threads each run code of their own after the shared loop."""
        return f"#pragma omp parallel{self._team()}"

    def _team(self) -> str:
        threads = f" num_threads({config.num_threads})" if config.num_threads > 0 else ""
        return threads + self.parallel_if

    def open_block(self, first_line: str) -> None:
        self.line(first_line)
        self.line("{")
        self.depth += 1

    # -- the kernel -------------------------------------------------------------

    def generate(self) -> tuple[str, list[str]]:
        k = self.kernel
        out_vars = [v for v in L.loop_vars("x", k.ranges) if v.size != 1]
        red_vars = [v for v in L.loop_vars("r", k.reduction_ranges) if v.size != 1]
        big = k.work >= PARALLEL_MIN_WORK if not is_symbolic(k.work) else True
        if is_symbolic(k.work):  # sizes known at run time: OpenMP decides there
            self.parallel_if = f" if({k.work} >= {PARALLEL_MIN_WORK})"
        if self._column_reduction(out_vars, red_vars):
            self._generate_columns(out_vars, red_vars, big)
            return self._finish()
        # Tiles replace the whole output loop nest: a writer that runs the nest
        # over bounds of its own (its own open_loops) keeps it untiled.
        axes = tiling.transpose_axes(k, self.buffers, out_vars) \
            if type(self).open_loops is _KernelWriter.open_loops else None
        if axes is not None:
            self._generate_tiled(out_vars, axes, big)
            return self._finish()
        own_loops = type(self).open_loops is _KernelWriter.open_loops  # not a matmul epilogue's
        flat = streaming.flat_loop(k, self.buffers, out_vars, self.internal) if big and own_loops else None
        if flat is None:
            self._generate_nest(out_vars, red_vars, big, own_loops)
        elif flat[1] is True:
            self._generate_streaming(flat[0])
        else:  # whether the outputs are big enough to stream is known at run time
            self._branch(flat[1], lambda: self._generate_streaming(flat[0]),
                         lambda: self._generate_nest(out_vars, red_vars, big, own_loops))
        return self._finish()

    def _branch(self, condition: str, then: Callable[[], None], otherwise: Callable[[], None]) -> None:
        """``if (condition) {then} else {otherwise}``, each writing its own
        values: what one branch computed is not named in the other."""
        for head, write in ((f"if ({condition})", then), ("else", otherwise)):
            saved_memo, saved_fwd = dict(self.memo), dict(self.forwarded)
            self.open_block(head)
            write()
            self.close_loops(1)
            self.memo, self.forwarded = saved_memo, saved_fwd

    def _generate_nest(self, out_vars: list[L.Var], red_vars: list[L.Var], big: bool, own_loops: bool) -> None:
        """The loop nest over the outputs, each row's passes inside it."""
        k = self.kernel
        stream_rows = big and own_loops and streaming.row_stores(k, self.buffers, out_vars, red_vars,
                                                                       self.internal)
        pragmas: dict[int, str] = {}
        inner = len(out_vars) - 1
        simd = bool(out_vars) and not k.reductions and self._contiguous_store(out_vars[-1])
        lanes = interleave.lanes([s.body for s in k.pointwise], out_vars[-1].size, vector_math) \
            if simd and own_loops else 0
        if lanes:
            self._generate_interleaved(out_vars, big, lanes)
            return
        if big and out_vars:
            pragmas[0] = self.parallel(" simd" if simd and inner == 0 else "")
        if simd and inner not in pragmas:
            pragmas[inner] = "#pragma omp simd"
        if stream_rows:  # each thread fences after its last row: a team, then its loop
            self.open_block(self.parallel_region())
            pragmas[0] = "#pragma omp for"
        stages = [[(self.tmp("acc"), s) for s in stage] for stage in k.stages]
        if not out_vars:
            # A full reduction: split the reduction loop itself across threads.
            for accs in stages:
                self._declare_accumulators(accs)
        self.open_loops(out_vars, pragmas)
        if out_vars:
            self._plan_row_scratch(red_vars)
            self._prefetch_next_row(out_vars, red_vars)
        identity = L.loop_index("x", k.ranges)
        for stage, accs in enumerate(stages):
            # One pass over the row per stage; a later stage reads the
            # finished results of the earlier ones as scalars.
            if out_vars:
                self._declare_accumulators(accs)
            self._reduction_loops(accs, red_vars, parallel=big and not out_vars, pass_index=stage)
            for acc, store in accs:
                red = store.reduction
                final = acc
                if self._tracks_nan(red):
                    final = f"{acc}_nan ? ({ctype(red.acc_dtype)})NAN : {acc}"
                if red.reduction_type == "mean":
                    count = math.prod(red.reduction_ranges)
                    final = f"{acc} / (double)({count})"
                if red.is_arg:
                    final = f"{acc}.i"
                self._store(store.buffer, identity, f"({ctype(red.dtype)})({final})", red.dtype)
            for store in k.pointwise:
                if store.stage == stage:
                    self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        for store in k.pointwise:
            if store.stage >= len(stages):
                self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        if k.row_pointwise and stream_rows not in (True, False):  # big enough to stream: known at run time
            self._branch(stream_rows, lambda: self._row_pass(red_vars, False, len(stages), stream=True),
                         lambda: self._row_pass(red_vars, False, len(stages)))
        elif k.row_pointwise:
            self._row_pass(red_vars, parallel=big and not out_vars, pass_index=len(stages), stream=stream_rows)
        self.close_loops(len(out_vars))
        if stream_rows:
            self.line("mc_stream_fence();")
            self.close_loops(1)

    def _passes(self) -> list[list[L.Value]]:
        """The values each pass over the row computes: one pass per stage, then the row pass."""
        k = self.kernel
        return [[s.body for s in stage] for stage in k.stages] + [[s.body for s in k.row_pointwise]]

    def _plan_row_scratch(self, red_vars: list[L.Var]) -> None:
        """Declare a per-row scratch array for each expensive value that several
        passes over the row compute: the first pass writes it, later passes read
        it (the row is at most ROW_SCRATCH_MAX elements: it stays in L1/L2).
        Called inside the output loop, so each thread has its own row."""
        if not red_vars or any(is_symbolic(v.size) for v in red_vars):
            return
        row = math.prod(v.size for v in red_vars)
        if row > ROW_SCRATCH_MAX:
            return
        red_names = {v.name for v in red_vars}
        passes = self._passes()
        seen_in: dict[L.Value, set[int]] = {}
        for i, bodies in enumerate(passes):
            for body in bodies:
                for v in _unmasked(body):
                    seen_in.setdefault(v, set()).add(i)

        def varies_along_row(v: L.Value) -> bool:
            return any(var.name in red_names for ld in L.loads(v) for e in ld.index for var in e.free_vars())

        def choose(v: L.Value) -> None:
            if v in self.scratch or not isinstance(v, L.Op) or v.name in MASKED_OPS:
                return
            if len(seen_in[v]) > 1 and any(isinstance(u, L.Op) and u.name in EXPENSIVE_OPS for u in L.walk(v)) \
                    and varies_along_row(v):
                name = f"row{len(self.scratch)}"
                self.scratch[v] = (name, min(seen_in[v]))
                self.line(f"alignas(64) {ctype(v.dtype)} {name}[{row}];")
                return
            for a in v.args:
                choose(a)

        for bodies in passes:
            for body in bodies:
                choose(body)
        terms, step = [], 1
        for v in reversed(red_vars):
            terms.append(v.name if step == 1 else f"{step}*{v.name}")
            step *= v.size
        self.scratch_index = " + ".join(reversed(terms))

    def _prefetch_next_row(self, out_vars: list[L.Var], red_vars: list[L.Var]) -> None:
        """At the top of a row: prefetch the next row's inputs, a cache line
        at a time.  The hardware prefetcher starts each row's stream afresh (it
        stops at page boundaries, and a row of a KB or more is a good part of
        a page), so without this each row begins by waiting on memory, and
        while later passes read the row from L1 memory sits idle."""
        k = self.kernel
        if len(red_vars) != 1 or is_symbolic(red_vars[0].size) or not any(self._passes()):
            return  # the number of rows may be known only at run time, their length not
        r, x = red_vars[0], out_vars[-1]
        rows: dict[str, int] = {}
        for body in (b for bodies in self._passes() for b in bodies):
            for ld in data_loads(body):
                if ld.buffer in self.written:
                    continue
                buf = self.buffers[ld.buffer]
                offset = L.linearize(ld.index, buf.strides)
                row_bytes = r.size * buf.dtype.itemsize
                # contiguous rows of their own (not a sliding window) and long
                if offset.coeff(r) != 1 or is_symbolic(offset.coeff(x)) or offset.coeff(x) < r.size \
                        or row_bytes < PREFETCH_ROW_MIN:
                    continue
                text = (f"if ({x.name} + 1 < {x.size}) "  # no pointer past the last row
                        f"for (int64_t {r.name} = 0; {r.name} < {r.size}; {r.name} += "
                        f"{CACHE_LINE // buf.dtype.itemsize}) __builtin_prefetch(&{self.param(ld.buffer)}"
                        f"[{self.offset(ld.buffer, ld.index)} + {offset.coeff(x)}]);")
                rows.setdefault(text, row_bytes)
        if 0 < sum(rows.values()) <= PREFETCH_ROWS_MAX:
            for text in rows:
                self.line(text)

    def _enter_pass(self, pass_index: int) -> None:
        """At the top of a pass's inner loop body: read the scratch values an
        earlier pass wrote; compute and write those this pass is first to need."""
        for v, (name, first) in self.scratch.items():
            if first < pass_index:
                t = self.tmp()
                self.line(f"{ctype(v.dtype)} {t} = {name}[{self.scratch_index}];")
                self.memo[v] = t
        for v, (name, first) in self.scratch.items():
            if first == pass_index:
                self.line(f"{name}[{self.scratch_index}] = {self.value(v)};")

    def _finish(self) -> tuple[str, list[str]]:
        k = self.kernel
        params = [f"const {input_ctype(self.buffers[b].dtype)}* __restrict in_{b}" for b in self.reads]
        outs = [s.buffer for s in k.stores if s.buffer not in self.internal]
        params += [f"{ctype(self.buffers[b].dtype)}* __restrict out_{b}" for b in outs]
        self.array_params = list(params)
        params += [f"const int64_t {s}" for s in self.symbols]
        return "\n".join([self.header(params), "{"] + self.lines + ["}"]), self.reads + outs

    def header(self, params: list[str]) -> str:
        scheduled = "MC_SCHEDULED " if self.scheduled else ""
        return f'extern "C" {scheduled}void {self.kernel.name}({", ".join(params)})'

    def _row_pass(self, red_vars: list[L.Var], parallel: bool, pass_index: int = 0, stream: bool = False) -> None:
        """The last pass over the row: every row store, at its own index
        (``stream``: into a row buffer in L1, then streamed out, see streaming)."""
        pragmas: dict[int, str] = {}
        contiguous = bool(red_vars) and all(
            L.linearize(s.index, self.buffers[s.buffer].strides).coeff(red_vars[-1]) == 1
            for s in self.kernel.row_pointwise)
        if contiguous:
            pragmas[len(red_vars) - 1] = "#pragma omp simd"
        if parallel and red_vars:
            pragmas[0] = self.parallel(" simd" if contiguous and len(red_vars) == 1 else "")
        if stream and not parallel and len(self.kernel.row_pointwise) == 1:
            self._streamed_row_pass(red_vars[0], pass_index)
            return
        saved_memo, saved_fwd = dict(self.memo), dict(self.forwarded)
        rows = {s.buffer: s.index for s in self.kernel.row_pointwise} if stream else {}
        for b in rows:  # stream: one row buffer per output (one reduction loop, see row_stores)
            self.line(f"alignas(64) {ctype(self.buffers[b].dtype)} so_{b}[{red_vars[0].size}];")
            self.store_to[b] = f"so_{b}[{red_vars[0].name}]"
            self.streams = True
        self.open_loops(red_vars, pragmas)
        self._enter_pass(pass_index)
        for store in self.kernel.row_pointwise:
            self._store(store.buffer, store.index, self.value(store.body), store.body.dtype)
        self.close_loops(len(red_vars))
        for b, index in rows.items():
            self.line("{")
            self.depth += 1
            self.line(f"const int64_t {red_vars[0].name} = 0;  // the row starts where the store's index has it 0")
            self.line(f"mc_stream_out(&out_{b}[{self.offset(b, index)}], so_{b}, {red_vars[0].size});")
            self.close_loops(1)
        self.store_to = {}
        self.memo, self.forwarded = saved_memo, saved_fwd

    def _streamed_row_pass(self, r: L.Var, pass_index: int) -> None:
        """The last pass of a row kernel with one row store, streamed directly
        (_stream_vectors).  Against the row buffer in L1 streamed out after
        the pass (the general case), softmax's kernel over 4096 x 1024 float32
        took 12.4 instead of 14.4 cycles per vector (median of 10 alternated
        runs on two Zen 3 cores)."""
        store, = self.kernel.row_pointwise
        b, n = store.buffer, r.size
        self.streams = True
        self.line(f"{ctype(self.buffers[b].dtype)}* so_{b};")
        self.line(f"{{ const int64_t {r.name} = 0; so_{b} = &out_{b}[{self.offset(b, store.index)}]; }}")
        self.line(f"const int64_t {r.name}_h = mc_stream_head(so_{b}, {n});")

        def body() -> None:
            self._enter_pass(pass_index)
            self._store(b, store.index, self.value(store.body), store.body.dtype)

        self._stream_vectors(r.name, n, {b: f"so_{b}"}, body)

    def _generate_streaming(self, var: L.Var) -> None:
        """A one-loop pointwise kernel in chunks: the vectorized loop writes each
        chunk of every output into an L1 buffer, which streams out (streaming)."""
        k, n = self.kernel, var.size
        c = streaming.chunk_elements(k, self.buffers, self.internal)
        stored = streaming.stored_buffers(k, self.internal)
        self.streams = True
        sizes = {self.buffers[b].dtype.itemsize for b in stored}
        if len(sizes) == 1:
            self._generate_streaming_vectors(var, stored, c)
            return
        self.open_block(self.parallel_region())
        self.line("#pragma omp for")
        self.open_block(f"for (int64_t {var.name}_c = 0; {var.name}_c < {n}; {var.name}_c += {c})")
        for b in stored:
            self.line(f"alignas(64) {ctype(self.buffers[b].dtype)} so_{b}[{c}];")
            self.store_to[b] = f"so_{b}[{var.name} - {var.name}_c]"
        self.line(f"const int64_t {var.name}_e = {var.name}_c + {c} < {n} ? {var.name}_c + {c} : {n};")
        self.line("#pragma omp simd")
        self.open_block(f"for (int64_t {var.name} = {var.name}_c; {var.name} < {var.name}_e; ++{var.name})")
        identity = L.loop_index("x", k.ranges)
        for store in k.pointwise:
            self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        self.close_loops(1)
        for b in stored:
            self.line(f"mc_stream_out(out_{b} + {var.name}_c, so_{b}, {var.name}_e - {var.name}_c);")
        self.close_loops(1)
        self.line("mc_stream_fence();")
        self.close_loops(1)
        self.store_to = {}

    def _generate_streaming_vectors(self, var: L.Var, stored: list[str], chunk: int) -> None:
        """Outputs of one element size streamed directly (_stream_vectors), each
        part of the loop shared among the threads.  The outputs' common
        boundary needs them at the same address modulo 32 (as the caching
        allocator gives them): otherwise ``mc_stream_head_all`` says the whole
        loop is head, with plain stores.  Adam over 4M float32 took 3.6-4.2
        against 4.8-5.5 ms through L1 chunk buffers (medians of 20 calls of the
        kernel, 5 alternated rounds)."""
        k, v = self.kernel, var.name
        identity = L.loop_index("x", k.ranges)

        def body() -> None:
            for store in k.pointwise:
                self._store(store.buffer, identity, self.value(store.body), store.body.dtype)

        self.line(f"const int64_t {v}_h = mc_stream_head_all({var.size}, {', '.join(f'out_{b}' for b in stored)});")
        self.open_block(self.parallel_region())
        self._stream_vectors(v, var.size, {b: f"out_{b}" for b in stored}, body, chunk)
        self.line("mc_stream_fence();")
        self.close_loops(1)

    def _stream_vectors(self, v: str, n: int | str, dst: dict[str, str], body: Callable[[], None],
                        chunk: int | None = None) -> None:
        """Streaming stores straight from the computation (streaming): a
        plain head loop up to ``{v}_h`` (the outputs' first 32-byte boundary,
        declared by the caller), then one vector of ``32 / itemsize`` elements
        at a time, each output's lanes written to a local array the compiler
        keeps in a register and streamed to ``dst`` (``mc_stream_vector``),
        then a plain tail.  ``body()`` writes one element's stores (to the
        local arrays, through ``store_to``, in the vector loop); with
        ``chunk``, each part is shared by the team (``omp for nowait``), the
        vectors in chunks of ``chunk`` elements."""
        lanes = 32 // self.buffers[next(iter(dst))].dtype.itemsize
        self.line(f"const int64_t {v}_m = {v}_h + ({n} - {v}_h) / {lanes} * {lanes};")

        def element(targets: dict[str, str]) -> None:
            saved_memo, saved_fwd = dict(self.memo), dict(self.forwarded)
            self.store_to = targets
            body()
            self.store_to = {}
            self.memo, self.forwarded = saved_memo, saved_fwd

        for start, end in ((0, f"{v}_h"), (f"{v}_m", n)):
            if start:  # the vectors between head and tail
                if chunk:
                    self.line("#pragma omp for nowait")
                    self.open_block(f"for (int64_t {v}_c = {v}_h; {v}_c < {v}_m; {v}_c += {chunk})")
                    self.line(f"const int64_t {v}_e = {v}_c + {chunk} < {v}_m ? {v}_c + {chunk} : {v}_m;")
                    self.open_block(f"for (int64_t {v}_v = {v}_c; {v}_v < {v}_e; {v}_v += {lanes})")
                else:
                    self.open_block(f"for (int64_t {v}_v = {v}_h; {v}_v < {v}_m; {v}_v += {lanes})")
                for b in dst:
                    self.line(f"alignas(32) {ctype(self.buffers[b].dtype)} sv_{b}[{lanes}];")
                self.line("#pragma omp simd")
                self.open_block(f"for (int64_t {v}_j = 0; {v}_j < {lanes}; ++{v}_j)")
                self.line(f"const int64_t {v} = {v}_v + {v}_j;")
                element({b: f"sv_{b}[{v}_j]" for b in dst})
                self.close_loops(1)
                for b, d in dst.items():
                    self.line(f"mc_stream_vector(&{d}[{v}_v], sv_{b});")
                self.close_loops(2 if chunk else 1)
            self.line("#pragma omp for simd nowait" if chunk else "#pragma omp simd")
            self.open_block(f"for (int64_t {v} = {start}; {v} < {end}; ++{v})")
            element({})
            self.close_loops(1)

    def _generate_interleaved(self, out_vars: list[L.Var], big: bool, lanes: int) -> None:
        """A pointwise kernel whose inner loop runs ``COPIES`` vectors of
        ``lanes`` at a time, their statements interleaved (interleave),
        then the elements left over one vector loop at a time."""
        k, var, copies = self.kernel, out_vars[-1], interleave.COPIES
        v, step = var.name, copies * lanes
        self.scheduled = True
        self.open_loops(out_vars[:-1], {0: self.parallel()} if big and len(out_vars) > 1 else {})
        self.line(f"const int64_t {v}_m = {var.size} - {var.size} % {step};")
        self.depth += 1
        body = self._pointwise_body()  # at the depth of the loop over what is left
        self.depth -= 1
        if big and len(out_vars) == 1:
            self.line(self.parallel())
        self.open_block(f"for (int64_t {v}_g = 0; {v}_g < {v}_m; {v}_g += {step})")
        self.line("#pragma omp simd")
        self.open_block(f"for (int64_t {v}_l = 0; {v}_l < {lanes}; ++{v}_l)")
        for c in range(copies):
            self.line(f"const int64_t {v}_{c} = {v}_g + {f'{c * lanes} + ' if c else ''}{v}_l;")
        self.lines += ["    " + line for line in interleave.interleave(body, v, copies)]
        self.close_loops(2)
        self.line("#pragma omp simd")
        self.open_block(f"for (int64_t {v} = {v}_m; {v} < {var.size}; ++{v})")
        self.lines += body
        self.close_loops(len(out_vars))

    def _pointwise_body(self) -> list[str]:
        """The lines storing each pointwise output at the loop index, taken
        out of the kernel's text (the memo is left as it was)."""
        start, saved_memo, saved_fwd = len(self.lines), dict(self.memo), dict(self.forwarded)
        identity = L.loop_index("x", self.kernel.ranges)
        for store in self.kernel.pointwise:
            self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        body = self.lines[start:]
        del self.lines[start:]
        self.memo, self.forwarded = saved_memo, saved_fwd
        return body

    def _column_reduction(self, out_vars: list[L.Var], red_vars: list[L.Var]) -> bool:
        """A reduction whose big operands are contiguous along the last output
        loop rather than the last reduction loop (``x.sum(axis=0)``, or a
        depthwise convolution's ``x[h + i, w + j, c] * w[c, i, j]`` over
        ``(i, j)``): the inner loop must run over outputs, not rows.  Operands
        are weighed by size, so a small filter read across does not decide."""
        k = self.kernel
        if not (out_vars and red_vars and k.reductions) or k.row_pointwise or len(k.stages) > 1:
            return False
        if any(s.stage != 0 for s in k.pointwise):
            return False
        x, r = out_vars[-1], red_vars[-1]
        identity = L.loop_index("x", k.ranges)
        stores = [L.linearize(identity, self.buffers[s.buffer].strides) for s in k.stores]
        if not all(o.coeff(x) == 1 for o in stores):
            return False
        along_x = along_r = 0
        for s in k.reductions:
            for ld in data_loads(s.body):
                offset = L.linearize(ld.index, self.buffers[ld.buffer].strides)
                size = size_hint(self.buffers[ld.buffer].numel)  # a heuristic: the example's sizes
                along_x += size if offset.coeff(x) == 1 else 0
                along_r += size if offset.coeff(r) == 1 else 0
        return along_x > along_r

    def _generate_columns(self, out_vars: list[L.Var], red_vars: list[L.Var], big: bool) -> None:
        """Blocks of :data:`COLUMN_BLOCK` outputs, each with an array of
        accumulators; rows stream through the block with a vector inner loop."""
        k, x = self.kernel, out_vars[-1]
        block = min(COLUMN_BLOCK, size_hint(x.size))  # any block is right: n_b clips the last
        pragmas = {0: self.parallel()} if big else {}
        self.open_loops(out_vars[:-1], pragmas)
        if big and len(out_vars) == 1:
            self.line(self.parallel())
        self.line(f"for (int64_t {x.name}_b = 0; {x.name}_b < {x.size}; {x.name}_b += {block})")
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t n_b = {x.size} - {x.name}_b < {block} ? {x.size} - {x.name}_b : {block};")
        accs = [(self.tmp("acc"), s) for s in k.reductions]
        for acc, store in accs:
            red = store.reduction
            self.line(f"{self._acc_ctype(store)} {acc}[{block}];")
            self.line(f"for (int64_t i = 0; i < {block}; ++i) {acc}[i] = {self._acc_init(store)};")
            if self._tracks_nan(red):
                self.line(f"int {acc}_nan[{block}] = {{0}};")
        self.open_loops(red_vars, {})
        saved = dict(self.memo)
        self.line("#pragma omp simd")
        self.line("for (int64_t i = 0; i < n_b; ++i)")
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t {x.name} = {x.name}_b + i;")
        for acc, store in accs:
            red = store.reduction
            if red.is_arg:
                self._arg_step(f"{acc}[i]", red, store.body)
                continue
            step = self.tmp("v")
            t = self._acc_ctype(store)
            self.line(f"{t} {step} = ({t})({self.compute(store.body)});")
            combine = REDUCTION_COMBINE[red.reduction_type].format(acc=f"{acc}[i]", v=step)
            self.line(f"{acc}[i] = ({t})({combine});")
            if self._tracks_nan(red):
                self.line(f"{acc}_nan[i] |= ({step} != {step});")
        self.close_loops(1)
        self.memo = saved
        self.close_loops(len(red_vars))
        self.line("#pragma omp simd")
        self.line("for (int64_t i = 0; i < n_b; ++i)")
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t {x.name} = {x.name}_b + i;")
        identity = L.loop_index("x", k.ranges)
        for acc, store in accs:
            red = store.reduction
            final = f"{acc}[i]"
            if self._tracks_nan(red):
                final = f"{acc}_nan[i] ? ({ctype(red.acc_dtype)})NAN : {acc}[i]"
            if red.reduction_type == "mean":
                final = f"{acc}[i] / (double)({math.prod(red.reduction_ranges)})"
            if red.is_arg:
                final = f"{acc}[i].i"
            self._store(store.buffer, identity, f"({ctype(red.dtype)})({final})", red.dtype)
        for store in k.pointwise:  # epilogues (a bias, a clip) at each output
            self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        self.close_loops(2)
        self.close_loops(len(out_vars) - 1)

    def _generate_tiled(self, out_vars: list[L.Var], axes: tuple[L.Var, L.Var], big: bool) -> None:
        """A pointwise kernel that reads along loop ``t`` and writes along loop
        ``s`` (a transpose), in tiles over the two: the other output loops and
        the tile loops outside (one OpenMP team over all of them), then ``t``,
        then ``s`` innermost, contiguous for the stores (:mod:`.tiling`)."""
        k = self.kernel
        t, s = axes
        sizes = dict(zip((t.name, s.name), tiling.tile_sizes(k, self.buffers)))
        outer = [v for v in out_vars if v not in axes]
        if big:
            self.line(self.parallel(f" collapse({len(outer) + 2})"))
        self.open_loops(outer, {})
        for v in axes:
            self.line(f"for (int64_t {v.name}_t = 0; {v.name}_t < {v.size}; {v.name}_t += {sizes[v.name]})")
            self.line("{")
            self.depth += 1
        for v in axes:
            if v is s:
                self.line("#pragma omp simd")
            end = f"{v.name}_t + {sizes[v.name]}"
            self.line(f"for (int64_t {v.name} = {v.name}_t; {v.name} < ({end} < {v.size} ? {end} : {v.size}); "
                      f"++{v.name})")
            self.line("{")
            self.depth += 1
        identity = L.loop_index("x", k.ranges)
        for store in k.pointwise:
            self._store(store.buffer, identity, self.value(store.body), store.body.dtype)
        self.close_loops(len(outer) + 4)

    def _contiguous_store(self, var: L.Var) -> bool:
        identity = L.loop_index("x", self.kernel.ranges)
        return all(
            L.linearize(identity, self.buffers[s.buffer].strides).coeff(var) == 1 for s in self.kernel.pointwise
        )

    @staticmethod
    def _sums_in_chunks(red: L.Reduction, body: L.Value) -> bool:
        return red.reduction_type in ("sum", "mean") and red.acc_dtype == np.float64 and body.dtype in FLOAT32_KIND

    def _acc_ctype(self, store: Store) -> str:
        """A float32 sum of at most SUM_CHUNK elements (a convolution's window)
        accumulates in float32 — exactly what its chunk would do in a longer
        sum, and twice the vector width of float64."""
        red = store.reduction
        count = math.prod(red.reduction_ranges)
        if red.is_arg:
            return f"mc_arg<{ctype(red.acc_dtype)}>"
        if self._sums_in_chunks(red, store.body) and not is_symbolic(count) and count <= SUM_CHUNK:
            return "float"
        return ctype(red.acc_dtype)

    def _acc_init(self, store: Store) -> str:
        red = store.reduction
        init = REDUCTION_INIT[(red.reduction_type, red.acc_dtype.kind)].format(t=ctype(red.acc_dtype))
        return f"{self._acc_ctype(store)}{{{init}, INT64_MAX}}" if red.is_arg else init

    @staticmethod
    def _arg_ctype(red: L.Reduction) -> str:
        return ctype(red.acc_dtype)

    @staticmethod
    def _arg_identity(red: L.Reduction) -> str:
        return REDUCTION_INIT[(red.reduction_type, red.acc_dtype.kind)].format(t=ctype(red.acc_dtype))

    def _arg_step(self, target: str, red: L.Reduction, body: L.Value) -> None:
        """One element of an argmax/argmin: its value and its position in the row."""
        t = ctype(red.acc_dtype)
        step = self.tmp("v")
        self.line(f"{t} {step} = ({t})({self.compute(body)});")
        self.line(f"mc_{red.reduction_type}_step({target}, {step}, (int64_t)({render_index(red.position())}));")

    @staticmethod
    def _tracks_nan(red: L.Reduction) -> bool:
        return red.reduction_type in ("max", "min") and red.acc_dtype.kind == "f"

    def _declare_accumulators(self, accs: list[tuple[str, object]]) -> None:
        for acc, store in accs:
            red = store.reduction
            self.line(f"{self._acc_ctype(store)} {acc} = {self._acc_init(store)};")
            if self._tracks_nan(red):
                self.line(f"int {acc}_nan = 0;")

    def _reduction_loops(self, accs: list[tuple[str, object]], red_vars: list[L.Var], parallel: bool,
                         pass_index: int = 0) -> None:
        # A float32 sum accumulates in float64 (NumPy's pairwise sum is about
        # that exact), but a float64 vector add per element is the slowest part
        # of a softmax pass: the innermost loop instead sums chunks of
        # SUM_CHUNK elements in float32 vectors (a few dozen adds per lane) and
        # adds each chunk's sum to the float64 accumulator.
        if is_blocked(accs, red_vars):  # argmax/argmin only: see reductions
            self._arg_block_loops(accs, red_vars, parallel, pass_index)
            return
        inner = red_vars[-1] if red_vars else None
        chunked = {acc for acc, store in accs if self._sums_in_chunks(store.reduction, store.body)}
        scalar = any(store.reduction.is_arg for _, store in accs)  # no simd (see OMP_REDUCTION_OP)
        if inner is None or is_symbolic(inner.size) or inner.size <= SUM_CHUNK or scalar:
            chunked = set()

        def clauses(names: dict[str, str]) -> str:
            text = ""
            for acc, store in accs:
                text += f" reduction({OMP_REDUCTION_OP[store.reduction.reduction_type]}:{names.get(acc, acc)})"
                if self._tracks_nan(store.reduction):
                    text += f" reduction(|:{acc}_nan)"
            return text

        outer = clauses({})
        pragmas: dict[int, str] = {}
        if red_vars and not chunked:
            if not scalar:
                pragmas[len(red_vars) - 1] = "#pragma omp simd" + outer
            if parallel:
                simd = len(red_vars) == 1 and not scalar
                pragmas[0] = self.parallel(" simd" + outer if simd else outer)
        elif parallel and len(red_vars) > 1:
            pragmas[0] = self.parallel(outer)
        if chunked and len(chunked) == len(accs) and inner.size >= SUM_LANES:
            self._lane_sum_loops(accs, red_vars, parallel, pass_index, outer)
            return
        saved = dict(self.memo)
        if chunked:
            self.open_loops(red_vars[:-1], pragmas)
            if parallel and len(red_vars) == 1:
                self.line(self.parallel(outer))
            r, n = inner.name, inner.size
            self.line(f"for (int64_t {r}_c = 0; {r}_c < {n}; {r}_c += {SUM_CHUNK})")
            self.line("{")
            self.depth += 1
            for acc in sorted(chunked):
                self.line(f"float {acc}_c = 0;")
            self.line("#pragma omp simd" + clauses({a: f"{a}_c" for a in chunked}))
            self.line(f"for (int64_t {r} = {r}_c; {r} < ({r}_c + {SUM_CHUNK} < {n} ? {r}_c + {SUM_CHUNK} : {n}); ++{r})")
            self.line("{")
            self.depth += 1
        else:
            self.open_loops(red_vars, pragmas)
        self._accumulate(accs, pass_index, {a: f"{a}_c" for a in chunked})
        if chunked:
            self.close_loops(1)
            for acc in sorted(chunked):
                self.line(f"{acc} += (double){acc}_c;")
            self.close_loops(1)
            self.close_loops(len(red_vars) - 1)
        else:
            self.close_loops(len(red_vars))
        # Values computed inside the reduction loop are out of scope after it.
        self.memo = saved

    def _accumulate(self, accs: list[tuple[str, object]], pass_index: int, targets: dict[str, str]) -> None:
        """The body of a reduction loop: each element's value, added into its
        accumulator (``targets`` names a float32 partial sum instead)."""
        self._enter_pass(pass_index)
        for acc, store in accs:
            red = store.reduction
            if red.is_arg:
                self._arg_step(acc, red, store.body)
                continue
            t = "float" if acc in targets else self._acc_ctype(store)
            target = targets.get(acc, acc)
            v = f"({t})({self.compute(store.body)})"
            step = self.tmp("v")
            self.line(f"{t} {step} = {v};")
            combine = REDUCTION_COMBINE[red.reduction_type].format(acc=target, v=step)
            self.line(f"{target} = ({t})({combine});")
            if self._tracks_nan(red):
                self.line(f"{acc}_nan |= ({step} != {step});")

    def _lane_sum_loops(self, accs: list[tuple[str, object]], red_vars: list[L.Var], parallel: bool,
                        pass_index: int, clauses: str) -> None:
        """Float32 sums over a row, in chunks of SUM_CHUNK as _reduction_loops
        does, but each chunk adds into SUM_LANES partial sums ``acc_p``: element
        ``r_b + j`` of a block of SUM_LANES goes to lane ``j``, and the block's
        SUM_LANES // SUM_VECTOR vector adds do not wait on each other (one
        accumulator is bound by the add's latency, about twice slower).  The
        chunk's lanes then add pairwise (the prelude's mc_sum_lanes32: vector
        adds, then 8 floats) into the float64 total, as the chunk's single
        float32 sum did.  The last
        ``n % SUM_LANES`` elements of the row take the plain chunk loop."""
        r = red_vars[-1]
        n, lanes = r.size, SUM_LANES
        body_end = n - n % lanes
        if parallel and len(red_vars) > 1:
            self.line(self.parallel(clauses))
        self.open_loops(red_vars[:-1], {})
        if parallel and len(red_vars) == 1:
            self.line(self.parallel(clauses))
        self.line(f"for (int64_t {r.name}_c = 0; {r.name}_c < {body_end}; {r.name}_c += {SUM_CHUNK})")
        self.line("{")
        self.depth += 1
        for acc, _ in accs:
            self.line(f"float {acc}_p[{lanes}] = {{}};")
        end = f"{r.name}_c + {SUM_CHUNK}"
        if body_end % SUM_CHUNK:
            end = f"({end} < {body_end} ? {end} : {body_end})"
        self.line(f"for (int64_t {r.name}_b = {r.name}_c; {r.name}_b < {end}; {r.name}_b += {lanes})")
        self.line("{")
        self.depth += 1
        self.line(f"#pragma GCC unroll {lanes // SUM_VECTOR}")
        self.line(f"for (int64_t {r.name}_k = 0; {r.name}_k < {lanes}; {r.name}_k += {SUM_VECTOR})")
        self.line("{")
        self.depth += 1
        self.line("#pragma omp simd")
        self.line(f"for (int64_t {r.name}_j = {r.name}_k; {r.name}_j < {r.name}_k + {SUM_VECTOR}; ++{r.name}_j)")
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t {r.name} = {r.name}_b + {r.name}_j;")
        saved = dict(self.memo)
        self._accumulate(accs, pass_index, {a: f"{a}_p[{r.name}_j]" for a, _ in accs})
        self.memo = saved
        self.close_loops(3)
        for acc, _ in accs:
            self.line(f"{acc} += (double)mc_sum_lanes32({acc}_p);")  # the prelude's fold of 32 lanes
        self.close_loops(1)
        if body_end < n:
            for acc, _ in accs:
                self.line(f"float {acc}_c = 0;")
            names = " ".join(f"reduction(+:{acc}_c)" for acc, _ in accs)
            self.line(f"#pragma omp simd {names}")
            self.line(f"for (int64_t {r.name} = {body_end}; {r.name} < {n}; ++{r.name})")
            self.line("{")
            self.depth += 1
            saved = dict(self.memo)
            self._accumulate(accs, pass_index, {a: f"{a}_c" for a, _ in accs})
            self.memo = saved
            self.close_loops(1)
            for acc, _ in accs:
                self.line(f"{acc} += (double){acc}_c;")
        self.close_loops(len(red_vars) - 1)

    def _store(self, buffer: str, index: tuple[L.Expr, ...], expr: str, dtype: np.dtype) -> None:
        name = self.tmp("st")  # not "s": size symbols are s0, s1, ...
        self.line(f"{ctype(dtype)} {name} = {expr};")
        if buffer in self.store_to:
            self.line(f"{self.store_to[buffer]} = {name};")
        elif buffer not in self.internal:
            self.line(f"out_{buffer}[{self.offset(buffer, index)}] = {name};")
        self.forwarded[(buffer, index)] = name


def _unmasked(value: L.Value):
    """Sub-values computed unconditionally: not under a padded read's guard."""
    yield value
    if isinstance(value, L.Op) and value.name not in MASKED_OPS:
        for a in value.args:
            yield from _unmasked(a)
    elif isinstance(value, L.Cast):
        yield from _unmasked(value.value)


def _object_entry(name: str, buffers: list[Buffer], reads: int, symbols: tuple[str, ...] = ()) -> str:
    """``<name>_obj(arrays..., sizes...)``: calls ``name`` with each array's data pointer."""
    params = ", ".join([f"void* a{i}" for i in range(len(buffers))] + [f"int64_t {s}" for s in symbols])
    ptrs = ", ".join([f"*({input_ctype(b.dtype) if i < reads else ctype(b.dtype)}**)((char*)a{i} + {ARRAY_DATA_OFFSET})"
                      for i, b in enumerate(buffers)] + list(symbols))
    return f'extern "C" void {name}_obj({params}) {{ {name}({ptrs}); }}'


def _internal_stores(schedule: Schedule, kernel: Kernel) -> frozenset[str]:
    """Stores of ``kernel`` that nothing else reads — a depthwise convolution's
    window sum, read only by its own bias-and-clip epilogue at the same element:
    they need no memory traffic at all (the wrapper's buffer stays untouched)."""
    seen = {n.name for n in schedule.graph.outputs}
    seen |= {i.name for v in schedule.views.values() for i in v.inputs}
    identity = L.loop_index("x", kernel.ranges)
    for step in schedule.steps:
        if isinstance(step, L.Extern):
            seen |= set(step.inputs)
            continue
        for store in step.stores:
            for ld in data_loads(store.body):
                if step is not kernel or ld.index != identity or store.index is not None:
                    seen.add(ld.buffer)
    at_element = [s for s in kernel.reductions + kernel.pointwise if s.index is None]
    return frozenset(s.buffer for s in at_element if s.buffer not in seen)


class _TileEpilogueWriter(_KernelWriter):
    """A pointwise kernel run as a generated matmul's epilogue: the same body,
    over one finished tile ``(b, i0, mr, j0, nr)`` of the product instead of
    the whole output, on the thread that computed the tile (no OpenMP team of
    its own; the inner loop stays ``omp simd``)."""

    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer], internal: frozenset[str],
                 axes: dict[str, tuple[str, ...]]):
        super().__init__(kernel, buffers, internal)
        self.axes = axes  # matmul.tile_axes

    def parallel(self, extra: str = "") -> str:
        return "#pragma omp simd" if "simd" in extra else ""

    def open_loops(self, variables: list[L.Var], pragmas: dict[int, str]) -> None:
        # One brace per variable, as close_loops expects: a loop, or a block
        # defining an axis computed from the flat row (r) or stack (b) index.
        row_loop = False
        for i, var in enumerate(variables):
            kind, *spec = self.axes[var.name]
            if kind == "row" and not row_loop:
                self.line("for (int64_t r = i0; r < i0 + mr; ++r)")
                row_loop = True
            if kind == "loop":
                if pragmas.get(i):
                    self.line(pragmas[i])
                self.line(f"for (int64_t {var.name} = {spec[0]}; {var.name} < {spec[1]}; ++{var.name})")
            self.line("{")
            self.depth += 1
            if kind != "loop":
                self.line(f"const int64_t {var.name} = {spec[0]};")

    def header(self, params: list[str]) -> str:
        tile = "int64_t b, int64_t i0, int64_t mr, int64_t j0, int64_t nr"
        return f"static inline void {self.kernel.name}_tile({', '.join(params + [tile])})"


def matmul_epilogues(schedule: Schedule) -> dict[str, L.Extern]:
    """Each pointwise kernel that runs as the epilogue of the generated matmul
    right before it (see :mod:`.matmul`), by kernel name."""
    fused = {}
    if not config.cpp_matmul_epilogues:
        return fused
    for step, nxt in zip(schedule.steps, schedule.steps[1:]):
        if not isinstance(step, L.Extern) or matmul.eligible(step, schedule) is None \
                or not matmul.fusable_epilogue(step, nxt):
            continue
        # The kernel's entry takes the operands as they are (no copy on the way).
        if all(t is not None for _, t in matmul.operands(step, schedule)):
            fused[nxt.name] = step
    return fused


def describe_matmuls(schedule: Schedule, kernel_args: dict[str, list[str]],
                     epilogues: dict[str, L.Extern]) -> list[str]:
    """One line per matmul generated as C++, for the schedule log (the
    scheduler itself only knows them as Externs); ``epilogues`` is
    :func:`matmul_epilogues` of the schedule."""
    fused = {ext.name: kernel for kernel, ext in epilogues.items()}
    lines = []
    for ext in schedule.steps:
        if not isinstance(ext, L.Extern) or matmul.kernel_name(ext) not in kernel_args:
            continue
        if ext.name in fused:
            lines.append(f"{ext.name}: generated C++ GEMM, not BLAS; {fused[ext.name]} runs on each finished tile "
                         "(epilogue fusion)")
        else:
            lines.append(f"{ext.name}: generated C++ GEMM ({matmul.kernel_name(ext)}), not BLAS")
    return lines


def generate(schedule: Schedule) -> tuple[str, dict[str, list[str]]]:
    """The translation unit for all kernels, and each kernel's pointer arguments.

    A float32 matmul generated as C++ (:mod:`.matmul`) has the entry
    ``mm_<name>``; when the pointwise kernel after it is its epilogue, that
    kernel's entry computes both (arguments ``A, B, product, its own...``) and
    ``mm_<name>``'s argument list is empty: the wrapper only allocates the product."""
    parts = [
        "// Generated by minicompile's inductor (C++/OpenMP backend).",
        PRELUDE.strip(),
        PRELUDE_F64.strip(),
    ]
    args: dict[str, list[str]] = {}
    # Size symbols (dynamic shapes): every kernel takes each as an int64_t, last.
    symbols = tuple(input_symbols([p.meta.shape for p in schedule.graph.placeholders]))
    fused = matmul_epilogues(schedule)
    externs = [e for e in schedule.steps if isinstance(e, L.Extern)]
    if any(matmul.eligible(e, schedule) is not None for e in externs):
        parts.append(matmul.GEMM_DECLARATIONS.strip())
    for ext in externs:
        if ext in fused.values():
            args[matmul.kernel_name(ext)] = []
        elif (text := matmul.generate(ext, schedule, symbols)) is not None:
            parts.append(text)
            args[matmul.kernel_name(ext)] = [b for b, _ in matmul.operands(ext, schedule)] + [ext.name]
    for kernel in schedule.kernels:
        internal = _internal_stores(schedule, kernel)
        ext = fused.get(kernel.name)
        if ext is not None:
            axes = matmul.tile_axes(tuple(ext.shape), matmul.row_axes(ext, schedule))
            writer = _TileEpilogueWriter(kernel, schedule.buffers, internal, axes)
        else:
            writer = _KernelWriter(kernel, schedule.buffers, internal)
        writer.symbols = symbols
        text, params = writer.generate()
        for used, prelude in ((writer.streams, streaming.PRELUDE), (writer.scheduled, interleave.PRELUDE)):
            if used and prelude.strip() not in parts:
                parts.insert(2, prelude.strip())
        parts.append(text)
        if ext is not None:
            parts.append(matmul.generate(ext, schedule, symbols, (kernel.name, writer.array_params)))
            args[kernel.name] = [b for b, _ in matmul.operands(ext, schedule)] + [ext.name] + params
            continue
        reads = len(params) - len(kernel.stores) + len(internal)
        parts.append(_object_entry(kernel.name, [schedule.buffers[b] for b in params], reads, symbols))
        args[kernel.name] = params
    return "\n\n".join(parts) + "\n", args
