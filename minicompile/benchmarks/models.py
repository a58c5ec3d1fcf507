"""Whole-model benchmark: MobileNetV2 inference at 224×224.

In:  nothing (``main()``), or the batch sizes and whether to include torch.
Out: a printed table — latency at batch 1 and throughput (images/s) at batch
     32 — for eager NumPy, minicompile (cpp backend), and, where PyTorch is
     installed, the same network in torch eager and under ``torch.compile``,
     plus minicompile's compile time and its graph, kernel and extern counts.

The torch network is built from the very weights of
:mod:`minicompile.examples.mobilenet_v2` (NCHW convolutions in the
channels-last memory format, so its activations are laid out as NumPy's
NHWC ones), and its logits are checked against NumPy's before anything is
timed.  Each engine runs the same inputs in one process; a time is the
median of repeated runs after warm-up (:mod:`.timing`).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import config
from ..examples import mobilenet_v2 as mnv2
from .timing import format_seconds, median_seconds

SIZE = 224
LATENCY_BATCH, THROUGHPUT_BATCH = 1, 32


def _torch_model(params: dict) -> Callable | None:
    """MobileNetV2 in PyTorch with ``params``' weights, or None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None

    def t(a: np.ndarray) -> "torch.Tensor":
        return torch.from_numpy(np.ascontiguousarray(a))

    # NumPy's layouts -> torch's (out, in, kh, kw) conv weights.
    stem_w = t(params["stem_w"].transpose(3, 0, 1, 2)).contiguous(memory_format=torch.channels_last)
    blocks = []
    for b in params["blocks"]:
        tb = {"stride": b["stride"], "residual": b["residual"]}
        if "expand_w" in b:
            tb["expand"] = (t(b["expand_w"].T[:, :, None, None]), t(b["expand_b"]))
        tb["dw"] = (t(b["dw_w"][:, None]), t(b["dw_b"]))
        tb["project"] = (t(b["project_w"].T[:, :, None, None]), t(b["project_b"]))
        blocks.append(tb)
    last = (t(params["last_w"].T[:, :, None, None]), t(params["last_b"]))
    fc = (t(params["fc_w"].T), t(params["fc_b"]))

    def relu6(x):
        return torch.clamp(x, 0.0, 6.0)

    def forward(x):  # x: NCHW in channels-last memory (an NHWC array's view)
        x = relu6(F.conv2d(x, stem_w, params_b["stem"], stride=2, padding=1))
        for b in blocks:
            h = x
            if "expand" in b:
                h = relu6(F.conv2d(h, *b["expand"]))
            w, bias = b["dw"]
            h = relu6(F.conv2d(h, w, bias, stride=b["stride"], padding=1, groups=w.shape[0]))
            h = F.conv2d(h, *b["project"])
            x = x + h if b["residual"] else h
        x = relu6(F.conv2d(x, *last))
        return F.linear(x.mean(dim=(2, 3)), *fc)

    params_b = {"stem": t(params["stem_b"])}
    return forward


def _nchw_view(images: np.ndarray) -> Any:
    import torch
    return torch.from_numpy(images).permute(0, 3, 1, 2)


def _row(name: str, t1: float | None, t32: float | None, base1: float, base32: float, note: str = "") -> str:
    if t1 is None:
        return f"{name:<14} {'—':>10} {'—':>11} {'':>10} {'':>11}  {note}"
    ips = THROUGHPUT_BATCH / t32
    lower = 100 * (1 - t1 / base1)      # latency: how much lower than NumPy's
    higher = 100 * (base32 / t32 - 1)   # throughput: how much higher than NumPy's
    return f"{name:<14} {format_seconds(t1):>10} {ips:>7.1f} im/s {lower:>9.0f}% {higher:>10.0f}%  {note}"


def run(with_torch: bool = True, budget_s: float = 2.0) -> dict[str, Any]:
    """Measure every engine; returns the numbers printed by :func:`main`."""
    import minicompile as mc
    from ..inductor.compile_fx import compile_graph

    params = mnv2.init_params()
    images = {b: mnv2.example_images(b, SIZE) for b in (LATENCY_BATCH, THROUGHPUT_BATCH)}
    compiled_graphs: list = []

    def backend(graph, example_inputs):
        out = compile_graph(graph, example_inputs)
        compiled_graphs.append(out)
        return out

    mc.reset()
    fn = mc.compile(mnv2.forward, backend=backend)
    # Cold compile: capture, inductor and g++, with an empty kernel cache.
    saved_cache = config.cache_dir
    with tempfile.TemporaryDirectory() as cold:
        config.cache_dir = Path(cold)
        try:
            start = time.perf_counter()
            fn(params, images[LATENCY_BATCH])
            compile_s = time.perf_counter() - start
        finally:
            config.cache_dir = saved_cache
    graph = compiled_graphs[0]
    explained = mc.explain(mnv2.forward)(params, images[LATENCY_BATCH])
    for b, x in images.items():
        np.testing.assert_allclose(fn(params, x), mnv2.forward(params, x), rtol=1e-3, atol=1e-3)

    engines: dict[str, Callable[[int], Any]] = {
        "numpy": lambda b: mnv2.forward(params, images[b]),
        "minicompile": lambda b: fn(params, images[b]),
    }
    torch_note = ""
    torch_compile_s = None
    model = _torch_model(params) if with_torch else None
    if model is not None:
        import torch
        views = {b: _nchw_view(x) for b, x in images.items()}
        with torch.no_grad():
            got = model(views[LATENCY_BATCH]).numpy()
        np.testing.assert_allclose(got, mnv2.forward(params, images[LATENCY_BATCH]), rtol=1e-3, atol=1e-3)
        compiled_model = torch.compile(model, dynamic=False)

        def torch_eager(b):
            with torch.no_grad():
                return model(views[b])

        def torch_compiled(b):
            with torch.no_grad():
                return compiled_model(views[b])

        start = time.perf_counter()
        for b in images:
            torch_compiled(b)
        torch_compile_s = time.perf_counter() - start
        engines["torch eager"] = torch_eager
        engines["torch.compile"] = torch_compiled
    elif with_torch:
        torch_note = "(PyTorch not installed)"

    times: dict[str, tuple[float, float]] = {}
    for name, engine in engines.items():
        t1 = median_seconds(engine, LATENCY_BATCH, warmup=2, min_runs=5, budget_s=budget_s)
        t32 = median_seconds(engine, THROUGHPUT_BATCH, warmup=1, min_runs=3, budget_s=budget_s)
        times[name] = (t1, t32)
    return {
        "times": times, "compile_s": compile_s, "torch_compile_s": torch_compile_s,
        "graphs": explained.graph_count, "graph_breaks": explained.graph_break_count,
        "kernels": len(graph.kernels),
        "externs": graph.schedule.count("\nextern ") + graph.schedule.startswith("extern "),
        "torch_note": torch_note,
    }


def main(with_torch: bool = True) -> dict[str, Any]:
    """Print the MobileNetV2 table (about a minute, two with torch.compile)."""
    r = run(with_torch)
    base1, base32 = r["times"]["numpy"]
    print(f"MobileNetV2 inference, {SIZE}x{SIZE}, float32, NHWC "
          f"(latency at batch {LATENCY_BATCH}, throughput at batch {THROUGHPUT_BATCH}; medians)")
    print(f"{'engine':<14} {'latency':>10} {'throughput':>11} {'lat. lower':>10} {'thru higher':>11}  (vs NumPy)")
    for name, (t1, t32) in r["times"].items():
        print(_row(name, t1, t32, base1, base32))
    if r["torch_note"]:
        print(_row("torch", None, None, base1, base32, r["torch_note"]))
    print(f"minicompile: first call (capture + compile, cold cache) {r['compile_s']:.1f} s, {r['graphs']} graph(s), {r['graph_breaks']} break(s), "
          f"{r['kernels']} kernels, {r['externs']} extern calls")
    if r["torch_compile_s"] is not None:
        print(f"torch.compile: first calls (compile) {r['torch_compile_s']:.1f} s for both batch sizes")
    return r


if __name__ == "__main__":
    main()
