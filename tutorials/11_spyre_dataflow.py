# %% [markdown]
# # 11 — A dataflow accelerator: every byte planned before the program runs
#
# A CPU or GPU hides memory behind caches: a load that misses simply waits,
# and the hardware decides what to keep.  IBM's Spyre card has no cache.
# Each of its 32 cores computes only on its own 2 MB scratchpad; data gets
# there by DMA from DRAM or over a ring from another core, and only when an
# instruction says so.  So everything a cache decides at run time — which
# tile lives where, when it arrives, when it may be overwritten — has to be
# decided by the compiler.  `minicompile.spyre` simulates such a card: it
# runs a program's values with NumPy, counts its cycles, and refuses a
# program that the hardware could not run as written.

# %%
import tempfile
from pathlib import Path

import numpy as np

from minicompile.ir import drawing
from minicompile.spyre import (DmaLoad, DmaWait, Program, SpyreConfig, SpyreError, Tile,
                               UninitializedReadError, VectorUnary, simulate)
from minicompile.spyre.matmul_plan import MatmulTiling, choose_tiling, plan_matmul

card = SpyreConfig()
print(f"{card.cores} cores, {card.scratchpad_usable_bytes} usable scratchpad bytes each, "
      f"{card.macs_per_cycle} MACs/cycle/core, DRAM {card.dram_bytes_per_cycle} B/cycle shared")
ridge = card.macs_per_cycle * card.cores / card.dram_bytes_per_cycle
print(f"a matmul needs {ridge:.0f} MACs per DRAM byte to keep all matrix units busy")

# %% [markdown]
# ## What the card refuses
#
# A program that computes on a buffer before any DMA filled it reads
# garbage on real hardware.  The simulator refuses it, naming the core, the
# instruction and the address, so the planner's author can find the bug.

# %%
bad = Program(SpyreConfig(cores=1))
bad.declare("x", (8, 64), "fp16")
bad.buffer(0, "a", 0x100, (8, 64))
bad.buffer(0, "b", 0x800, (8, 64))
bad.emit(0, VectorUnary("exp", Tile("b", 8, 64), Tile("a", 8, 64)))
try:
    simulate(bad, {"x": np.ones((8, 64))})
except UninitializedReadError as e:
    print(type(e).__name__, "->", e)
    assert "core 0" in str(e) and "0x100" in str(e)

# %% [markdown]
# Loading first is not enough: the DMA runs in the background, and reading
# its target before `dma.wait` on its tag is a race.

# %%
bad.cores[0][:0] = [DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in")]
try:
    simulate(bad, {"x": np.ones((8, 64))})
except SpyreError as e:
    print(type(e).__name__, "->", e)
bad.cores[0].insert(1, DmaWait("in"))
simulate(bad, {"x": np.ones((8, 64))})
print("with the wait in place the program runs")

# %% [markdown]
# ## Planning one matmul
#
# `plan_matmul` is a hand-written planner.  It cuts C into output tiles and
# K into chunks so that one core's working set fits its scratchpad, deals
# the tiles to cores round-robin, and while the matrix unit multiplies one
# chunk it already loads the next into a second buffer (double buffering).
# Here is a small, unevenly divisible case on a 4-core card, printed per core.

# %%
small = SpyreConfig(cores=4)
M, N, K = 96, 80, 200
program = plan_matmul(M, N, K, config=small, tiling=MatmulTiling(64, 64, 64))
print(program.core_listing(0))

rng = np.random.default_rng(0)
A = rng.standard_normal((M, K)).astype(np.float16)
B = rng.standard_normal((K, N)).astype(np.float16)
outputs, report = simulate(program, {"A": A, "B": B})
np.testing.assert_allclose(outputs["C"], A.astype(np.float32) @ B.astype(np.float32),
                           rtol=1e-4, atol=1e-3)
print("matches NumPy;", report.total_cycles, "cycles")

# %% [markdown]
# ## The timeline
#
# The report records every instruction on its unit.  As Chrome trace JSON
# it opens in https://ui.perfetto.dev: one row per core and unit, DMA bars
# running under matmul bars when the overlap works.  `write_png` draws the
# same bars with matplotlib.

# %%
print(report)
out_dir = Path(tempfile.mkdtemp(prefix="spyre-"))
trace = report.write_chrome_trace(out_dir / "matmul_trace.json")
print("trace:", trace, f"({len(report.events)} events)")
timeline = out_dir / "matmul_timeline.png"
print(report.write_png(timeline))  # without matplotlib: why there is no picture
if timeline.exists():
    drawing.show(timeline)
assert trace.stat().st_size > 0

# %% [markdown]
# ## Double buffering at 4096³
#
# At full size the functional simulation would run NumPy for every
# instruction, so we time the program with the cycle model alone
# (`functional=False`).  A 256x256 output tile does 64 MACs per byte loaded,
# well above the card's ridge, so the matrix units can stay busy — as long
# as loads overlap compute.

# %%
utilization = {}
for double_buffer in (True, False):
    big = plan_matmul(4096, 4096, 4096, double_buffer=double_buffer)
    _, r = simulate(big, functional=False)
    utilization[double_buffer] = r.matrix_utilization
    print(f"double buffering {'on ' if double_buffer else 'off'}: "
          f"{choose_tiling(4096, 4096, 4096, card, double_buffer=double_buffer)}, "
          f"{r.total_cycles / 1e6:.2f} M cycles, matrix units {r.matrix_utilization:.1%}, "
          f"bottleneck {r.bottleneck}")
assert utilization[True] >= 0.8 and utilization[False] < utilization[True]

# %% [markdown]
# The gap is small here because each load is tiny next to the 256-cycle-deep
# multiply it feeds.  With small tiles the loads are long relative to the
# compute and DRAM is nearly saturated; then the exposed wait of every
# un-overlapped load shows.

# %%
tiny_tiles = MatmulTiling(64, 64, 64)
for double_buffer in (True, False):
    _, r = simulate(plan_matmul(1024, 1024, 512, tiling=tiny_tiles, double_buffer=double_buffer),
                    functional=False)
    utilization[double_buffer] = r.matrix_utilization
    print(f"64x64 tiles, double buffering {'on ' if double_buffer else 'off'}: "
          f"matrix units {r.matrix_utilization:.1%}, DRAM port busy {r.dram_utilization:.1%}")
assert utilization[True] > utilization[False] + 0.05

# %% [markdown]
# ## More cores
#
# The same 1024³ matmul planned for cards of 1 to 32 cores: output tiles
# spread over the cores, and cycles fall nearly linearly until the tiles run
# out and DRAM starts to matter.

# %%
cycles = {}
for cores in (1, 2, 4, 8, 16, 32):
    _, r = simulate(plan_matmul(1024, 1024, 1024, config=SpyreConfig(cores=cores)),
                    functional=False)
    cycles[cores] = r.total_cycles
    speedup = cycles[1] / r.total_cycles
    print(f"{cores:2} cores: {r.total_cycles:>9} cycles, speed-up {speedup:5.1f}x")
assert all(cycles[a] > cycles[b] for a, b in zip(cycles, list(cycles)[1:]))
