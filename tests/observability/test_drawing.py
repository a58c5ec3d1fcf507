"""Graph pictures: DOT text always, SVG/PNG through Graphviz when its `dot` is installed."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.ir import drawing


def _graph():
    def f(x):
        return np.exp(x * 2).sum(axis=1) + 1

    return mc.explain(f)(np.ones((3, 4))).graphs[0]


def test_dot_has_every_node_and_edge():
    g = _graph()
    dot = drawing.to_dot(g, "captured")
    for n in g.nodes:
        if n.kind != "output":
            assert f'"{n.name}" [' in dot
    edges = re.findall(r'"(\w+)" -> "(\w+)"', dot)
    assert ("x", "multiply") in edges and ("multiply", "exp") in edges and ("add", "output") in edges
    assert "tooltip=" in dot  # the source line of each op


def test_groups_get_one_cluster_and_one_colour_each():
    g = _graph()
    groups = {"multiply": "kernel_0", "exp": "kernel_0", "sum": "kernel_0", "add": "kernel_1"}
    dot = drawing.to_dot(g, "schedule", groups)
    assert dot.count("subgraph cluster_") == 2
    colours = drawing.group_colours(groups)
    assert colours["kernel_0"] != colours["kernel_1"]
    assert dot.count(f'fillcolor="{colours["kernel_0"]}"') == 3


@pytest.mark.skipif(drawing.dot_program() is None, reason="Graphviz `dot` is not installed")
@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_save_renders_with_graphviz(tmp_path, suffix, magic):
    path = drawing.save(drawing.to_dot(_graph()), str(tmp_path / f"g{suffix}"))
    assert path.endswith(suffix)
    assert open(path, "rb").read().startswith(magic)


def test_without_graphviz_save_writes_dot_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(drawing, "dot_program", lambda: None)
    monkeypatch.setattr(drawing, "_told", False)
    dot = drawing.to_dot(_graph())
    path = drawing.save(dot, str(tmp_path / "g.svg"))
    assert path.endswith("g.dot") and open(path).read() == dot
    assert "apt-get install graphviz" in capsys.readouterr().err
    with pytest.raises(drawing.GraphvizMissing, match="dot"):
        drawing.render(dot)
    drawing.save(dot, str(tmp_path / "h.svg"))
    assert capsys.readouterr().err == ""  # said once


def test_unknown_picture_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format"):
        drawing.save("digraph {}", str(tmp_path / "g.jpeg"))


@settings(max_examples=20, deadline=None)
@given(ops=st.lists(st.sampled_from(["exp", "tanh", "negative", "add", "multiply"]), min_size=1, max_size=8),
       data=st.data())
def test_every_node_and_edge_of_any_graph_is_drawn(ops, data):
    g = mc.ir.Graph()
    values = [g.placeholder("x", mc.ir.TensorMeta((2, 3), np.dtype(np.float64)))]
    for op in ops:
        a = data.draw(st.sampled_from(values))
        if op in ("add", "multiply"):
            values.append(g.call(op, a, data.draw(st.sampled_from(values))))
        else:
            values.append(g.call(op, a))
    g.output([values[-1]])
    groups = {n.name: f"k{i % 3}" for i, n in enumerate(g.calls)}
    dot = drawing.to_dot(g, "random", groups)
    assert len(re.findall(r'^\s+"\w+" \[label=', dot, re.M)) == len(g.nodes) - 1
    expected = {(i.name, n.name) for n in g.calls for i in n.inputs} | {(values[-1].name, "output")}
    assert set(re.findall(r'"(\w+)" -> "(\w+)"', dot)) == expected
    assert dot.count("subgraph cluster_") == len(set(groups.values()))


def test_show_prints_the_path_outside_a_notebook(tmp_path, capsys):
    """In a script the picture's path is printed (tests/docs/test_notebooks.py shows it inline in a kernel)."""
    picture = tmp_path / "graph.svg"
    picture.write_text("<svg/>")
    drawing.show(picture)
    assert capsys.readouterr().out == f"{picture}\n"
