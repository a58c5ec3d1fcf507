"""mc.profile(): eager NumPy calls, compiled calls down to kernels, table, trace, plot."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicompile as mc
from minicompile.profiler import hooks
from minicompile.profiler.events import COMPILE
from minicompile.profiler.timeline import WINDOW_SHARE, layout


def mlp_row(x, w):
    return np.tanh(x @ w + 1.0).sum(axis=1)


def _names(prof, cat):
    return [e.name for e in prof.events if e.cat == cat]


def test_eager_numpy_calls_are_events_with_python_between():
    x = np.arange(12.0).reshape(3, 4)
    with mc.profile() as prof:
        a = np.exp(x)
        b = a.sum(axis=0)
        c = np.add.reduce(x)
        d = np.linalg.norm(x)
    assert _names(prof, "numpy") == ["np.exp", "ndarray.sum", "np.add.reduce", "np.linalg.norm"]
    assert "Python (between calls)" in _names(prof, "python")
    np.testing.assert_array_equal(b, np.exp(x).sum(axis=0))
    np.testing.assert_array_equal(c, x.sum(axis=0))
    assert d == np.sqrt((x * x).sum())
    # host events tile the profile: top-level durations add up to the wall time
    top = [e for e in prof.events if e.depth == 0 and e.track == 0]
    assert sum(e.dur_ns for e in top) == prof.total_ns


def test_numpy_is_put_back_even_after_an_error():
    exp, add = np.exp, np.add
    with pytest.raises(ZeroDivisionError):
        with mc.profile():
            assert np.exp is not exp  # recording stand-in
            assert np.add.nin == 2 and np.add.identity == 0  # the ufunc's own attributes
            1 / 0
    assert np.exp is exp and np.add is add and isinstance(np.exp, np.ufunc)
    assert hooks.active is None and sys.getprofile() is None


def test_ufunc_methods_through_the_proxy_keep_their_effect():
    a, i, j = np.zeros(4), np.arange(2), np.arange(3)
    with mc.profile() as prof:
        np.add.at(a, [0, 0, 2], 1.0)
        outer = np.multiply.outer(i, j)
    np.testing.assert_array_equal(a, [2.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(outer, np.outer(np.arange(2), np.arange(3)))
    assert _names(prof, "numpy") == ["np.add.at", "np.multiply.outer"]


def test_nested_profiles_are_refused():
    with mc.profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with mc.profile():
                pass


def test_compiled_call_has_guard_wrapper_kernel_and_extern_events():
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5), np.random.rand(5, 3)
    f(x, w)
    compiled = f.cache[0].compiled
    original = compiled._call
    with mc.profile() as prof:
        for _ in range(3):
            r = f(x, w)
    np.testing.assert_allclose(r, mlp_row(x, w))
    assert compiled._call is original  # the instrumented wrapper is gone after the block
    assert _names(prof, "compiled") == ["mlp_row [cpp]"] * 3
    assert _names(prof, "guard") == ["guards mlp_row"] * 3
    assert _names(prof, "kernel") == compiled.kernels * 3
    assert _names(prof, "extern") == ["np.matmul"] * 3  # BLAS, called by the wrapper
    assert _names(prof, "numpy") == []  # NumPy inside compiled code is not eager code
    for e in prof.events:
        if e.cat in ("kernel", "extern"):
            assert e.depth == 2  # call > run > kernel
    for e in prof.events:
        assert e.self_ns >= 0


def test_matmuls_generated_as_cpp_are_kernel_events():
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5).astype(np.float32), np.random.rand(5, 3).astype(np.float32)
    f(x, w)
    compiled = f.cache[0].compiled
    assert compiled.extern_kernels  # a small float32 product runs as a generated kernel
    with mc.profile() as prof:
        f(x, w)
    assert sorted(_names(prof, "kernel")) == sorted(compiled.kernels + compiled.extern_kernels)


def test_a_miss_inside_the_profile_compiles_against_the_real_numpy():
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(4, 5), np.random.rand(5, 3)
    with mc.profile() as prof:
        r = f(x, w)
    entry = f.cache[0]
    assert entry.capture.break_reason is None and entry.compiled is not None
    assert _names(prof, "compile") == ["compile + first run mlp_row"]
    np.testing.assert_allclose(r, mlp_row(x, w))


def test_an_eager_fallback_entry_shows_its_numpy_calls():
    def breaks(x):
        y = np.exp(x)
        return float(y.sum())  # float() of a traced value: no graph

    f = mc.compile(breaks, backend="cpp")
    x = np.ones(3)
    f(x)
    with mc.profile() as prof:
        assert f(x) == breaks(x)
    assert "compiled" in {e.cat for e in prof.events}


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 6), cols=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_profiled_results_equal_eager_numpy(rows, cols, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols))
    w = rng.standard_normal((cols, 3))

    def program(x, w):
        h = np.maximum(x @ w, 0.0)
        return h.sum(axis=0), np.exp(-h).mean()

    f = mc.compile(program, backend="cpp")
    with mc.profile() as prof:
        got = f(x, w)
        eager = program(x, w)
        again = f(x, w)
    for a, b, c in zip(got, eager, again):
        np.testing.assert_allclose(a, b)
        np.testing.assert_allclose(c, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.shape(a) == np.shape(b)
    assert "np.maximum" in _names(prof, "numpy")  # the eager run, recorded
    assert len(_names(prof, "compiled")) == 2


def test_table_summarizes_by_name():
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5), np.random.rand(5, 3)
    f(x, w)
    with mc.profile() as prof:
        f(x, w)
        f(x, w)
        np.exp(x)
    text = prof.table()
    assert "Name" in text and "Self %" in text and "# Calls" in text
    row = next(line for line in text.splitlines() if line.startswith("mlp_row [cpp]"))
    assert row.split()[-1] == "2"
    assert "np.exp" in text
    by_calls = prof.table(sort_by="calls", row_limit=1)
    assert "more rows" in by_calls
    with pytest.raises(ValueError, match="sort_by"):
        prof.table(sort_by="bogus")


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5), np.random.rand(5, 3)
    f(x, w)
    with mc.profile() as prof:
        f(x, w)
        np.exp(x)
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    data = json.loads(open(path).read())
    spans = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert {e["cat"] for e in spans} >= {"compiled", "guard", "wrapper", "kernel", "numpy", "python"}
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in spans)
    call = next(e for e in spans if e["cat"] == "compiled")
    kernel = next(e for e in spans if e["cat"] == "kernel")
    assert call["ts"] <= kernel["ts"] and kernel["ts"] + kernel["dur"] <= call["ts"] + call["dur"] + 1e-3


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    with mc.profile() as prof:
        np.exp(np.ones(3))
    path = prof.plot(str(tmp_path / "timeline.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with mc.profile() as prof:
        pass
    with pytest.raises(ImportError, match=r"minicompile\[plot\]"):
        prof.plot(str(tmp_path / "timeline.png"))


def test_training_forward_and_backward_kernels_are_recorded():
    def loss(x, w):
        return (np.tanh(x @ w) ** 2).sum()

    f = mc.compile(loss, backend="cpp")
    x = np.random.rand(4, 3)
    w = mc.Tensor(np.random.rand(3, 2), requires_grad=True)
    f(x, w).backward()
    with mc.profile(record_numpy=False) as prof:
        out = f(x, w)
        out.backward()
    aot = f.cache[0].compiled
    assert set(aot.forward.kernels) <= set(_names(prof, "kernel"))
    assert set(aot._backward.kernels) <= set(_names(prof, "kernel"))
    assert _names(prof, "numpy") == []


def test_spyre_programs_are_on_their_own_track():
    f = mc.compile(lambda x: np.exp(x * 2.0).sum(axis=1), backend="spyre")
    x = np.random.rand(16, 8).astype(np.float32)
    f(x)
    with mc.profile() as prof:
        f(x)
    programs = [e for e in prof.events if e.cat == "spyre"]
    report = f.cache[0].compiled.report
    assert [e.name for e in programs] == [name for name, _ in report.steps]
    assert all(e.track == 1 and e.args["cycles"] > 0 for e in programs)


def test_triton_kernels_are_events():
    pytest.importorskip("triton")
    f = mc.compile(lambda x: np.exp(x * 2.0).sum(axis=1), backend="triton")
    x = np.random.rand(16, 8).astype(np.float32)
    f(x)
    with mc.profile() as prof:
        r = f(x)
    np.testing.assert_allclose(r, np.exp(x * 2.0).sum(axis=1), rtol=1e-5)
    assert _names(prof, "kernel") == f.cache[0].compiled.kernels


def test_writes_into_arguments_happen_once_under_the_profile():
    def update(x, y):
        np.copyto(x, x * 2 + y)  # functionalized, written back after the graph
        return x.sum()

    f = mc.compile(update, backend="cpp")
    a, b = np.arange(6.0), np.ones(6)
    a_eager = a.copy()
    f(a.copy(), b)
    with mc.profile() as prof:
        got = f(a, b)
        expected = update(a_eager, b)
        out = np.empty(6)
        np.add(a_eager, 1.0, out=out)  # out= through the recording stand-in
    np.testing.assert_array_equal(a, a_eager)
    assert got == expected
    np.testing.assert_array_equal(out, a_eager + 1)
    assert "np.copyto" in _names(prof, "numpy") and "np.add" in _names(prof, "numpy")


def test_other_threads_run_normally_and_are_not_recorded():
    import threading

    results = []
    with mc.profile() as prof:
        t = threading.Thread(target=lambda: results.append(np.exp(np.zeros(3))))
        t.start()
        t.join()
    np.testing.assert_array_equal(results[0], np.ones(3))
    assert "np.exp" not in _names(prof, "numpy") and "np.zeros" not in _names(prof, "numpy")


def test_a_stand_in_kept_past_the_profile_records_nothing_more():
    with mc.profile() as prof:
        kept = np.exp  # e.g. `from numpy import exp` run while profiling
    before = len(prof._raw)
    np.testing.assert_array_equal(kept(np.zeros(2)), np.ones(2))
    assert len(prof._raw) == before


def test_a_compile_event_says_how_long_capture_and_backend_took():
    f = mc.compile(mlp_row, backend="cpp")
    with mc.profile() as prof:
        f(np.random.rand(4, 5), np.random.rand(5, 3))
    compile_event = next(e for e in prof.events if e.cat == "compile")
    assert compile_event.args["capture_ms"] > 0 and compile_event.args["backend_compile_ms"] > 0


def test_past_the_recompile_limit_the_eager_run_is_named(monkeypatch):
    from minicompile import config

    monkeypatch.setattr(config, "recompile_limit", 1)
    f = mc.compile(lambda x, k: x * k, backend="eager")
    f(np.ones(2), 1)
    with pytest.warns(UserWarning, match="recompile limit"):
        with mc.profile() as prof:
            assert list(f(np.ones(2), 2)) == [2.0, 2.0]  # k is guarded by value: a miss
    assert any(e.name.startswith("eager run ") and e.name.endswith("<lambda> (recompile limit)")
               for e in prof.events)
    assert _names(prof, "compile") == []


def test_kernels_of_graphs_allocating_from_the_cache_are_events_too():
    """A graph with large arrays runs inside the caching allocator's wrapper
    (inductor/codegen/cpp/allocator.py); its kernels were missing from profiles."""
    from minicompile.inductor.codegen.cpp import allocator as cpp_allocator

    def f(x):
        return np.tanh(x) * 2.0 + x.sum()

    g = mc.compile(f, backend="cpp")
    x = np.random.rand(1 << 20).astype(np.float32)  # a 4 MB result: allocated from the cache
    g(x)
    compiled = g.cache[0].compiled
    assert getattr(compiled._call, "__wrapped__", None) is not None or cpp_allocator.handler() is None
    original = compiled._call
    with mc.profile() as prof:
        r = g(x)
    assert compiled._call is original
    assert _names(prof, "kernel") == compiled.kernels
    np.testing.assert_allclose(r, f(x), rtol=1e-5)


def test_a_compile_is_warm_up_apart_from_the_steady_state(tmp_path):
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5), np.random.rand(5, 3)
    with mc.profile() as prof:
        for _ in range(3):
            r = f(x, w)
    np.testing.assert_allclose(r, mlp_row(x, w))
    assert [e.track for e in prof.events if e.cat == "compile"] == [COMPILE]
    rows = {(r.name, r.cat): r for r in prof.key_averages()}
    assert rows[("mlp_row [cpp]", "compiled")].count == 2  # the warm calls only
    assert rows[("compile + first run mlp_row", "compile")].count == 1
    # the steady rows' self times tile the wall time outside the call that compiled
    steady = sum(r.self_ns for r in prof.key_averages() if r.cat != "compile")
    assert 0 < prof.warmup_ns < prof.total_ns and steady == prof.total_ns - prof.warmup_ns
    head, compiles = prof.table().split("Compile (")
    assert "compile + first run mlp_row" in compiles and "compile + first run" not in head
    call = next(line for line in head.splitlines() if line.startswith("mlp_row [cpp]"))
    assert float(call.split()[5].rstrip("%")) <= 100.0  # Total % of the steady state
    trace = json.loads(open(prof.export_chrome_trace(str(tmp_path / "t.json"))).read())["traceEvents"]
    assert {e["tid"] for e in trace if e.get("cat") == "compile"} == {COMPILE}


def test_timeline_rows_are_named_and_compiles_cut_short():
    f = mc.compile(mlp_row, backend="cpp")
    x, w = np.random.rand(8, 5), np.random.rand(5, 3)
    with mc.profile() as prof:
        for _ in range(3):
            f(x, w)
    t = layout(prof.events, prof.start_ns, prof.end_ns, prof.compile_windows)
    labels = [r.label for r in t.rows]
    assert labels[0].startswith("compile (first calls): ") and not any("depth" in label for label in labels)
    assert set(f.cache[0].compiled.kernels) <= set(labels) and "np.matmul" in labels
    (start, end), = prof.compile_windows
    assert t.x(end) - t.x(start) <= WINDOW_SHARE * (prof.total_ns - prof.warmup_ns) + 1
    kernel = next(e for e in prof.events if e.cat == "kernel")
    assert t.x(kernel.start_ns) > t.x(end)  # after the cut, on the steady state's scale
    assert t.drawn(kernel)[1] == kernel.dur_ns


def test_the_readme_profile_snippet_shows_a_useful_table(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    snippet = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "mc.profile()" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {"__name__": "readme"})
    table = capsys.readouterr().out
    assert "Compile (" not in table  # warmed up: the steady state only
    assert re.search(r"^g0_kernel_0_\w+ +kernel .* 10$", table, re.M)  # each kernel, by its name
    assert re.search(r"^np\.matmul +extern .* 10$", table, re.M)  # float64: BLAS
    assert re.search(r"^np\.exp +numpy ", table, re.M)
    kernel_self = float(re.search(r"^g0_kernel_0_\w+ +kernel +([\d.]+)%", table, re.M).group(1))
    assert 0 < kernel_self < 100
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert (tmp_path / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_calls_on_cupy_arrays_have_device_events_and_the_table_says_how_busy_the_gpu_was(fake_cupy):
    """An ``np.*`` call given CuPy arrays also records CUDA events: one event per call
    on the GPU track, from when the host had made the launch to when the device had
    run it, and the table's last line is the GPU's busy share.  (The
    kernels of compiled code take the same path: tests/inductor/test_cudagraphs.py
    times replays, the GPU tests kernels.)"""
    from minicompile.profiler.events import GPU

    cp = fake_cupy.module
    x = cp.asarray(np.arange(12.0).reshape(3, 4))
    with mc.profile() as prof:
        y = np.exp(x)
        np.add.reduce(y)
        np.exp(np.ones(3))  # a NumPy array: host only
    device = [e for e in prof.events if e.cat == "device"]
    host = [e for e in prof.events if e.cat == "numpy"]
    assert [e.name for e in device] == ["np.exp", "np.add.reduce"]
    assert [e.name for e in host] == ["np.exp", "np.add.reduce", "np.ones", "np.exp"]
    assert all(e.track == GPU and e.dur_ns > 0 for e in device)
    for d, h in zip(device, host):  # no launch runs before the host has made it
        assert h.end_ns <= d.start_ns < d.end_ns
    busy = re.search(r"GPU busy ([\d.]+)ms of ([\d.]+)ms \(the steady state until the device finished: "
                     r"[\d.]+%\), idle the rest", prof.table())
    assert busy and 0 < float(busy[1]) <= float(busy[2])
    with mc.profile() as host_only:
        np.exp(np.ones(3))
    assert not any(e.cat == "device" for e in host_only.events) and "GPU busy" not in host_only.table()


def test_no_device_events_while_a_cuda_graph_is_being_recorded(fake_cupy, monkeypatch):
    """Inside a stream capture nothing runs, and the first event's wait for the device
    would end the capture: the timer stays out of it."""
    from minicompile.profiler.device import DeviceTimer

    timer, x = DeviceTimer(), fake_cupy.module.asarray(np.ones(3))
    monkeypatch.setattr(fake_cupy.CURRENT_STREAM, "capturing", True)
    assert timer.begin((x,)) is None
    monkeypatch.setattr(fake_cupy.CURRENT_STREAM, "capturing", False)
    assert timer.begin((1.0, [x])) is not None and timer.begin((np.ones(3),)) is None
