"""A hand-written plan for C = A @ B on the Spyre-like card.

In:  M, N, K, the output dtype (fp32, or fp16 through a vector cast), a
     :class:`~.device.SpyreConfig`, and the planner's knobs: double buffering
     on or off, K split across cores (``split_k``), an explicit tile.
Out: a :class:`~.isa.Program` with DRAM tensors ``A`` (M x K, fp16),
     ``B`` (K x N, fp16) and ``C`` (M x N), ready for :func:`~.simulator.simulate`.

The card has no cache, so everything a cache would decide at run time is
decided here, before the program exists:

1. *Tiling.* C is cut into tm x tn output tiles, K into tk chunks; tile
   sizes are picked by a small cost model (compute waves across cores vs
   DRAM traffic) among those whose working set fits the scratchpad.
2. *Work division.* Output tiles go to cores round-robin (output dimensions
   first: no communication). When there are fewer tiles than cores,
   ``split_k`` cores share one tile, each summing a range of K chunks; the
   partial sums meet over the ring in a tree (log2(split_k) rounds).
3. *Data movement.* Each core walks its (tile, K chunk) steps in order;
   with double buffering it loads step s+1 into the other buffer while the
   matrix unit works on step s, and alternates two accumulators so storing
   one tile overlaps computing the next.

The compiler backend generalizes this; here it proves the instruction set
and the simulator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .device import DTYPES, SpyreConfig
from .isa import (ALIGN, Allocator, DmaLoad, DmaStore, DmaWait, Matmul, Program, RingRecv,
                  RingSend, Tile, VectorBinary, VectorUnary)

TILE_SIZES = (8, 16, 32, 64, 128, 256)
K_SIZES = (32, 64, 128, 256, 512)


@dataclass(frozen=True)
class MatmulTiling:
    tm: int
    tn: int
    tk: int
    split_k: int = 1

    def __str__(self) -> str:
        split = f", K split over {self.split_k} cores" if self.split_k > 1 else ""
        return f"tiles {self.tm}x{self.tn}, K chunks of {self.tk}{split}"


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def working_set(t: MatmulTiling, out_dtype: str, double_buffer: bool) -> int:
    """Scratchpad bytes one core needs for this tiling."""
    copies = 2 if double_buffer else 1
    acc = _aligned(t.tm * t.tn * 4)
    operands = _aligned(t.tm * t.tk * 2) + _aligned(t.tk * t.tn * 2)
    cast = _aligned(t.tm * t.tn * 2) if out_dtype == "fp16" else 0
    partial = acc if t.split_k > 1 else 0
    return copies * (acc + operands) + cast + partial


def estimate_cycles(M: int, N: int, K: int, t: MatmulTiling, cfg: SpyreConfig,
                    out_dtype: str, double_buffer: bool) -> float:
    """The planner's own roofline for one tiling: compute waves vs DRAM bytes."""
    d = cfg.matrix_dim
    tiles = math.ceil(M / t.tm) * math.ceil(N / t.tn)
    waves = math.ceil(tiles * t.split_k / cfg.cores)
    chunks = math.ceil(math.ceil(K / t.tk) / t.split_k)
    step = math.ceil(t.tm / d) * math.ceil(t.tn / d) * t.tk + cfg.matrix_fill_cycles
    compute = waves * chunks * step
    unit = cfg.transfer_bytes
    burst = lambda row_bytes: -(-row_bytes // unit) * unit  # noqa: E731  rows move whole units
    per_chunk = t.tm * burst(t.tk * 2) + t.tk * burst(t.tn * 2)
    traffic = (tiles * math.ceil(K / t.tk) * per_chunk
               + M * burst(N * DTYPES[out_dtype].itemsize))
    memory = traffic / cfg.dram_bytes_per_cycle
    load = per_chunk / cfg.dram_bytes_per_cycle + cfg.dram_latency_cycles
    exposed = load if double_buffer else load * waves * chunks
    # Split K pays a tree of ring messages and vector adds per wave of tiles.
    rounds = math.ceil(math.log2(t.split_k))
    message = t.tm * t.tn * 4 / cfg.ring_bytes_per_cycle + t.split_k * cfg.ring_hop_cycles
    add = t.tm * t.tn / (cfg.vector_lanes // 2) + cfg.vector_pipeline_cycles
    reduce = waves * rounds * (message + add)
    return max(compute, memory) + exposed + reduce


def choose_tiling(M: int, N: int, K: int, cfg: SpyreConfig, out_dtype: str = "fp32",
                  double_buffer: bool = True, split_k: int | None = None) -> MatmulTiling:
    """The fitting tiling with the lowest estimate (ties: less traffic, bigger chunks)."""
    def capped(sizes, extent):
        fit = [s for s in sizes if s < extent]
        return fit + [min([s for s in sizes if s >= extent], default=sizes[-1])]

    splits = [split_k] if split_k else [s for s in (1, 2, 4, 8, 16, 32) if s <= cfg.cores]
    best = None
    for tm in capped(TILE_SIZES, M):
        for tn in capped(TILE_SIZES, N):
            for tk in capped(K_SIZES, K):
                for s in splits:
                    if s > 1 and math.ceil(K / tk) < s:
                        continue
                    t = MatmulTiling(tm, tn, tk, s)
                    if working_set(t, out_dtype, double_buffer) > cfg.scratchpad_usable_bytes:
                        continue
                    est = estimate_cycles(M, N, K, t, cfg, out_dtype, double_buffer)
                    traffic = math.ceil(M / tm) * math.ceil(N / tn) * (tm + tn)
                    key = (round(est), s, traffic, -tk)
                    if best is None or key < best[0]:
                        best = (key, t)
    if best is None:
        raise ValueError(f"no tiling of {M}x{N}x{K} fits {cfg.scratchpad_usable_bytes} bytes")
    return best[1]


def plan_matmul(M: int, N: int, K: int, *, out_dtype: str = "fp32",
                config: SpyreConfig | None = None, double_buffer: bool = True,
                split_k: int | None = None, tiling: MatmulTiling | None = None) -> Program:
    """Build the program for C[M, N] = A[M, K] @ B[K, N]; see the module docstring."""
    cfg = config or SpyreConfig()
    t = tiling or choose_tiling(M, N, K, cfg, out_dtype, double_buffer, split_k)
    chunks = list(range(0, K, t.tk))
    # A member with no chunk would have nothing to add, and two members of one
    # group on one core could wait on each other: at most one member per chunk and core.
    t = replace(t, split_k=max(1, min(t.split_k, len(chunks), cfg.cores)))
    program = Program(cfg)
    program.declare("A", (M, K), "fp16")
    program.declare("B", (K, N), "fp16")
    program.declare("C", (M, N), out_dtype, "output")
    tiles = [(i, j) for i in range(0, M, t.tm) for j in range(0, N, t.tn)]
    # Member m of a split-K group sums a contiguous range of K chunks, so each
    # member streams its own slab of A and B.
    ranges = [chunks[m * len(chunks) // t.split_k:(m + 1) * len(chunks) // t.split_k]
              for m in range(t.split_k)]
    jobs: list[list[tuple[int, int]]] = [[] for _ in range(cfg.cores)]
    for n, _ in enumerate(tiles):
        for m in range(t.split_k):
            jobs[(n * t.split_k + m) % cfg.cores].append((n, m))
    for core, mine in enumerate(jobs):
        if mine:
            _emit_core(program, core, mine, tiles, ranges, t, M, N, K, out_dtype, double_buffer)
    return program


def _emit_core(program, core, jobs, tiles, ranges, t, M, N, K, out_dtype, double_buffer):
    cfg = program.config
    alloc = Allocator(program, core)
    copies = 2 if double_buffer else 1
    a = [alloc(f"a{c}", (t.tm, t.tk)) for c in range(copies)]
    b = [alloc(f"b{c}", (t.tk, t.tn)) for c in range(copies)]
    acc = [alloc(f"acc{c}", (t.tm, t.tn), "fp32") for c in range(copies)]
    part = alloc("part", (t.tm, t.tn), "fp32") if t.split_k > 1 else None
    cast = alloc("out16", (t.tm, t.tn), "fp16") if out_dtype == "fp16" else None

    def emit(*instructions):
        program.emit(core, *instructions)

    # Every (job, chunk) step of this core, in order; loads run one step ahead.
    steps = [(j, k0) for j, (n, m) in enumerate(jobs) for k0 in ranges[m]]

    def load(s):
        j, k0 = steps[s]
        i0, j0 = tiles[jobs[j][0]]
        rm, rn, rk = min(t.tm, M - i0), min(t.tn, N - j0), min(t.tk, K - k0)
        emit(DmaLoad(Tile(a[s % copies].name, rm, rk), "A", i0, k0, f"ld{s}"),
             DmaLoad(Tile(b[s % copies].name, rk, rn), "B", k0, j0, f"ld{s}"))

    stored = False
    if double_buffer and steps:
        load(0)
    for s, (j, k0) in enumerate(steps):
        n, member = jobs[j]
        i0, j0 = tiles[n]
        rm, rn, rk = min(t.tm, M - i0), min(t.tn, N - j0), min(t.tk, K - k0)
        if double_buffer and s + 1 < len(steps):
            load(s + 1)
        elif not double_buffer:
            load(s)
        emit(DmaWait(f"ld{s}"))
        out = Tile(acc[j % copies].name, rm, rn)
        emit(Matmul(out, Tile(a[s % copies].name, rm, rk), Tile(b[s % copies].name, rk, rn),
                    accumulate=k0 != ranges[member][0]))
        if k0 == ranges[member][-1]:
            if tree_sum(emit, core, n, member, out, part, t.split_k, cfg.cores):
                _store(emit, out, cast, i0, j0)
                stored = True
    if stored:
        emit(DmaWait("out"))


def tree_sum(emit, core, n, member, acc: Tile, part, split_k: int, cores: int) -> bool:
    """Tree-sum the group's partial tiles over the ring; True on the member that stores.

    Round r: members whose index has bit r set (and no lower bit) send their
    partial sum to the member 2^r below, which adds it."""
    step = 1
    while step < split_k:
        if member % (2 * step) == step:
            emit(RingSend(acc, (core - step) % cores, f"t{n}r{step}"))
            return False
        if member % (2 * step) == 0 and member + step < split_k:
            got = Tile(part.name, acc.rows, acc.cols)
            emit(RingRecv(got, (core + step) % cores, f"t{n}r{step}"),
                 VectorBinary("add", acc, acc, got))
        step *= 2
    return True


def _store(emit, acc: Tile, cast, i0: int, j0: int) -> None:
    if cast is None:
        emit(DmaStore(acc, "C", i0, j0, "out"))
        return
    narrow = Tile(cast.name, acc.rows, acc.cols)
    emit(VectorUnary("cast", narrow, acc), DmaStore(narrow, "C", i0, j0, "out"))
