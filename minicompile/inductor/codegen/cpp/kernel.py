"""C++/OpenMP code generation: scheduled kernels -> one C++ translation unit.

In:  a :class:`~minicompile.inductor.scheduler.Schedule` (kernels whose bodies
     are loop-IR values, and the layout of every buffer they touch).
Out: :func:`generate` returns the C++ source and, per kernel, the buffers its
     ``extern "C"`` function takes as data pointers, in parameter order.  The
     source includes the hand-written helpers of ``include/`` by path
     (:data:`.ops.HEADERS`, and a technique's own header where a kernel uses it).

:class:`KernelWriter` writes one kernel: its values (:meth:`~KernelWriter.value`),
its stores, and the loop nest over its outputs with one pass over each row per
reduction stage and a last row pass.  Each kernel takes one of these shapes,
each decided and written by its own module:

* a reduction over a non-innermost axis (``x.sum(axis=0)``): blocks of
  accumulators along the contiguous output axis (:mod:`.reductions`, which
  also writes every reduction loop: chunked and lane-partial float32 sums,
  NaN-propagating max/min, blocked argmax/argmin);
* a transpose: tiles over the two loops (:mod:`.tiling`);
* a big memory-bound pointwise loop: streaming stores (:mod:`.streaming`);
* a pointwise loop evaluating our exp/log/tanh: several vectors at a time
  (:mod:`.interleave`);
* otherwise the plain nest: the outer output loop ``omp parallel for`` (above
  ``PARALLEL_MIN_WORK``), the innermost contiguous loop ``omp simd``.

Shapes and strides are baked in as constants: the caller's guards promise the
same layouts on every call.  Symbolic sizes (dynamic shapes) are the exception:
each kernel takes them as trailing ``const int64_t s0, ...`` arguments, and a
choice that depends on them is a run-time ``if``.  A padded read
(``pad_select``) computes its value inside an ``if`` on its guard's bounds; a
store that only its own kernel reads, at the same element (a convolution's
window sum before its bias), stays a register.  Each kernel also gets an
``<name>_obj`` entry taking the NumPy arrays themselves, which reads their data
pointers in C (cheaper than ctypes).

NumPy's semantics are kept exactly:

* integer ops wrap (compiled with ``-fwrapv``); integer floor_divide/remainder
  by zero give 0 and ``INT_MIN // -1`` wraps instead of trapping;
* float floor_divide/remainder follow NumPy's ``npy_divmod``;
* maximum/minimum and max/min reductions propagate NaN;
* argmax/argmin return the position of the first NaN, else of the first
  extreme value, also when a row is split across threads;
* float16 is stored as ``_Float16`` and each op computes in float and rounds
  back, as NumPy's half loops do;
* no fast-math, no FP contraction (``-ffp-contract=off``).
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable, Iterator

from .... import config
from ... import loop_ir as L
from ...lowering import MASKED_OPS, border_checks, data_loads, masked_parts
from ...scheduler import Buffer, Kernel, Schedule
from ....ir.symbolic import input_symbols, is_symbolic
from . import attention, interleave, matmul, reductions, streaming, tiling
from ..common import LineWriter
from .ops import ARRAY_DATA_OFFSET, COMPLEX_HEADER, HALF, HEADERS, cast, ctype, includes, input_ctype, literal, op_template, \
    render_index, temp_ctype

# Below this many loop iterations a kernel runs on one thread: forking an
# OpenMP team costs microseconds, more than the work itself.
PARALLEL_MIN_WORK = 1 << 15
# A row kernel keeps an expensive value read by several of its passes
# (softmax's exp(x - max), read by the sum and by the division) in a per-thread
# row of this many elements at most, instead of recomputing it per pass.
ROW_SCRATCH_MAX = 1 << 14
# A row kernel prefetches the next row of each input whose rows are at least
# PREFETCH_ROW_MIN bytes, if those rows come to at most PREFETCH_ROWS_MAX bytes
# (half of L1: they must stay there until the next row reads them).
PREFETCH_ROW_MIN = 1 << 10
PREFETCH_ROWS_MAX = 1 << 14
CACHE_LINE = 64
EXPENSIVE_OPS = frozenset({"exp", "log", "tanh", "sqrt", "sin", "cos", "power", "floor_divide", "remainder"})


class KernelWriter(LineWriter):
    """Writes one kernel's C++ function."""

    render_index = staticmethod(render_index)
    symbols: tuple[str, ...] = ()  # size symbols the kernel takes as arguments
    parallel_if = ""  # an OpenMP if() clause when the work depends on sizes
    # Whether the loops run over the whole output (False: over one tile of a
    # matmul's product, bounds of its own; no tiling, streaming or interleaving).
    writes_whole_output = True

    def __init__(self, kernel: Kernel, buffers: dict[str, Buffer], internal: frozenset[str] = frozenset()):
        super().__init__(buffers, kernel.buffers_written)
        self.kernel = kernel
        self.internal = internal  # stores only this kernel reads: kept in registers
        # value -> (scratch array, the pass that writes it); see _plan_row_scratch.
        self.scratch: dict[L.Value, tuple[str, int]] = {}
        self.scratch_index = "0"
        # buffer -> the element a store writes instead of the output (a
        # streamed chunk's L1 buffer, see streaming).
        self.store_to: dict[str, str] = {}
        self.streams = False  # a loop streams its stores: the translation unit includes streaming.HEADER
        self.complex = any(v.dtype.kind == "c" for st in kernel.stores for v in L.walk(st.body))
        self.scheduled = False  # interleaved: compiled with GCC's early scheduler (interleave.HEADER)

    def line(self, text: str) -> None:
        """One line of C++.  A loop over complex values loses its ``simd`` clause:
        under ``omp simd`` GCC keeps each complex temporary (a struct) in a
        per-lane array in memory and vectorizes nothing, while without it GCC
        vectorizes the loop on its own (and the loop still runs in order)."""
        if self.complex and text.startswith("#pragma omp") and "simd" in text.split():
            if text.startswith("#pragma omp simd"):
                return
            text = text.replace(" simd", "", 1)
        super().line(text)

    # -- values -----------------------------------------------------------------

    def value(self, v: L.Value) -> str:
        """The name of a temporary holding ``v``, computing it (and what it
        reads) first unless it is already in scope."""
        if isinstance(v, L.Constant):
            return literal(v.value, v.dtype)
        if v in self.memo:
            return self.memo[v]
        if isinstance(v, L.Load):
            fwd = self.forwarded.get((v.buffer, v.index))
            if fwd is not None:
                return fwd
            expr = f"{self.param(v.buffer)}[{self.offset(v.buffer, v.index)}]"
        elif isinstance(v, L.Cast) and _float_int_float(v):
            # GCC (without trapping math) folds float -> int -> float into trunc()
            # (in vector loops for every integer type), which keeps the sign of
            # -0.25's zero where NumPy's integer has none: say trunc, and add +0.0
            # (-0.0 + 0.0 is +0.0).  Out of the integer's range NumPy's cast is
            # undefined, and so was the fold.
            zero = "0.0f" if v.dtype.itemsize == 4 else "0.0"
            expr = f"(({ctype(v.dtype)})__builtin_trunc({self.compute(v.value.value)}) + {zero})"
        elif isinstance(v, L.Cast):
            expr = cast(self.compute(v.value), v.dtype)
        elif v.name in MASKED_OPS:
            expr = self._masked(v)
        else:
            template = op_template(v.name, v.args[-1].dtype)
            operands = [self.compute(a) for a in v.args]
            expr = cast(template.format(*operands), v.dtype)
        name = self.tmp()
        self.line(f"{temp_ctype(v) if isinstance(v, L.Load) else ctype(v.dtype)} {name} = {expr};")
        self.memo[v] = name
        return name

    def _masked(self, v: L.Op) -> str:
        """``pad_select``: the fill, or the guarded value computed inside an
        ``if`` on the guard's bounds, so a padded border never reads memory."""
        guard, value, fill, shape = masked_parts(v)
        checks = [f"{render_index(e)} {cmp} {n}" for e, cmp, n in border_checks(guard, shape)]
        if not checks:
            return self.value(value)
        name = self.tmp("m")
        self.line(f"{ctype(v.dtype)} {name} = {self.value(fill)};")
        self.line(f"if ({' && '.join(checks)})")
        self.line("{")
        self.depth += 1
        with self.scope():  # values computed under the condition stay inside it
            self.line(f"{name} = {self.value(value)};")
        self.depth -= 1
        self.line("}")
        return name

    def compute(self, v: L.Value) -> str:
        """``v`` in its compute type: float16 computes in float."""
        text = self.value(v)
        return f"(float){text}" if v.dtype == HALF else text

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """A C++ block: the values computed and the stores forwarded inside it
        are out of scope after it (a loop body, a branch, an ``if``)."""
        saved_memo, saved_forwarded = dict(self.memo), dict(self.forwarded)
        try:
            yield
        finally:
            self.memo, self.forwarded = saved_memo, saved_forwarded

    def store(self, buffer: str, index: tuple[L.Expr, ...], expr: str, dtype) -> None:
        """Store ``expr`` to ``buffer`` at ``index`` (or where ``store_to`` redirects
        it; nowhere for an internal buffer); later loads of it read the temporary."""
        name = self.tmp("st")  # not "s": size symbols are s0, s1, ...
        self.line(f"{ctype(dtype)} {name} = {expr};")
        if buffer in self.store_to:
            self.line(f"{self.store_to[buffer]} = {name};")
        elif buffer not in self.internal:
            self.line(f"out_{buffer}[{self.offset(buffer, index)}] = {name};")
        self.forwarded[(buffer, index)] = name

    def store_pointwise(self, stage: int | None = None) -> None:
        """Each pointwise store of the kernel at the output loops' index (only
        those of ``stage``, if given)."""
        identity = L.loop_index("x", self.kernel.ranges)
        for store in self.kernel.pointwise:
            if stage is None or store.stage == stage:
                self.store(store.buffer, identity, self.value(store.body), store.body.dtype)

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

    def open_block(self, first_line: str) -> None:
        self.line(first_line)
        self.line("{")
        self.depth += 1

    def parallel(self, extra: str = "") -> str:
        return f"#pragma omp parallel for{extra}{self._team()}"

    def parallel_region(self) -> str:
        """A team whose threads each run code of their own after the shared loop."""
        return f"#pragma omp parallel{self._team()}"

    def _team(self) -> str:
        threads = f" num_threads({config.num_threads})" if config.num_threads > 0 else ""
        return threads + self.parallel_if

    def branch(self, condition: str, then: Callable[[], None], otherwise: Callable[[], None]) -> None:
        """``if (condition) {then} else {otherwise}``, each writing its own
        values: what one branch computed is not named in the other."""
        for head, write in ((f"if ({condition})", then), ("else", otherwise)):
            with self.scope():
                self.open_block(head)
                write()
                self.close_loops(1)

    # -- the kernel -------------------------------------------------------------

    def generate(self) -> tuple[str, list[str]]:
        """The kernel's C++ function, and the buffers it takes, in parameter order."""
        k = self.kernel
        out_vars = [v for v in L.loop_vars("x", k.ranges) if v.size != 1]
        red_vars = [v for v in L.loop_vars("r", k.reduction_ranges) if v.size != 1]
        big = k.work >= PARALLEL_MIN_WORK if not is_symbolic(k.work) else True
        if is_symbolic(k.work):  # sizes known at run time: OpenMP decides there
            self.parallel_if = f" if({k.work} >= {PARALLEL_MIN_WORK})"
        if reductions.is_column_reduction(k, self.buffers, out_vars, red_vars):
            reductions.write_columns(self, out_vars, red_vars, big)
            return self._finish()
        axes = tiling.transpose_axes(k, self.buffers, out_vars) if self.writes_whole_output else None
        if axes is not None:
            tiling.write_tiled(self, out_vars, axes, big)
            return self._finish()
        flat = streaming.flat_loop(k, self.buffers, out_vars, self.internal) \
            if big and self.writes_whole_output else None
        if flat is None:
            self._write_nest(out_vars, red_vars, big)
        elif flat[1] is True:
            streaming.write_flat_loop(self, flat[0])
        else:  # whether the outputs are big enough to stream is known at run time
            self.branch(flat[1], lambda: streaming.write_flat_loop(self, flat[0]),
                        lambda: self._write_nest(out_vars, red_vars, big))
        return self._finish()

    def _write_nest(self, out_vars: list[L.Var], red_vars: list[L.Var], big: bool) -> None:
        """The loop nest over the outputs, each row's passes inside it."""
        k = self.kernel
        stream_rows = big and self.writes_whole_output and streaming.row_stores(k, self.buffers, out_vars, red_vars,
                                                                                  self.internal)
        pragmas: dict[int, str] = {}
        inner = len(out_vars) - 1
        simd = bool(out_vars) and not k.reductions and self._contiguous_store(out_vars[-1])
        lanes = interleave.lanes([s.body for s in k.pointwise], out_vars[-1].size) \
            if simd and self.writes_whole_output else 0
        if lanes:
            interleave.write_interleaved(self, out_vars, big, lanes)
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
                reductions.declare_accumulators(self, accs)
        self.open_loops(out_vars, pragmas)
        if out_vars:
            self._plan_row_scratch(red_vars)
            self._prefetch_next_row(out_vars, red_vars)
        identity = L.loop_index("x", k.ranges)
        for stage, accs in enumerate(stages):
            # One pass over the row per stage; a later stage reads the
            # finished results of the earlier ones as scalars.
            if out_vars:
                reductions.declare_accumulators(self, accs)
            reductions.write_loops(self, accs, red_vars, parallel=big and not out_vars, pass_index=stage)
            for acc, store in accs:
                self.store(store.buffer, identity, reductions.result(store, acc, f"{acc}_nan"), store.reduction.dtype)
            self.store_pointwise(stage)
        for store in k.pointwise:
            if store.stage >= len(stages):
                self.store(store.buffer, identity, self.value(store.body), store.body.dtype)
        if k.row_pointwise and stream_rows not in (True, False):  # big enough to stream: known at run time
            self.branch(stream_rows, lambda: self.row_pass(red_vars, False, len(stages), stream=True),
                        lambda: self.row_pass(red_vars, False, len(stages)))
        elif k.row_pointwise:
            self.row_pass(red_vars, parallel=big and not out_vars, pass_index=len(stages), stream=stream_rows)
        self.close_loops(len(out_vars))
        if stream_rows:
            self.line("mc_stream_fence();")
            self.close_loops(1)

    def _contiguous_store(self, var: L.Var) -> bool:
        identity = L.loop_index("x", self.kernel.ranges)
        return all(
            L.linearize(identity, self.buffers[s.buffer].strides).coeff(var) == 1 for s in self.kernel.pointwise
        )

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
        stops at page boundaries), so without this each row begins by waiting
        on memory, and memory sits idle while later passes read the row from L1."""
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

    def enter_pass(self, pass_index: int) -> None:
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

    def row_pass(self, red_vars: list[L.Var], parallel: bool, pass_index: int = 0, stream: bool = False) -> None:
        """The last pass over the row: every row store, at its own index
        (``stream``: streamed out, see :func:`.streaming.write_row_pass`)."""
        if stream:
            streaming.write_row_pass(self, red_vars, parallel, pass_index)
            return
        with self.scope():
            self.row_loop(red_vars, parallel, pass_index)

    def row_loop(self, red_vars: list[L.Var], parallel: bool, pass_index: int) -> None:
        """The loops of the row pass and their stores."""
        pragmas: dict[int, str] = {}
        contiguous = bool(red_vars) and all(
            L.linearize(s.index, self.buffers[s.buffer].strides).coeff(red_vars[-1]) == 1
            for s in self.kernel.row_pointwise)
        if contiguous:
            pragmas[len(red_vars) - 1] = "#pragma omp simd"
        if parallel and red_vars:
            pragmas[0] = self.parallel(" simd" if contiguous and len(red_vars) == 1 else "")
        self.open_loops(red_vars, pragmas)
        self.enter_pass(pass_index)
        for store in self.kernel.row_pointwise:
            self.store(store.buffer, store.index, self.value(store.body), store.body.dtype)
        self.close_loops(len(red_vars))

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


class TileEpilogueWriter(KernelWriter):
    """A pointwise kernel run as a generated matmul's epilogue: the same body,
    over one finished tile ``(b, i0, mr, j0, nr)`` of the product instead of
    the whole output, on the thread that computed the tile (no OpenMP team of
    its own; the inner loop stays ``omp simd``)."""

    writes_whole_output = False

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


def _float_int_float(v: L.Cast) -> bool:
    """A float cast to an integer and back to float32/float64 (what GCC folds to trunc)."""
    inner = v.value
    return (v.dtype.kind == "f" and v.dtype != HALF and isinstance(inner, L.Cast)
            and inner.dtype.kind in "iu" and inner.value.dtype.kind == "f" and inner.value.dtype != HALF)


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


def generate(schedule: Schedule) -> tuple[str, dict[str, list[str]]]:
    """The translation unit for all kernels, and each kernel's pointer arguments.

    A float32 matmul generated as C++ (:mod:`.matmul`) has the entry
    ``mm_<name>``; when the pointwise kernel after it is its epilogue, that
    kernel's entry computes both (arguments ``A, B, product, its own...``) and
    ``mm_<name>``'s argument list is empty: the wrapper only allocates the product.
    An ``attention`` node (:mod:`.attention`) has the entry ``attn_<name>``."""
    headers = list(HEADERS)
    if any(b.dtype.kind == "c" for b in schedule.buffers.values()):
        headers.append(COMPLEX_HEADER)
    parts: list[str] = []
    args: dict[str, list[str]] = {}
    # Size symbols (dynamic shapes): every kernel takes each as an int64_t, last.
    symbols = tuple(input_symbols([p.meta.shape for p in schedule.graph.placeholders]))
    fused = matmul.epilogues(schedule)
    externs = [e for e in schedule.steps if isinstance(e, L.Extern)]
    for ext in externs:
        if ext in fused.values():
            args[matmul.kernel_name(ext, schedule)] = []
        elif (text := matmul.generate(ext, schedule, symbols)) is not None:
            parts.append(text)
            args[matmul.kernel_name(ext, schedule)] = [b for b, _ in matmul.operands(ext, schedule)] + [ext.name]
        elif (found := attention.generate(ext, schedule, symbols)) is not None:
            parts.append(found[0])
            args[attention.kernel_name(ext, schedule)] = found[1]
            if attention.HEADER not in headers:
                headers.append(attention.HEADER)
    kept = schedule.never_stored()  # stores nothing else reads: in registers only
    for kernel in schedule.kernels:
        internal = kept[kernel.name]
        ext = fused.get(kernel.name)
        if ext is not None:
            axes = matmul.tile_axes(tuple(ext.shape), matmul.row_axes(ext, schedule))
            writer = TileEpilogueWriter(kernel, schedule.buffers, internal, axes)
        else:
            writer = KernelWriter(kernel, schedule.buffers, internal)
        writer.symbols = symbols
        text, params = writer.generate()
        for used, header in ((writer.streams, streaming.HEADER), (writer.scheduled, interleave.HEADER)):
            if used and header not in headers:
                headers.append(header)
        parts.append(text)
        if ext is not None:
            parts.append(matmul.generate(ext, schedule, symbols, (kernel.name, writer.array_params)))
            args[kernel.name] = [b for b, _ in matmul.operands(ext, schedule)] + [ext.name] + params
            continue
        reads = len(params) - len(kernel.stores) + len(internal)
        parts.append(_object_entry(kernel.name, [schedule.buffers[b] for b in params], reads, symbols))
        args[kernel.name] = params
    if any(matmul.eligible(e, schedule) is not None for e in externs):
        headers.append(matmul.HEADER)
    head = ["// Generated by minicompile's inductor (C++/OpenMP backend).", includes(headers)]
    return "\n\n".join(head + parts) + "\n", args
