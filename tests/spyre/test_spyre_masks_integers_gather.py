"""The card's comparisons, select, integer formats and strided DMA, instruction by instruction."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from minicompile.spyre import (DmaGather, DmaLoad, DmaStore, DmaWait, Program, ProgramError,
                               SpyreConfig, Tile, UninitializedReadError, VectorBinary,
                               VectorSelect, VectorUnary, simulate)
from minicompile.spyre.cost import gather_bytes
from minicompile.spyre.device import DTYPES

RNG = np.random.default_rng(1)


def one_core(inputs: dict, out_shape, out_dtype, body, buffers):
    """Load each input into a buffer of its own name (lower case), run body, store y."""
    p = Program(SpyreConfig(cores=1))
    offset = 0
    for name, (shape, dtype) in buffers.items():
        p.buffer(0, name, offset, shape, dtype)
        offset += -(-int(np.prod(shape)) * DTYPES[dtype].itemsize // 128) * 128
    loads = []
    for name, arr in inputs.items():
        fmt = {np.dtype(v.numpy): k for k, v in DTYPES.items() if v.numpy is not None}[arr.dtype]
        p.declare(name, arr.shape, fmt)
        loads.append(DmaLoad(Tile(name.lower(), *arr.shape), name, 0, 0, "in"))
    p.declare("Y", out_shape, out_dtype, "output")
    p.emit(0, *loads, DmaWait("in"), *body,
           DmaStore(Tile("y", *out_shape), "Y", 0, 0, "out"), DmaWait("out"))
    out, report = simulate(p, inputs)
    return out["Y"], report


A16 = (RNG.integers(-8, 8, (8, 16)) / 4).astype(np.float16)
B16 = (RNG.integers(-8, 8, (8, 16)) / 4).astype(np.float16)
F16_BUFS = {"a": ((8, 16), "fp16"), "b": ((8, 16), "fp16"), "y": ((8, 16), "int8")}


@pytest.mark.parametrize("op,ref", [("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                                    ("ge", np.greater_equal), ("eq", np.equal),
                                    ("ne", np.not_equal)])
def test_comparisons_write_masks(op, ref):
    y, _ = one_core({"A": A16, "B": B16}, (8, 16), "int8",
                    [VectorBinary(op, Tile("y", 8, 16), Tile("a", 8, 16), Tile("b", 8, 16))],
                    F16_BUFS)
    np.testing.assert_array_equal(y, ref(A16, B16).astype(np.int8))
    y, _ = one_core({"A": A16, "B": B16}, (8, 16), "int8",
                    [VectorBinary(op, Tile("y", 8, 16), Tile("a", 8, 16), Tile("b", 1, 16))],
                    F16_BUFS)  # a row broadcast down
    np.testing.assert_array_equal(y, ref(A16, B16[:1]).astype(np.int8))


@pytest.mark.parametrize("a,b", [("tile", "tile"), ("tile", 2.5), (-1.0, "col")])
def test_select_takes_tiles_scalars_and_broadcasts(a, b):
    bufs = {"a": ((8, 16), "fp16"), "b": ((8, 16), "fp16"), "m": ((8, 16), "int8"),
            "y": ((8, 16), "fp32")}
    operand = {"tile": Tile("a", 8, 16), "col": Tile("b", 8, 1)}
    av, bv = (operand.get(a, a), operand.get(b, b))
    y, _ = one_core({"A": A16, "B": B16}, (8, 16), "fp32",
                    [VectorBinary("gt", Tile("m", 8, 16), Tile("a", 8, 16), 0.0),
                     VectorSelect(Tile("y", 8, 16), Tile("m", 8, 16), av, bv)], bufs)
    value = {"tile": A16, "col": B16[:, :1]}
    expect = np.where(A16 > 0, value.get(a, a), value.get(b, b)).astype(np.float32)
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("fmt", ["int8", "int16", "int32", "uint8", "uint16"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_integer_arithmetic_wraps_like_numpy(fmt, op):
    np_type = DTYPES[fmt].numpy
    info = np.iinfo(np_type)
    a = RNG.integers(info.min, info.max, (4, 32), endpoint=True).astype(np_type)
    b = RNG.integers(info.min, info.max, (4, 32), endpoint=True).astype(np_type)
    bufs = {"a": ((4, 32), fmt), "b": ((4, 32), fmt), "y": ((4, 32), fmt)}
    y, _ = one_core({"A": a, "B": b}, (4, 32), fmt,
                    [VectorBinary(op, Tile("y", 4, 32), Tile("a", 4, 32), Tile("b", 4, 32))], bufs)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
           "min": np.minimum}[op]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, ref(a, b))


def test_integer_vector_ops_cost_by_width():
    """int8 and int16 run on every lane, int32 on half (as fp32 does)."""
    cycles = {}
    for fmt in ("int8", "int16", "int32"):
        arr = np.ones((64, 64), DTYPES[fmt].numpy)
        bufs = {"a": ((64, 64), fmt), "y": ((64, 64), fmt)}
        _, report = one_core({"A": arr}, (64, 64), fmt,
                             [VectorBinary("add", Tile("y", 64, 64), Tile("a", 64, 64), 1)], bufs)
        cycles[fmt] = [e for e in report.events if e.unit == "vector"][0]
    span = {f: e.end - e.start for f, e in cycles.items()}
    cfg = SpyreConfig()
    assert span["int8"] == span["int16"] == 64 * 64 // cfg.vector_lanes + cfg.vector_pipeline_cycles
    assert span["int32"] == 64 * 64 // (cfg.vector_lanes // 2) + cfg.vector_pipeline_cycles


def test_integer_division_and_functions_are_refused():
    a = np.ones((4, 32), np.int32)
    bufs = {"a": ((4, 32), "int32"), "y": ((4, 32), "int32")}
    with pytest.raises(ProgramError, match="no integer divider"):
        one_core({"A": a}, (4, 32), "int32",
                 [VectorBinary("div", Tile("y", 4, 32), Tile("a", 4, 32), Tile("a", 4, 32))], bufs)
    with pytest.raises(ProgramError, match="no integer divider"):
        one_core({"A": a}, (4, 32), "int32", [VectorUnary("exp", Tile("y", 4, 32),
                                                          Tile("a", 4, 32))], bufs)


def test_select_refuses_operands_that_do_not_broadcast():
    bufs = {"a": ((8, 16), "fp16"), "m": ((8, 16), "int8"), "y": ((8, 16), "fp32")}
    with pytest.raises(ProgramError, match="does not broadcast"):
        one_core({"A": A16}, (8, 16), "fp32",
                 [VectorSelect(Tile("y", 8, 16), Tile("m", 4, 16), Tile("a", 8, 16), 0.0)], bufs)


# -- strided DMA ----------------------------------------------------------------------------

def gather_program(src: np.ndarray, shape, offset, rs, cs):
    p = Program(SpyreConfig(cores=1))
    p.declare("X", src.shape, "fp16")
    p.declare("Y", shape, "fp16", "output")
    p.buffer(0, "g", 0, shape)
    p.emit(0, DmaGather(Tile("g", *shape), "X", offset, rs, cs, "in"), DmaWait("in"),
           DmaStore(Tile("g", *shape), "Y", 0, 0, "out"), DmaWait("out"))
    return p


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), rs=st.integers(-40, 40),
       cs=st.integers(-40, 40), data=st.data())
def test_gather_reads_any_affine_walk(rows, cols, rs, cs, data):
    src = RNG.standard_normal((20, 50)).astype(np.float16)
    i = np.arange(rows)[:, None] * rs + np.arange(cols)[None, :] * cs
    lo, hi = int(i.min()), int(i.max())
    offset = data.draw(st.integers(-lo, src.size - 1 - hi)) if hi - lo < src.size else None
    if offset is None:
        return
    out, report = simulate(gather_program(src, (rows, cols), offset, rs, cs), {"X": src})
    np.testing.assert_array_equal(out["Y"], src.reshape(-1)[offset + i])
    assert report.dram_bytes_read == gather_bytes(2 * (offset + i), 128)


def test_gather_cost_contiguous_rows_versus_one_unit_per_element():
    src = np.zeros((64, 64), np.float16)
    _, rows = simulate(gather_program(src, (64, 64), 0, 64, 1), {"X": src})
    _, cols = simulate(gather_program(src, (64, 64), 0, 1, 64), {"X": src})
    assert rows.dram_bytes_read == src.nbytes           # one burst per row, whole units
    assert cols.dram_bytes_read == 64 * src.nbytes      # a whole 128-byte unit per element


def test_gather_refusals():
    src = np.zeros((4, 8), np.float16)
    with pytest.raises(ProgramError, match="gather reads elements"):
        simulate(gather_program(src, (4, 8), 1, 8, 1), {"X": src})
    with pytest.raises(ProgramError, match="gather reads elements"):
        simulate(gather_program(src, (2, 2), 0, -1, 1), {"X": src})
    # Only the elements a gather touches must have been written, exactly.
    p = Program(SpyreConfig(cores=1))
    p.declare("X", (4, 4), "fp16")
    p.declare("S", (4, 8), "fp16", "scratch")
    p.declare("Y", (4, 4), "fp16", "output")
    p.buffer(0, "g", 0, (4, 4))
    p.buffer(0, "h", 1024, (4, 4))
    p.emit(0, DmaLoad(Tile("g", 4, 4), "X", 0, 0, "x"), DmaWait("x"),
           DmaStore(Tile("g", 4, 4), "S", 0, 0, "st"), DmaWait("st"))
    ok = DmaGather(Tile("h", 4, 4), "S", 0, 8, 1, "in")            # S[:, :4], written
    bad = DmaGather(Tile("h", 4, 4), "S", 0, 8, 2, "in")           # S[:, ::2] reaches S[:, 4:]
    for gather in (ok, bad):
        q = Program(p.config, dict(p.dram), [dict(b) for b in p.buffers], [list(p.cores[0])])
        q.emit(0, gather, DmaWait("in"), DmaStore(Tile("h", 4, 4), "Y", 0, 0, "out"),
               DmaWait("out"))
        if gather is bad:
            with pytest.raises(UninitializedReadError, match=r"S\[0, 4\]"):
                simulate(q, {}, functional=False)
        else:
            simulate(q, {}, functional=False)
