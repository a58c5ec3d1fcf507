"""The cycle model against a roofline written from the device's parameters.

The roofline knows nothing of the simulator: a program takes at least its
arithmetic divided by the card's peak (MACs / (64 per core x cores), or
vector elements / lanes), and at least its DRAM bytes divided by the shared
port's 128 B/cycle. A well-planned program should come within 15% of the
larger of the two; the simulator adds only start-up latencies and the
imperfect overlap that a real schedule has."""
import numpy as np
import pytest

from minicompile.spyre import (DmaLoad, DmaStore, DmaWait, Program, SpyreConfig, Tile,
                               VectorBinary, simulate)
from minicompile.spyre.matmul_plan import choose_tiling, plan_matmul


def roofline(cfg: SpyreConfig, *, macs=0, vector_elements=0, dram_bytes=0) -> dict:
    compute = macs / (cfg.macs_per_cycle * cfg.cores) + vector_elements / (
        cfg.vector_lanes * cfg.cores)
    memory = dram_bytes / cfg.dram_bytes_per_cycle
    return {"compute": compute, "memory": memory, "cycles": max(compute, memory),
            "bound": "compute" if compute >= memory else "memory"}


def stream_add(rows: int, cols: int, chunk: int, cfg: SpyreConfig) -> Program:
    """Z = X + Y in fp16, rows dealt to cores in chunks, loads double-buffered."""
    p = Program(cfg)
    for name in "XY":
        p.declare(name, (rows, cols), "fp16")
    p.declare("Z", (rows, cols), "fp16", "output")
    for core in range(cfg.cores):
        mine = list(range(core * chunk, rows, cfg.cores * chunk))
        for c in range(2):
            for name in "xyz":
                p.buffer(core, f"{name}{c}", (3 * c + "xyz".index(name)) * chunk * cols * 2,
                         (chunk, cols))

        def load(s):
            t = lambda n: Tile(f"{n}{s % 2}", chunk, cols)  # noqa: E731
            p.emit(core, DmaLoad(t("x"), "X", mine[s], 0, f"in{s}"),
                   DmaLoad(t("y"), "Y", mine[s], 0, f"in{s}"))

        load(0)
        for s, r in enumerate(mine):
            if s + 1 < len(mine):
                load(s + 1)
            t = lambda n: Tile(f"{n}{s % 2}", chunk, cols)  # noqa: E731
            p.emit(core, DmaWait(f"in{s}"), VectorBinary("add", t("z"), t("x"), t("y")),
                   DmaStore(t("z"), "Z", r, 0, "out"))
        p.emit(core, DmaWait("out"))
    return p


def within(simulated: int, predicted: float, tolerance: float = 0.15) -> bool:
    return abs(simulated - predicted) <= tolerance * predicted


def test_compute_bound_matmul_meets_the_roofline():
    cfg = SpyreConfig()
    M = N = K = 2048
    t = choose_tiling(M, N, K, cfg)
    tiles = (M // t.tm) * (N // t.tn)
    line = roofline(cfg, macs=M * N * K, dram_bytes=tiles * (t.tm + t.tn) * K * 2 + M * N * 4)
    assert line["bound"] == "compute"
    _, report = simulate(plan_matmul(M, N, K, config=cfg), functional=False)
    assert report.bottleneck == "compute"
    assert within(report.total_cycles, line["cycles"]), (report.total_cycles, line)


def test_memory_bound_stream_meets_the_roofline():
    cfg = SpyreConfig()
    rows, cols = 4096, 512
    line = roofline(cfg, vector_elements=rows * cols, dram_bytes=3 * rows * cols * 2)
    assert line["bound"] == "memory"
    _, report = simulate(stream_add(rows, cols, 16, cfg), functional=False)
    assert report.bottleneck == "memory"
    assert report.dram_bytes_read + report.dram_bytes_written == 3 * rows * cols * 2
    assert within(report.total_cycles, line["cycles"]), (report.total_cycles, line)


def test_stream_add_values():
    cfg = SpyreConfig(cores=4)
    rng = np.random.default_rng(1)
    X, Y = (rng.standard_normal((64, 128)).astype(np.float16) for _ in range(2))
    out, _ = simulate(stream_add(64, 128, 8, cfg), {"X": X, "Y": Y})
    np.testing.assert_array_equal(out["Z"], (X.astype(np.float32) + Y).astype(np.float16))


def test_cycles_fall_as_cores_grow():
    cycles = {}
    for cores in (1, 2, 4, 8, 16, 32):
        cfg = SpyreConfig(cores=cores)
        _, report = simulate(plan_matmul(1024, 1024, 1024, config=cfg), functional=False)
        cycles[cores] = report.total_cycles
    counts = sorted(cycles)
    assert all(cycles[a] > cycles[b] for a, b in zip(counts, counts[1:])), cycles
    assert cycles[1] / cycles[32] > 25, cycles  # near-linear: the matmul is compute-bound


@pytest.fixture(scope="module")
def big_matmul():
    return {db: simulate(plan_matmul(4096, 4096, 4096, double_buffer=db), functional=False)[1]
            for db in (True, False)}


def test_double_buffered_4096_cubed_keeps_the_matrix_units_busy(big_matmul):
    assert big_matmul[True].matrix_utilization >= 0.80
    assert big_matmul[False].matrix_utilization < big_matmul[True].matrix_utilization
    # Without double buffering each step's load is exposed: DMA no longer hides under compute.
    assert big_matmul[False].cores[0].dma > 10 * big_matmul[True].cores[0].dma


def test_small_tiles_show_what_double_buffering_hides():
    from minicompile.spyre.matmul_plan import MatmulTiling
    t = MatmulTiling(64, 64, 64)
    util = {db: simulate(plan_matmul(1024, 1024, 512, tiling=t, double_buffer=db),
                         functional=False)[1].matrix_utilization for db in (True, False)}
    assert util[True] > util[False] + 0.05, util


def compiled_report(fn, *shapes):
    """The compiled program for fn's inputs of these shapes, timed by the cycle model."""
    import minicompile as mc
    from minicompile.inductor.codegen.spyre.compile import compile_graph
    programs = []

    def backend(graph, example_inputs):
        programs.append(compile_graph(graph, example_inputs, functional=False))
        return programs[-1]
    mc.reset()
    mc.compile(fn, backend=backend)(*(np.zeros(s, np.float32) for s in shapes))
    assert not programs[-1].report.host_steps
    return programs[-1].report


@pytest.mark.parametrize("name,fn,bytes_moved", [
    ("select", lambda x, y: np.where(x > y, x, y * 0.5), 3),
    ("mask", lambda x, y: (x > 0) & (y < x), 2.5),       # two fp16 inputs, an int8 mask out
    ("axis-0 sum", lambda x, y: x.sum(axis=0) + y.sum(axis=0), 2),  # transposed reads
])
def test_new_vector_kinds_meet_the_memory_roofline(name, fn, bytes_moved):
    """Comparisons, select and transposed (gathered) reads are costed from the same
    device numbers: a memory-bound kernel of them comes within 15% of the roofline."""
    cfg = SpyreConfig()
    rows, cols = 8192, 512
    line = roofline(cfg, vector_elements=rows * cols, dram_bytes=bytes_moved * rows * cols * 2)
    assert line["bound"] == "memory"
    report = compiled_report(fn, (rows, cols), (rows, cols))
    moved = report.dram_bytes_read + report.dram_bytes_written
    assert within(moved, bytes_moved * rows * cols * 2, 0.01), moved
    assert report.bottleneck == "memory"
    assert within(report.total_cycles, line["cycles"]), (report.total_cycles, line)
