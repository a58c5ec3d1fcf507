"""The HTML compile report: content, self-containment, the CLI, and a real browser."""
from __future__ import annotations

import html
import os
import re
import shutil
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.__main__ import main as cli
from minicompile.ir import drawing
from minicompile.report.html import SECTIONS
from chromium import console_lines, find_browser, headless


def with_break(x, w):
    h = x @ w
    a = np.tanh(h + 1.0)
    print("not traced")
    return a.mean(axis=1) * 2


def _line(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _ids(page):
    return set(re.findall(r'\sid="([^"]+)"', page))


@pytest.fixture
def page_with_break(tmp_path):
    x, w = np.random.rand(8, 4), np.random.rand(4, 3)
    path = str(tmp_path / "report.html")
    result = mc.report(with_break, path, backend="cpp")(x, w)
    np.testing.assert_allclose(result, with_break(x, w))
    return path, open(path, encoding="utf-8").read()


def test_report_has_every_stage(page_with_break):
    _, page = page_with_break
    ids = _ids(page)
    for section in ("summary", "source", "bytecode", "graphs", "guards", "schedule", "kernels", "timings", "log"):
        assert section in ids, section
    assert "training" not in ids  # nothing needs a gradient
    assert "transformed with_break" in page  # the transformed bytecode of the break
    assert "def guard(L, G)" in page
    assert "g0_kernel_0_add_tanh" in page and "extern np.matmul" in page  # float64: BLAS
    assert "def call(" in page  # the wrapper
    assert 'extern "C" void g0_kernel_0_add_tanh(' in page.replace("&quot;", '"')  # the kernel's own code
    assert "extern" in page and "# Calls" in page  # schedule and timing table


def test_source_marks_break_and_guard_lines_and_links_kernels(page_with_break):
    _, page = page_with_break
    brk = _line(with_break, 'print("not traced")')
    assert re.search(rf'<tr id="src-{brk}" class="break[^"]*"', page)
    assert re.search(r'<tr id="src-\d+" class="[^"]*guard', page)
    tanh = _line(with_break, "np.tanh")
    row = re.search(rf'<tr id="src-{tanh}".*?</tr>', page).group(0)
    assert "g0_kernel_0_add_tanh" in row
    # every in-page link has its target: kernels -> source lines and back
    ids = _ids(page)
    targets = re.findall(r'href="#([^"]+)"', page)
    assert targets and all(t in ids for t in targets)
    kernel_anchor = re.search(r'<h3 id="(k-[^"]*kernel_0_add_tanh)"', page).group(1)
    section = page[page.index(f'id="{kernel_anchor}"'):]
    assert f'href="#src-{tanh}"' in section[:600]


def test_report_is_self_contained(page_with_break):
    _, page = page_with_break
    assert not re.search(r'<(script|img|link|iframe)[^>]+(src|href)=', page)
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "@import" not in page and "url(" not in page


@pytest.mark.skipif(drawing.dot_program() is None, reason="Graphviz `dot` is not installed")
def test_pictures_are_inline_svg(page_with_break):
    _, page = page_with_break
    assert page.count('<div class="picture graph"><svg') == 4, re.findall(r'<h3>[^<]*</h3>|class="missing">[^<]*', page)  # two captured graphs, two schedules


def test_without_graphviz_the_page_shows_dot_text(tmp_path, monkeypatch):
    monkeypatch.setattr(drawing, "dot_program", lambda: None)
    path = str(tmp_path / "r.html")
    mc.report(lambda x: np.exp(x).sum(), path, backend="cpp")(np.ones(4))
    page = open(path).read()
    assert 'class="picture graph"' not in page
    assert "Graphviz's <code>dot</code> was not found" in page and "digraph" in page


def test_training_report_shows_joint_graph_and_cut(tmp_path):
    def loss(x, w):
        return (np.tanh(x @ w) ** 2).sum()

    path = str(tmp_path / "train.html")
    x = np.random.rand(4, 3)
    w = mc.Tensor(np.random.rand(3, 2), requires_grad=True)
    out = mc.report(loss, path, backend="cpp")(x, w)
    np.testing.assert_allclose(out.data, loss(x, w.data))
    out.backward()
    np.testing.assert_allclose(w.grad, x.T @ (2 * np.tanh(x @ w.data) * (1 - np.tanh(x @ w.data) ** 2)))
    page = open(path).read()
    assert "training" in _ids(page)
    assert "min-cut partition: saves" in page and "joint graph" in page


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 5), scale=st.floats(-3, 3), seed=st.integers(0, 99))
def test_report_returns_what_eager_numpy_returns(tmp_path_factory, rows, cols, scale, seed):
    x = np.random.default_rng(seed).standard_normal((rows, cols))

    def program(x):
        return np.maximum(x * scale, 0.0).sum(axis=0), np.exp(-np.abs(x)).max()

    path = str(tmp_path_factory.mktemp("r") / "r.html")
    got = mc.report(program, path, backend="cpp")(x)
    expected = program(x)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
    assert "kernel_0" in open(path).read()


def test_a_failing_call_still_writes_the_page(tmp_path):
    def bad(x):
        return np.exp(x) @ np.ones((7, 2))  # shapes do not match

    path = str(tmp_path / "bad.html")
    with pytest.raises(RuntimeError, match="report written"):
        mc.report(bad, path, backend="cpp")(np.ones((2, 3)))
    assert "The run raised" in open(path).read()


USER_FILE = '''
import numpy as np

def scaled_softmax(x, t):
    z = x / t
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def scaled_softmax_example_inputs():
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((4, 8)), 2.0), (rng.standard_normal((4, 8)), 3.0)]

def no_inputs(x):
    return x + 1
'''


def test_cli_writes_the_report_of_a_function_in_a_file(tmp_path, capsys):
    source = tmp_path / "user_model.py"
    source.write_text(textwrap.dedent(USER_FILE))
    out = tmp_path / "softmax.html"
    assert cli(["report", f"{source}:scaled_softmax", "-o", str(out), "--backend", "cpp"]) == 0
    assert "wrote" in capsys.readouterr().out
    page = out.read_text()
    assert "Recompiling scaled_softmax" in page  # t changed: a guard on its value failed
    assert "def scaled_softmax(x, t):" in page


def test_cli_says_how_to_provide_inputs(tmp_path, capsys):
    source = tmp_path / "user_model.py"
    source.write_text(textwrap.dedent(USER_FILE))
    assert cli(["report", f"{source}:no_inputs"]) == 2
    assert "def no_inputs_example_inputs()" in capsys.readouterr().err
    assert cli(["report", f"{tmp_path}/missing.py:f"]) == 2
    assert cli(["report", f"{source}:nothing_here"]) == 2


def test_cli_uses_the_examples_own_inputs(tmp_path):
    from minicompile.examples import gelu_layernorm

    out = tmp_path / "gl.html"
    assert cli(["report", f"{gelu_layernorm.__file__}:gelu_layernorm", "-o", str(out)]) == 0
    assert "kernel_0" in out.read_text()


# ---- in a real browser -----------------------------------------------------------------

def test_console_errors_are_detected(tmp_path):
    """The check below can fail: a page with a script error shows up in the log."""
    browser = find_browser()
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>missingFunction();</script></body></html>")
    run = headless(browser, "--dump-dom", bad.as_uri(), cwd=tmp_path)
    assert any("missingFunction" in line for line in console_lines(run.stderr))


def test_report_loads_in_chromium_without_console_errors(page_with_break, tmp_path):
    browser = find_browser()
    path, _ = page_with_break
    uri = "file://" + os.path.abspath(path)
    run = headless(browser, "--dump-dom", uri, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_lines(run.stderr) == []
    dom = run.stdout
    for section in ("summary", "source", "bytecode", "graphs", "guards", "schedule", "kernels", "timings"):
        assert f'id="{section}"' in dom
    shot = tmp_path / "report.png"
    run = headless(browser, f"--screenshot={shot}", "--window-size=1280,2400", uri, cwd=tmp_path)
    assert shot.exists() and shot.read_bytes()[:4] == b"\x89PNG"
    keep = os.environ.get("MINICOMPILE_REPORT_SCREENSHOT")
    if keep:  # for looking at it: MINICOMPILE_REPORT_SCREENSHOT=/tmp/report.png
        shutil.copy(shot, keep)


def test_sections_are_listed_in_order():
    assert SECTIONS[0] == "summary" and SECTIONS.index("source") < SECTIONS.index("kernels")


def test_repeat_times_warm_calls(tmp_path):
    path = str(tmp_path / "r.html")
    x = np.random.rand(6, 5)
    out = mc.report(lambda x: np.tanh(x * 2).sum(axis=1), path, backend="cpp", repeat=3)(x)
    np.testing.assert_allclose(out, np.tanh(x * 2).sum(axis=1))
    page = open(path).read()
    assert re.search(r"kernel_0_multiply_tanh_sum +kernel .* 2\n", page)  # two warm calls
    with pytest.raises(ValueError, match="repeat"):
        mc.report(np.exp, path, repeat=0)


@pytest.mark.parametrize("backend", ["spyre", "triton", "eager"])
def test_every_backend_gets_a_consistent_page(tmp_path, backend):
    if backend == "triton":
        pytest.importorskip("triton")

    def g(x, w):
        return np.maximum(x @ w, 0).sum(axis=1)

    x = np.random.rand(32, 16).astype(np.float32)
    w = np.random.rand(16, 8).astype(np.float32)
    path = str(tmp_path / "r.html")
    np.testing.assert_allclose(mc.report(g, path, backend=backend)(x, w), g(x, w), rtol=2e-2)
    page = open(path).read()
    ids = _ids(page)
    assert all(t in ids for t in re.findall(r'href="#([^"]+)"', page))
    links = re.findall(r'class="kernel-link" href="#([^"]+)"', page)
    assert bool(links) == (backend != "eager")  # compiled backends link lines to kernels


def test_kernel_excerpt_cuts_one_definition():
    from minicompile.report.html import kernel_excerpt

    cpp = 'int helper() {}\nextern "C" void k0(double* a)\n{\n    a[0] = 1;\n}\n\nextern "C" void k0_obj(void* a) { k0(a); }\n'
    assert kernel_excerpt(cpp, "k0") == 'extern "C" void k0(double* a)\n{\n    a[0] = 1;\n}'
    py = "import triton\n\n@triton.jit\ndef k1(x):\n    y = x\n\n    return y\ndef k2():\n    pass\n"
    assert kernel_excerpt(py, "k1") == "@triton.jit\ndef k1(x):\n    y = x\n\n    return y"
    assert kernel_excerpt(cpp, "missing") is None


def test_a_decorated_function_is_reported_with_its_backend(tmp_path):
    @mc.compile(backend="eager")
    def f(x):
        return np.exp(x) + 1

    path = str(tmp_path / "r.html")
    np.testing.assert_allclose(mc.report(f, path)(np.ones(3)), np.exp(np.ones(3)) + 1)
    page = open(path).read()
    assert "<th>backend</th><td>eager" in page
    assert not f.cache  # the decorated function's own cache is left alone


def test_a_function_without_source_still_gets_a_page(tmp_path):
    namespace = {"np": np}
    exec("def g(x):\n    return np.sqrt(x)\n", namespace)
    path = str(tmp_path / "r.html")
    np.testing.assert_allclose(mc.report(namespace["g"], path, backend="cpp")(np.arange(4.0)), np.sqrt(np.arange(4.0)))
    page = open(path).read()
    assert "source of this function is not available" in page and "kernel_0" in page


def test_cli_accepts_a_module_name(tmp_path):
    out = tmp_path / "gl.html"
    assert cli(["report", "minicompile.examples.gelu_layernorm:gelu_layernorm", "-o", str(out), "--repeat", "1"]) == 0
    assert "gelu_layernorm" in out.read_text()


def noisy_helper(a):
    print("inside a helper")
    return a * 2


def calls_noisy_helper(x):
    y = np.exp(x)
    z = noisy_helper(y)
    return z.sum()


def test_a_break_inside_an_inlined_helper_marks_the_call(tmp_path):
    path = str(tmp_path / "r.html")
    x = np.arange(3.0)
    assert mc.report(calls_noisy_helper, path, backend="cpp")(x) == calls_noisy_helper(x)
    page = open(path).read()
    call = _line(calls_noisy_helper, "noisy_helper(y)")
    assert re.search(rf'<tr id="src-{call}" class="break[^"]*"', page)


# ---- several graphs: two dtypes, a break, warm calls ---------------------------------------

def two_matmuls(x, w):
    a = np.tanh(x @ w + 1.0)  # float32: the GEMM runs inside the kernel of its epilogue
    print("not traced")
    return (a @ w.T).sum(axis=1)  # float32: a GEMM of its own (a reduction reads it)


@pytest.fixture(scope="module")
def two_dtypes(tmp_path_factory):
    """``two_matmuls`` on float32 and on float64 arrays, twice each: four graphs (per
    dtype, before and after the break), the float32 matmuls generated as C++ and
    the float64 ones called through BLAS, and warm calls after the compiling ones."""
    from minicompile.report import gather, write_page

    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((8, 4)), rng.standard_normal((4, 3))
    calls = [((x.astype(np.float32), w.astype(np.float32)), {}), ((x, w), {})] * 2
    g = gather(two_matmuls, calls, "cpp")
    assert g.error is None
    path = tmp_path_factory.mktemp("report") / "two_dtypes.html"
    write_page(g, str(path))
    return g, str(path), path.read_text(encoding="utf-8")


def _graphs(g):
    from minicompile.report.gather import compiled_graphs

    return [(gid, cg) for f in g.frames for e in f.entries for _, gid, cg in compiled_graphs(e)]


def _source_row(page, line):
    return re.search(rf'<tr id="src-{line}".*?</tr>', page, re.S).group(0)


def test_each_matmul_is_shown_as_the_wrapper_runs_it(two_dtypes):
    from minicompile.report.gather import kernel_groups

    g, _, page = two_dtypes
    ways = set()
    for gid, cg in _graphs(g):
        groups = kernel_groups(cg)
        for node in [n for n in cg.graph.calls if n.op.name == "matmul"]:
            gemm = f"g{gid.index}_mm_{node.name}"
            if "_op_matmul(" in cg.wrapper_source:  # NumPy's BLAS
                ways.add("blas")
                assert f"extern {node.name} = np.matmul(...)  BLAS through NumPy" in cg.schedule
                assert groups[node.name] == "extern np.matmul" and "mm_" not in cg.wrapper_source
            elif f"{gemm}(" in cg.wrapper_source:  # the generated GEMM, its own entry
                ways.add("gemm")
                assert f"{node.name} = {gemm}(" in cg.schedule and "np.matmul" not in cg.schedule
                assert groups[node.name] == gemm and "not BLAS" in cg.wrapper_source
            else:  # the GEMM inside the kernel of its epilogue
                ways.add("epilogue")
                kernel = groups[node.name]
                assert kernel in cg.kernels and f"{kernel}(" in cg.wrapper_source
                assert f"{node.name} = GEMM(" in cg.schedule and f"inside {kernel}" in cg.schedule
                assert "np.matmul" not in cg.schedule
            # the picture and the kernel heading name the same thing
            assert f"{groups[node.name]}" in drawing.to_dot(cg.graph, "schedule", groups)
            assert re.search(rf'<h3 id="k-[^"]*">{re.escape(groups[node.name])} <small>\(graph {gid.index} ', page)
    assert ways == {"blas", "gemm", "epilogue"}, ways


def test_break_and_guard_counts_match_the_sites_shown(two_dtypes):
    g, _, page = two_dtypes
    brk = _line(two_matmuls, 'print("not traced")')
    assert re.search(rf"<th>graph breaks</th><td>1 \(line {brk}\); 2 cache entries break there</td>", page)
    assert _source_row(page, brk).count('class="tag break"') == 1
    badges = guard_lines = 0
    for row in re.findall(r'<tr id="src-\d+".*?</tr>', page, re.S):
        kernels = re.findall(r'class="kernel-link" href="#([^"]+)">([^<]+)</a>', row)
        assert len(kernels) == len(set(kernels)) and len({k for _, k in kernels}) == len(kernels), row
        for title, text in re.findall(r'<span class="tag guard" title="([^"]*)">(\d+) guard\(s\)</span>', row):
            assert int(text) == len(title.split("\n"))  # the count is the checks listed
            badges, guard_lines = badges + int(text), guard_lines + 1
    assert f"<th>guards</th><td>{badges} checks from {guard_lines} source lines</td>" in page


def test_kernel_names_are_one_per_kernel_across_the_graphs(two_dtypes):
    g, _, page = two_dtypes
    names = []
    for gid, cg in _graphs(g):
        for name in cg.kernels + cg.extern_kernels:
            names.append(name)
            assert name.startswith(f"g{gid.index}_"), name
            assert f'void {name}(' in cg.kernel_source and f"{name}(" in cg.wrapper_source
            code = [a.text for a in g.artifacts if a.name == "output_code" and a.graph.startswith(f"graph {gid.index} ")]
            assert any(f"void {name}(" in text for text in code)  # the log says it too
    assert len(names) == len(set(names)) >= 4
    profiled = {e.name for e in g.profile.events if e.cat == "kernel"}
    assert profiled == set(names)  # the warm calls ran every kernel, each under its name
    for name in names:
        assert re.search(rf"^{name} +kernel ", page, re.M)  # its row in the timing table


def test_every_logged_artifact_names_its_graph(two_dtypes):
    g, _, page = two_dtypes
    graphs = {str(gid) for gid, _ in _graphs(g)}
    for kind in ("schedule", "output_code", "graph", "guards"):
        labels = [a.graph for a in g.artifacts if a.name == kind]
        assert labels and set(labels) <= graphs, (kind, labels)
    assert sorted(a.graph for a in g.artifacts if a.name == "schedule") == sorted(graphs)  # one each
    assert "<summary>schedule · graph 0 of two_matmuls</summary>" in page
    assert "<summary>schedule · graph 1 of two_matmuls (resumed at line" in page


def test_timings_keep_compiling_apart_and_name_every_kernel_row(two_dtypes):
    g, _, page = two_dtypes
    table = html.unescape(re.search(r"(-{20,}\nName .*?Wall time of the profile[^\n]*)", page, re.S).group(1))
    assert re.search(r"^two_matmuls \[cpp\] +compiled .* 2$", table, re.M)  # the two warm calls
    assert re.search(r"^compile \+ first run two_matmuls +compile ", table, re.M)  # compiles, apart
    steady = table.split("Compile (")[0]
    assert "compile" not in steady.replace("compiled", "")
    svg = re.search(r'<section id="timings">.*?</svg>', page, re.S).group(0)
    labels = re.findall(r'<text x="0" y="\d+">([^<]+)</text>', svg)
    assert labels[0].startswith("compile (first calls): ") and not any("depth" in t for t in labels)
    kernels = {name for _, cg in _graphs(g) for name in cg.kernels + cg.extern_kernels}
    assert kernels <= set(labels)


def test_two_graph_report_in_chromium(two_dtypes, tmp_path):
    browser = find_browser()
    _, path, _ = two_dtypes
    run = headless(browser, "--dump-dom", "file://" + os.path.abspath(path), cwd=tmp_path)
    assert run.returncode == 0 and console_lines(run.stderr) == []
    dom = run.stdout
    brk = _line(two_matmuls, 'print("not traced")')
    assert _source_row(dom, brk).count('class="tag break"') == 1
    assert "compile (first calls): " in dom and "g1_kernel_0" in dom
