"""Triton code generation: scheduled kernels -> one Python module of ``@triton.jit`` kernels.

In:  a :class:`~minicompile.inductor.scheduler.Schedule` (the same kernels the
     C++ generator reads), after the Triton passes: matmul Externs (and the
     pointwise kernel right after each) turned into ``MatmulTemplate`` steps
     (:mod:`.matmul`), runs of kernels over the same rows into
     ``RowGroup`` steps (:mod:`.rows`).
Out: the writers of the loop kernels (:func:`pointwise_kernel`,
     :func:`tiled_pointwise_kernel`, :func:`reduction_kernel`; short rows:
     :func:`.unrolled.unrolled_reduction_kernel`), each returning a
     :class:`TritonKernel` (its name, the buffers it takes in parameter order,
     its grid rule and the block sizes worth trying), the helpers the matmul
     template and the row groups write theirs with, and :class:`TritonModule`,
     the module source with its kernels, which :func:`.compile.generate`
     assembles.

Four kernel shapes, the first three named as TorchInductor names them:

* ``triton_poi_*`` — pointwise: the output's loops flattened into one index,
  cut into blocks of ``XBLOCK`` elements; a mask covers the tail block.
  Broadcasting, transposes and strided inputs are index arithmetic on the
  flat index (``x1 = (xindex // 8) % 4``), exactly as the loop IR says.
  When an input is contiguous along another loop than the output's
  innermost one (a transpose), the kernel is *tiled* instead: a
  ``[YBLOCK, XBLOCK]`` tile spans that loop and the innermost one, so the
  input is read along its rows and the output written along its own
  (:func:`tile_axes`); Triton moves the tile between the two layouts.
* ``triton_per_*`` — persistent reduction: a ``[XBLOCK, RBLOCK]`` tile holds
  whole rows (``RBLOCK >= rnumel``), reduced with one ``tl.reduce``;
  pointwise epilogues use the result in registers.
* ``triton_red_*`` — looped reduction: rows too long for one block are walked
  ``RBLOCK`` at a time into a tile of partial accumulators, reduced at the end.
* ``triton_unr_*`` — unrolled reduction (written by :mod:`.unrolled`): a row of
  at most ``UNROLL_MAX`` elements, of static length, is written out — a 1-D
  block of ``XBLOCK`` outputs, one term per row element with the reduction
  variables as constants, combined per lane (no ``RBLOCK``, no cross-lane
  reduction, loads contiguous along the outputs); the depthwise convolution's
  3x3 windows take this form.  Argmax/argmin keep the persistent form.

Shapes and strides are baked in as literals (the guards promise them), so
every loop bound is a compile-time constant — except for a dynamic-shape
graph, whose symbolic sizes (``s0``, ``s1``) are trailing int parameters of
every kernel (:func:`size_params`): bounds, strides and masks are expressions
over them (in 64-bit arithmetic), the wrapper computes the grid from the
runtime sizes, and a row of symbolic length is reduced by the looped form
(``RBLOCK`` cannot follow it).  Exactness follows the C++
backend: correctly rounded ``/`` and ``sqrt`` (``div_rn``/``sqrt_rn``),
NaN-propagating maximum/minimum and max/min reductions, float16 computed in
float32 and rounded after every op, argmax/argmin as NumPy's (the first NaN,
else the first extreme value: ``_argmax_pair`` in the prelude, not
``tl.argmax``).  The op table — each op's Triton form, the reductions'
identities, the prelude — is :mod:`.ops`; ops with no exact form there
(:func:`.ops.unsupported_node`) are left to an Extern by the caller.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ....ir.symbolic import free_symbols, is_symbolic, size_hint
from ... import loop_ir as L
from ...lowering import MASKED_OPS, border_checks, data_loads, masked_parts
from ...scheduler import Buffer, Kernel
from ..common import LineWriter
from .ops import (F32, FLOAT64_OPS, HALF, HALF_OPS, NATURAL, REDUCTION_COMBINE, REDUCTION_FINAL, TRITON_OPS,
                  accumulator_dtype, full, init_value, literal, triton_type)

MAX_NAME_LEN = 56
# Rows up to this long are reduced in one block (persistent reduction).
PERSISTENT_MAX = 4096


def arg_index(w: "ValueWriter", mask: str = "xmask & rmask") -> str:
    """The position of each lane's element in its row (``rindex`` counts the
    reduction loops row-major, as :meth:`L.Reduction.position` does); a
    masked-off lane gets ``rnumel``, later than any element, so it never wins."""
    name = w.tmp("i")
    w.line(f"{name} = tl.where({mask}, rindex, rnumel).to(tl.int64)")
    return name


def arg_final(w: "ValueWriter", red: L.Reduction, values: str, index: str) -> str:
    """The argmax/argmin of each row of a ``[XBLOCK, RBLOCK]`` pair of tiles."""
    value, result = w.tmp("red"), w.tmp("red")
    w.line(f"{value}, {result} = tl.reduce(({values}, {index}), 1, _{red.reduction_type}_pair)")
    w.line(f"{result} = {result}[:, None]")
    return result


def render_index(expr: L.Expr, positions: dict[L.Indirect, str] | None = None) -> str:
    """An index expression over the kernel's loop-variable tensors (all >= 0);
    a gathered position is the tensor named in ``positions`` (see ValueWriter.position)."""

    def atom(a: L.Atom) -> str:
        if isinstance(a, L.Var):
            return a.name
        if isinstance(a, L.Indirect):
            return positions[a]
        op = "//" if isinstance(a, L.FloorDiv) else "%"
        return f"(({render_index(a.base, positions)}) {op} {size_text(a.divisor)})"  # the base may be a sum

    return expr.render(atom)


def size_text(n: object) -> str:
    """A size as an operand: a symbolic one (``s0*s1 + 3``) in parentheses."""
    return f"({n})" if is_symbolic(n) else str(n)


def size_params(buffers: dict[str, Buffer]) -> list[str]:
    """The size symbols a kernel takes as int arguments: every symbol of the schedule's buffers."""
    names = set().union(*(free_symbols(b.shape) for b in buffers.values())) if buffers else set()
    return sorted(names, key=lambda s: int(s[1:]))


def next_power_of_2(n: int) -> int:
    n = size_hint(n)  # a symbolic size: a block chosen for the example's size
    return 1 << max(n - 1, 0).bit_length()


def kernel_name(kind: str, index: int, origins: list[str], op_of: dict[str, str], prefix: str = "") -> str:
    """``triton_poi_fused_exp_mul_0``: kind, the distinct ops computed, position
    (after ``prefix``: the graph's, ``g1_``)."""
    ops = list(dict.fromkeys(op_of[o] for o in origins if o in op_of))
    name = f"{prefix}triton_{kind}_fused"
    for op in ops:
        if len(name) + 1 + len(op) > MAX_NAME_LEN:
            break
        name += "_" + op
    return f"{name}_{index}"


# The start of a gather's assertion message; the runtime raises it as IndexError.
OUT_OF_BOUNDS = "index out of bounds for an axis of size "


@dataclass
class TritonKernel:
    """One generated kernel, as the runtime launches it.

    ``grid`` is ``("flat", numel, block_param)`` (programs = cdiv(numel, block)),
    ``("tiles", outer, ny, nx)`` (programs = outer x ``YBLOCK`` x ``XBLOCK`` tiles)
    or ``("matmul", M, N, batch)`` (programs = tiles of one product x batch); ``configs`` are the launch settings worth trying
    (block sizes and ``num_warps``/``num_stages``), the first being the default.
    """

    name: str
    kind: str  # "pointwise" | "tiled" | "persistent" | "looped" | "unrolled" | "matmul"
    params: list[str]  # buffers, in parameter order
    grid: tuple
    configs: list[dict[str, int]]
    source: str = ""
    writes: list[str] = field(default_factory=list)
    sizes: list[str] = field(default_factory=list)  # size symbols, int parameters after the buffers
    # The dtypes of the buffer parameters: Triton types a kernel by its pointers, so
    # the same code on other dtypes is another binary.
    dtypes: tuple[str, ...] = ()
    # The name of an earlier kernel of the module with the same code (the same layer
    # of a model, again): this one is that kernel, launched on other buffers.
    same_as: str | None = None

    def canonical(self) -> str:
        """The kernel's code with its name and parameter names replaced by positions,
        with its parameters' dtypes, grid and configs: equal for two kernels that
        compile to the same binary."""
        header = re.search(r"def \w+\(([^)]*)\)", self.source)
        names = [p.split(":")[0].strip() for p in header.group(1).split(",")] if header else []
        text = re.sub(rf"\b{re.escape(self.name)}\b", "kernel", self.source)
        for i, name in enumerate(n for n in names if n.startswith(("in_", "out_"))):
            text = re.sub(rf"\b{re.escape(name)}\b", f"arg{i}", text)
        return repr((text, self.dtypes, self.grid, self.configs, self.sizes))


@dataclass
class TritonModule:
    source: str
    kernels: dict[str, TritonKernel]  # keyed by the schedule step's id()


class ValueWriter(LineWriter):
    """Emits SSA lines for loop-IR values; shared by every kernel shape.

    ``loads`` gives each buffer read its pointer parameter; ``mask`` is the
    mask expression of the current scope; ``forwarded`` maps a (buffer, index)
    already in registers (a reduction result, the matmul accumulator) to its name.
    """

    render_index = staticmethod(render_index)

    def __init__(self, buffers: dict[str, Buffer], written: set[str], kept: frozenset[str] = frozenset()):
        super().__init__(buffers, written)
        self.kept = kept  # values nothing outside the kernel reads: held in registers, never stored
        self.mask = "xmask"
        self.zero_block = "0 * xindex"  # a block of zeros shaped like the stores
        self.block_vars: set[str] = set()  # loop variables that each span only part of the block

    def tmp(self, prefix: str = "tmp") -> str:
        return super().tmp(prefix)

    pointer = LineWriter.param  # Triton passes buffers as pointers

    def value(self, v: L.Value) -> str:
        if isinstance(v, L.Constant):
            return literal(v.value, v.dtype)
        if v in self.memo:
            return self.memo[v]
        if isinstance(v, L.Load):
            fwd = self.forwarded.get((v.buffer, v.index))
            if fwd is not None:
                return fwd
            flat = L.linearize(v.index, self.buffers[v.buffer].strides)
            positions = {atom: self.position(atom) for atom in L.indirect_atoms(v)}
            offset = render_index(flat, positions)
            if self.buffers[v.buffer].numel == 0:
                # Never really read (every lane is masked off), and there is no element 0.
                expr = f"tl.load({self.pointer(v.buffer)} + tl.where({self.mask}, 0, 0), {self.mask}, other=0)"
            elif flat.free_vars():
                # An index over loops that are scalars in this kernel (a tiled
                # kernel's outer loops) is spread over the block, as the mask is.
                names = {var.name for var in flat.free_vars()}
                spread = f" + {self.zero_block}" if self.block_vars and not names & self.block_vars else ""
                expr = f"tl.load({self.pointer(v.buffer)} + ({offset}){spread}, {self.mask}, other=0)"
            else:  # a fixed element (a broadcast scalar): in bounds, no mask; loaded as a
                # block all the same, so every value has the block's shape
                expr = f"tl.load({self.pointer(v.buffer)} + {offset} + {self.zero_block})"
        elif isinstance(v, L.Cast) and isinstance(v.value, L.Constant):  # typed, as NumPy casts it
            expr = full("[]", np.asarray(v.value.value, v.value.dtype).astype(v.dtype).item(), v.dtype)
        elif isinstance(v, L.Cast):
            expr = self.cast(self.compute(v.value), v.value.dtype, v.dtype)
        elif v.name in MASKED_OPS:
            expr = self.masked(v)
        else:
            expr = self.op(v)
        name = self.tmp()
        self.line(f"{name} = {expr}")
        self.memo[v] = name
        return name

    def op(self, v: L.Op) -> str:
        loop_dtype = v.args[-1].dtype
        operands = [self.compute(a) for a in v.args]
        constants_only = all(isinstance(a, L.Constant) for a in v.args)
        if constants_only:
            # Only constants (np.sin(2)): Triton would compute on Python numbers in
            # float32 and int32; the loop's dtype is NumPy's (float64 here).
            operands = [full("[]", a.value, np.dtype(np.float32) if a.dtype == HALF else a.dtype) for a in v.args]
        if v.name in ("maximum", "minimum") and loop_dtype.kind == "f" and isinstance(v.args[0], L.Constant):
            # The NaN test of a constant is decided here (Triton cannot compare two constexprs).
            if math.isnan(v.args[0].value):
                expr = f"{operands[1]} + NAN"  # NaN whatever the other side is
            else:
                # Ties keep the second operand, as NumPy's float32/float64 loops do
                # (np.maximum(-0.0, 0.0) is +0.0); its float16 loop keeps the first.
                cmp = ">" if v.name == "maximum" else "<"
                cmp += "=" if loop_dtype == HALF else ""
                expr = f"tl.where({operands[0]} {cmp} {operands[1]}, {operands[0]}, {operands[1]})"
        elif v.name == "power":
            exponent = int(v.args[1].value)
            expr = " * ".join([operands[0]] * exponent) if exponent else f"({operands[0]} * 0 + 1)"
        else:
            template = FLOAT64_OPS.get(v.name) if loop_dtype == np.dtype(np.float64) else None
            template = HALF_OPS.get(v.name, template) if loop_dtype == np.dtype(np.float16) else template
            expr = (template or TRITON_OPS[v.name][loop_dtype.kind]).format(*operands)
        if v.dtype not in NATURAL:
            expr = f"({expr}).to({triton_type(v.dtype)})"
        if constants_only:
            # A 0-d result is spread over the block (a select keeps its dtype and the
            # sign of a zero): Triton's interpreter cannot `|` a 0-d boolean with a block.
            scalar = self.tmp()
            self.line(f"{scalar} = {expr}")
            expr = f"tl.where({self.zero_block} == 0, {scalar}, {scalar})"
        return expr

    def masked(self, v: L.Op) -> str:
        """``pad_select``: the fill where the guard's index is outside its bounds (a
        padded border), else the guarded value, whose loads are masked by the same
        check so that a border lane never reads memory."""
        guard, value, fill, bounds = masked_parts(v)
        checks = [f"(({render_index(e)}) {cmp} {size_text(n)})" for e, cmp, n in border_checks(guard, bounds)]
        if not checks:  # the whole value (x[...] = c): a constant typed, as a store types it
            return full("[]", value.value, value.dtype) if isinstance(value, L.Constant) else self.value(value)
        inside = self.tmp("inside")
        self.line(f"{inside} = {' & '.join(checks)}")
        outer_mask, outer_memo, outer_forwarded = self.mask, dict(self.memo), dict(self.forwarded)
        self.mask = f"{outer_mask} & {inside}"
        try:  # values computed under the narrower mask are not reused outside it
            guarded = self.value(value)
        finally:
            self.mask, self.memo, self.forwarded = outer_mask, outer_memo, outer_forwarded
        return f"tl.where({inside}, {guarded}, {self.value(fill)})"

    @staticmethod
    def cast(text: str, src: np.dtype, dst: np.dtype) -> str:
        if src == dst:
            return text
        if dst.kind == "b":
            return f"{text} != 0"  # NumPy: nonzero is True (a plain cast would truncate)
        return f"{text}.to({triton_type(dst)})"

    def position(self, atom: L.Indirect) -> str:
        """The int64 tensor of a gathered position, in ``[0, size)``: the index read,
        a negative one counted from the end.  An index out of range raises
        IndexError where kernels can raise (Triton's interpreter, whose
        ``device_assert`` is on); compiled for the GPU, the assert is off and the
        index wraps around, as CuPy's gathers do.  ``clip`` mode clamps instead."""
        if atom in self.memo:
            return self.memo[atom]
        raw = self.compute(atom.value)
        index, n = self.tmp(), size_text(atom.size)
        self.line(f"{index} = {raw}.to(tl.int64)")
        if atom.mode == "clip":
            self.line(f"{index} = tl.minimum(tl.maximum({index}, 0), {n} - 1)")
        else:
            if atom.mode == "raise":
                self.line(f"tl.device_assert(({index} >= -{n}) & ({index} < {n}), "
                          f"\"{OUT_OF_BOUNDS}{n}\", {self.mask})")
            self.line(f"{index} = {index} % {n}")
            self.line(f"{index} = tl.where({index} < 0, {index} + {n}, {index})")
        self.memo[atom] = index
        return index

    def compute(self, v: L.Value) -> str:
        """``v`` in its compute dtype: float16 computes in float32."""
        text = self.value(v)
        return f"{text}.to(tl.float32)" if v.dtype == HALF and not isinstance(v, L.Constant) else text

    def varies(self, value: L.Value) -> bool:
        """Whether ``value`` is a block (it reads a moving index or a value held per element)."""
        return any(any(i.free_vars() for i in ld.index) or (ld.buffer, ld.index) in self.forwarded
                   for ld in L.loads(value))

    def store(self, buffer: str, index: tuple[L.Expr, ...], value: L.Value | str, shape: str, mask: str) -> None:
        """``out[index] = value``; a value that does not vary over the block is broadcast.
        A kept value (``self.kept``) is only held: later loads of it read the register."""
        if isinstance(value, str):
            text = value
        elif isinstance(value, L.Constant):
            text = full(shape, value.value, value.dtype)
        else:
            text = self.value(value)
            if not self.varies(value):
                text = f"tl.broadcast_to({text}, {shape})"
        self.forwarded[(buffer, index)] = text
        if buffer in self.kept:
            return
        offset = self.offset(buffer, index)
        used = {v.name for i in index for v in i.free_vars()}
        if not used or not self.block_vars <= used:
            offset += f" + {self.zero_block}"  # the pointer must span the whole block (sizes of 1)
        self.line(f"tl.store(out_{buffer} + ({offset}), {text}, {mask})")


def index_vars(writer: ValueWriter, prefix: str, ranges: tuple[int, ...], flat: str) -> None:
    """``x1 = (xindex // 4) % 3``: each loop variable from the flat block index."""
    strides = L.contiguous_strides(ranges)
    symbolic = is_symbolic(ranges)
    for i, (var, stride) in enumerate(zip(L.loop_vars(prefix, ranges), strides)):
        if var.size == 1:
            continue
        expr = flat if stride == 1 else f"({flat} // {size_text(stride)})"
        # Symbolic sizes: every loop but the outermost wraps (a no-op where it could not).
        if (i > 0 and any(size_hint(n) != 1 for n in ranges[:i])) if symbolic \
                else stride * var.size < math.prod(ranges):
            expr = f"{expr} % {size_text(var.size)}"
        writer.line(f"{var.name} = {expr}")


def needs_int64(kernel: Kernel, buffers: dict[str, Buffer]) -> bool:
    touched = [buffers[b].numel for b in buffers]
    if is_symbolic(touched) or is_symbolic(kernel.work):
        return True  # sizes known at run time: 64-bit indices, right for any of them
    return max([kernel.work, *touched], default=0) >= 2**31


def signature(name: str, writer: ValueWriter, outs: list[str], blocks: list[str]) -> tuple[str, list[str]]:
    sizes = size_params(writer.buffers)
    params = [f"in_{b}" for b in writer.reads] + [f"out_{b}" for b in outs] + sizes
    params += [f"{b}: tl.constexpr" for b in blocks]
    # Triton passes an int below 2**31 as int32: sizes widen first, so products of them cannot overflow.
    widen = "".join(f"\n    {s} = {s}.to(tl.int64)" for s in sizes)
    return f"@triton.jit\ndef {name}({', '.join(params)}):{widen}", writer.reads + outs


def stored(kernel: Kernel, kept: frozenset[str], stores: list | None = None) -> list[str]:
    """The buffers of ``stores`` (default: all of the kernel's) written to memory."""
    return [s.buffer for s in (kernel.stores if stores is None else stores) if s.buffer not in kept]


def pointwise_kernel(kernel: Kernel, name: str, buffers: dict[str, Buffer],
                     kept: frozenset[str] = frozenset()) -> TritonKernel:
    w = ValueWriter(buffers, kernel.buffers_written, kept)
    numel = math.prod(kernel.ranges)
    pid = "tl.program_id(0).to(tl.int64)" if needs_int64(kernel, buffers) else "tl.program_id(0)"
    w.line(f"xnumel = {numel}")
    w.line(f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)")
    w.line("xmask = xindex < xnumel")
    index_vars(w, "x", kernel.ranges, "xindex")
    identity = L.loop_index("x", kernel.ranges)
    for store in kernel.pointwise:
        w.store(store.buffer, identity, store.body, "[XBLOCK]", "xmask")
    outs = stored(kernel, kept, kernel.pointwise)
    header, params = signature(name, w, outs, ["XBLOCK"])
    block = min(1024, next_power_of_2(numel))
    configs = [dict(XBLOCK=block, num_warps=4)]
    configs += [dict(XBLOCK=b, num_warps=nw) for b in (512, 1024, 2048) for nw in (4, 8)
                if b <= next_power_of_2(numel) and (b, nw) != (block, 4)]
    return TritonKernel(name, "pointwise", params, ("flat", numel, "XBLOCK"), configs,
                        "\n".join([header] + w.lines), outs)


# A loop shorter than this is not worth a tile of its own.
TILE_MIN = 8


def tile_axes(kernel: Kernel, buffers: dict[str, Buffer]) -> tuple[int, int] | None:
    """``(y, x)``: the loops a pointwise kernel is tiled over, or None for a flat kernel.

    ``x`` is the output's innermost loop (its stores are contiguous along
    it).  A read that moves along ``x`` by a stride other than 0 or 1 is not
    coalesced in a flat kernel; if it moves by 1 along another loop ``y``,
    tiling ``y`` x ``x`` makes both the read and the write contiguous.  The
    ``y`` most bytes are read along wins."""
    dims = [i for i, n in enumerate(kernel.ranges) if n > 1]
    if len(dims) < 2 or size_hint(kernel.ranges[dims[-1]]) < TILE_MIN:
        return None
    x = dims[-1]
    votes: dict[int, int] = {}
    for store in kernel.pointwise:
        for load in data_loads(store.body):  # a pad's guard is only checked, never read
            flat = L.linearize(load.index, buffers[load.buffer].strides)
            # A symbolic stride is a Scaled variable (``x1*(s0)``): its coefficient is the product.
            terms = [(a.atom, c * a.factor) if isinstance(a, L.Scaled) else (a, c) for a, c in flat.terms]
            if not all(isinstance(atom, L.Var) for atom, _ in terms):
                continue  # divided or wrapped indices (padding, windows): left to the flat kernel
            coeff = {atom.name: c for atom, c in terms}
            if coeff.get(f"x{x}", 0) in (0, 1):
                continue  # contiguous or broadcast along the output's rows
            for y in dims[:-1]:
                if coeff.get(f"x{y}") == 1 and size_hint(kernel.ranges[y]) >= TILE_MIN:
                    votes[y] = votes.get(y, 0) + buffers[load.buffer].dtype.itemsize
    if not votes:
        return None
    return max(votes, key=lambda y: (votes[y], y)), x


def tiled_pointwise_kernel(kernel: Kernel, name: str, buffers: dict[str, Buffer],
                           axes: tuple[int, int], kept: frozenset[str] = frozenset()) -> TritonKernel:
    """A pointwise kernel over ``[YBLOCK, XBLOCK]`` tiles of loops ``axes``;
    the other loops are the program's outer index (scalars)."""
    y, x = axes
    ny, nx = kernel.ranges[y], kernel.ranges[x]
    outer_ranges = tuple(1 if i in axes else n for i, n in enumerate(kernel.ranges))
    w = ValueWriter(buffers, kernel.buffers_written, kept)
    pid = "tl.program_id(0).to(tl.int64)" if needs_int64(kernel, buffers) else "tl.program_id(0)"
    yvar, xvar = f"x{y}", f"x{x}"
    w.line(f"ynumel, xnumel = {ny}, {nx}")
    w.line(f"pid = {pid}")
    w.line("tiles_y, tiles_x = (ynumel + YBLOCK - 1) // YBLOCK, (xnumel + XBLOCK - 1) // XBLOCK")
    if math.prod(outer_ranges) > 1:
        w.line("outer = pid // (tiles_y * tiles_x)")
    w.line(f"{yvar} = (pid // tiles_x) % tiles_y * YBLOCK + tl.arange(0, YBLOCK)[:, None]")
    w.line(f"{xvar} = pid % tiles_x * XBLOCK + tl.arange(0, XBLOCK)[None, :]")
    w.line(f"xmask = ({yvar} < ynumel) & ({xvar} < xnumel)")
    w.zero_block, w.block_vars = f"0 * ({yvar} + {xvar})", {yvar, xvar}
    index_vars(w, "x", outer_ranges, "outer")
    identity = L.loop_index("x", kernel.ranges)
    for store in kernel.pointwise:
        w.store(store.buffer, identity, store.body, "[YBLOCK, XBLOCK]", "xmask")
    outs = stored(kernel, kept, kernel.pointwise)
    header, params = signature(name, w, outs, ["YBLOCK", "XBLOCK"])
    configs = [dict(YBLOCK=yb, XBLOCK=xb, num_warps=nw)
               for yb, xb, nw in ((32, 32, 4), (64, 64, 4), (64, 64, 8), (32, 64, 4), (64, 32, 4), (128, 32, 8),
                                  (32, 128, 8))
               if yb <= max(32, next_power_of_2(ny)) and xb <= max(32, next_power_of_2(nx))]
    return TritonKernel(name, "tiled", params, ("tiles", math.prod(outer_ranges), ny, nx), configs,
                        "\n".join([header] + w.lines), outs)


def finish_reduction(w: ValueWriter, red: L.Reduction, acc_dtype: np.dtype, result: str, rnumel: object,
                     tree: bool = False) -> str:
    """A row's accumulated ``result`` (a name, in ``acc_dtype``) made the reduction's
    value: a mean divided by the count in the accumulator's dtype (as np.mean;
    correctly rounded), then cast to the reduction's dtype.  ``tree``: the row was
    summed as a tree of its elements alone (``tl.reduce``), where NumPy's sum starts
    from +0.0: a row of negative zeros sums to +0.0 there, -0.0 in the tree.  Returns
    the name holding it (``result``, rewritten in place)."""
    if tree and red.reduction_type in ("sum", "mean") and acc_dtype.kind == "f":
        w.line(f"{result} = tl.where({result} == 0, 0.0, {result})")
    if red.reduction_type == "mean":
        divide = "tl.div_rn({0}, {1})" if acc_dtype == F32 else "{0} / {1}"
        count = f"rnumel.to({triton_type(acc_dtype)})" if is_symbolic(rnumel) else repr(float(rnumel))
        w.line(f"{result} = " + divide.format(result, count))
    if red.dtype != acc_dtype:
        w.line(f"{result} = {w.cast(result, acc_dtype, red.dtype)}")
    return result


def is_persistent(rnumel: object) -> bool:
    """Whether a row fits one block; a symbolic length is walked (the looped form)."""
    return not is_symbolic(rnumel) and rnumel <= PERSISTENT_MAX


def reduction_kernel(kernel: Kernel, name: str, buffers: dict[str, Buffer],
                     kept: frozenset[str] = frozenset()) -> TritonKernel:
    """A persistent (whole row in one block) or looped reduction, plus its epilogue."""
    w = ValueWriter(buffers, kernel.buffers_written, kept)
    xnumel, rnumel = math.prod(kernel.ranges), math.prod(kernel.reduction_ranges)
    persistent = is_persistent(rnumel)
    pid = "tl.program_id(0).to(tl.int64)" if needs_int64(kernel, buffers) else "tl.program_id(0)"
    w.line(f"xnumel = {xnumel}")
    w.line(f"rnumel = {rnumel}")
    w.line(f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    w.line("xmask = xindex < xnumel")
    index_vars(w, "x", kernel.ranges, "xindex")
    w.line("rbase = tl.arange(0, RBLOCK)[None, :]")
    accs = []
    for store in kernel.reductions:
        red = store.reduction
        acc_dtype = accumulator_dtype(red)
        accs.append((store, red, acc_dtype, init_value(red.reduction_type, acc_dtype)))
    if not persistent:
        for i, (store, red, acc_dtype, init) in enumerate(accs):
            w.line(f"acc{i} = tl.full([XBLOCK, RBLOCK], {init}, {triton_type(acc_dtype)})")
            if red.is_arg:  # each lane's position, later than any element until it holds one
                w.line(f"pos{i} = tl.full([XBLOCK, RBLOCK], 0, tl.int64) + rnumel")
        w.line("for roffset in range(0, rnumel, RBLOCK):")
        w.depth += 1
        w.line("rindex = roffset + rbase")
    else:
        w.line("rindex = rbase")
    w.line("rmask = rindex < rnumel")
    index_vars(w, "r", kernel.reduction_ranges, "rindex")
    saved = dict(w.memo)
    w.mask = "xmask & rmask"
    tiles = []
    for i, (store, red, acc_dtype, init) in enumerate(accs):
        v = w.cast(w.compute(store.body), np.dtype(F32) if store.body.dtype == HALF else store.body.dtype, acc_dtype)
        tile = w.tmp("v")
        w.line(f"{tile} = tl.where(xmask & rmask, {v}, {init})")
        position = arg_index(w) if red.is_arg else None
        if not persistent and red.is_arg:
            w.line(f"acc{i}, pos{i} = _{red.reduction_type}_pair(acc{i}, pos{i}, {tile}, {position})")
            tile, position = f"acc{i}", f"pos{i}"
        elif not persistent:
            combine = REDUCTION_COMBINE[red.reduction_type].format(acc=f"acc{i}", v=tile)
            w.line(f"acc{i} = {combine}")
            tile = f"acc{i}"
        tiles.append((tile, position))
    if not persistent:
        w.depth -= 1
    w.memo = saved  # values from inside the row loop are out of scope
    w.mask = "xmask"
    identity = L.loop_index("x", kernel.ranges)
    for (store, red, acc_dtype, _), (tile, position) in zip(accs, tiles):
        if red.is_arg:
            w.store(store.buffer, identity, arg_final(w, red, tile, position), "[XBLOCK, 1]", "xmask")
            continue
        result = w.tmp("red")
        final = REDUCTION_FINAL[red.reduction_type].format(v=tile)
        if red.reduction_type in ("max", "min") and acc_dtype.kind == "f":
            final = f"{final} + _nan_of({tile}, 1)"
        w.line(f"{result} = ({final})[:, None]")
        # (A looped row starts from a block of +0.0: only the persistent one is a tree of its elements.)
        w.store(store.buffer, identity, finish_reduction(w, red, acc_dtype, result, rnumel, tree=persistent),
                "[XBLOCK, 1]", "xmask")
    for store in kernel.pointwise:
        w.store(store.buffer, identity, store.body, "[XBLOCK, 1]", "xmask")
    outs = stored(kernel, kept)
    header, params = signature(name, w, outs, ["XBLOCK", "RBLOCK"])
    if persistent:
        rblock = next_power_of_2(rnumel)
        xblock = max(1, min(next_power_of_2(xnumel), 1024 // rblock))
        warps = 4 if rblock <= 1024 else (8 if rblock <= 2048 else 16)
        configs = [dict(XBLOCK=xblock, RBLOCK=rblock, num_warps=warps)]
        configs += [dict(XBLOCK=xb, RBLOCK=rblock, num_warps=nw) for xb in (1, 2, 4, 8) for nw in (4, 8, 16)
                    if xb * rblock <= 8192 and xb <= next_power_of_2(xnumel) and (xb, nw) != (xblock, warps)]
    else:
        configs = [dict(XBLOCK=1, RBLOCK=1024, num_warps=4)]
        configs += [dict(XBLOCK=xb, RBLOCK=rb, num_warps=nw) for xb in (1, 2) for rb in (512, 1024, 2048)
                    for nw in (4, 8) if (xb, rb, nw) != (1, 1024, 4) and xb <= next_power_of_2(xnumel)]
        if is_symbolic(rnumel) and next_power_of_2(rnumel) < 1024:
            # A row of symbolic length, short in the example: blocks sized by it, several rows a program.
            rblock = max(16, next_power_of_2(rnumel))
            xblock = max(1, min(next_power_of_2(xnumel), 1024 // rblock))
            configs.insert(0, dict(XBLOCK=xblock, RBLOCK=rblock, num_warps=4))
    kind = "persistent" if persistent else "looped"
    return TritonKernel(name, kind, params, ("flat", xnumel, "XBLOCK"), configs,
                        "\n".join([header] + w.lines), outs)
