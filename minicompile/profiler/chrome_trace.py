"""Chrome trace-event JSON (the format Perfetto and chrome://tracing read)."""
from __future__ import annotations

import json
import os

from .events import TRACK_NAMES, Event


def trace_events(events: list[Event], start_ns: int) -> list[dict]:
    """Complete ("X") events in microseconds from the profile's start, plus track names."""
    out: list[dict] = [{"name": "process_name", "ph": "M", "pid": os.getpid(), "tid": 0,
                        "args": {"name": "minicompile"}}]
    out += [{"name": "thread_name", "ph": "M", "pid": os.getpid(), "tid": track, "args": {"name": name}}
            for track, name in TRACK_NAMES.items()]
    for e in events:
        out.append({"name": e.name, "cat": e.cat, "ph": "X", "pid": os.getpid(), "tid": e.track,
                    "ts": (e.start_ns - start_ns) / 1e3, "dur": e.dur_ns / 1e3, "args": e.args})
    return out


def write_chrome_trace(events: list[Event], start_ns: int, path: str) -> str:
    with open(path, "w") as f:
        json.dump({"traceEvents": trace_events(events, start_ns), "displayTimeUnit": "ms"}, f)
    return path
