"""The timeline as a PNG: one row per nesting depth, one colour per category (matplotlib)."""
from __future__ import annotations

from .events import CATEGORIES, SPYRE, TRACK_NAMES, Event

COLOURS = dict(zip(CATEGORIES, ("#1f77b4", "#c7c7c7", "#2ca02c", "#ff7f0e", "#d62728",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf")))


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("prof.plot needs matplotlib: pip install 'minicompile[plot]' "
                          "(or export_chrome_trace and open the trace in Perfetto)") from None
    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    return plt


def plot_timeline(events: list[Event], start_ns: int, path: str) -> str:
    plt = _matplotlib()
    tracks = sorted({e.track for e in events}) or [0]
    rows: list[tuple[int, int]] = sorted({(e.track, e.depth) for e in events}) or [(0, 0)]
    y_of = {row: i for i, row in enumerate(reversed(rows))}
    fig, ax = plt.subplots(figsize=(12, 2.0 + 0.45 * len(rows)))
    for cat in CATEGORIES:
        chosen = [e for e in events if e.cat == cat]
        for e in chosen:
            y = y_of[(e.track, e.depth)]
            ax.broken_barh([((e.start_ns - start_ns) / 1e6, max(e.dur_ns / 1e6, 1e-4))], (y - 0.4, 0.8),
                           facecolors=COLOURS[cat], edgecolors="none")
        if chosen:
            ax.barh(0, 0, color=COLOURS[cat], label=cat)  # a legend entry
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{'spyre' if t == SPYRE else 'host'} depth {d}" for t, d in reversed(rows)])
    ax.set_xlabel("milliseconds from the start of the profile")
    ax.set_title("minicompile profile: " + "; ".join(TRACK_NAMES[t] for t in tracks))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize="small", ncol=len(CATEGORIES),
              frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
