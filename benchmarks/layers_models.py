"""Layers models: ``LayersModel.predict`` eager (layer by layer) against the compiled graph path.

    python benchmarks/layers_models.py [--rounds 5] [--runs 10]

Models:

- ``mobilenetv2``: a MobileNetV2 classifier (width 1.0, 224x224x3, 1000 classes) built with the Layers API,
  its weights random and its batch-norm statistics set to plausible values; batch 1.
- ``upscaler``: the ``@upscalerjs/default-model`` layers model (npm cache of ndflow's fetcher); 1x64x64x3 and
  1x128x128x3 inputs. Skipped with a message when the package is not in the cache.

Each round runs every case ``--runs`` times with the flag ``LAYERS_COMPILE`` off (eager) and on (compiled),
interleaved; a figure is the median over rounds of each round's median. The call that traces the graph (the
second with the same weights: trace, optimization, planning and the run) is timed apart. The compiled path is
the graph model's optimizer and program, so the ``compiled`` column is what the same graph runs at as a graph
model. TF.js 4.22's wasm backend (the oracle in Node, ``../shared/oracle/run_model.js``: the MobileNetV2 saved in
TF.js's format, the upscaler's own files) is timed once per round between ndflow's, with the same input shape; skipped
without Node (``--no-tfjs``). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe  # noqa: E402

import ndflow as nf  # noqa: E402

UPSCALER = Path.home() / ".cache/ndflow/npm/@upscalerjs/default-model/1.0.0/models/model.json"
ORACLE = Path(__file__).resolve().parents[2] / "shared" / "oracle" / "run_model.js"


def tfjs_wasm_ms(model_json: Path, shape: tuple[int, ...], runs: int) -> float | None:
    """TF.js 4.22's wasm backend on the saved layers model (the oracle in Node: ``loadLayersModel``, seeded input
    of ``shape``, 3 warm-up calls, the median of ``runs``); None where Node or the oracle is missing or it fails."""
    if shutil.which("node") is None or not ORACLE.exists():
        return None
    cmd = ["node", str(ORACLE), str(model_json), "--backends", "wasm", "--warmup", "3", "--runs", str(runs),
           "--shape", ",".join(map(str, shape))]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        print(f"TF.js wasm failed on {model_json}: {(proc.stderr.strip().splitlines() or ['?'])[-1][:200]}")
        return None
    return next((r["median_ms"] for r in json.loads(lines[0][len("RESULT ") :]) if r["backend"] == "wasm"), None)


def _divisible(v: float, divisor: int = 8) -> int:
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def mobilenet_v2(size: int = 224, classes: int = 1000) -> nf.LayersModel:
    """A MobileNetV2 (width 1.0) with the Layers API."""
    L = nf.layers

    def bn_relu6(x: object) -> object:
        x = L.batch_normalization(epsilon=1e-3, momentum=0.999).apply(x)
        return L.relu(max_value=6).apply(x)

    def block(x: object, cin: int, cout: int, stride: int, expand: int) -> object:
        h = x
        if expand != 1:
            h = bn_relu6(L.conv2d(filters=cin * expand, kernel_size=1, use_bias=False).apply(h))
        if stride == 2:
            h = L.zero_padding2d(padding=[[0, 1], [0, 1]]).apply(h)
        h = L.depthwise_conv2d(
            kernel_size=3, strides=stride, padding="same" if stride == 1 else "valid", use_bias=False
        ).apply(h)
        h = bn_relu6(h)
        h = L.conv2d(filters=cout, kernel_size=1, use_bias=False).apply(h)
        h = L.batch_normalization(epsilon=1e-3, momentum=0.999).apply(h)
        return L.add().apply([x, h]) if stride == 1 and cin == cout else h

    inp = nf.input(shape=[size, size, 3])
    x = L.zero_padding2d(padding=[[0, 1], [0, 1]]).apply(inp)
    x = bn_relu6(L.conv2d(filters=32, kernel_size=3, strides=2, use_bias=False).apply(x))
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2)] + [
        (6, 320, 1, 1)
    ]:
        for i in range(n):
            cout = _divisible(c)
            x = block(x, cin, cout, s if i == 0 else 1, t)
            cin = cout
    x = bn_relu6(L.conv2d(filters=1280, kernel_size=1, use_bias=False).apply(x))
    x = L.global_average_pooling2d().apply(x)
    out = L.dense(units=classes, activation="softmax").apply(x)
    model = nf.model(inputs=inp, outputs=out)
    rng = np.random.RandomState(0)
    values = []
    for w in model.weights:
        shape = tuple(w.shape)
        if w.name.endswith("moving_variance") or w.name.endswith("gamma"):
            values.append(nf.tensor(rng.uniform(0.5, 1.5, shape).astype("float32")))
        elif len(shape) == 1:
            values.append(nf.tensor(rng.uniform(-0.1, 0.1, shape).astype("float32")))
        else:
            fan_in = int(np.prod(shape[:-1])) if len(shape) == 4 and shape[-1] != 1 else int(np.prod(shape[:2]))
            values.append(nf.tensor(rng.normal(0, (2.0 / fan_in) ** 0.5, shape).astype("float32")))
    model.set_weights(values)
    for t in values:
        t.dispose()
    return model


def _time(model: nf.LayersModel, x: nf.Tensor, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        y = model.predict(x)
        (y[0] if isinstance(y, list) else y).data_sync()
        times.append(time.perf_counter() - start)
        nf.dispose(y)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-tfjs", action="store_true", help="skip TF.js's wasm backend (Node)")
    args = parser.parse_args()
    cases: list[tuple[str, nf.LayersModel, nf.Tensor, Path | None]] = []
    rng = np.random.RandomState(1)
    saved = Path(tempfile.mkdtemp(prefix="ndflow-layers-bench-"))
    mobilenet = mobilenet_v2()
    mobilenet.save(f"file://{saved}")
    cases.append(("mobilenetv2 224", mobilenet, nf.tensor(rng.rand(1, 224, 224, 3).astype("float32")),
                  saved / "model.json"))  # fmt: skip
    if UPSCALER.exists():
        upscaler = nf.load_layers_model(str(UPSCALER))
        for size in (64, 128):
            x = nf.tensor(rng.rand(1, size, size, 3).astype("float32"))
            cases.append((f"upscaler {size}", upscaler, x, UPSCALER))
    else:
        print(f"upscaler skipped: {UPSCALER} is not in the cache (nf.io fetch npm://@upscalerjs/default-model)")
    first: dict[str, float] = {}
    diffs: dict[str, float] = {}
    for name, model, x, _ in cases:
        nf.env().set("LAYERS_COMPILE", False)
        eager = model.predict(x)
        _time(model, x, 1)
        nf.env().set("LAYERS_COMPILE", True)
        nf.dispose(model.predict(x))  # the first call with these weights runs eagerly; the second traces
        start = time.perf_counter()
        compiled = model.predict(x)
        first[name] = (time.perf_counter() - start) * 1e3
        a, b = eager.numpy(), compiled.numpy()
        diffs[name] = float(np.abs(a - b).max() / max(1e-12, np.abs(a).max()))
        nf.dispose([eager, compiled])
    modes = ("eager", "compiled", "wasm")
    results: dict[str, dict[str, list[float]]] = {name: {m: [] for m in modes} for name, _, _, _ in cases}
    for _ in range(args.rounds):
        for name, model, x, path in cases:
            for mode, flag in (("eager", False), ("compiled", True)):
                nf.env().set("LAYERS_COMPILE", flag)
                results[name][mode].append(_time(model, x, args.runs))
            wasm = None if args.no_tfjs or path is None else tfjs_wasm_ms(path, tuple(x.shape), args.runs)
            if wasm is not None:
                results[name]["wasm"].append(wasm)
    shutil.rmtree(saved, ignore_errors=True)
    print(f"Machine: {describe()}")
    print("| model | eager ms | compiled ms | eager / compiled | TF.js wasm ms | compiled / wasm | tracing call ms | "
          "max rel. diff |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, _, _, _ in cases:
        r = results[name]
        e, c = statistics.median(r["eager"]), statistics.median(r["compiled"])
        w = statistics.median(r["wasm"]) if r["wasm"] else None
        wasm_cells = f"{w:.1f} | {c / w:.2f}" if w else "- | -"
        print(f"| {name} | {e:.1f} | {c:.1f} | {e / c:.2f} | {wasm_cells} | {first[name]:.0f} | {diffs[name]:.1e} |")


if __name__ == "__main__":
    main()
