"""Run a Program: NumPy for the values, a cycle model for the time, and refusals.

In:  a :class:`~.isa.Program` and its DRAM inputs as NumPy arrays.
Out: ``(outputs, report)``: the program's output tensors read back from DRAM,
     and a :class:`~.report.Report` (cycles, utilization, timeline, bottleneck).
     With ``functional=False`` no arithmetic runs and outputs is empty: only
     the cycle model and the checks, which is how large programs are timed.

The values. The vector unit computes in fp32 when any data operand is a float
and in wide integers otherwise; storing into an integer buffer wraps as
two's-complement hardware does (NumPy's rule), a comparison stores a 0/1
mask, ``v.select`` picks by a mask. A gather reads any affine walk over a
DRAM tensor's elements.

The cycle model. Each core has a sequencer that issues its instructions in
order, one per ``issue_cycles``, to four units that run in parallel: a DMA
engine, a ring port, the matrix unit and the vector unit. An instruction
starts when its unit is free and the scratchpad bytes it touches are ready
(it reads after the last write has finished; it writes after earlier reads
and writes of that buffer have finished). Only three instructions stop the
sequencer: ``dma.wait`` (until its tag has landed), ``ring.recv`` (until its
message has arrived) and ``barrier``. DRAM is one port shared by every core
and each ring link is shared by the messages that cross it; both hand out
time through a :class:`~.cost.Calendar`, so their bandwidth is never exceeded.

The refusals: reading scratchpad bytes nothing wrote, touching a DMA load's
target before waiting on its tag, ring messages or barriers that never come
(a deadlock), DRAM loads that race a store (see :mod:`.dram`), plus every
static check of :mod:`.checks`.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from .checks import validate
from .cost import (Calendar, dma_bytes, gather_bytes, matmul_cycles, ring_bytes,
                   vector_cycles)
from .device import DTYPES
from .dram import Dram
from .errors import DmaRaceError, RingDeadlockError, UninitializedReadError
from .isa import (Barrier, DmaGather, DmaLoad, DmaStore, DmaWait, Matmul,
                  Program, Retile, RingBroadcast, RingRecv, RingSend, Tile, VectorBinary,
                  VectorReduce, VectorSelect, VectorUnary, reads, writes)
from .report import Event, build_report

UNARY_NUMPY = {
    "copy": lambda x: x, "cast": lambda x: x, "neg": np.negative, "abs": np.abs,
    "floor": np.floor,
    "relu": lambda x: np.maximum(x, 0), "square": np.square, "reciprocal": np.reciprocal,
    "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "exp": np.exp, "log": np.log,
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
}
BINARY_NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
                "min": np.minimum, "div": np.divide, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
REDUCE_NUMPY = {"sum": np.sum, "max": np.max, "min": np.min}


@dataclass
class CoreState:
    """What one core's sequencer and units know while the program runs."""
    pc: int = 0
    seq: int = 0                       # cycle at which the next instruction issues
    free: dict = field(default_factory=lambda: {"dma": 0, "ring": 0, "matrix": 0, "vector": 0})
    write_done: dict = field(default_factory=dict)   # buffer -> last write finishes
    read_done: dict = field(default_factory=dict)    # buffer -> last read finishes
    tag_done: dict = field(default_factory=dict)     # DMA tag -> last transfer lands
    pending: dict = field(default_factory=dict)      # buffer -> [(tag, tile)] loads not waited
    barriers: int = 0                                # barriers passed
    blocked: bool = False                            # parked on a ring.recv
    finish: int = 0


class Simulator:
    def __init__(self, program: Program, inputs: dict | None, functional: bool):
        self.p, self.cfg, self.functional = program, program.config, functional
        self.high_water = validate(program)
        n = len(program.cores)
        self.state = [CoreState() for _ in range(n)]
        usable = self.cfg.scratchpad_usable_bytes
        self.written = [np.zeros(usable, bool) for _ in range(n)]
        self.memory = [np.zeros(usable, np.uint8) if functional else None for _ in range(n)]
        self.dram_port = Calendar()
        self.links = {(c, d): Calendar() for c in range(n) for d in (1, -1)}
        self.mailbox: dict[tuple, list] = {}
        self.barrier_arrivals: dict[int, dict[int, int]] = {}
        self.events: list[Event] = []
        self.bytes_read = self.bytes_written = self.macs = 0
        self.dram = Dram(program, inputs or {}, functional)

    # -- scratchpad views -------------------------------------------------------------------
    def _view(self, core: int, tile: Tile) -> np.ndarray:
        buf = self.p.buffers[core][tile.buffer]
        arr = self.memory[core][buf.offset:buf.end].view(DTYPES[buf.dtype].numpy)
        arr = arr.reshape(buf.shape)
        return arr[tile.row0:tile.row0 + tile.rows, tile.col0:tile.col0 + tile.cols]

    def _written(self, core: int, tile: Tile) -> tuple[np.ndarray, int, int]:
        """Byte map of a tile (rows x bytes), and the address of its first byte, row stride."""
        buf = self.p.buffers[core][tile.buffer]
        size = DTYPES[buf.dtype].itemsize
        stride = buf.shape[1] * size
        grid = self.written[core][buf.offset:buf.end].reshape(buf.shape[0], stride)
        sub = grid[tile.row0:tile.row0 + tile.rows, tile.col0 * size:(tile.col0 + tile.cols) * size]
        return sub, buf.offset + tile.row0 * stride + tile.col0 * size, stride

    # -- checks that need execution order --------------------------------------------------
    def _check_reads(self, core: int, index: int, ins) -> None:
        for tile in reads(ins):
            self._check_pending(core, index, ins, tile, "reads")
            sub, base, stride = self._written(core, tile)
            if not sub.all():
                r, b = np.unravel_index(np.argmin(sub), sub.shape)
                addr = base + r * stride + b
                raise UninitializedReadError(
                    core, index, ins, f"reads scratchpad address {addr:#x} (buffer "
                    f"{tile.buffer}, tile {tile}) that no instruction wrote")

    def _check_pending(self, core: int, index: int, ins, tile: Tile, verb: str) -> None:
        for tag, other in self.state[core].pending.get(tile.buffer, ()):
            if _intersects(tile, other):
                _, base, _ = self._written(core, other)
                raise DmaRaceError(
                    core, index, ins, f"{verb} {tile} at address {base:#x} while the DMA "
                    f"load into {other} (tag {tag}) may still be in flight; "
                    f"dma.wait {tag} first")

    def _mark_written(self, core: int, index: int, ins) -> None:
        for tile in writes(ins):
            if not isinstance(ins, DmaLoad):
                self._check_pending(core, index, ins, tile, "writes")
            self._written(core, tile)[0][...] = True

    # -- the event loop ----------------------------------------------------------------------
    def run(self):
        n = len(self.p.cores)
        self.participants = [c for c in range(n) if self.p.cores[c]]
        heap = [(0, c) for c in self.participants]
        self.wakeups: list[int] = []
        while heap:
            _, core = heapq.heappop(heap)
            if self._step(core):
                st = self.state[core]
                if st.pc < len(self.p.cores[core]):
                    heapq.heappush(heap, (st.seq, core))
                else:
                    st.finish = max([st.seq, *st.free.values(), *st.tag_done.values()])
            for woken in self.wakeups:
                heapq.heappush(heap, (self.state[woken].seq, woken))
            self.wakeups.clear()
            if len(self.events) % 4096 == 0:
                horizon = min((self.state[c].seq for c in self.participants
                               if self.state[c].pc < len(self.p.cores[c])), default=0)
                self.dram_port.forget_before(horizon)
        self._check_all_finished()
        values = self.dram.values
        outputs = {name: values[name] for name in self.p.outputs} if self.functional else {}
        total = max([s.finish for s in self.state] + [0])
        return outputs, build_report(self, total)

    def _check_all_finished(self) -> None:
        blocked = [c for c in self.participants if self.state[c].pc < len(self.p.cores[c])]
        if not blocked:
            return
        lines, waits_on = [], {}
        for c in blocked:
            ins = self.p.cores[c][self.state[c].pc]
            if isinstance(ins, RingRecv):
                waits_on[c] = ins.src
                lines.append(f"core {c} instruction {self.state[c].pc} `{ins}` waits for a "
                             f"message tagged {ins.tag} from core {ins.src}")
            else:
                missing = [d for d in self.participants if d not in
                           self.barrier_arrivals.get(self.state[c].barriers, {})]
                lines.append(f"core {c} instruction {self.state[c].pc} `{ins}` waits for "
                             f"cores {missing} to reach the barrier")
        cycle = _find_cycle(waits_on)
        why = (f"a cycle of waits {' -> '.join(f'core {c}' for c in cycle)}" if cycle
               else "no core will ever send what these wait for")
        c0 = blocked[0]
        raise RingDeadlockError(c0, self.state[c0].pc, self.p.cores[c0][self.state[c0].pc],
                                f"deadlock, {why}:\n  " + "\n  ".join(lines))

    def _step(self, core: int) -> bool:
        """Issue the core's next instruction; False when it must wait for another core."""
        st = self.state[core]
        index = st.pc
        ins = self.p.cores[core][index]
        handler = HANDLERS[type(ins)]
        if handler(self, core, index, ins, st) is False:
            return False
        st.pc += 1
        return True

    # -- instruction handlers -------------------------------------------------------------
    def _start(self, st: CoreState, unit: str, ins) -> int:
        """Earliest cycle the unit may start ins: issued, unit free, operands ready."""
        t = max(st.seq, st.free[unit])
        for tile in reads(ins):
            t = max(t, st.write_done.get(tile.buffer, 0))
        for tile in writes(ins):
            t = max(t, st.write_done.get(tile.buffer, 0), st.read_done.get(tile.buffer, 0))
        return t

    def _finish(self, core: int, st: CoreState, unit: str, ins, start: int, end: int) -> None:
        st.free[unit] = end
        for tile in reads(ins):
            st.read_done[tile.buffer] = max(st.read_done.get(tile.buffer, 0), end)
        for tile in writes(ins):
            st.write_done[tile.buffer] = max(st.write_done.get(tile.buffer, 0), end)
        self.events.append(Event(core, unit, str(ins), start, end))
        st.seq += self.cfg.issue_cycles

    def _dma(self, core, index, ins, st):
        load = isinstance(ins, (DmaLoad, DmaGather))
        tile = ins.dst if load else ins.src
        tensor = self.p.dram[ins.src if load else ins.dst]
        size = DTYPES[tensor.dtype].itemsize
        stride = tensor.shape[1] * size
        elements = None
        if isinstance(ins, DmaGather):
            elements = ins.flat_indices()
            nbytes = gather_bytes(tensor.address + elements * size, self.cfg.transfer_bytes)
            lo, hi = (int(elements.min()), int(elements.max())) if elements.size else (0, 0)
            width = tensor.shape[1]
            rows = (lo // width, hi // width + 1)
            cols = (lo % width, hi % width + 1) if rows[1] - rows[0] == 1 else (0, width)
        else:
            address = tensor.address + ins.row0 * stride + ins.col0 * size
            nbytes = dma_bytes(address, stride, tile.rows, tile.cols * size,
                               self.cfg.transfer_bytes)
            rows = (ins.row0, ins.row0 + tile.rows)
            cols = (ins.col0, ins.col0 + tile.cols)
        if load:
            self._check_pending(core, index, ins, tile, "loads into")
            self.dram.check_load(core, st.barriers, index, ins, tensor.name, rows, cols, elements)
        else:
            self._check_reads(core, index, ins)
            self.dram.store(core, st.barriers, index, ins, tensor.name, rows, cols)
        start = self._start(st, "dma", ins)
        first, last = self.dram_port.reserve(start, -(-nbytes // self.cfg.dram_bytes_per_cycle))
        landed = last + self.cfg.dram_latency_cycles
        st.tag_done[ins.tag] = max(st.tag_done.get(ins.tag, 0), landed)
        if load:
            self.bytes_read += nbytes
            self._mark_written(core, index, ins)
            st.pending.setdefault(tile.buffer, []).append((ins.tag, tile))
        else:
            self.bytes_written += nbytes
        if self.functional:
            region = (slice(*rows), slice(*cols))
            values = self.dram.values[tensor.name]
            if elements is not None:
                self._view(core, tile)[...] = values.reshape(-1)[elements]
            elif load:
                self._view(core, tile)[...] = values[region]
            else:
                values[region] = self._view(core, tile)
        read_before = st.read_done.get(tile.buffer, 0)
        self._finish(core, st, "dma", ins, first, landed)
        st.free["dma"] = last  # the engine streams the next transfer while this one lands
        if not load:  # the source is free once its bytes have left, not when they land
            st.read_done[tile.buffer] = max(read_before, last)

    def _wait(self, core, index, ins, st):
        st.seq = max(st.seq, st.tag_done.get(ins.tag, 0)) + self.cfg.issue_cycles
        self.dram.waited(core, ins.tag)
        for buffer in list(st.pending):
            st.pending[buffer] = [(t, tile) for t, tile in st.pending[buffer] if t != ins.tag]

    def _matmul(self, core, index, ins, st):
        self._check_reads(core, index, ins)
        start = self._start(st, "matrix", ins)
        m, k, n = ins.a.rows, ins.a.cols, ins.b.cols
        end = start + matmul_cycles(m, n, k, self.cfg)
        self.macs += m * n * k
        self._mark_written(core, index, ins)
        if self.functional:
            product = self._view(core, ins.a).astype(np.float32) @ \
                self._view(core, ins.b).astype(np.float32)
            out = self._view(core, ins.out)
            out[...] = out + product if ins.accumulate else product
        self._finish(core, st, "matrix", ins, start, end)

    def _vector(self, core, index, ins, st):
        self._check_reads(core, index, ins)
        start = self._start(st, "vector", ins)
        dtypes = [self.p.buffers[core][t.buffer].dtype for t in reads(ins) + writes(ins)]
        widest = max(dtypes, key=lambda d: DTYPES[d].itemsize)
        elements = max(t.rows * t.cols for t in reads(ins) + writes(ins))
        end = start + vector_cycles(elements, widest, getattr(ins, "transcendental", False),
                                    self.cfg)
        self._mark_written(core, index, ins)
        if self.functional:
            self._view(core, ins.out)[...] = self._vector_value(core, ins)
        self._finish(core, st, "vector", ins, start, end)

    def _vector_value(self, core, ins) -> np.ndarray:
        """The result, computed in fp32 when any data operand is a float (or the op is
        transcendental), else in wide integers; storing it into an integer out wraps
        as two's-complement hardware does, a float into an integer truncates."""
        data = [getattr(ins, f) for f in ("a", "b") if hasattr(ins, f)]
        floats = getattr(ins, "transcendental", False) or any(
            isinstance(d, float) or (isinstance(d, Tile) and self._is_float(core, d))
            for d in data)
        domain = np.float32 if floats else np.int64

        def value(operand):
            return self._view(core, operand).astype(domain) if isinstance(operand, Tile) \
                else domain(operand)

        match ins:
            case VectorUnary(op=op):
                return UNARY_NUMPY[op](value(ins.a))
            case VectorBinary(op=op, b=b):
                return BINARY_NUMPY[op](value(ins.a), value(b))
            case VectorSelect(mask=mask, a=a, b=b):
                return np.where(self._view(core, mask) != 0, value(a), value(b))
            case VectorReduce(op=op, axis=axis):
                return REDUCE_NUMPY[op](value(ins.a), axis=axis, keepdims=True)
            case Retile(op="transpose"):
                return value(ins.a).T
            case Retile(op="reshape"):
                return value(ins.a).reshape(ins.out.shape)

    def _is_float(self, core: int, tile: Tile) -> bool:
        return DTYPES[self.p.buffers[core][tile.buffer].dtype].name.startswith("fp")

    def _send(self, core, index, ins, st):
        self._check_reads(core, index, ins)
        start = self._start(st, "ring", ins)
        nbytes = ring_bytes(ins.src.rows * ins.src.cols *
                            DTYPES[self.p.buffers[core][ins.src.buffer].dtype].itemsize,
                            self.cfg.transfer_bytes)
        cycles = -(-nbytes // self.cfg.ring_bytes_per_cycle)
        targets = ins.to if isinstance(ins, RingBroadcast) else (ins.to,)
        arrivals, injected = self._route(core, targets, start, cycles)
        data = self._view(core, ins.src).copy() if self.functional else None
        for dst in targets:
            self.mailbox.setdefault((core, dst, ins.tag), []).append((start, arrivals[dst], data))
            if self.state[dst].blocked:  # parked on a recv: let it look at its mailbox again
                self.state[dst].blocked = False
                self.wakeups.append(dst)
        self._finish(core, st, "ring", ins, start, max(arrivals.values()))
        st.free["ring"] = injected

    def _route(self, core: int, targets, start: int, cycles: int) -> tuple[dict, int]:
        """Book the links to each target, each direction as one cut-through chain."""
        n, hop = len(self.p.cores), self.cfg.ring_hop_cycles
        arrivals, injected = {}, start
        clockwise = {d for d in targets if (d - core) % n <= n // 2}
        for direction, mine in ((1, clockwise), (-1, set(targets) - clockwise)):
            if not mine:
                continue
            far = max(((d - core) * direction) % n for d in mine)
            t, node = start, core
            for step in range(1, far + 1):
                first, last = self.links[(node, direction)].reserve(t, cycles)
                if step == 1:
                    injected = max(injected, last)
                node = (node + direction) % n
                if node in mine:
                    arrivals[node] = last + hop
                t = first + hop
        return arrivals, injected

    def _recv(self, core, index, ins, st):
        queue = self.mailbox.get((ins.src, core, ins.tag))
        if not queue:
            st.blocked = True
            return False
        sent, arrival, data = queue.pop(0)
        self._check_pending(core, index, ins, ins.dst, "receives into")
        landed = max(st.seq, arrival, st.write_done.get(ins.dst.buffer, 0),
                     st.read_done.get(ins.dst.buffer, 0))
        self._mark_written(core, index, ins)
        if self.functional:
            self._view(core, ins.dst)[...] = data.reshape(ins.dst.shape)
        st.write_done[ins.dst.buffer] = landed
        # The receiver's ring port is busy from the moment the message leaves its sender.
        self.events.append(Event(core, "ring", str(ins), sent, landed))
        st.seq = landed + self.cfg.issue_cycles

    def _barrier(self, core, index, ins, st):
        arrivals = self.barrier_arrivals.setdefault(st.barriers, {})
        if core not in arrivals:
            arrivals[core] = max([st.seq, *st.free.values(), *st.tag_done.values(),
                                  *st.write_done.values(), *st.read_done.values()])
        if len(arrivals) < len(self.participants):
            return False
        release = max(arrivals.values()) + self.cfg.ring_diameter * self.cfg.ring_hop_cycles
        for c in arrivals:
            other = self.state[c]
            other.seq = release
            self.dram.unwaited[c] = []  # the barrier waited for every store of its cores
            other.barriers += 1
            if c != core:
                other.pc += 1
                if other.pc < len(self.p.cores[c]):
                    self.wakeups.append(c)
                else:
                    other.finish = release
        st.seq = release


HANDLERS = {
    DmaLoad: Simulator._dma, DmaGather: Simulator._dma, DmaStore: Simulator._dma,
    DmaWait: Simulator._wait, VectorSelect: Simulator._vector,
    Matmul: Simulator._matmul, VectorUnary: Simulator._vector, VectorBinary: Simulator._vector,
    VectorReduce: Simulator._vector, Retile: Simulator._vector,
    RingSend: Simulator._send, RingBroadcast: Simulator._send, RingRecv: Simulator._recv,
    Barrier: Simulator._barrier,
}


def _intersects(a: Tile, b: Tile) -> bool:
    return (a.row0 < b.row0 + b.rows and b.row0 < a.row0 + a.rows
            and a.col0 < b.col0 + b.cols and b.col0 < a.col0 + a.cols)


def _find_cycle(waits_on: dict[int, int]) -> list[int]:
    """A cycle in the who-waits-on-whom graph, as [a, b, ..., a], or []."""
    for start in waits_on:
        path, node = [], start
        while node in waits_on and node not in path:
            path.append(node)
            node = waits_on[node]
        if node in path:
            return path[path.index(node):] + [node]
    return []


def simulate(program: Program, inputs: dict | None = None, *, functional: bool = True):
    """Check and run program; return (outputs by DRAM name, Report)."""
    return Simulator(program, inputs, functional).run()
