"""Vector unit values and costs, ring broadcast, printing, and the timeline exports."""
import json

import numpy as np
import pytest

from minicompile.spyre import (Barrier, DmaLoad, DmaStore, DmaWait, Program, ProgramError,
                               Retile, RingBroadcast, RingRecv, SpyreConfig, Tile, VectorBinary,
                               VectorReduce, VectorUnary, simulate)
from minicompile.spyre.isa import UNARY_OPS
from minicompile.spyre.simulator import UNARY_NUMPY

RNG = np.random.default_rng(0)
X = (RNG.random((16, 32)) + 0.5).astype(np.float16)  # positive: log and sqrt are defined


def one_core(out_shape, *body, out_dtype="fp32"):
    """Load X into buffer x, run body, store buffer y (out_shape) to DRAM y."""
    p = Program(SpyreConfig(cores=1))
    p.declare("X", X.shape, "fp16")
    p.declare("Y", out_shape, out_dtype, "output")
    p.buffer(0, "x", 0, X.shape)
    p.buffer(0, "y", 0x2000, out_shape, out_dtype)
    p.buffer(0, "t", 0x4000, (32, 16), "fp32")
    p.emit(0, DmaLoad(Tile("x", *X.shape), "X", 0, 0, "in"), DmaWait("in"), *body,
           DmaStore(Tile("y", *out_shape), "Y", 0, 0, "out"), DmaWait("out"))
    out, report = simulate(p, {"X": X})
    return out["Y"], report


x32 = X.astype(np.float32)
whole = Tile("x", 16, 32)
y = Tile("y", 16, 32)


@pytest.mark.parametrize("op", sorted(UNARY_OPS))
def test_unary(op):
    got, _ = one_core((16, 32), VectorUnary(op, y, whole))
    np.testing.assert_allclose(got, UNARY_NUMPY[op](x32), rtol=1e-6)


@pytest.mark.parametrize("b,expect", [
    (Tile("x", 1, 32), x32 + x32[:1]),            # a row broadcast down
    (Tile("x", 16, 1), x32 + x32[:, :1]),         # a column broadcast across
    (2.5, x32 + 2.5),                             # a scalar
])
def test_binary_broadcasts(b, expect):
    got, _ = one_core((16, 32), VectorBinary("add", y, whole, b))
    np.testing.assert_allclose(got, expect, rtol=1e-6)


@pytest.mark.parametrize("op,axis", [("sum", 0), ("sum", 1), ("max", 0), ("max", 1)])
def test_reductions(op, axis):
    shape = (1, 32) if axis == 0 else (16, 1)
    got, _ = one_core(shape, VectorReduce(op, Tile("y", *shape), whole, axis))
    np.testing.assert_allclose(got, getattr(np, op)(x32, axis=axis, keepdims=True), rtol=1e-5)


def test_transpose_and_reshape():
    got, _ = one_core((16, 32), Retile("transpose", Tile("t", 32, 16), whole),
                      Retile("transpose", y, Tile("t", 32, 16)))
    np.testing.assert_array_equal(got, x32)
    got, _ = one_core((32, 16), Retile("reshape", Tile("y", 32, 16), whole))
    np.testing.assert_array_equal(got, x32.reshape(32, 16))


def test_transcendental_ops_cost_more():
    def vector_cycles(op):
        _, report = one_core((16, 32), VectorUnary(op, y, whole))
        (event,) = [e for e in report.events if e.unit == "vector"]
        return event.end - event.start
    cfg = SpyreConfig()
    cheap, dear = vector_cycles("neg"), vector_cycles("exp")
    pipe = cfg.vector_pipeline_cycles
    assert dear - pipe == cfg.transcendental_factor * (cheap - pipe)


def test_broadcast_over_the_ring():
    p = Program(SpyreConfig(cores=4))
    p.declare("X", X.shape, "fp16")
    p.declare("Y", (48, 32), "fp16", "output")
    for core in range(4):
        p.buffer(core, "x", 0, X.shape)
    p.emit(0, DmaLoad(Tile("x", 16, 32), "X", 0, 0, "in"), DmaWait("in"),
           RingBroadcast(Tile("x", 16, 32), (1, 2, 3), "w"), Barrier())
    for core in (1, 2, 3):
        p.emit(core, RingRecv(Tile("x", 16, 32), 0, "w"),
               VectorUnary("neg", Tile("x", 16, 32), Tile("x", 16, 32)),
               DmaStore(Tile("x", 16, 32), "Y", 16 * (core - 1), 0, "out"), DmaWait("out"),
               Barrier())
    out, report = simulate(p, {"X": X})
    np.testing.assert_array_equal(out["Y"], np.tile(-X, (3, 1)))
    links = report.ring_link_utilization
    assert links[(0, 1)] > 0 and links[(0, -1)] > 0  # both ways round from core 0
    assert links[(1, 1)] > 0 and links[(2, 1)] == 0  # core 2, opposite, is reached via core 1


def test_program_prints_per_core_with_addresses():
    from minicompile.spyre.matmul_plan import plan_matmul
    text = str(plan_matmul(40, 40, 40, config=SpyreConfig(cores=2)))
    assert "dram input  A: fp16[40, 40] @ 0x0" in text
    assert "core 1:" in text and "spad acc0: fp32" in text
    assert "dma.load" in text and "mm " in text and "dma.wait" in text


def test_fp8_runs_only_in_the_cycle_model():
    p = Program(SpyreConfig(cores=1))
    p.declare("X", (8, 128), "fp8")
    p.buffer(0, "x", 0, (8, 128), "fp8")
    p.emit(0, DmaLoad(Tile("x", 8, 128), "X", 0, 0, "in"), DmaWait("in"))
    with pytest.raises(ProgramError, match="functional=False"):
        simulate(p, {"X": np.zeros((8, 128))})
    _, report = simulate(p, functional=False)
    assert report.dram_bytes_read == 8 * 128


def test_timeline_exports(tmp_path):
    _, report = one_core((16, 32), VectorUnary("exp", y, whole))
    trace = json.loads(report.write_chrome_trace(tmp_path / "t.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in spans] == ["dma.load", "v.exp", "dma.store"]
    assert all(e["dur"] > 0 for e in spans)
    message = report.write_png(tmp_path / "t.png")
    assert message.startswith("wrote") or "matplotlib is not installed" in message
    assert "bottleneck" in str(report)
