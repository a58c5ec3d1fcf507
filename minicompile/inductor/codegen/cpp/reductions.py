"""Reductions in C++: accumulators, the loops that fill them, and their results.

In:  the reduction stores of one stage of a kernel, each with the name of its
     accumulator (``accs``: ``[(acc, store)]``), the reduction loop variables,
     and the :class:`~.kernel.KernelWriter` writing the kernel.
Out: C++ lines, written through the writer: :func:`declare_accumulators`,
     :func:`write_loops` (one pass over the row), :func:`result` (the value
     stored at the end); and for a reduction over a non-innermost axis,
     :func:`is_column_reduction` (the decision) and :func:`write_columns` (the
     whole kernel).  Helpers they call live in ``include/mc_reductions.h``.

Every reduction is an OpenMP reduction, so its inner loop vectorizes and a
full reduction splits across threads.  Beyond that, one form per case:

* float max/min: OpenMP's max ignores NaN, NumPy's result is NaN if any
  element is, so a second accumulator ORs "saw a NaN" and wins at the end;
* a float32 sum accumulates in float64 (NumPy's pairwise sum is about that
  exact), but the inner loop adds chunks of :data:`SUM_CHUNK` elements in
  float32 vectors and adds each chunk's sum to the float64 accumulator: a
  float64 vector add per element would be the slowest part of the pass;
* within a chunk, a row's float32 sums keep :data:`SUM_LANES` partial sums in
  independent vectors (:func:`_write_lane_sums`): a single accumulator waits
  on each vector add;
* argmax/argmin keep a (value, position) pair per row, a user-declared OpenMP
  reduction that combines partials by position, so ties pick the lowest
  whatever the threads' order.  Updating the pair per element does not
  vectorize, so the row is walked in blocks of :data:`ARG_BLOCK`
  (:func:`_write_arg_blocks`): a vector loop finds the block's extreme value,
  and only when that can change the pair is the block searched for it;
* ``x.sum(axis=0)``: the inner loop must run over outputs, not rows: blocks of
  :data:`COLUMN_BLOCK` outputs, each with an array of accumulators, and rows
  streamed through the block (:func:`write_columns`).
"""
from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Iterator

import numpy as np

from ... import loop_ir as L
from ...lowering import data_loads
from ...scheduler import Buffer, Kernel, Store
from ....ir.symbolic import is_symbolic, size_hint
from .ops import FLOAT32_KIND, ctype, render_index

if TYPE_CHECKING:
    from .kernel import KernelWriter

Accumulators = list[tuple[str, Store]]  # (accumulator name, the reduction store it computes)

# Outputs per block of a column reduction: its accumulators stay in L1.
COLUMN_BLOCK = 256
# Elements a float32 sum adds in float32 before adding the partial sum to its
# float64 accumulator.
SUM_CHUNK = 256
# Within a chunk, a row kernel's float32 sums keep SUM_LANES partial sums, as
# SUM_LANES // SUM_VECTOR vectors of SUM_VECTOR floats added independently.
SUM_VECTOR = 8
SUM_LANES = 32  # mc_sum_lanes32 folds exactly this many
# argmax/argmin elements per block: long enough for the vector loop to run at
# full speed, short enough that searching a block (the first of every row) costs little.
ARG_BLOCK = 128

# (initial accumulator, combine step) by reduction type and kind.
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
# The OpenMP reduction of each type; argmax/argmin's are declared in
# mc_reductions.h, and their loops are not ``simd`` (a compare-and-branch per element).
OMP_REDUCTION_OP = {"sum": "+", "mean": "+", "prod": "*", "max": "max", "min": "min",
                    "argmax": "mc_argmax", "argmin": "mc_argmin"}
_BETTER = {"argmax": ">", "argmin": "<"}


# -- accumulators ------------------------------------------------------------------


def sums_in_chunks(red: L.Reduction, body: L.Value) -> bool:
    return red.reduction_type in ("sum", "mean") and red.acc_dtype == np.float64 and body.dtype in FLOAT32_KIND


def tracks_nan(red: L.Reduction) -> bool:
    return red.reduction_type in ("max", "min") and red.acc_dtype.kind == "f"


def acc_ctype(store: Store) -> str:
    """The accumulator's C++ type.  A float32 sum of at most SUM_CHUNK elements
    (a convolution's window) accumulates in float32 — exactly what its chunk
    would do in a longer sum, and twice the vector width of float64."""
    red = store.reduction
    count = math.prod(red.reduction_ranges)
    if red.is_arg:
        return f"mc_arg<{ctype(red.acc_dtype)}>"
    if sums_in_chunks(red, store.body) and not is_symbolic(count) and count <= SUM_CHUNK:
        return "float"
    return ctype(red.acc_dtype)


def _identity(red: L.Reduction) -> str:
    return REDUCTION_INIT[(red.reduction_type, red.acc_dtype.kind)].format(t=ctype(red.acc_dtype))


def acc_init(store: Store) -> str:
    red = store.reduction
    return f"{acc_ctype(store)}{{{_identity(red)}, INT64_MAX}}" if red.is_arg else _identity(red)


def declare_accumulators(w: KernelWriter, accs: Accumulators) -> None:
    for acc, store in accs:
        w.line(f"{acc_ctype(store)} {acc} = {acc_init(store)};")
        if tracks_nan(store.reduction):
            w.line(f"int {acc}_nan = 0;")


def result(store: Store, acc: str, nan: str) -> str:
    """The value a reduction stores: its accumulator ``acc`` (NaN where the
    flag ``nan`` says it saw one, divided by the count for a mean, the
    position for an arg-reduction), in the output's type."""
    red = store.reduction
    final = acc
    if tracks_nan(red):
        final = f"{nan} ? ({ctype(red.acc_dtype)})NAN : {acc}"
    if red.reduction_type == "mean":
        final = f"{acc} / (double)({math.prod(red.reduction_ranges)})"
    if red.is_arg:
        final = f"{acc}.i"
    return f"({ctype(red.dtype)})({final})"


def _arg_step(w: KernelWriter, target: str, red: L.Reduction, body: L.Value) -> None:
    """One element of an argmax/argmin: its value and its position in the row."""
    t = ctype(red.acc_dtype)
    step = w.tmp("v")
    w.line(f"{t} {step} = ({t})({w.compute(body)});")
    w.line(f"mc_{red.reduction_type}_step({target}, {step}, (int64_t)({render_index(red.position())}));")


def _accumulate(w: KernelWriter, accs: Accumulators, pass_index: int, targets: dict[str, str]) -> None:
    """The body of a reduction loop: each element's value, added into its
    accumulator (``targets`` names a float32 partial sum instead)."""
    w.enter_pass(pass_index)
    for acc, store in accs:
        red = store.reduction
        if red.is_arg:
            _arg_step(w, acc, red, store.body)
            continue
        t = "float" if acc in targets else acc_ctype(store)
        target = targets.get(acc, acc)
        v = f"({t})({w.compute(store.body)})"
        step = w.tmp("v")
        w.line(f"{t} {step} = {v};")
        combine = REDUCTION_COMBINE[red.reduction_type].format(acc=target, v=step)
        w.line(f"{target} = ({t})({combine});")
        if tracks_nan(red):
            w.line(f"{acc}_nan |= ({step} != {step});")


# -- one pass over the row ------------------------------------------------------------


def write_loops(w: KernelWriter, accs: Accumulators, red_vars: list[L.Var], parallel: bool,
                pass_index: int = 0) -> None:
    """The reduction loops of one stage, accumulating into ``accs`` (declared
    by the caller); ``parallel``: split across threads (a full reduction)."""
    if red_vars and accs and all(store.reduction.is_arg for _, store in accs):
        _write_arg_blocks(w, accs, red_vars, parallel, pass_index)
        return  # (a sibling sum or max keeps the plain per-element loop)
    inner = red_vars[-1] if red_vars else None
    chunked = {acc for acc, store in accs if sums_in_chunks(store.reduction, store.body)}
    scalar = any(store.reduction.is_arg for _, store in accs)  # no simd (see OMP_REDUCTION_OP)
    if inner is None or is_symbolic(inner.size) or inner.size <= SUM_CHUNK or scalar:
        chunked = set()

    def clauses(names: dict[str, str]) -> str:
        text = ""
        for acc, store in accs:
            text += f" reduction({OMP_REDUCTION_OP[store.reduction.reduction_type]}:{names.get(acc, acc)})"
            if tracks_nan(store.reduction):
                text += f" reduction(|:{acc}_nan)"
        return text

    outer = clauses({})
    pragmas: dict[int, str] = {}
    if red_vars and not chunked:
        if not scalar:
            pragmas[len(red_vars) - 1] = "#pragma omp simd" + outer
        if parallel:
            simd = len(red_vars) == 1 and not scalar
            pragmas[0] = w.parallel(" simd" + outer if simd else outer)
    elif parallel and len(red_vars) > 1:
        pragmas[0] = w.parallel(outer)
    if chunked and len(chunked) == len(accs) and inner.size >= SUM_LANES:
        _write_lane_sums(w, accs, red_vars, parallel, pass_index, outer)
        return
    with w.scope():  # values computed inside the reduction loop are out of scope after it
        if not chunked:
            w.open_loops(red_vars, pragmas)
            _accumulate(w, accs, pass_index, {})
            w.close_loops(len(red_vars))
            return
        w.open_loops(red_vars[:-1], pragmas)
        if parallel and len(red_vars) == 1:
            w.line(w.parallel(outer))
        r, n = inner.name, inner.size
        w.open_block(f"for (int64_t {r}_c = 0; {r}_c < {n}; {r}_c += {SUM_CHUNK})")
        for acc in sorted(chunked):
            w.line(f"float {acc}_c = 0;")
        w.line("#pragma omp simd" + clauses({a: f"{a}_c" for a in chunked}))
        w.open_block(f"for (int64_t {r} = {r}_c; {r} < ({r}_c + {SUM_CHUNK} < {n} ? {r}_c + {SUM_CHUNK} : {n}); ++{r})")
        _accumulate(w, accs, pass_index, {a: f"{a}_c" for a in chunked})
        w.close_loops(1)
        for acc in sorted(chunked):
            w.line(f"{acc} += (double){acc}_c;")
        w.close_loops(1)
        w.close_loops(len(red_vars) - 1)


def _write_lane_sums(w: KernelWriter, accs: Accumulators, red_vars: list[L.Var], parallel: bool,
                     pass_index: int, clauses: str) -> None:
    """Float32 sums over a row in chunks of SUM_CHUNK, each chunk adding into
    SUM_LANES partial sums ``acc_p``: element ``r_b + j`` of a block of
    SUM_LANES goes to lane ``j``, and the block's SUM_LANES // SUM_VECTOR
    vector adds do not wait on each other.  The chunk's lanes then add
    pairwise (``mc_sum_lanes32``) into the float64 total, as the chunk's single
    float32 sum did.  The last ``n % SUM_LANES`` elements of the row take the
    plain chunk loop."""
    r = red_vars[-1]
    n, lanes = r.size, SUM_LANES
    body_end = n - n % lanes
    if parallel and len(red_vars) > 1:
        w.line(w.parallel(clauses))
    w.open_loops(red_vars[:-1], {})
    if parallel and len(red_vars) == 1:
        w.line(w.parallel(clauses))
    w.open_block(f"for (int64_t {r.name}_c = 0; {r.name}_c < {body_end}; {r.name}_c += {SUM_CHUNK})")
    for acc, _ in accs:
        w.line(f"float {acc}_p[{lanes}] = {{}};")
    end = f"{r.name}_c + {SUM_CHUNK}"
    if body_end % SUM_CHUNK:
        end = f"({end} < {body_end} ? {end} : {body_end})"
    w.open_block(f"for (int64_t {r.name}_b = {r.name}_c; {r.name}_b < {end}; {r.name}_b += {lanes})")
    w.line(f"#pragma GCC unroll {lanes // SUM_VECTOR}")
    w.open_block(f"for (int64_t {r.name}_k = 0; {r.name}_k < {lanes}; {r.name}_k += {SUM_VECTOR})")
    w.line("#pragma omp simd")
    w.open_block(f"for (int64_t {r.name}_j = {r.name}_k; {r.name}_j < {r.name}_k + {SUM_VECTOR}; ++{r.name}_j)")
    w.line(f"const int64_t {r.name} = {r.name}_b + {r.name}_j;")
    with w.scope():
        _accumulate(w, accs, pass_index, {a: f"{a}_p[{r.name}_j]" for a, _ in accs})
    w.close_loops(3)
    for acc, _ in accs:
        w.line(f"{acc} += (double)mc_sum_lanes32({acc}_p);")
    w.close_loops(1)
    if body_end < n:
        for acc, _ in accs:
            w.line(f"float {acc}_c = 0;")
        names = " ".join(f"reduction(+:{acc}_c)" for acc, _ in accs)
        w.line(f"#pragma omp simd {names}")
        w.open_block(f"for (int64_t {r.name} = {body_end}; {r.name} < {n}; ++{r.name})")
        with w.scope():
            _accumulate(w, accs, pass_index, {a: f"{a}_c" for a, _ in accs})
        w.close_loops(1)
        for acc, _ in accs:
            w.line(f"{acc} += (double){acc}_c;")
    w.close_loops(len(red_vars) - 1)


def _write_arg_blocks(w: KernelWriter, accs: Accumulators, red_vars: list[L.Var], parallel: bool,
                      pass_index: int) -> None:
    """argmax/argmin over the row in blocks of ARG_BLOCK.  A first loop over
    the block computes its extreme value and whether it holds a NaN (``omp
    simd`` max/min reductions).  Only when that can change the pair — a NaN
    while the pair holds none, a strictly better value, or the first block of
    the row — a second loop searches the block for the first element equal to
    it (or the first NaN) and stops there.  The block's positions are all
    later than the pair's, so this is NumPy's rule exactly."""
    inner = red_vars[-1]
    r, n = inner.name, inner.size
    # Across threads the pairs combine by mc_argmax/mc_argmin.
    clauses = "".join(f" reduction(mc_{store.reduction.reduction_type}:{acc})" for acc, store in accs)
    w.open_loops(red_vars[:-1], {0: w.parallel(clauses)} if parallel and len(red_vars) > 1 else {})
    if parallel and len(red_vars) == 1:
        w.line(w.parallel(clauses))
    w.open_block(f"for (int64_t {r}_a = 0; {r}_a < {n}; {r}_a += {ARG_BLOCK})")
    w.line(f"const int64_t {r}_e = {r}_a + {ARG_BLOCK} < {n} ? {r}_a + {ARG_BLOCK} : {n};")
    # The block's extreme value and whether it holds a NaN: one vector loop.
    clauses = ""
    for acc, store in accs:
        red = store.reduction
        w.line(f"{ctype(red.acc_dtype)} {acc}_m = {_identity(red)};")
        clauses += f" reduction({red.reduction_type[3:]}:{acc}_m)"
        if red.acc_dtype.kind == "f":
            w.line(f"int {acc}_n = 0;")
            clauses += f" reduction(|:{acc}_n)"
    with _block_loop(w, r, pass_index, "#pragma omp simd" + clauses):
        for acc, store in accs:
            red = store.reduction
            v = _arg_value(w, red, store.body)
            w.line(f"{acc}_m = {v} {_BETTER[red.reduction_type]} {acc}_m ? {v} : {acc}_m;")
            if red.acc_dtype.kind == "f":
                w.line(f"{acc}_n |= ({v} != {v});")
    # The first element equal to it, searched only where the pair would change.
    for acc, store in accs:
        red = store.reduction
        t = ctype(red.acc_dtype)
        nan = red.acc_dtype.kind == "f"
        w.line(f"const {t} {acc}_b = " + (f"{acc}_n ? ({t})NAN : {acc}_m;" if nan else f"{acc}_m;"))
        # Every position in this block is later than the pair's, unless the
        # pair is still the identity (position INT64_MAX): INT64_MAX - 1 says so.
        w.open_block(f"if (mc_{red.reduction_type}_beats({acc}_b, INT64_MAX - 1, {acc}))")
        with _block_loop(w, r, pass_index):
            v = _arg_value(w, red, store.body)
            found = f"{v} == {acc}_b" + (f" || ({v} != {v} && {acc}_b != {acc}_b)" if nan else "")
            position = render_index(red.position())
            w.line(f"if ({found}) {{ {acc} = mc_arg<{t}>{{{v}, (int64_t)({position})}}; break; }}")
        w.close_loops(1)
    w.close_loops(1)
    w.close_loops(len(red_vars) - 1)


@contextlib.contextmanager
def _block_loop(w: KernelWriter, r: str, pass_index: int, pragma: str = "") -> Iterator[None]:
    """The loop over one block ``r_a .. r_e``, its values out of scope after it."""
    if pragma:
        w.line(pragma)
    w.open_block(f"for (int64_t {r} = {r}_a; {r} < {r}_e; ++{r})")
    with w.scope():
        w.enter_pass(pass_index)
        yield
    w.close_loops(1)


def _arg_value(w: KernelWriter, red: L.Reduction, body: L.Value) -> str:
    t = ctype(red.acc_dtype)
    name = w.tmp("v")
    w.line(f"{t} {name} = ({t})({w.compute(body)});")
    return name


# -- reductions over a non-innermost axis -------------------------------------------------


def is_column_reduction(kernel: Kernel, buffers: dict[str, Buffer], out_vars: list[L.Var],
                        red_vars: list[L.Var]) -> bool:
    """A reduction whose big operands are contiguous along the last output
    loop rather than the last reduction loop (``x.sum(axis=0)``, or a
    depthwise convolution's ``x[h + i, w + j, c] * w[c, i, j]`` over
    ``(i, j)``): the inner loop must run over outputs, not rows.  Operands
    are weighed by size, so a small filter read across does not decide."""
    k = kernel
    if not (out_vars and red_vars and k.reductions) or k.row_pointwise or len(k.stages) > 1:
        return False
    if any(s.stage != 0 for s in k.pointwise):
        return False
    x, r = out_vars[-1], red_vars[-1]
    identity = L.loop_index("x", k.ranges)
    stores = [L.linearize(identity, buffers[s.buffer].strides) for s in k.stores]
    if not all(o.coeff(x) == 1 for o in stores):
        return False
    along_x = along_r = 0
    for s in k.reductions:
        for ld in data_loads(s.body):
            offset = L.linearize(ld.index, buffers[ld.buffer].strides)
            size = size_hint(buffers[ld.buffer].numel)  # a heuristic: the example's sizes
            along_x += size if offset.coeff(x) == 1 else 0
            along_r += size if offset.coeff(r) == 1 else 0
    return along_x > along_r


def write_columns(w: KernelWriter, out_vars: list[L.Var], red_vars: list[L.Var], big: bool) -> None:
    """The kernel of a column reduction: blocks of :data:`COLUMN_BLOCK`
    outputs, each with an array of accumulators; rows stream through the
    block with a vector inner loop; then the results and epilogues (a bias, a
    clip) at each output of the block."""
    k, x = w.kernel, out_vars[-1]
    block = min(COLUMN_BLOCK, size_hint(x.size))  # any block is right: n_b clips the last
    pragmas = {0: w.parallel()} if big else {}
    w.open_loops(out_vars[:-1], pragmas)
    if big and len(out_vars) == 1:
        w.line(w.parallel())
    w.open_block(f"for (int64_t {x.name}_b = 0; {x.name}_b < {x.size}; {x.name}_b += {block})")
    w.line(f"const int64_t n_b = {x.size} - {x.name}_b < {block} ? {x.size} - {x.name}_b : {block};")
    accs = [(w.tmp("acc"), s) for s in k.reductions]
    for acc, store in accs:
        w.line(f"{acc_ctype(store)} {acc}[{block}];")
        w.line(f"for (int64_t i = 0; i < {block}; ++i) {acc}[i] = {acc_init(store)};")
        if tracks_nan(store.reduction):
            w.line(f"int {acc}_nan[{block}] = {{0}};")
    w.open_loops(red_vars, {})
    with w.scope():
        w.line("#pragma omp simd")
        w.open_block("for (int64_t i = 0; i < n_b; ++i)")
        w.line(f"const int64_t {x.name} = {x.name}_b + i;")
        for acc, store in accs:
            red = store.reduction
            if red.is_arg:
                _arg_step(w, f"{acc}[i]", red, store.body)
                continue
            step = w.tmp("v")
            t = acc_ctype(store)
            w.line(f"{t} {step} = ({t})({w.compute(store.body)});")
            combine = REDUCTION_COMBINE[red.reduction_type].format(acc=f"{acc}[i]", v=step)
            w.line(f"{acc}[i] = ({t})({combine});")
            if tracks_nan(red):
                w.line(f"{acc}_nan[i] |= ({step} != {step});")
        w.close_loops(1)
    w.close_loops(len(red_vars))
    w.line("#pragma omp simd")
    w.open_block("for (int64_t i = 0; i < n_b; ++i)")
    w.line(f"const int64_t {x.name} = {x.name}_b + i;")
    identity = L.loop_index("x", k.ranges)
    for acc, store in accs:
        w.store(store.buffer, identity, result(store, f"{acc}[i]", f"{acc}_nan[i]"), store.reduction.dtype)
    w.store_pointwise()
    w.close_loops(2)
    w.close_loops(len(out_vars) - 1)
