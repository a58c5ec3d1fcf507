"""Pictures of graphs: Graphviz DOT text, rendered to SVG or PNG when ``dot`` is installed.

In:  an :class:`~.graph.Graph`, optionally a grouping of its nodes (a fused
     schedule: node name -> kernel name) and extra styles per node.
Out: :func:`to_dot` returns DOT text; :func:`render` turns DOT into SVG/PNG
     bytes with Graphviz's ``dot`` program; :func:`save` writes a picture to a
     file, or — without Graphviz — the DOT text beside it, saying so once;
     :func:`show` shows a picture file inline in a Jupyter notebook (a
     tutorial run as one, a page of the docs site), else prints its path.

Inputs are boxes, ops are ellipses labelled with their NumPy call and result
meta, outputs are a double octagon; with ``groups`` every group gets one
colour (and a cluster), so a schedule shows which ops run in which kernel.
The joint graph with its cut is drawn by :func:`minicompile.aot.partition.to_dot`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .graph import Graph, Node, format_call

# Colour-blind-safe palette (Okabe-Ito, then Tableau), cycled over groups.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
           "#8c564b", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78")
INSTALL_HINT = "install Graphviz (Debian: apt-get install graphviz) to render pictures"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(node: Node) -> str:
    if node.kind == "placeholder":
        return f"{node.name}\n{node.meta}"
    call = format_call(node)
    if len(call) > 40:
        call = call[:37] + "..."
    return f"{node.name}\n{call}\n{node.meta}"


def group_colours(groups: dict[str, str]) -> dict[str, str]:
    """One palette colour per distinct group, in first-seen order."""
    colours: dict[str, str] = {}
    for group in groups.values():
        if group not in colours:
            colours[group] = PALETTE[len(colours) % len(PALETTE)]
    return colours


def to_dot(graph: Graph, title: str = "graph", groups: dict[str, str] | None = None,
           styles: dict[str, str] | None = None) -> str:
    """DOT text for ``graph``; ``groups`` colours nodes by group, ``styles`` adds DOT attributes."""
    groups = groups or {}
    styles = styles or {}
    colours = group_colours(groups)
    lines = [f"digraph {_quote(title)} {{", "  rankdir=TB;",
             '  node [fontname="monospace", fontsize=10, style=filled, fillcolor="#ffffff"];',
             f"  label={_quote(title)}; labelloc=t;"]

    def node_line(n: Node) -> str:
        attrs = [f"label={_quote(_label(n))}"]
        if n.kind == "placeholder":
            attrs.append('shape=box, fillcolor="#eeeeee"')
        else:
            attrs.append("shape=ellipse")
        if n.name in groups:
            attrs.append(f'fillcolor="{colours[groups[n.name]]}"')
        if n.user_stack:
            where = n.user_stack[-1]
            attrs.append(f"tooltip={_quote(f'{os.path.basename(where.filename)}:{where.lineno} in {where.function}')}")
        if n.name in styles:
            attrs.append(styles[n.name])
        return f"  {_quote(n.name)} [{', '.join(attrs)}];"

    grouped: dict[str, list[Node]] = {}
    for n in graph.nodes:
        if n.kind == "output":
            continue
        if n.name in groups:
            grouped.setdefault(groups[n.name], []).append(n)
        else:
            lines.append(node_line(n))
    for i, (group, members) in enumerate(grouped.items()):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f'    label={_quote(group)}; style=rounded; color="{colours[group]}"; penwidth=2;')
        lines += ["  " + node_line(n) for n in members]
        lines.append("  }")
    lines.append('  "output" [shape=doubleoctagon, fillcolor="#eeeeee"];')
    for n in graph.calls:
        for i in dict.fromkeys(n.inputs):
            lines.append(f"  {_quote(i.name)} -> {_quote(n.name)};")
    for i, out in enumerate(graph.outputs):
        lines.append(f"  {_quote(out.name)} -> \"output\" [label=\"{i}\"];")
    lines.append("}")
    return "\n".join(lines)


def dot_program() -> str | None:
    """The path of Graphviz's ``dot``, or None."""
    return shutil.which("dot")


class GraphvizMissing(RuntimeError):
    pass


def render(dot: str, fmt: str = "svg") -> bytes:
    """DOT text -> picture bytes (``svg`` or ``png``); :class:`GraphvizMissing` without ``dot``."""
    program = dot_program()
    if program is None:
        raise GraphvizMissing(f"Graphviz's `dot` program was not found: {INSTALL_HINT}")
    done = subprocess.run([program, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


_told = False


def save(dot: str, path: str) -> str:
    """Write the picture to ``path`` (format from its suffix: .svg, .png, or .dot).

    Without Graphviz, writes the DOT text to ``path`` with a ``.dot`` suffix
    instead, says so on stderr once per process, and returns that path."""
    global _told
    stem, ext = os.path.splitext(path)
    fmt = ext.lstrip(".").lower()
    if fmt in ("dot", "gv"):
        with open(path, "w") as f:
            f.write(dot)
        return path
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"save: unknown picture format {ext!r} (use .svg, .png, .pdf or .dot)")
    try:
        data = render(dot, fmt)
    except GraphvizMissing:
        if not _told:
            _told = True
            print(f"minicompile: Graphviz's `dot` not found, writing DOT text instead of {fmt.upper()}: "
                  f"{INSTALL_HINT}", file=sys.stderr)
        return save(dot, stem + ".dot")
    with open(path, "wb") as f:
        f.write(data)
    return path


def _notebook_shell():
    """The running Jupyter kernel's IPython shell, or None (a script, a terminal IPython)."""
    ipython = sys.modules.get("IPython")  # every kernel has imported it; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


def show(path: str | os.PathLike) -> None:
    """Show the picture at ``path`` where the reader is.

    In a Jupyter kernel an ``.svg`` or ``.png`` file becomes the cell's output, so
    the picture appears in the notebook and on the docs site; anywhere else, or
    for any other file (the DOT text :func:`save` writes without Graphviz), the
    path is printed."""
    path = os.fspath(path)
    kind = {".svg": "SVG", ".png": "Image"}.get(os.path.splitext(path)[1].lower())
    if kind is None or _notebook_shell() is None or not os.path.exists(path):
        print(path)
        return
    from IPython import display

    display.display(getattr(display, kind)(filename=path))
