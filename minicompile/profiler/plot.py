"""The timeline as a PNG: one named row per kind of event and per kernel, one colour
per category, compiles cut short (:mod:`.timeline`); drawn with matplotlib."""
from __future__ import annotations

from .events import CATEGORIES, TRACK_NAMES, Event
from .timeline import COLOURS, layout


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("prof.plot needs matplotlib: pip install 'minicompile[plot]' "
                          "(or export_chrome_trace and open the trace in Perfetto)") from None
    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    return plt


def plot_timeline(events: list[Event], start_ns: int, end_ns: int, windows: list[tuple[int, int]],
                  path: str) -> str:
    plt = _matplotlib()
    t = layout(events, start_ns, end_ns, windows)
    rows = t.rows or []
    fig, ax = plt.subplots(figsize=(13, 2.0 + 0.3 * len(rows)))
    seen = set()
    for y, row in enumerate(reversed(rows)):
        for e in row.events:
            x, w = t.drawn(e)
            ax.broken_barh([(x / 1e6, max(w / 1e6, t.span_ns * 1e-9))], (y - 0.4, 0.8),
                           facecolors=COLOURS.get(e.cat, "#999"), edgecolors="none")
            seen.add(e.cat)
    for cat in CATEGORIES:
        if cat in seen:
            ax.barh(0, 0, color=COLOURS[cat], label=cat)  # a legend entry
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.label for r in reversed(rows)], fontsize="small")
    cut = "; compiles cut short, their real length in their row's label" if windows else ""
    ax.set_xlabel("milliseconds from the start of the profile" + cut)
    tracks = sorted({e.track for e in events})
    ax.set_title("minicompile profile: " + "; ".join(TRACK_NAMES[k] for k in tracks))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
