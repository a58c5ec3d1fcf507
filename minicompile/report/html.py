"""The compile report as one self-contained HTML page (inline CSS and JS, no network).

In:  a :class:`~.gather.Gathered`.
Out: :func:`render_page` returns the HTML text.

Sections follow the pipeline: source (graph-break lines red, guard lines
amber, lines that made graph nodes linked to their kernels), bytecode
(original and transformed), each captured graph, guards and recompile
reasons, the joint graph and its cut when training, the schedule, every
kernel and wrapper, and timings.  Provenance runs both ways: a kernel lists
the source lines its nodes came from, and a source line lists its kernels.
"""
from __future__ import annotations

import html
import os
import re
from typing import Any

from ..aot import partition as aot_partition
from ..dynamo import bytecode
from ..ir import drawing
from ..profiler import timeline
from ..profiler.events import in_windows
from .gather import Gathered, compiled_graphs, kernel_groups, relative

BACKEND_OF_CLASS = {"CompiledGraph": "cpp", "TritonCompiledGraph": "triton", "SpyreCompiled": "spyre"}
SECTIONS = ("summary", "source", "bytecode", "graphs", "guards", "training", "schedule", "kernels",
            "timings", "log")

CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #23395d; color: white; padding: 12px 24px; }
header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; opacity: .85; }
nav { position: sticky; top: 0; background: #e8edf5; padding: 6px 24px; z-index: 2; border-bottom: 1px solid #ccd; }
nav a { margin-right: 14px; color: #23395d; text-decoration: none; font-weight: 600; }
main { padding: 8px 24px 40px; }
section { background: white; border: 1px solid #dde; border-radius: 6px; margin: 16px 0; padding: 8px 16px; }
h2 { font-size: 17px; border-bottom: 1px solid #eee; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
pre { background: #f4f5f7; padding: 8px; overflow-x: auto; font-size: 12px; line-height: 1.35; }
table.src { border-collapse: collapse; font-family: monospace; font-size: 12.5px; width: 100%; }
table.src td { padding: 0 6px; white-space: pre; vertical-align: top; }
table.src td.no { color: #999; text-align: right; user-select: none; width: 3em; }
table.src td.note { white-space: normal; font-family: system-ui, sans-serif; font-size: 11.5px; color: #555; }
tr.break { background: #ffd9d9; } tr.guard { background: #fff3cd; } tr.break.guard { background: #ffc9a8; }
tr.target { outline: 2px solid #23395d; }
.tag { display: inline-block; border-radius: 3px; padding: 0 4px; margin: 1px 2px; font-size: 11px; color: #111; }
.tag.break { background: #f08080; } .tag.guard { background: #f5c04a; }
.kernel-link { display: inline-block; border-radius: 3px; padding: 0 4px; margin: 1px; font-size: 11px;
  text-decoration: none; color: #111; border: 1px solid #999; }
.picture { overflow-x: auto; margin: 8px 0; } .picture svg { max-width: 100%; height: auto; }
.missing { color: #8a5300; background: #fff3cd; padding: 4px 8px; border-radius: 4px; }
.cols { display: flex; gap: 12px; } .cols > div { flex: 1; min-width: 0; }
.legend span { margin-right: 10px; }
td.num { text-align: right; font-family: monospace; }
table.plain { border-collapse: collapse; font-size: 12.5px; } table.plain td, table.plain th { border-bottom: 1px solid #eee; padding: 2px 8px; text-align: left; }
details > summary { cursor: pointer; font-weight: 600; }
.error { background: #ffd9d9; padding: 6px 10px; border-radius: 4px; }
"""

# Clicking a link to a source line outlines it; nothing else needs script.
JS = """
document.addEventListener('click', function (ev) {
  var a = ev.target.closest('a[href^="#src-"]');
  if (!a) return;
  document.querySelectorAll('tr.target').forEach(function (r) { r.classList.remove('target'); });
  var row = document.getElementById(a.getAttribute('href').slice(1));
  if (row) row.classList.add('target');
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}">{_e(text)}</pre>' if text else "<p><i>(none)</i></p>"


def _picture(dot: str) -> str:
    """Inline SVG when Graphviz is installed, else the DOT text with one clear note."""
    if drawing.dot_program() is not None:
        try:
            svg = drawing.render(dot, "svg").decode()
            return f'<div class="picture graph">{svg[svg.find("<svg"):]}</div>'
        except RuntimeError as e:
            return f'<p class="missing">{_e(e)}</p>' + _pre(dot)
    return (f'<p class="missing">Graphviz\'s <code>dot</code> was not found: showing DOT text. '
            f'{_e(drawing.INSTALL_HINT)}.</p><details><summary>DOT</summary>{_pre(dot)}</details>')


class _Page:
    def __init__(self, g: Gathered):
        self.g = g
        self.out: list[str] = []
        # source line -> kernel anchors (provenance), kernel anchor -> source lines
        self.kernels_of_line: dict[int, list[tuple[str, str]]] = {}
        self.lines_of_kernel: dict[str, list[int]] = {}
        self._provenance()

    # -- provenance --------------------------------------------------------------

    def _line_in_function(self, node: Any) -> int | None:
        """The line of the reported function's file on this node's stack (outermost match)."""
        for frame in getattr(node, "user_stack", ()):
            if frame.filename == self.g.filename:
                return frame.lineno
        return None

    def _provenance(self) -> None:
        for fi, ei, label, _, cg in self._titled_compiled_graphs():
            groups = kernel_groups(cg)
            nodes = {n.name: n for n in cg.graph.nodes}
            for name, kernel in groups.items():
                line = self._line_in_function(nodes.get(name))
                if line is None:
                    continue
                anchor = _kernel_anchor(fi, ei, label, kernel)
                lines = self.lines_of_kernel.setdefault(anchor, [])
                if line not in lines:
                    lines.append(line)
                links = self.kernels_of_line.setdefault(line, [])
                if (anchor, kernel) not in links:
                    links.append((anchor, kernel))

    # -- sections ----------------------------------------------------------------

    def section(self, key: str, title: str, body: str) -> None:
        self.out.append(f'<section id="{key}"><h2>{_e(title)}</h2>{body}</section>')

    def summary(self) -> str:
        g = self.g
        captures = [e.capture for f in g.frames for e in f.entries]
        graphs = [c.graph for c in captures if c.graph is not None and c.graph.op_count() > 0]
        broke = sum(c.break_reason is not None for c in captures)
        sites = self._break_sites()  # a source badge each
        shown = sum(len(reasons) for reasons in sites.values())
        breaks = str(shown) + (f" (line {', '.join(map(str, sorted(sites)))})" if sites else "") \
            + (f"; {broke} cache entries break there" if broke > shown else "")
        guards = self._guard_sites()
        checks = sum(len(c) for c in guards.values())
        kernels = sum(len(getattr(cg, "kernels", [])) + len(getattr(cg, "extern_kernels", []))
                      for *_, cg in self._titled_compiled_graphs())
        compile_s = sum(c.seconds for c in captures) + sum(e.compile_seconds for f in g.frames for e in f.entries)
        rows = [("function", f"{g.fn.__qualname__}  ({relative(g.filename)}:{g.first_line})"),
                ("backend", self._backend_label()), ("calls", len(g.results)),
                ("compiled code objects", len(g.frames)),
                ("cache entries", sum(len(f.entries) for f in g.frames)),
                ("graphs", len(graphs)), ("graph breaks", breaks),
                ("guards", f"{checks} checks from {len(guards)} source lines"), ("kernels", kernels),
                ("capture + compile time", f"{compile_s * 1e3:.1f} ms"),
                ("profiled wall time", f"{g.profile.total_ns / 1e6:.2f} ms")]
        body = '<table class="plain">' + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
        body += "</table>"
        if g.error:
            body = f'<p class="error">The run raised {_e(g.error)}; the stages reached are shown.</p>' + body
        return body

    def _backend_label(self) -> str:
        """``auto`` names what it chose: the kind of each compiled graph."""
        if self.g.backend != "auto":
            return self.g.backend
        kinds = {type(cg).__name__ for *_, cg in self._titled_compiled_graphs()}
        chosen = sorted(BACKEND_OF_CLASS.get(k, k) for k in kinds)
        return f"auto ({', '.join(chosen)})" if chosen else "auto"

    def _break_line(self, reason: Any) -> int | None:
        """The line of the reported file where a break happened: the outermost frame of
        its user stack in that file (a break inside an inlined helper marks the call)."""
        for frame in reason.user_stack:
            m = re.match(r"(.*):(\d+) in .*$", frame)
            if m and m.group(1) == self.g.filename:
                return int(m.group(2))
        return reason.lineno if reason.filename == self.g.filename else None

    def _break_sites(self) -> dict[int, list[str]]:
        """Source line -> the distinct reasons graphs break there (each cache entry
        of a function that breaks at a line breaks there again: one site)."""
        sites: dict[int, list[str]] = {}
        for f in self.g.frames:
            for e in f.entries:
                r = e.capture.break_reason
                line = self._break_line(r) if r is not None else None
                if line is not None and r.reason not in sites.setdefault(line, []):
                    sites[line].append(r.reason)
        return sites

    def _guard_sites(self) -> dict[int, list[str]]:
        """Source line -> the distinct guard checks its values created, over every cache entry."""
        sites: dict[int, list[str]] = {}
        for f in self.g.frames:
            if f.code.co_filename != self.g.filename:
                continue
            for e in f.entries:
                for guard in e.capture.guards.guards:
                    if guard.lineno and guard.check not in sites.setdefault(guard.lineno, []):
                        sites[guard.lineno].append(guard.check)
        return sites

    def source(self) -> str:
        g = self.g
        if not g.source_lines:
            return "<p><i>The source of this function is not available.</i></p>"
        breaks, guards = self._break_sites(), self._guard_sites()
        rows = []
        for i, text in enumerate(g.source_lines):
            no = g.first_line + i
            cls = " ".join(c for c, d in (("break", breaks), ("guard", guards)) if no in d)
            notes = [f'<span class="tag break" title="{_e(r)}">graph break: {_e(r)}</span>' for r in breaks.get(no, [])]
            if no in guards:
                checks = "\n".join(guards[no])
                notes.append(f'<span class="tag guard" title="{_e(checks)}">{len(guards[no])} guard(s)</span>')
            notes += [f'<a class="kernel-link" href="#{a}">{_e(k)}</a>' for a, k in self.kernels_of_line.get(no, [])]
            rows.append(f'<tr id="src-{no}" class="{cls}"><td class="no">{no}</td><td>{_e(text)}</td>'
                        f'<td class="note">{"".join(notes)}</td></tr>')
        legend = ('<p class="legend"><span class="tag break">graph break</span><span class="tag guard">'
                  'line that created guards</span><span class="kernel-link">kernel</span> the line\'s ops run in '
                  'that kernel (click)</p>')
        return legend + f'<p>{_e(relative(g.filename))}</p><table class="src">{"".join(rows)}</table>'

    def bytecode_section(self) -> str:
        parts = []
        for i, f in enumerate(self.g.frames):
            parts.append(f"<details{' open' if i == 0 else ''}><summary>{_e(f.name)}: original bytecode</summary>"
                         + _pre(bytecode.format_bytecode(f.code)) + "</details>")
        transformed = [t for t in self.g.artifact("bytecode") if t.startswith("transformed ")]
        for text in transformed:
            parts.append(f"<details open><summary>{_e(text.splitlines()[0])} (the Python it stands for, then "
                         f"the bytecode side by side)</summary>" + _pre("\n".join(text.splitlines()[1:])) + "</details>")
        if not transformed:
            parts.append("<p>No graph break or side effect: the frame is replaced by the compiled graph as a "
                         "whole, no transformed bytecode.</p>")
        return "".join(parts)

    def graphs(self) -> str:
        parts = []
        for f in self.g.frames:
            for ei, e in enumerate(f.entries):
                c = e.capture
                title = _entry_title(e.graph_id, f.name, ei)
                if c.graph is None:
                    why = c.break_reason.reason if c.break_reason else "nothing captured"
                    parts.append(f"<h3>{_e(title)}: runs eagerly</h3><p>{_e(why)}"
                                 f"{' (' + _e(c.not_resumable) + ')' if c.not_resumable else ''}</p>")
                    continue
                parts.append(f"<h3>{_e(title)}: {c.graph.op_count()} ops</h3>")
                parts.append('<div class="cols"><div>' + _pre(c.graph.python_code(f.code.co_name)) + "</div><div>"
                             + _picture(drawing.to_dot(c.graph, f"captured graph: {f.name}")) + "</div></div>")
        return "".join(parts) or "<p><i>No graph was captured.</i></p>"

    def guards(self) -> str:
        parts = []
        for f in self.g.frames:
            for ei, e in enumerate(f.entries):
                source = getattr(e.guard, "source", "")
                parts.append(f"<h3>{_e(f.name)}, cache entry {ei}</h3>" + _pre(source or "\n".join(
                    str(g) for g in e.capture.guards.guards)))
        recompiles = self.g.artifact("recompiles")
        parts.append("<h3>Recompile reasons</h3>" + (_pre("\n".join(recompiles)) if recompiles else
                     "<p>None: every call after the first hit a cache entry.</p>"))
        breaks = self.g.artifact("graph_breaks")
        if breaks:
            parts.append("<h3>Graph breaks</h3>" + _pre("\n".join(breaks)))
        return "".join(parts)

    def training(self) -> str | None:
        parts = []
        for f in self.g.frames:
            for ei, e in enumerate(f.entries):
                aot = e.compiled
                if getattr(aot, "partition", None) is None or getattr(aot, "joint", None) is None:
                    continue
                parts.append(f"<h3>{_e(f.name)}, cache entry {ei}: joint graph and its cut</h3>")
                parts.append(_pre(aot.partition.summary()))
                parts.append('<p class="legend">Blue: forward; orange: backward; red boxes: saved for the '
                             'backward (the cut); dashed: recomputed in the backward.</p>')
                parts.append(_picture(aot_partition.to_dot(aot.joint, aot.partition)))
                parts.append("<details><summary>joint graph as Python</summary>"
                             + _pre(aot.joint.graph.python_code("joint")) + "</details>")
                if getattr(aot, "_backward", None) is None:
                    parts.append("<p>The backward graph is compiled on the first <code>backward()</code>; "
                                 "its kernels are not in this page because the call did not run it.</p>")
                parts.append('<div class="cols"><div><h3>forward graph</h3>' + _pre(aot.partition.forward.python_code("forward"))
                             + '</div><div><h3>backward graph</h3>' + _pre(aot.partition.backward.python_code("backward"))
                             + "</div></div>")
        return "".join(parts) or None

    def _titled_compiled_graphs(self):
        """``(frame index, entry index, label, title, compiled graph)`` for every
        compiled graph of every cache entry; the title starts with the graph's
        index (graph_id.py), which starts its kernels' names."""
        for fi, f in enumerate(self.g.frames):
            for ei, e in enumerate(f.entries):
                for label, gid, cg in compiled_graphs(e):
                    yield fi, ei, label, _entry_title(gid, f.name, ei) + (f", {label}" if label else ""), cg

    def schedule(self) -> str:
        parts = []
        for _, _, _, title, cg in self._titled_compiled_graphs():
            groups = kernel_groups(cg)
            parts.append(f"<h3>{_e(title)}</h3>" + _pre(str(cg.schedule)))
            if getattr(cg, "fallback_reason", None):
                parts.append(f'<p class="missing">Runs through NumPy: {_e(cg.fallback_reason)}</p>')
            parts.append(_picture(drawing.to_dot(cg.graph, f"fused schedule: {title}", groups)))
        return "".join(parts) or "<p><i>No inductor schedule (eager backend, or nothing to compute).</i></p>"

    def kernels(self) -> str:
        parts = []
        for fi, ei, label, title, cg in self._titled_compiled_graphs():
            groups = kernel_groups(cg)
            names = list(getattr(cg, "kernels", []))
            names += [k for k in dict.fromkeys(groups.values()) if k not in names]
            nodes = {n.name: n for n in cg.graph.nodes}
            for kernel in names:
                anchor = _kernel_anchor(fi, ei, label, kernel)
                lines = self.lines_of_kernel.get(anchor, [])
                links = ", ".join(f'<a href="#src-{n}">line {n}</a>' for n in sorted(lines)) or "no source line"
                ops = [f"{n} = np.{nodes[n].op.name}" for n, k in groups.items() if k == kernel
                       and n in nodes and nodes[n].op is not None]
                parts.append(f'<h3 id="{anchor}">{_e(kernel)} <small>({_e(title)})</small></h3>'
                             f"<p>from {links}; computes {_e('; '.join(ops)) or '-'}</p>")
                excerpt = kernel_excerpt(getattr(cg, "kernel_source", None) or "", kernel)
                if excerpt:
                    parts.append(_pre(excerpt))
            kernel_source = getattr(cg, "kernel_source", None)
            if kernel_source is None and hasattr(cg, "program"):
                kernel_source = str(cg.program)
            parts.append(f"<details><summary>{_e(title)}: the whole generated source "
                         f"(helpers and entry points included)</summary>" + _pre(kernel_source or "") + "</details>")
            if getattr(cg, "wrapper_source", None):
                parts.append(f"<details open><summary>{_e(title)}: wrapper (Python)</summary>"
                             + _pre(cg.wrapper_source) + "</details>")
        return "".join(parts) or "<p><i>No generated code (eager backend, or nothing to compute).</i></p>"

    def timings(self) -> str:
        prof = self.g.profile
        windows = prof.compile_windows
        warm = any(e.cat == "compiled" and not in_windows(e, windows) for e in prof.events)
        body = ("<p>Wall time of the report's calls, as <code>mc.profile</code> records them: a call that "
                "compiles is warm-up, on the compile row and cut short in the picture, apart from the "
                "steady state in the table" + ("" if warm else " (none here: every call compiled; "
                "<code>repeat=N</code> makes warm calls)") + ". Each kernel has a row of its own, "
                "named as in the code above.</p>" + _timeline(prof) + _pre(prof.table(row_limit=40)))
        compile_rows = []
        for f in self.g.frames:
            for ei, e in enumerate(f.entries):
                compile_rows.append(f"<tr><td>{_e(f.name)}</td><td>{ei}</td><td class=num>{e.capture.seconds * 1e3:.2f}</td>"
                                    f"<td class=num>{e.compile_seconds * 1e3:.2f}</td></tr>")
        body += ('<table class="plain"><tr><th>code object</th><th>entry</th><th>capture ms</th>'
                 f'<th>backend compile ms</th></tr>{"".join(compile_rows)}</table>')
        return body

    def log(self) -> str:
        items = [f"<details><summary>{_e(a.name)}{' · ' + _e(a.graph) if a.graph else ''}</summary>{_pre(a.text)}"
                 "</details>" for a in self.g.artifacts]
        return ("<p>Every artifact as <code>MINICOMPILE_LOGS=all</code> prints it, in order, with the graph "
                "it belongs to.</p>" + "".join(items))

    def render(self) -> str:
        from ..config import __version__

        g = self.g
        self.section("summary", "Summary", self.summary())
        self.section("source", "Source", self.source())
        self.section("bytecode", "Bytecode", self.bytecode_section())
        self.section("graphs", "Captured graphs", self.graphs())
        self.section("guards", "Guards and recompiles", self.guards())
        training = self.training()
        if training:
            self.section("training", "Training: joint graph and min-cut", training)
        self.section("schedule", "Schedule (fused kernels)", self.schedule())
        self.section("kernels", "Kernels and wrapper", self.kernels())
        self.section("timings", "Timings", self.timings())
        self.section("log", "All logged artifacts", self.log())
        present = [s for s in SECTIONS if f'id="{s}"' in "".join(self.out)]
        nav = "".join(f'<a href="#{s}">{s}</a>' for s in present)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>minicompile report: {_e(g.fn.__qualname__)}</title><style>{CSS}</style></head><body>"
                f"<header><h1>minicompile report: {_e(g.fn.__qualname__)}</h1><p>backend {_e(self._backend_label())} · "
                f"{_e(relative(g.filename))} · minicompile {__version__}</p></header><nav>{nav}</nav>"
                f"<main>{''.join(self.out)}</main><script>{JS}</script></body></html>\n")


def kernel_excerpt(source: str, name: str) -> str | None:
    """The definition of kernel ``name`` in generated source: a C++ function up to its
    closing brace, or a Python/Triton function (with decorators) up to the next top-level line."""
    lines = source.splitlines()
    pattern = re.compile(rf"^(?!\s).*\b{re.escape(name)}\s*\(")
    start = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
    if start is None:
        return None
    first = start
    while first > 0 and lines[first - 1].startswith("@"):
        first -= 1
    python = lines[start].startswith("def ")
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if not python and line == "}":
            end += 1
            break
        if python and line and not line[0].isspace():
            break
        end += 1
    return "\n".join(lines[first:end]).rstrip()


def _timeline(prof: Any, width: int = 1100, row: int = 16, limit: int = 3000) -> str:
    """The profile as an inline SVG (:mod:`minicompile.profiler.timeline`): a row per
    kind of event and per kernel, named; compiles cut short; hover for name and time."""
    events = [e for e in prof.events if e.dur_ns > 0][:limit]
    if not events:
        return ""
    t = timeline.layout(events, prof.start_ns, prof.end_ns, prof.compile_windows)
    label_w = min(8 + 6.2 * max(len(r.label) for r in t.rows), 330)
    scale = (width - label_w) / t.span_ns
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(t.rows) + 24}" '
             f'font-family="sans-serif" font-size="11">']
    for i, r in enumerate(t.rows):
        parts.append(f'<text x="0" y="{i * row + 12}">{_e(r.label)}</text>')
        for e in r.events:
            x, w = t.drawn(e)
            tip = f"{e.name} ({e.cat}): {e.dur_ns / 1e3:.1f} us"
            colour = timeline.COLOURS.get(e.cat, "#999")
            parts.append(f'<rect x="{label_w + x * scale:.2f}" y="{i * row + 2}" width="{max(w * scale, 0.5):.2f}" '
                         f'height="{row - 4}" fill="{colour}"><title>{_e(tip)}</title></rect>')
    axis_y = row * len(t.rows) + 16
    cut = ", compiles cut short" if t.windows else ""
    parts.append(f'<text x="{label_w}" y="{axis_y}">0 ms</text><text x="{width - 200}" y="{axis_y}">'
                 f'{t.span_ns / 1e6:.2f} ms drawn{cut}</text></svg>')
    legend = "".join(f'<span><span class="kernel-link" style="background:{c}">&nbsp;</span> {_e(cat)}</span>'
                     for cat, c in timeline.COLOURS.items() if any(e.cat == cat for e in events))
    return f'<div class="picture">{"".join(parts)}</div><p class="legend">{legend}</p>'


def _entry_title(graph: Any, frame: str, entry: int) -> str:
    """``graph 1 · f (resumed at line 8), cache entry 0``: the graph's index first, as its kernels' names start."""
    return (f"graph {graph.index} · " if graph is not None else "") + f"{frame}, cache entry {entry}"


def _kernel_anchor(frame: int, entry: int, label: str, kernel: str) -> str:
    return re.sub(r"[^\w-]", "_", f"k-{frame}-{entry}-{label or 'main'}-{kernel}")


def render_page(g: Gathered) -> str:
    return _Page(g).render()


def write_page(g: Gathered, path: str) -> str:
    text = render_page(g)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path
