"""Each rule the card enforces, broken once by a small hand-written program.

Every refusal must be the right SpyreError subclass and its message must name
the core, the instruction (index and text) and the address involved, so the
author of a planner can find the wrong line in the listing."""
import re

import numpy as np
import pytest

from minicompile.spyre import (Barrier, DmaLoad, DmaRaceError, DmaStore, DmaWait, Matmul,
                               OperandLocationError, Program, RingDeadlockError, RingRecv,
                               RingSend, ScratchpadOverflowError, ScratchpadOverlapError,
                               SpyreConfig, SpyreError, Tile, UninitializedReadError,
                               VectorUnary, simulate)

X = np.ones((8, 64), np.float16)


def small_program(cores: int = 2) -> Program:
    p = Program(SpyreConfig(cores=cores))
    p.declare("x", (8, 64), "fp16")
    p.declare("y", (8, 64), "fp16", "output")
    return p


def refused(program: Program, cls: type, *needles: str) -> str:
    with pytest.raises(cls) as info:
        simulate(program, {"x": X})
    message = str(info.value)
    assert isinstance(info.value, SpyreError)
    for needle in needles:
        assert re.search(needle, message), f"{needle!r} not in: {message}"
    return message


def test_a_correct_program_runs():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           DmaStore(Tile("a", 8, 64), "y", 0, 0, "out"), DmaWait("out"))
    out, report = simulate(p, {"x": X})
    np.testing.assert_array_equal(out["y"], X)
    assert report.dram_bytes_read == X.nbytes == report.dram_bytes_written


def test_reading_bytes_nothing_wrote():
    p = small_program()
    p.buffer(1, "a", 0x400, (8, 64))
    p.buffer(1, "b", 0x800, (8, 64))
    p.emit(1, VectorUnary("exp", Tile("b", 8, 64), Tile("a", 8, 64)))
    refused(p, UninitializedReadError, r"core 1", r"instruction 0 `v\.exp", r"address 0x400")


def test_partly_written_tile_names_the_first_unwritten_byte():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "b", 0x400, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 4, 64), "x", 0, 0, "in"), DmaWait("in"),
           VectorUnary("tanh", Tile("b", 8, 64), Tile("a", 8, 64)))
    refused(p, UninitializedReadError, r"instruction 2", r"address 0x200")  # row 4 of 128 B rows


def test_reading_a_dma_target_before_waiting():
    p = small_program()
    p.buffer(0, "a", 0x1000, (8, 64))
    p.buffer(0, "b", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"),
           VectorUnary("exp", Tile("b", 8, 64), Tile("a", 8, 64)), DmaWait("in"))
    refused(p, DmaRaceError, r"core 0", r"instruction 1 `v\.exp", r"address 0x1000", r"tag in")


def test_overwriting_a_dma_target_in_flight():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "b", 0x400, (8, 64))
    p.emit(0, DmaLoad(Tile("b", 8, 64), "x", 0, 0, "t"), DmaWait("t"),
           DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"),
           VectorUnary("copy", Tile("a", 8, 64), Tile("b", 8, 64)))
    refused(p, DmaRaceError, r"instruction 3", r"writes a\[8x64\]", r"address 0x0")


def test_allocating_past_the_usable_scratchpad():
    p = small_program()
    usable = p.config.scratchpad_usable_bytes
    p.buffer(0, "big", usable - 512, (8, 64))  # 1 KiB, half of it past the end
    p.emit(0, DmaLoad(Tile("big", 8, 64), "x", 0, 0, "in"), DmaWait("in"))
    refused(p, ScratchpadOverflowError, r"core 0", r"instruction 0 `dma\.load",
            hex(usable - 512), str(usable))


def test_overlapping_live_buffers():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "b", 0x200, (8, 64))  # shares 0x200..0x400 with a
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           VectorUnary("exp", Tile("b", 8, 64), Tile("a", 8, 64)))
    refused(p, ScratchpadOverlapError, r"core 0", r"instruction 2 `v\.exp",
            r"0x200\.\.0x600", r"0x0\.\.0x400")


def test_reusing_an_address_after_its_buffer_died_is_allowed():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "b", 0x400, (8, 64))
    p.buffer(0, "c", 0, (8, 64))  # a's bytes, after a's last use
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           VectorUnary("neg", Tile("b", 8, 64), Tile("a", 8, 64)),
           VectorUnary("neg", Tile("c", 8, 64), Tile("b", 8, 64)),
           DmaStore(Tile("c", 8, 64), "y", 0, 0, "out"), DmaWait("out"))
    out, _ = simulate(p, {"x": X})
    np.testing.assert_array_equal(out["y"], X)


def test_compute_operand_in_dram():
    p = small_program()
    p.declare("w", (64, 64), "fp16")
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "c", 0x400, (8, 64), "fp32")
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           Matmul(Tile("c", 8, 64), Tile("a", 8, 64), Tile("w", 64, 64)))
    w_address = p.dram["w"].address
    refused(p, OperandLocationError, r"core 0", r"instruction 2 `mm", hex(w_address), r"DRAM")


def test_receive_with_no_matching_send():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.emit(0, RingRecv(Tile("a", 8, 64), 1, "never"))
    p.buffer(1, "a", 0, (8, 64))
    p.emit(1, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           RingSend(Tile("a", 8, 64), 0, "other"))
    refused(p, RingDeadlockError, r"core 0", r"instruction 0 `ring\.recv", r"tagged never",
            r"no core will ever send")


def test_a_cycle_of_ring_waits():
    p = small_program(cores=3)
    for core in range(3):
        p.buffer(core, "a", 0, (8, 64))
        p.buffer(core, "b", 0x400, (8, 64))
        nxt, prev = (core + 1) % 3, (core - 1) % 3
        p.emit(core, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
               RingRecv(Tile("b", 8, 64), prev, "token"), RingSend(Tile("a", 8, 64), nxt, "token"))
    message = refused(p, RingDeadlockError, r"instruction 2 `ring\.recv", r"cycle of waits")
    assert all(f"core {c}" in message for c in range(3))


def test_a_barrier_one_core_never_reaches():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"), Barrier("sync"))
    p.buffer(1, "a", 0, (8, 64))
    p.emit(1, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"))
    refused(p, RingDeadlockError, r"core 0", r"instruction 2 `barrier", r"cores \[1\]")


def test_passing_a_ring_token_around_works():
    p = small_program(cores=3)
    p.buffer(0, "a", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           RingSend(Tile("a", 8, 64), 1, "token"))
    for core in (1, 2):
        p.buffer(core, "a", 0, (8, 64))
        p.emit(core, RingRecv(Tile("a", 8, 64), core - 1, "token"))
    p.emit(1, RingSend(Tile("a", 8, 64), 2, "token"))
    p.emit(2, VectorUnary("neg", Tile("a", 8, 64), Tile("a", 8, 64)),
           DmaStore(Tile("a", 8, 64), "y", 0, 0, "out"), DmaWait("out"))
    out, report = simulate(p, {"x": X})
    np.testing.assert_array_equal(out["y"], -X)
    assert report.ring_link_utilization[(0, 1)] > 0 and report.ring_link_utilization[(1, 1)] > 0


def test_a_planner_tiling_too_big_for_the_scratchpad():
    from minicompile.spyre.matmul_plan import MatmulTiling, plan_matmul
    program = plan_matmul(512, 512, 4096, tiling=MatmulTiling(256, 256, 1024))
    where = r"core 0, instruction \d+ `dma\.load.*past the 1625216 bytes \(0x18cc80\)"
    with pytest.raises(ScratchpadOverflowError, match=where):
        simulate(program, functional=False)


def handoff(barrier: bool, wait: bool = True) -> Program:
    """Core 0 stores x to DRAM scratch s; core 1 loads s back and stores it to y."""
    p = small_program()
    p.declare("s", (8, 64), "fp16", "scratch")
    for core in (0, 1):
        p.buffer(core, "a", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           DmaStore(Tile("a", 8, 64), "s", 0, 0, "out"), *([DmaWait("out")] if wait else []))
    p.emit(1, *([Barrier()] if barrier else []), DmaLoad(Tile("a", 8, 64), "s", 0, 0, "in"),
           DmaWait("in"), DmaStore(Tile("a", 8, 64), "y", 0, 0, "out"), DmaWait("out"))
    if barrier:
        p.emit(0, Barrier())
    return p


def test_dram_handoff_between_cores_needs_a_barrier():
    out, _ = simulate(handoff(barrier=True), {"x": X})
    np.testing.assert_array_equal(out["y"], X)
    s_address = hex(handoff(True).dram["s"].address)
    refused(handoff(barrier=False), DmaRaceError, r"core 1", r"instruction 0 `dma\.load",
            s_address, r"before core 0 stores it", r"no barrier")


def test_loading_back_a_store_before_waiting_on_it():
    p = small_program()
    p.declare("s", (8, 64), "fp16", "scratch")
    p.buffer(0, "a", 0, (8, 64))
    p.buffer(0, "b", 0x400, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "x", 0, 0, "in"), DmaWait("in"),
           DmaStore(Tile("a", 8, 64), "s", 0, 0, "st"),
           DmaLoad(Tile("b", 4, 64), "s", 4, 0, "back"), DmaWait("back"))
    refused(p, DmaRaceError, r"core 0", r"instruction 3", hex(p.dram["s"].address + 4 * 128),
            r"dma\.wait st first")


def test_loading_dram_nothing_stored():
    p = small_program()
    p.buffer(0, "a", 0, (8, 64))
    p.emit(0, DmaLoad(Tile("a", 8, 64), "y", 0, 0, "in"), DmaWait("in"))
    refused(p, UninitializedReadError, r"core 0", r"instruction 0 `dma\.load",
            hex(p.dram["y"].address), r"no store wrote")
