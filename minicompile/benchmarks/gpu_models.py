"""``make bench-gpu``'s model rows: the decoder and MobileNetV2 on CuPy arrays.

In:  CuPy, and torch when installed (called from :func:`.gpu.main`).
Out: printed rows and a dict —

* the GPT-style decoder (:mod:`minicompile.examples.decoder_block`) at
  :data:`DECODER` (vocabulary 8192, dim 1024, 16 heads, 4 layers, hidden
  2816, seq 1024, batch 8, float32) from token ids: inference, and one SGD
  training step (forward, backward through the ``mc.Tensor`` tape and the
  compiled backward, update);
* MobileNetV2 (:mod:`minicompile.examples.mobilenet_v2`) at batch 1 and 32;

each for CuPy eager (the NumPy code given CuPy arrays), minicompile's triton
backend, and torch eager and ``torch.compile`` on the same weights; plus
minicompile's first call (capture, Triton compile and autotuning on a cold
cache) and a second process's first call, which finds the compiled kernels
and tuned configs on disk.  Device times per call are CUDA events around
back-to-back calls (:func:`.gpu_timing.device_ms`).  A model that fails prints its
error in its row; the others still run.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
import traceback
from typing import Any, Callable

import numpy as np

from ..examples import decoder_block as D
from ..examples import mobilenet_v2 as mnv2
from .gpu_timing import device_ms, host_ms
from .models import _to_torch, _torch_decoder, _torch_model

DECODER, DECODER_BATCH = D.Config(vocab=8192, dim=1024, heads=16, layers=4, hidden=2816, seq=1024), 8
QUICK_DECODER, QUICK_BATCH = D.Config(vocab=512, dim=256, heads=4, layers=2, hidden=512, seq=128), 2
# Launch-bound: the decoder's weights on 16 tokens of one sequence, where the
# kernels are so short that the host's launches set the pace.
SHORT_DECODER = D.Config(vocab=8192, dim=1024, heads=16, layers=4, hidden=2816, seq=16)
LEARNING_RATE = 0.02


def to_device(cp: Any, tree: Any) -> Any:
    """Every NumPy array of a nested dict/list as a CuPy array (other values as they are)."""
    if isinstance(tree, dict):
        return {k: to_device(cp, v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [to_device(cp, v) for v in tree]
    return cp.asarray(tree) if isinstance(tree, np.ndarray) else tree


def _first_call(cp: Any, fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - start


# A second process: the decoder's first call when the disk holds the compiled
# kernels and tuned configs of this one (capture and inductor run again).
_WARM_PROCESS = textwrap.dedent("""
    import time, numpy as np, cupy as cp, minicompile as mc
    from minicompile.examples import decoder_block as D
    from minicompile.benchmarks.gpu_models import decoder_inputs
    cfg, batch = D.Config(**{cfg!r}), {batch}
    params, inputs = decoder_inputs(cp, cfg, batch)
    fn = mc.compile(D.forward, backend="triton")
    start = time.perf_counter()
    fn(params, *inputs)
    cp.cuda.Device().synchronize()
    print(time.perf_counter() - start)
""")


def decoder_inputs(cp: Any, cfg: D.Config, batch: int) -> tuple[dict, tuple]:
    params = to_device(cp, D.init_params(cfg))
    cos, sin = D.rotary_tables(cfg)
    tokens, _ = D.synthetic_tokens(cfg, batch)
    return params, (cp.asarray(tokens), cp.asarray(cos), cp.asarray(sin), cp.asarray(D.causal_mask(cfg)),
                    cfg.heads, cfg.layers)


def decoder(cp: Any, torch: Any, quick: bool, training: bool = True) -> dict[str, Any]:
    """The decoder's rows; ``training=False`` measures inference only."""
    import minicompile as mc

    cfg, batch = (QUICK_DECODER, QUICK_BATCH) if quick else (DECODER, DECODER_BATCH)
    params, inputs = decoder_inputs(cp, cfg, batch)
    tokens, targets = D.synthetic_tokens(cfg, batch)
    data = (inputs[0], cp.asarray(targets)) + inputs[1:]
    forward, loss = mc.compile(D.forward, backend="triton"), mc.compile(D.loss, backend="triton")
    out: dict[str, Any] = {"config": vars(cfg) | {"batch": batch}, "errors": {}}
    engines: dict[str, dict[str, Callable[[], Any]]] = {
        "cupy": {"inference": lambda: D.forward(params, *inputs),
                 "training": lambda: D.sgd_step(D.loss, params, data, LEARNING_RATE)},
        "mc-triton": {"inference": lambda: forward(params, *inputs),
                      "training": lambda: D.sgd_step(loss, params, data, LEARNING_RATE)}}
    out["first_call_s"] = {"inference": _first_call(cp, engines["mc-triton"]["inference"])}
    _progress(f"decoder: minicompile's first call {out['first_call_s']['inference']:.1f} s")
    got, expected = forward(params, *inputs), D.forward(params, *inputs)
    out["max_abs_diff"] = float(abs(got - expected).max())
    out["graph_breaks"] = mc.explain(D.forward)(params, *inputs).graph_break_count
    out["kernels"] = len(forward.cache[0].compiled.kernels)
    try:
        if not training:
            raise RuntimeError("not measured in this run")
        out["first_call_s"]["training"] = _first_call(cp, engines["mc-triton"]["training"])
        out["loss"] = [engines[e]["training"]()[1] for e in ("cupy", "mc-triton")]
    except Exception as why:  # noqa: BLE001 - reported in the table
        out["errors"]["training"] = traceback.format_exception_only(why)[-1].strip()
        del engines["mc-triton"]["training"]
        if not training:
            del engines["cupy"]["training"]
    warm = subprocess.run([sys.executable, "-c", _WARM_PROCESS.format(cfg=vars(cfg), batch=batch)],
                          capture_output=True, text=True)
    out["second_process_first_call_s"] = (round(float(warm.stdout.split()[-1]), 2) if warm.returncode == 0
                                          else warm.stderr.strip().splitlines()[-1:])
    _progress(f"decoder: a second process's first call {out['second_process_first_call_s']} s")
    if torch is not None:
        t_forward, t_loss = _torch_decoder(cfg.heads, cfg.layers)
        host = D.init_params(cfg)
        t_params, t_train = _to_torch(host, device="cuda"), _to_torch(host, True, device="cuda")
        t_in = [torch.as_tensor(a, device="cuda") for a in inputs[:4]]
        t_targets = torch.as_tensor(data[1], device="cuda")
        leaves = [x for x in _leaves(t_train)]

        def infer(fn):
            def run():
                with torch.no_grad():
                    return fn(t_params, *t_in)
            return run

        def step(fn):
            def run():
                value = fn(t_train, t_in[0], t_targets, *t_in[1:])
                value.backward()
                with torch.no_grad():
                    for p in leaves:
                        p -= LEARNING_RATE * p.grad
                        p.grad = None
                return value
            return run

        c_forward, c_loss = torch.compile(t_forward, dynamic=False), torch.compile(t_loss, dynamic=False)
        out["torch_compile_first_call_s"] = {"inference": _first_call(cp, infer(c_forward))}
        _progress(f"decoder: torch.compile's first call {out['torch_compile_first_call_s']['inference']:.1f} s")
        engines["torch"] = {"inference": infer(t_forward)}
        engines["torch.compile"] = {"inference": infer(c_forward)}
        if training:
            out["torch_compile_first_call_s"]["training"] = _first_call(cp, step(c_loss))
            engines["torch"]["training"], engines["torch.compile"]["training"] = step(t_loss), step(c_loss)
    out["ms"] = {name: {kind: device_ms(cp, fn, calls=5, rounds=3) for kind, fn in kinds.items()}
                 for name, kinds in engines.items()}
    out["host_ms"] = {kind: host_ms(cp, fn, calls=3) for kind, fn in engines["mc-triton"].items()}
    return out


def decoder_reduce_overhead(cp: Any, torch: Any, quick: bool) -> dict[str, Any]:
    """The decoder at batch 1 and 16 tokens, inference, with and without
    ``mode="reduce-overhead"`` (CUDA graphs), for minicompile and torch.compile."""
    import minicompile as mc

    cfg = QUICK_DECODER if quick else SHORT_DECODER
    params, inputs = decoder_inputs(cp, cfg, 1)
    plain = mc.compile(D.forward, backend="triton")
    graphed = mc.compile(D.forward, backend="triton", mode="reduce-overhead")
    out: dict[str, Any] = {"config": vars(cfg) | {"batch": 1}, "errors": {}}
    out["first_call_s"] = {"default": _first_call(cp, lambda: plain(params, *inputs))}
    expected = D.forward(params, *inputs)
    got = [graphed(params, *inputs) for _ in range(3)][-1]  # a warm-up, a recording, a replay
    out["max_abs_diff"] = float(max(abs(plain(params, *inputs) - expected).max(), abs(got - expected).max()))
    out["graph_breaks"] = mc.explain(D.forward)(params, *inputs).graph_break_count
    engines = {"cupy": lambda: D.forward(params, *inputs), "mc-triton": lambda: plain(params, *inputs),
               "mc reduce-overhead": lambda: graphed(params, *inputs)}
    if torch is not None:
        t_forward = _torch_decoder(cfg.heads, cfg.layers)[0]
        t_params = _to_torch(D.init_params(cfg), device="cuda")
        t_in = [torch.as_tensor(a, device="cuda") for a in inputs[:4]]
        for name, mode in (("torch.compile", "default"), ("tc reduce-overhead", "reduce-overhead")):
            compiled = torch.compile(t_forward, dynamic=False, mode=mode)

            def run(fn=compiled):
                with torch.no_grad():
                    return fn(t_params, *t_in)
            engines[name] = run
    out["ms"] = {name: {"inference": device_ms(cp, fn, calls=20, rounds=5)} for name, fn in engines.items()}
    out["host_ms"] = {"inference": host_ms(cp, engines["mc-triton"], calls=10),
                      "inference reduce-overhead": host_ms(cp, engines["mc reduce-overhead"], calls=10)}
    return out


def _progress(line: str) -> None:
    print(f"  ({line})", flush=True)


def _leaves(tree: dict) -> list:
    return [x for v in tree.values() for x in (_leaves(v) if isinstance(v, dict) else [v])]


def mobilenet(cp: Any, torch: Any, quick: bool) -> dict[str, Any]:
    import minicompile as mc

    size = 96 if quick else 224
    host_params = mnv2.init_params()
    params = to_device(cp, host_params)
    images = {b: cp.asarray(mnv2.example_images(b, size)) for b in (1, 32)}
    fn = mc.compile(mnv2.forward, backend="triton")
    out: dict[str, Any] = {"size": size, "errors": {}}
    out["first_call_s"] = {b: _first_call(cp, lambda b=b: fn(params, images[b])) for b in images}
    out["max_abs_diff"] = float(abs(fn(params, images[1]) - mnv2.forward(params, images[1])).max())
    out["graph_breaks"] = mc.explain(mnv2.forward)(params, images[1]).graph_break_count
    engines = {"cupy": lambda b: mnv2.forward(params, images[b]), "mc-triton": lambda b: fn(params, images[b])}
    if torch is not None:
        model = _torch_model(host_params, device="cuda")
        views = {b: torch.as_tensor(x, device="cuda").permute(0, 3, 1, 2) for b, x in images.items()}
        compiled = torch.compile(model, dynamic=False)

        def run(m):
            def call(b):
                with torch.no_grad():
                    return m(views[b])
            return call

        out["torch_compile_first_call_s"] = {b: _first_call(cp, lambda b=b: run(compiled)(b)) for b in images}
        engines["torch"], engines["torch.compile"] = run(model), run(compiled)
    out["ms"] = {name: {b: device_ms(cp, call, b, calls=10, rounds=3) for b in images}
                 for name, call in engines.items()}
    out["host_ms"] = {b: host_ms(cp, engines["mc-triton"], b, calls=5) for b in images}
    return out


def _print(title: str, r: dict[str, Any], kinds: list) -> None:
    print(f"\n{title}")
    if "ms" not in r:
        print(f"  failed: {r.get('error')}")
        return
    names = list(r["ms"])
    width = max(15, *(len(n) + 2 for n in names))
    print(f"{'':<12}" + "".join(f"{n:>{width}}" for n in names) + f"{'mc/cupy':>9}{'mc/tc':>8}{'mc host':>13}")
    for kind in kinds:
        row = r["ms"]
        if kind not in row["mc-triton"]:
            print(f"{str(kind):<12}  minicompile: {r['errors'].get(kind, 'not run')}")
            continue
        mc_ms = row["mc-triton"][kind]
        tc = row.get("torch.compile", {}).get(kind)
        print(f"{str(kind):<12}" + "".join(f"{row[n][kind]:>{width - 3}.2f} ms" if kind in row[n] else f"{'-':>{width}}"
                                           for n in names)
              + f"{mc_ms / row['cupy'][kind]:>9.2f}{(f'{mc_ms / tc:.2f}' if tc else '-'):>8}"
              + f"{r['host_ms'][kind]:>10.2f} ms")
    for kind, ms in r["host_ms"].items():
        if kind not in kinds:
            print(f"  minicompile host time per call, {kind}: {ms:.2f} ms")
    print(f"  minicompile first call: {', '.join(f'{k} {v:.1f} s' for k, v in r['first_call_s'].items())}"
          + (f"; second process: {r['second_process_first_call_s']} s" if "second_process_first_call_s" in r
             else "")
          + (f"; torch.compile first call: "
             f"{', '.join(f'{k} {v:.1f} s' for k, v in r['torch_compile_first_call_s'].items())}"
             if "torch_compile_first_call_s" in r else "")
          + f"; graph breaks {r['graph_breaks']}; max |mc - cupy| {r['max_abs_diff']:.2e}")


def main(cp: Any, torch: Any, quick: bool = False) -> dict[str, Any]:
    results = {}
    for name, run, title, kinds in (
            ("decoder", decoder,
             "decoder ({cfg}), device ms per call", ["inference", "training"]),
            ("decoder_reduce_overhead", decoder_reduce_overhead,
             "decoder ({cfg}), launch-bound: CUDA graphs (mode='reduce-overhead') against kernel-by-kernel launches, "
             "device ms per call", ["inference"]),
            ("mobilenet_v2", mobilenet, "MobileNetV2 {size}x{size}, batch 1 and 32, device ms per call", [1, 32])):
        try:
            r = run(cp, torch, quick)
        except Exception as why:  # noqa: BLE001 - one model's failure does not hide the other's row
            r = {"error": "".join(traceback.format_exception_only(why)).strip()}
        results[name] = r
        cfg = r.get("config", {})
        _print(title.format(cfg=", ".join(f"{k} {v}" for k, v in cfg.items()), size=r.get("size")), r, kinds)
    return results
