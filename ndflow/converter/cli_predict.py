"""``ndflow predict MODEL.json [--input FILE.npy|IMAGE] [--backend B]``: run a graph or layers model once,
print its outputs, then time it.

Without ``--input`` each input gets seeded random values (input ``i``: seed ``--seed + i``; floats in
[0, 1), ints in [0, 256)) bit-identical to the TF.js oracle's (``run_model.js``), so that the outputs can
be compared with TF.js's. Unknown dimensions are 1 (batch), 3 (channels, last) or 224 (others), as there.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np


def mulberry32(n: int, seed: int = 42) -> np.ndarray:
    """The first ``n`` values of the mulberry32 stream of ``seed`` in [0, 1) (float64, as TF.js's oracle)."""
    mask = 0xFFFFFFFF
    i = np.arange(1, n + 1, dtype=np.uint64)
    a = ((np.uint64(seed & mask) + i * np.uint64(0x6D2B79F5)) & np.uint64(mask)).astype(np.uint32)
    with np.errstate(over="ignore"):
        t = (a ^ (a >> np.uint32(15))) * (a | np.uint32(1))
        t = (t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61))) ^ t
        r = t ^ (t >> np.uint32(14))
    return r.astype(np.float64) / 4294967296.0


def seeded(shape: Sequence[int], dtype: str = "float32", seed: int = 42, low: float = 0.0, high: float = 1.0) -> Any:
    """Seeded values as the oracle's ``seeded_input.seeded``: float32 ``low + u*(high-low)``, int32 its floor,
    bool ``u >= 0.5``."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    u = mulberry32(n, seed)
    if dtype == "bool":
        return (u >= 0.5).reshape(shape)
    v = np.float64(low) + u * (np.float64(high) - np.float64(low))
    if dtype == "int32":
        return np.floor(v).astype(np.int32).reshape(shape)
    return v.astype(np.float32).reshape(shape)


def input_shape(shape: Sequence[int] | None) -> list[int]:
    """A concrete shape for a model input: unknown dims -> 1 (first), 3 (last), 224 (others)."""
    dims = list(shape or [])
    return [
        d if d is not None and d >= 0 else (1 if i == 0 else 3 if i == len(dims) - 1 else 224)
        for i, d in enumerate(dims)
    ]


def seeded_input(shape: Sequence[int] | None, dtype: str | None, index: int, seed: int = 42) -> np.ndarray:
    """The oracle's input ``index``: float32 in [0, 1), int inputs in [0, 256)."""
    dims = input_shape(shape)
    if dtype in ("int32", "uint8", "int64"):
        return seeded(dims, "int32", seed + index, 0, 256)
    return seeded(dims, dtype or "float32", seed + index)


def load_image(path: str, shape: Sequence[int] | None, dtype: str | None) -> np.ndarray:
    """An image file as a batch of one (resized to the input's height and width when known); floats in
    [0, 1], int inputs 0..255. Needs Pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise SystemExit(f"ndflow predict: reading the image {path!r} needs Pillow (pip install pillow); "
                         "or pass the input as an .npy file") from None  # fmt: skip
    img = Image.open(path).convert("RGB")
    dims = list(shape or [])
    if len(dims) == 4 and dims[1] > 0 and dims[2] > 0:
        img = img.resize((dims[2], dims[1]))
    arr = np.asarray(img)[None]
    if dtype in ("int32", "uint8", "int64"):
        return arr.astype(np.int32)
    return (arr.astype(np.float32) / 255.0).astype(np.float32)


def _load_model(path: str) -> tuple[str, Any]:
    import ndflow as nf
    from ndflow.converter import load_graph_model
    from ndflow.io import is_graph_model

    model_json = path
    if os.path.isdir(path):
        model_json = os.path.join(path, "model.json")
    with open(model_json, "rb") as f:
        parsed = json.loads(f.read())
    if isinstance(parsed, dict) and is_graph_model(parsed):
        return "graph", load_graph_model(path)
    loader = getattr(nf, "load_layers_model", None) or getattr(getattr(nf, "layers", None), "load_layers_model", None)
    if loader is None:
        raise SystemExit(f"ndflow predict: {path} is a layers model, and this ndflow has no nf.load_layers_model yet")
    return "layers", loader(path)


def _inputs_of(kind: str, model: Any) -> list[tuple[str, Any, Any]]:
    if kind == "graph":
        return [(i.name, i.shape, i.dtype) for i in model.inputs]
    return [(getattr(t, "name", f"input_{k}"), list(t.shape), t.dtype) for k, t in enumerate(model.inputs)]


_LOOP: list[asyncio.AbstractEventLoop] = []


def run_coroutine(coro: Any) -> Any:
    """Run ``coro`` to completion on one event loop kept for the process (not from inside a running loop).

    ``asyncio.run`` makes and closes a loop on every call (0.15 ms), and on Python 3.11 it formats the finished
    task, result tensors included, when it puts the SIGINT handler back: 1.5 ms per FaceBoxes inference. TF.js's
    ``await model.executeAsync()`` runs in the loop already there; this is the same for a timed loop of runs."""
    if not _LOOP or _LOOP[0].is_closed():
        loop = asyncio.new_event_loop()
        _LOOP[:] = [loop]
        atexit.register(loop.close)  # closed when the process ends (no ResourceWarning)
    return _LOOP[0].run_until_complete(coro)


def _run(kind: str, model: Any, feeds: dict[str, Any], needs_async: bool) -> list[tuple[str, Any]]:
    if kind == "layers":
        xs = list(feeds.values())
        out = model.predict(xs[0] if len(xs) == 1 else xs)
        outs = out if isinstance(out, list | tuple) else [out]
        names = list(getattr(model, "output_names", [])) or [f"output_{k}" for k in range(len(outs))]
        return list(zip(names, outs, strict=False))
    names = [o.name for o in model.outputs]
    out = run_coroutine(model.execute_async(feeds, names)) if needs_async else model.execute(feeds, names)
    return list(zip(names, out if isinstance(out, list) else [out], strict=True))


def _summary(values: np.ndarray) -> str:
    if values.size == 0:
        return "empty"
    flat = values.ravel()
    first = ", ".join(f"{v:.6g}" for v in flat[:5].astype(np.float64))
    if values.dtype == np.bool_:
        return f"true={int(flat.sum())} first=[{first}]"
    f = flat.astype(np.float64)
    return f"min={f.min():.6g} max={f.max():.6g} mean={f.mean():.6g} sum={f.sum():.8g} first=[{first}]"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ndflow predict``; returns the exit status."""
    p = argparse.ArgumentParser(prog="ndflow predict", description="run a TF.js graph or layers model")
    p.add_argument("model", help="model.json of a graph or layers model (or its folder)")
    p.add_argument("--input", action="append", default=[], help="an .npy file or an image, one per model input")
    p.add_argument("--backend", default=None, help="ndflow backend (default: the best available)")
    p.add_argument("--seed", type=int, default=42, help="seed of the random inputs (input i uses seed + i)")
    p.add_argument("--warmup", type=int, default=1, help="runs before timing")
    p.add_argument("--runs", type=int, default=5, help="timed runs (0: no timing)")
    args = p.parse_args(argv)

    import ndflow as nf

    previous = nf.get_backend()
    if args.backend:
        if nf.find_backend(args.backend) is None:
            raise SystemExit(f"ndflow predict: backend {args.backend!r} is not available (have: "
                             f"{', '.join(nf.engine().backend_names())})")  # fmt: skip
        nf.set_backend(args.backend)
    feeds: dict[str, Any] = {}
    model = None
    try:
        t0 = time.perf_counter()
        kind, model = _load_model(args.model)
        load_ms = (time.perf_counter() - t0) * 1000
        specs = _inputs_of(kind, model)
        if args.input and len(args.input) != len(specs):
            raise SystemExit(f"ndflow predict: the model has {len(specs)} inputs, got {len(args.input)} --input")
        for k, (name, shape, dtype) in enumerate(specs):
            if args.input:
                path = args.input[k]
                arr = np.load(path) if path.endswith(".npy") else load_image(path, shape, dtype)
            else:
                arr = seeded_input(shape, dtype, k, args.seed)
            want = "int32" if dtype in ("int32", "uint8", "int64") else (dtype or None)
            feeds[name] = nf.tensor(arr, list(arr.shape), want)
        print(f"{args.model} [{kind}] backend={nf.get_backend()} load={load_ms:.0f}ms")
        print("inputs: " + " ".join(f"{n}{list(t.shape)}:{t.dtype}" for n, t in feeds.items()))
        needs_async = kind == "graph" and model.needs_async()
        outs = _run(kind, model, feeds, needs_async)
        for name, t in outs:
            print(f"  {name} shape={list(t.shape)} {t.dtype} {_summary(np.asarray(t.numpy()))}")
        nf.dispose([t for _, t in outs])
        if args.runs > 0:
            times = []
            for i in range(args.warmup + args.runs):
                start = time.perf_counter()
                o = _run(kind, model, feeds, needs_async)
                for _, t in o:
                    t.data_sync()
                elapsed = (time.perf_counter() - start) * 1000
                nf.dispose([t for _, t in o])
                if i >= args.warmup:
                    times.append(elapsed)
            print(f"time median={statistics.median(times):.2f}ms min={min(times):.2f}ms "
                  f"(warmup {args.warmup}, runs {args.runs})")  # fmt: skip
    finally:
        nf.dispose(list(feeds.values()))
        if model is not None:
            model.dispose()
        nf.set_backend(previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
