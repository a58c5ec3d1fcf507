"""Consecutive device steps -> one program, so step k+1's first loads overlap step k.

In:  the planned steps of a graph (:class:`~.loops.DeviceStep` and host
     steps), in execution order.
Out: the same steps with each run of consecutive device steps merged into
     one :class:`~.loops.DeviceStep`.

Run as separate programs, every step starts on an idle card: its first DMA
loads wait the full DRAM latency while every compute unit sits still, and
its results make a round trip through the host.  Merged:

* a value one step stores and the next loads stays in DRAM, one tensor; a
  step that reads it in another 2-D view (a per-row result stored as one row,
  read as a column) reads the same row-major elements by DMA gathers;
* a ``barrier`` on every core between steps orders those stores before the
  loads (the simulator refuses a load that races a store);
* each core's *prologue* of step k+1 (its leading DMA loads of graph inputs,
  which no step writes) is issued right after the core's last load of step k,
  so it lands while step k still computes; step k+1's buffers then sit above
  step k's in the scratchpad.  Where both do not fit, that core skips the
  early issue (its buffers may then reuse step k's addresses).

Buffer names and DMA/ring tags get the prefix ``s{k}.`` of their step.
"""
from __future__ import annotations

import dataclasses

from ....spyre.isa import ALIGN, Barrier, DmaGather, DmaLoad, Program, Tile
from .loops import DeviceStep


def merge_steps(steps: list) -> list:
    """Merge each run of consecutive device steps (of one card configuration)."""
    out, run = [], []
    for step in steps:
        if isinstance(step, DeviceStep) and (not run or _joins(run, step)):
            run.append(step)
            continue
        out += _flush(run)
        run = [step] if isinstance(step, DeviceStep) else []
        if not isinstance(step, DeviceStep):
            out.append(step)
    return out + _flush(run)


def _flush(run: list[DeviceStep]) -> list[DeviceStep]:
    return [merge(run)] if len(run) > 1 else run


def _joins(run: list[DeviceStep], step: DeviceStep) -> bool:
    return step.program.config == run[0].program.config


def merge(run: list[DeviceStep]) -> DeviceStep:
    cfg = run[0].program.config
    merged = DeviceStep("+".join(s.name for s in run), Program(cfg))
    merged.plan = "one program: " + "; ".join(s.plan for s in run)
    produced: dict[str, str] = {}  # graph buffer -> merged DRAM name of its stored value
    cores = [c for c in range(cfg.cores) if any(s.program.cores[c] for s in run)]
    base = [0] * cfg.cores            # where the previous step's buffers start, per core
    extent = [0] * cfg.cores          # and how far they reach
    hoist_at = [0] * cfg.cores        # index after the previous step's last DMA load
    for k, step in enumerate(run):
        names = _dram_names(merged, step, produced)
        # Loads of a produced value in a view other than the one it was stored in.
        widths = {name: view[1] for name, (buf, view) in step.inputs.items()
                  if buf in produced and merged.program.dram[names[name]].shape != view}
        for core in cores:
            body = [_rename(ins, k, names, widths) for ins in step.program.cores[core]]
            buffers = step.program.buffers[core]
            size = max((b.end for b in buffers.values()), default=0)
            above = -(-(base[core] + extent[core]) // ALIGN) * ALIGN
            early = k > 0 and above + size <= cfg.scratchpad_usable_bytes
            offset = above if early else 0
            for b in buffers.values():
                merged.program.buffer(core, f"s{k}.{b.name}", b.offset + offset, b.shape, b.dtype)
            base[core], extent[core] = offset, size
            early_loads, body = _prologue(body, set(produced.values())) if early else ([], body)
            if k > 0:
                program = merged.program.cores[core]
                program[hoist_at[core]:hoist_at[core]] = early_loads
                program.append(Barrier(f"s{k}"))
            start = len(merged.program.cores[core])
            merged.program.emit(core, *body)
            loads = [i for i, ins in enumerate(body) if isinstance(ins, (DmaLoad, DmaGather))]
            hoist_at[core] = start + (loads[-1] + 1 if loads else 0)
        for name, buf in step.outputs.items():
            produced[buf] = names[name]
    for name in merged.program.dram:
        tensor = merged.program.dram[name]
        if tensor.kind == "output":
            merged.outputs[name] = next(buf for buf, n in produced.items() if n == name)
    return merged


def _dram_names(merged: DeviceStep, step: DeviceStep, produced: dict[str, str]) -> dict:
    """Each DRAM tensor of step -> its name in the merged program (declared on first use)."""
    names = {}
    for name, (buf, view) in step.inputs.items():
        fmt = step.program.dram[name].dtype
        names[name] = produced[buf] if buf in produced else merged.dram(buf, view, "input", fmt)
    for name, buf in step.outputs.items():
        tensor = step.program.dram[name]
        names[name] = merged.dram(buf, tensor.shape, "output", tensor.dtype)
    return names


def _prologue(body: list, written: set[str]) -> tuple[list, list]:
    """Split off the loads of the leading run of DMA loads that read tensors no earlier
    step writes: (those loads, the body without them).  Loads are independent of each
    other (each fills its own tile), so taking some out of the run keeps its meaning."""
    lead = 0
    while lead < len(body) and isinstance(body[lead], (DmaLoad, DmaGather)):
        lead += 1
    early = [ins for ins in body[:lead] if ins.src not in written]
    rest = [ins for ins in body[:lead] if ins.src in written] + body[lead:]
    return early, rest


def _rename(ins, k: int, names: dict, widths: dict[str, int]):
    """ins with its buffers and tags prefixed by step k, and DRAM names mapped; a load
    from a tensor now stored in another view becomes the gather of the same elements."""
    if isinstance(ins, DmaLoad) and ins.src in widths:
        width = widths[ins.src]
        ins = DmaGather(ins.dst, ins.src, ins.row0 * width + ins.col0, width, 1, ins.tag)
    changes = {}
    for f in dataclasses.fields(ins):
        value = getattr(ins, f.name)
        if isinstance(value, Tile):
            changes[f.name] = dataclasses.replace(value, buffer=f"s{k}.{value.buffer}")
        elif f.name == "tag":
            changes[f.name] = f"s{k}.{value}"
        elif f.name in ("src", "dst") and isinstance(value, str):
            changes[f.name] = names[value]
    return dataclasses.replace(ins, **changes)
