"""argmax/argmin loops for the C++ writer: a vector pass per block, a search only where it matters.

In:  the accumulators of one reduction stage whose reductions are all
     argmax/argmin (each a ``mc_arg<T>`` pair of the prelude, see
     :mod:`.prelude`), and the reduction loops.
Out: C++ lines, through the :class:`ArgBlockLoops` methods the kernel writer
     (:class:`.kernel._KernelWriter`) inherits.

Updating a (value, position) pair per element is a compare and a branch: the
loop does not vectorize, and a plain ``np.argmax`` row ran 4-5x slower than
NumPy's own SIMD loop that way.  So the row is walked in blocks of :data:`ARG_BLOCK`
elements.  A first loop over the block computes its extreme value and whether
it holds a NaN, as ``omp simd`` max/min reductions.  Only when that can change
the pair — a NaN while the pair holds none, a strictly better value, or the
first block of the row — a second loop searches the block for the first
element equal to it (or the first NaN) and stops there.  The block's position
can only be later than the pair's, so this is NumPy's rule exactly: the first
NaN if any, else the first extreme value.  On random data the extreme value of
a row improves in few blocks, so nearly every element is touched only by the
vector loop.
"""
from __future__ import annotations

from ... import loop_ir as L

# Elements per block: long enough for the vector loop to run at full speed,
# short enough that searching a block (the first of every row) costs little.
# np.argmax(x, axis=-1) of float32 on a 2-core AVX2 machine, best of 10, min of
# 3 rounds (4096x4096 / 65536x100): blocks of 64: 4.1 / 3.5 ms, 128: 4.1 / 3.4,
# 256: 4.6 / 3.7, 1024: 6.4 / 3.6; NumPy 5.5 / 4.0; one pair update per
# element (no blocks) took 24 ms on the first.
ARG_BLOCK = 128

_BETTER = {"argmax": ">", "argmin": "<"}


def is_blocked(accs: list, red_vars: list[L.Var]) -> bool:
    """Whether a stage's loops take the blocked form: every reduction of it is
    an argmax/argmin (a sibling sum or max keeps the plain per-element loop)."""
    return bool(red_vars) and bool(accs) and all(store.reduction.is_arg for _, store in accs)


class ArgBlockLoops:
    """The blocked argmax/argmin loops.  Mixed into the C++ kernel writer, whose
    ``line``/``compute``/``memo``/``open_loops``/``parallel``/``render_index``
    they use, with its ``_arg_ctype`` (the pair's value type) and
    ``_arg_identity`` (the value the pair starts from)."""

    def _arg_block_loops(self, accs: list, red_vars: list[L.Var], parallel: bool, pass_index: int) -> None:
        inner = red_vars[-1]
        r, n = inner.name, inner.size
        # Across threads the pairs combine by the prelude's mc_argmax/mc_argmin.
        clauses = "".join(f" reduction(mc_{store.reduction.reduction_type}:{acc})" for acc, store in accs)
        self.open_loops(red_vars[:-1], {0: self.parallel(clauses)} if parallel and len(red_vars) > 1 else {})
        if parallel and len(red_vars) == 1:
            self.line(self.parallel(clauses))
        self.line(f"for (int64_t {r}_a = 0; {r}_a < {n}; {r}_a += {ARG_BLOCK})")
        self.line("{")
        self.depth += 1
        self.line(f"const int64_t {r}_e = {r}_a + {ARG_BLOCK} < {n} ? {r}_a + {ARG_BLOCK} : {n};")
        # The block's extreme value and whether it holds a NaN: one vector loop.
        clauses = ""
        for acc, store in accs:
            red = store.reduction
            self.line(f"{self._arg_ctype(red)} {acc}_m = {self._arg_identity(red)};")
            clauses += f" reduction({red.reduction_type[3:]}:{acc}_m)"
            if red.acc_dtype.kind == "f":
                self.line(f"int {acc}_n = 0;")
                clauses += f" reduction(|:{acc}_n)"
        self._open_block(r, pass_index, "#pragma omp simd" + clauses)
        for acc, store in accs:
            red = store.reduction
            v = self._arg_value(red, store.body)
            self.line(f"{acc}_m = {v} {_BETTER[red.reduction_type]} {acc}_m ? {v} : {acc}_m;")
            if red.acc_dtype.kind == "f":
                self.line(f"{acc}_n |= ({v} != {v});")
        self._close_block()
        # The first element equal to it, searched only where the pair would change.
        for acc, store in accs:
            red = store.reduction
            t = self._arg_ctype(red)
            nan = red.acc_dtype.kind == "f"
            self.line(f"const {t} {acc}_b = " + (f"{acc}_n ? ({t})NAN : {acc}_m;" if nan else f"{acc}_m;"))
            # Every position in this block is later than the pair's, unless the
            # pair is still the identity (position INT64_MAX): INT64_MAX - 1 says so.
            self.line(f"if (mc_{red.reduction_type}_beats({acc}_b, INT64_MAX - 1, {acc}))")
            self.line("{")
            self.depth += 1
            self._open_block(r, pass_index)
            v = self._arg_value(red, store.body)
            found = f"{v} == {acc}_b" + (f" || ({v} != {v} && {acc}_b != {acc}_b)" if nan else "")
            position = self.render_index(red.position())
            self.line(f"if ({found}) {{ {acc} = mc_arg<{t}>{{{v}, (int64_t)({position})}}; break; }}")
            self._close_block()
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        self.close_loops(len(red_vars) - 1)

    def _open_block(self, r: str, pass_index: int, pragma: str = "") -> None:
        if pragma:
            self.line(pragma)
        self.line(f"for (int64_t {r} = {r}_a; {r} < {r}_e; ++{r})")
        self.line("{")
        self.depth += 1
        self._block_memo = dict(self.memo)
        self._enter_pass(pass_index)

    def _close_block(self) -> None:
        self.memo = self._block_memo  # values computed in the loop are out of scope after it
        self.depth -= 1
        self.line("}")

    def _arg_value(self, red: L.Reduction, body: L.Value) -> str:
        t = self._arg_ctype(red)
        name = self.tmp("v")
        self.line(f"{t} {name} = ({t})({self.compute(body)});")
        return name
