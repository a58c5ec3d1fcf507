"""Off-chip memory as the simulator sees it: values, what was written, and by whom.

In:  the Program's DRAM tensors and the caller's input arrays; then, as the
     program runs, each DMA load and store with its core, barrier epoch and tag.
Out: the tensors' values (functional runs), and refusals for DMA loads that
     read DRAM no one wrote, or that race a store: a store by this core not yet
     waited on, or a store by another core with no barrier in between.

A core's *epoch* counts the barriers it has passed. A barrier waits for every
transfer its cores issued, so a store in epoch e is visible to every core
from epoch e + 1 on, and to its own core once its tag has been waited.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import DTYPES
from .errors import DmaRaceError, ProgramError, UninitializedReadError
from .isa import DmaStore, Program


@dataclass(frozen=True)
class Store:
    core: int
    epoch: int
    tag: str
    rows: tuple[int, int]
    cols: tuple[int, int]

    def overlaps(self, rows: tuple[int, int], cols: tuple[int, int]) -> bool:
        return (self.rows[0] < rows[1] and rows[0] < self.rows[1]
                and self.cols[0] < cols[1] and cols[0] < self.cols[1])


class Dram:
    def __init__(self, program: Program, inputs: dict, functional: bool):
        self.p = program
        self.values: dict[str, np.ndarray] = {}
        self.written = {name: np.zeros(t.shape, bool) for name, t in program.dram.items()
                        if t.kind != "input"}
        self.stores: dict[str, list[Store]] = {name: [] for name in program.dram}
        self.unwaited: dict[int, list[tuple[str, Store]]] = {}  # core -> (tensor, store)
        # Every store the program will ever issue, so that a load which runs before
        # another core's store is reported as the race it is, not as garbage.
        self.planned = [(core, i, ins) for core, body in enumerate(program.cores)
                        for i, ins in enumerate(body) if isinstance(ins, DmaStore)]
        if functional:
            self._load_inputs(inputs)

    def _load_inputs(self, inputs: dict) -> None:
        for name, t in self.p.dram.items():
            np_dtype = DTYPES[t.dtype].numpy
            if np_dtype is None:
                raise ProgramError(None, None, None, f"{t.dtype} tensor {name!r} cannot be "
                                   "simulated functionally; run with functional=False")
            if t.kind != "input":
                self.values[name] = np.zeros(t.shape, np_dtype)
                continue
            if name not in inputs:
                raise ProgramError(None, None, None, f"input {name!r} was not given")
            arr = np.asarray(inputs[name])
            if arr.shape != t.shape:
                raise ProgramError(None, None, None, f"input {name!r} has shape {arr.shape}, "
                                   f"the program declares {t.shape}")
            self.values[name] = arr.astype(np_dtype)

    def address(self, name: str, row: int, col: int) -> int:
        t = self.p.dram[name]
        return t.address + (row * t.shape[1] + col) * DTYPES[t.dtype].itemsize

    def check_load(self, core: int, epoch: int, index: int, ins, name: str,
                   rows: tuple[int, int], cols: tuple[int, int],
                   elements: np.ndarray | None = None) -> None:
        """Refuse a load of DRAM that nothing wrote or that a store may still be writing.

        A gather passes the flat ``elements`` it reads (checked exactly for
        being written) and their bounding rows and cols (for races)."""
        def fail(cls, detail):
            raise cls(core, index, ins, detail)

        if name in self.written:
            if elements is not None:
                region = self.written[name].reshape(-1)[elements.reshape(-1)]
                at = elements.reshape(-1)[np.argmin(region)] if region.size else 0
                unwritten = divmod(int(at), self.written[name].shape[1])
            else:
                region = self.written[name][rows[0]:rows[1], cols[0]:cols[1]]
                r, c = (int(v) for v in np.unravel_index(np.argmin(region), region.shape))
                unwritten = rows[0] + r, cols[0] + c
            if not region.all():
                r, c = unwritten
                where = f"DRAM address {self.address(name, r, c):#x} ({name}[{r}, {c}])"
                for other, i, store in self.planned:
                    if other != core and store.dst == name and \
                            store.row0 <= r < store.row0 + store.src.rows and \
                            store.col0 <= c < store.col0 + store.src.cols:
                        fail(DmaRaceError, f"loads {where} before core {other} stores it "
                             f"(instruction {i} `{store}`); no barrier orders the two")
                fail(UninitializedReadError, f"reads {where} that no store wrote")
        for stored, store in self.unwaited.get(core, ()):
            if stored == name and store.overlaps(rows, cols):
                fail(DmaRaceError, f"loads {name} at DRAM address "
                     f"{self.address(name, rows[0], cols[0]):#x} while this core's store "
                     f"tagged {store.tag} to it may still be in flight; "
                     f"dma.wait {store.tag} first")
        for store in self.stores[name]:
            if store.core != core and store.epoch >= epoch and store.overlaps(rows, cols):
                fail(DmaRaceError, f"loads {name} at DRAM address "
                     f"{self.address(name, rows[0], cols[0]):#x} that core {store.core} "
                     f"stores with no barrier in between")

    def store(self, core: int, epoch: int, index: int, ins, name: str,
              rows: tuple[int, int], cols: tuple[int, int]) -> None:
        """Record a store; refuse one that overlaps another core's in the same epoch."""
        for other in self.stores[name]:
            if other.core != core and other.epoch == epoch and other.overlaps(rows, cols):
                raise DmaRaceError(core, index, ins, f"stores {name} at DRAM address "
                                   f"{self.address(name, rows[0], cols[0]):#x} that core "
                                   f"{other.core} also stores, with no barrier in between")
        record = Store(core, epoch, ins.tag, rows, cols)
        self.stores[name].append(record)
        self.unwaited.setdefault(core, []).append((name, record))
        if name in self.written:
            self.written[name][rows[0]:rows[1], cols[0]:cols[1]] = True

    def waited(self, core: int, tag: str) -> None:
        self.unwaited[core] = [(n, s) for n, s in self.unwaited.get(core, ()) if s.tag != tag]
