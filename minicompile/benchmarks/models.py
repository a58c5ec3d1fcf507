"""Whole-model benchmarks: MobileNetV2 inference at 224×224, and a GPT-style decoder
(inference and one training step).

In:  nothing (``main()``), or whether to include torch.
Out: printed tables, and the numbers as a dict —

* MobileNetV2: latency at batch 1 and throughput (images/s) at batch 32;
* decoder (:mod:`minicompile.examples.decoder_block` at :data:`DECODER`):
  inference latency and one SGD training step (forward, backward, update);

each for eager NumPy (the ``mc.Tensor`` tape for training), minicompile
(cpp backend), and, where PyTorch is installed, the same network in torch
eager and under ``torch.compile``, plus minicompile's compile time (cold
kernel cache) and its graph, break, kernel and extern counts.

The torch networks are built from the very weights of the NumPy examples
(MobileNetV2's NCHW convolutions in the channels-last memory format, so its
activations are laid out as NumPy's NHWC ones), and their outputs are
checked against NumPy's before anything is timed.  Each engine runs the same
inputs in one process; a time is the median of repeated runs after warm-up
(:mod:`.timing`).
"""
from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .. import config
from ..examples import decoder_block
from ..examples import mobilenet_v2 as mnv2
from .timing import format_seconds, median_seconds

SIZE = 224
LATENCY_BATCH, THROUGHPUT_BATCH = 1, 32


def _torch_model(params: dict, device: str = "cpu") -> Callable | None:
    """MobileNetV2 in PyTorch with ``params``' weights on ``device``, or None without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None

    def t(a: np.ndarray) -> "torch.Tensor":
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)

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


def _cold_seconds(first_call: Callable[[], Any]) -> float:
    """Wall time of a first call (capture, inductor and g++) with an empty kernel cache."""
    saved_cache = config.cache_dir
    with tempfile.TemporaryDirectory() as cold:
        config.cache_dir = Path(cold)
        try:
            start = time.perf_counter()
            first_call()
            return time.perf_counter() - start
        finally:
            config.cache_dir = saved_cache


def run(with_torch: bool = True, budget_s: float = 2.0) -> dict[str, Any]:
    """Measure every engine on MobileNetV2; returns the numbers printed by :func:`main`."""
    import minicompile as mc
    from ..inductor.codegen.cpp.compile import compile_graph

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
    compile_s = _cold_seconds(lambda: fn(params, images[LATENCY_BATCH]))
    graph = compiled_graphs[0]
    explained = mc.explain(mnv2.forward)(params, images[LATENCY_BATCH])
    for b, x in images.items():
        np.testing.assert_allclose(fn(params, x), mnv2.forward(params, x), rtol=1e-3, atol=1e-3)
    # Batch norm kept in the source, folded by the compiler (freezing).
    kept = mnv2.freeze(mnv2.init_params(batch_norm=True))
    fn_kept = mc.compile(mnv2.forward, backend=backend, options={"freezing": True})
    expected_kept = mnv2.forward(kept, images[LATENCY_BATCH])
    np.testing.assert_allclose(fn_kept(kept, images[LATENCY_BATCH]), expected_kept, rtol=1e-3, atol=1e-3)
    kernels_bn_kept = len(compiled_graphs[-1].kernels)

    engines: dict[str, Callable[[int], Any]] = {
        "numpy": lambda b: mnv2.forward(params, images[b]),
        "minicompile": lambda b: fn(params, images[b]),
        "mc, BN frozen": lambda b: fn_kept(kept, images[b]),
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
        "kernels": len(graph.kernels), "kernels_bn_kept": kernels_bn_kept,
        "externs": graph.schedule.count("\nextern ") + graph.schedule.startswith("extern "),
        "torch_note": torch_note,
    }


def print_mobilenet(with_torch: bool = True) -> dict[str, Any]:
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
          f"{r['kernels']} kernels, {r['externs']} extern calls through NumPy")
    print(f"mc, BN frozen: batch norm kept in the NumPy source, compiled with options={{'freezing': True}} "
          f"on read-only weights: {r['kernels_bn_kept']} kernels (folded weights: {r['kernels']})")
    if r["torch_compile_s"] is not None:
        print(f"torch.compile: first calls (compile) {r['torch_compile_s']:.1f} s for both batch sizes")
    return r


# ---------------------------------------------------------------------------
# The GPT-style decoder: inference and one training step
# ---------------------------------------------------------------------------

DECODER = decoder_block.Config(vocab=256, dim=256, heads=8, layers=2, hidden=768, seq=128)
DECODER_BATCH = 4
LEARNING_RATE = 0.02


def _torch_decoder(heads: int, layers: int) -> tuple[Callable, Callable] | None:
    """(forward, loss) of the decoder in PyTorch, op for op as in NumPy; None without torch."""
    try:
        import torch
    except ImportError:
        return None

    def rms_norm(x, weight, eps=1e-6):
        return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight

    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    def attention(x, p, cos, sin, mask):
        batch, seq, dim = x.shape
        head_dim = dim // heads

        def split(t):
            return t.reshape(batch, seq, heads, head_dim).transpose(1, 2)

        q = rotate(split(x @ p["wq"]), cos, sin)
        k = rotate(split(x @ p["wk"]), cos, sin)
        v = split(x @ p["wv"])
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        scores = torch.where(mask, scores, torch.tensor(-1e9, dtype=scores.dtype))
        weights = torch.softmax(scores, dim=-1)
        return (weights @ v).transpose(1, 2).reshape(batch, seq, dim) @ p["wo"]

    def forward(params, tokens, cos, sin, mask):
        x = params["embed"][tokens]
        for i in range(layers):
            p = params[f"layer{i}"]
            x = x + attention(rms_norm(x, p["ln1"]), p, cos, sin, mask)
            h = rms_norm(x, p["ln2"])
            gate = h @ p["w_gate"]
            x = x + (gate * torch.sigmoid(gate) * (h @ p["w_up"])) @ p["w_down"]
        return rms_norm(x, params["norm"]) @ params["head"]

    def loss(params, tokens, targets_onehot, cos, sin, mask):
        log_probs = torch.log_softmax(forward(params, tokens, cos, sin, mask), dim=-1)
        return -(log_probs * targets_onehot).sum(dim=-1).mean()

    return forward, loss


def _to_torch(params: dict, requires_grad: bool = False, device: str = "cpu") -> dict:
    import torch
    return {k: _to_torch(v, requires_grad, device) if isinstance(v, dict)
            else torch.tensor(v, requires_grad=requires_grad, device=device) for k, v in params.items()}


def _leaves(tree: dict) -> list:
    return [x for v in tree.values() for x in (_leaves(v) if isinstance(v, dict) else [v])]


def run_decoder(with_torch: bool = True, budget_s: float = 1.5) -> dict[str, Any]:
    """Measure every engine on the decoder; returns the numbers printed by :func:`print_decoder`."""
    import minicompile as mc
    from ..inductor.codegen.cpp.compile import compile_graph

    cfg = DECODER
    params = decoder_block.init_params(cfg)
    cos, sin = decoder_block.rotary_tables(cfg)
    mask = decoder_block.causal_mask(cfg)
    tokens, targets = decoder_block.synthetic_tokens(cfg, DECODER_BATCH)
    inputs = (tokens, cos, sin, mask, cfg.heads, cfg.layers)
    data = (tokens, targets, cos, sin, mask, cfg.heads, cfg.layers)
    compiled_graphs: dict[str, list] = {"inference": [], "training": []}

    def recording(kind: str) -> Callable:
        def backend(graph, example_inputs):
            out = compile_graph(graph, example_inputs)
            compiled_graphs[kind].append(out)
            return out
        return backend

    mc.reset()
    forward = mc.compile(decoder_block.forward, backend=recording("inference"))
    loss = mc.compile(decoder_block.loss, backend=recording("training"))
    compile_s = {
        "inference": _cold_seconds(lambda: forward(params, *inputs)),
        # forward and backward graphs: the backward compiles at the first backward()
        "training": _cold_seconds(lambda: decoder_block.sgd_step(loss, params, data, LEARNING_RATE)),
    }
    explained = mc.explain(decoder_block.forward)(params, *inputs)
    expected = decoder_block.forward(params, *inputs)
    np.testing.assert_allclose(forward(params, *inputs), expected, rtol=1e-4, atol=1e-4)
    eager_step = decoder_block.sgd_step(decoder_block.loss, params, data, LEARNING_RATE)
    compiled_step = decoder_block.sgd_step(loss, params, data, LEARNING_RATE)
    np.testing.assert_allclose(compiled_step[1], eager_step[1], rtol=1e-5)

    engines: dict[str, dict[str, Callable[[], Any]]] = {
        "numpy": {"inference": lambda: decoder_block.forward(params, *inputs),
                  "training": lambda: decoder_block.sgd_step(decoder_block.loss, params, data, LEARNING_RATE)},
        "minicompile": {"inference": lambda: forward(params, *inputs),
                        "training": lambda: decoder_block.sgd_step(loss, params, data, LEARNING_RATE)},
    }
    torch_note, torch_compile_s = "", None
    torch_fns = _torch_decoder(cfg.heads, cfg.layers) if with_torch else None
    if torch_fns is not None:
        import torch
        t_forward, t_loss = torch_fns
        t_params = _to_torch(params)
        t_train = _to_torch(params, requires_grad=True)
        t_inputs = (torch.from_numpy(tokens), torch.from_numpy(cos), torch.from_numpy(sin), torch.from_numpy(mask))
        t_targets = torch.from_numpy(targets)
        with torch.no_grad():
            np.testing.assert_allclose(t_forward(t_params, *t_inputs).numpy(), expected, rtol=1e-3, atol=1e-3)
        c_forward, c_loss = torch.compile(t_forward, dynamic=False), torch.compile(t_loss, dynamic=False)

        def torch_infer(fn):
            def infer():
                with torch.no_grad():
                    return fn(t_params, *t_inputs)
            return infer

        def torch_step(fn):
            leaves = _leaves(t_train)

            def step():
                value = fn(t_train, t_inputs[0], t_targets, *t_inputs[1:])
                value.backward()
                with torch.no_grad():
                    for p in leaves:
                        p -= LEARNING_RATE * p.grad
                        p.grad = None
                return value
            return step

        start = time.perf_counter()
        torch_infer(c_forward)()
        torch_step(c_loss)()
        torch_compile_s = time.perf_counter() - start
        engines["torch eager"] = {"inference": torch_infer(t_forward), "training": torch_step(t_loss)}
        engines["torch.compile"] = {"inference": torch_infer(c_forward), "training": torch_step(c_loss)}
    elif with_torch:
        torch_note = "(PyTorch not installed)"

    times = {name: {kind: median_seconds(fn, warmup=2, min_runs=5, budget_s=budget_s) for kind, fn in kinds.items()}
             for name, kinds in engines.items()}

    def count(kind: str) -> dict[str, int]:
        graphs = compiled_graphs[kind]
        return {"compiled_graphs": len(graphs), "kernels": sum(len(g.kernels) for g in graphs),
                "externs": sum(g.schedule.count("\nextern ") + g.schedule.startswith("extern ") for g in graphs)}

    return {"config": vars(cfg) | {"batch": DECODER_BATCH}, "times": times, "compile_s": compile_s,
            "torch_compile_s": torch_compile_s, "graphs": explained.graph_count,
            "graph_breaks": explained.graph_break_count,
            "inference": count("inference"), "training": count("training"), "torch_note": torch_note}


def print_decoder(with_torch: bool = True) -> dict[str, Any]:
    """Print the decoder table (under a minute, more with torch.compile)."""
    r = run_decoder(with_torch)
    cfg = DECODER
    base = r["times"]["numpy"]
    print(f"\nGPT-style decoder, {cfg.layers} layers, dim {cfg.dim}, {cfg.heads} heads, seq {cfg.seq}, "
          f"batch {DECODER_BATCH}, float32 (medians)")
    print(f"{'engine':<14} {'inference':>10} {'vs NumPy':>9} {'train step':>11} {'vs NumPy':>9}")
    for name, t in r["times"].items():
        print(f"{name:<14} {format_seconds(t['inference']):>10} {base['inference'] / t['inference']:>8.2f}x "
              f"{format_seconds(t['training']):>11} {base['training'] / t['training']:>8.2f}x")
    if r["torch_note"]:
        print(f"{'torch':<14} {r['torch_note']}")
    inf, tr = r["inference"], r["training"]
    print(f"minicompile: {r['graphs']} graph(s), {r['graph_breaks']} break(s); inference {inf['kernels']} kernels, "
          f"{inf['externs']} extern calls through NumPy, compiled in {r['compile_s']['inference']:.1f} s; "
          f"training step {tr['compiled_graphs']} graphs (forward, backward), {tr['kernels']} kernels, "
          f"{tr['externs']} extern calls through NumPy, compiled in {r['compile_s']['training']:.1f} s (cold cache)")
    if r["torch_compile_s"] is not None:
        print(f"torch.compile: first calls (compile) {r['torch_compile_s']:.1f} s for inference and training")
    return r


def main(with_torch: bool = True) -> dict[str, Any]:
    """Both model tables; the numbers keyed by model."""
    return {"mobilenet_v2": print_mobilenet(with_torch), "decoder_block": print_decoder(with_torch)}


if __name__ == "__main__":
    main()
