"""Step 3 of ``benchmarks/gpu_check.py``: timings on cpu, torch-cuda and webgpu, side by side and interleaved.

Each measurement creates its inputs on every backend, then the backends take turns call by call (median of
the timed runs after a warm-up, every output read back to the host). Ratios are the cpu's ms over the
backend's ms (above 1: faster than cpu).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpu_check_common import Budget, interleaved_ms, set_flag, sync, use

import ndflow as nf

MODEL_NAMES = ["blazeface", "facemesh", "movenet-lightning", "mlp-layers"]


def find_model(models_dir: Path, name: str) -> Path | None:
    """``DIR/<name>/model.json`` (gpu_carry layout) or ``DIR/<name>.json`` (the oracle's model cache)."""
    for path in (models_dir / name / "model.json", models_dir / f"{name}.json"):
        if path.exists():
            return path
    return None


def _load(path: Path) -> tuple[Any, str]:
    fmt = json.loads(path.read_text()).get("format", "")
    if "layers" in fmt:
        return nf.load_layers_model(f"file://{path}"), "layers"
    return nf.load_graph_model(str(path)), "graph"


def _input_spec(model: Any, kind: str) -> tuple[list[int | None], str]:
    if kind == "layers":
        shape = list(model.inputs[0].shape)
        return [None if d is None or d < 0 else d for d in shape], "float32"
    info = model.inputs[0]
    return [None if d is None or d < 0 else d for d in (info.shape or [])], info.dtype or "float32"


def _batch_shape(shape: list[int | None], batch: int) -> list[int] | None:
    """The input shape at ``batch``; None where the first dimension is fixed at another size."""
    if not shape:
        return None if batch != 1 else []
    if shape[0] is not None and shape[0] != batch:
        return None
    return [batch] + [d if d is not None else 1 for d in shape[1:]]


def _ratios(rows: dict[str, dict[str, float]]) -> None:
    cpu = rows.get("cpu", {}).get("median_ms")
    for row in rows.values():
        row["vs_cpu"] = (cpu / row["median_ms"]) if cpu and row.get("median_ms") else None


def _cap(budget: Budget) -> float:
    """Seconds one measurement may take: 20, less when the budget runs low."""
    return max(1.0, min(20.0, budget.left() - 15.0))


def matmul(labels: list[str], budget: Budget, quick: bool, peak: float | None, gpu_run: bool) -> list[dict]:
    """n x n float32 mat_mul, n = 4096 and 8192 (8192 not on cpu); GFLOP/s and % of the fp32 peak."""
    sizes = [256] if quick else ([4096, 8192] if gpu_run else [1024, 4096])
    rows = []
    for n in sizes:
        if not budget.enough(30):
            rows.append({"n": n, "skipped": "time budget spent"})
            continue
        # cpu: up to 4096 (8192 is too slow); webgpu on a software adapter (no CUDA here): up to 1024
        on = [b for b in labels if not (b == "cpu" and n > 4096) and not (b == "webgpu" and not gpu_run and n > 1024)]
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
        inputs = {}
        for label in on:
            use(label)
            inputs[label] = (nf.tensor(a), nf.tensor(b))
        calls = {label: (lambda x=inputs[label]: nf.mat_mul(x[0], x[1])) for label in on}
        res = interleaved_ms(calls, runs=3 if quick or n >= 8192 else 5, max_s=_cap(budget))
        for label, (x, y) in inputs.items():
            use(label)
            nf.dispose([x, y])
        for row in res.values():
            row["gflops"] = 2 * n**3 / (row["median_ms"] / 1000.0) / 1e9
            row["pct_peak"] = 100.0 * row["gflops"] / peak if peak else None
        _ratios(res)
        rows.append({"n": n, "by_backend": res, "not_on": [b for b in labels if b not in on]})
    return rows


def conv2d(labels: list[str], budget: Budget, quick: bool) -> dict:
    """conv2d 1x224x224x32 (NHWC) * 3x3x32x64, stride 1, same padding."""
    if not budget.enough(20):
        return {"skipped": "time budget spent"}
    size = 32 if quick else 224
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, size, size, 32), dtype=np.float32)
    w = rng.standard_normal((3, 3, 32, 64), dtype=np.float32)
    inputs = {}
    for label in labels:
        use(label)
        inputs[label] = (nf.tensor(x), nf.tensor(w))
    calls = {label: (lambda t=inputs[label]: nf.conv2d(t[0], t[1], 1, "same")) for label in labels}
    res = interleaved_ms(calls, runs=3 if quick else 10, max_s=_cap(budget))
    for label, ts in inputs.items():
        use(label)
        nf.dispose(list(ts))
    flops = 2 * size * size * 64 * 9 * 32
    for row in res.values():
        row["gflops"] = flops / (row["median_ms"] / 1000.0) / 1e9
    _ratios(res)
    return {"shape": f"1x{size}x{size}x32 * 3x3x32x64", "by_backend": res}


def models(labels: list[str], budget: Budget, quick: bool, models_dir: Path | None) -> list[dict]:
    """The small models at batch 1 and 32 on every backend; first call (compile) vs warm; CUDA graphs on/off."""
    rows: list[dict] = []
    if models_dir is None:
        return [{"skipped": "no model folder (gpu_carry/models or the model cache)"}]
    for name in MODEL_NAMES:
        path = find_model(models_dir, name)
        if path is None:
            rows.append({"model": name, "skipped": f"not found under {models_dir}"})
            continue
        if not budget.enough(25):
            rows.append({"model": name, "skipped": "time budget spent"})
            continue
        loaded: dict[str, Any] = {}
        print(f"gpu_check: timings: model {name} ({budget.left():.0f} s left)", flush=True)
        try:
            for label in labels:
                use(label)
                loaded[label] = _load(path)
            kind = loaded["cpu"][1]
            shape, dtype = _input_spec(loaded["cpu"][0], kind)
            for batch in (1, 32):
                full = _batch_shape(shape, batch)
                if full is None:
                    rows.append({"model": name, "batch": batch, "skipped": f"input shape {shape} has no batch dim"})
                    continue
                if batch > 1 and (quick or not budget.enough(25)):
                    rows.append({"model": name, "batch": batch, "skipped": "quick run or time budget"})
                    continue
                rows.append(_model_row(name, kind, loaded, full, dtype, batch, quick, _cap(budget)))
        except Exception as exc:  # noqa: BLE001 - one model's failure leaves the others
            rows.append({"model": name, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            for label, (model, _) in loaded.items():
                use(label)
                model.dispose()
    use("cpu")
    return rows


def _model_row(
    name: str, kind: str, loaded: dict, shape: list[int], dtype: str, batch: int, quick: bool, max_s: float
) -> dict:
    rng = np.random.default_rng(2)
    values = rng.random(shape, dtype=np.float32) if dtype == "float32" else rng.integers(0, 255, shape)
    inputs = {}
    for label in loaded:
        use(label)
        inputs[label] = nf.tensor(values, shape, dtype)

    def call(label: str) -> Any:
        model = loaded[label][0]
        return model.predict(inputs[label]) if kind == "layers" else model.execute(inputs[label])

    calls = {label: (lambda lb=label: call(lb)) for label in loaded}
    try:
        res = interleaved_ms(calls, runs=3 if quick else 20, warmup=2, max_s=max_s)
        _ratios(res)
        row: dict[str, Any] = {"model": name, "kind": kind, "batch": batch, "shape": shape, "by_backend": res}
        if "torch-cuda" in loaded and kind == "graph" and nf.env().has("TORCH_CUDA_GRAPHS"):
            row["cuda_graphs"] = _cuda_graphs(call, "torch-cuda", runs=3 if quick else 20, max_s=max_s / 2)
        return row
    finally:
        for label, t in inputs.items():
            use(label)
            t.dispose()


def _outputs(out: Any) -> list[np.ndarray]:
    ts = out if isinstance(out, (list, tuple)) else list(out.values()) if isinstance(out, dict) else [out]
    arrays = [np.asarray(t.data_sync(), dtype=np.float64) for t in ts]
    nf.dispose(list(ts))
    return arrays


def _cuda_graphs(call: Any, label: str, runs: int, max_s: float) -> dict[str, Any]:
    """The model with TORCH_CUDA_GRAPHS on and off: max abs difference of the outputs and both medians."""
    use(label)
    before = nf.env().get("TORCH_CUDA_GRAPHS")
    try:
        result: dict[str, Any] = {}
        outs = {}
        for on in (False, True):
            set_flag("TORCH_CUDA_GRAPHS", on)
            outs[on] = _outputs(call(label))
            result[f"{'on' if on else 'off'}"] = interleaved_ms({label: lambda: call(label)}, runs=runs, max_s=max_s)[
                label
            ]
        result["max_abs_diff"] = max(
            (float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(outs[False], outs[True], strict=True)),
            default=0.0,
        )
        return result
    finally:
        set_flag("TORCH_CUDA_GRAPHS", before)


def read_latency(labels: list[str], quick: bool) -> dict[str, dict[str, float]]:
    """ms to read a fresh 1M-element result to the host: ``await t.data()`` vs ``t.data_sync()``."""
    n = 4096 if quick else 1 << 20
    out: dict[str, dict[str, float]] = {}
    loop = asyncio.new_event_loop()
    try:
        for label in labels:
            use(label)
            x = nf.tensor(np.ones(n, np.float32))
            row: dict[str, list[float]] = {"data_sync_ms": [], "await_data_ms": []}
            for _ in range(3 if quick else 10):
                for key in row:
                    y = nf.add(x, 1.0)
                    sync()
                    start = time.perf_counter()
                    if key == "data_sync_ms":
                        y.data_sync()
                    else:
                        loop.run_until_complete(y.data())
                    row[key].append((time.perf_counter() - start) * 1000.0)
                    y.dispose()
            x.dispose()
            out[label] = {k: float(np.median(v)) for k, v in row.items()}
    finally:
        loop.close()
        use("cpu")
    return out


def timings(
    labels: list[str], budget: Budget, quick: bool, models_dir: Path | None, peak: float | None, gpu_run: bool
) -> dict[str, Any]:
    """Step 3: every timing, with nf.memory() per backend before and after (num_tensors back to the start)."""
    result: dict[str, Any] = {"backends": labels}
    if "torch-cuda" in labels:
        use("torch-cuda")
        result["torch_tf32"] = nf.env().get("TORCH_TF32") if set_flag("TORCH_TF32", False) else "flag not present"
        result["torch_cuda_graphs_flag"] = nf.env().has("TORCH_CUDA_GRAPHS")
    memory_before = {}
    for label in labels:
        use(label)
        memory_before[label] = nf.memory()._asdict() if hasattr(nf.memory(), "_asdict") else vars(nf.memory())
    webgpu_before = _webgpu_counters() if "webgpu" in labels else None
    parts = {
        "matmul": lambda: matmul(labels, budget, quick, peak, gpu_run),
        "conv2d": lambda: conv2d(labels, budget, quick),
        "models": lambda: models(labels, budget, quick, _models_dir(models_dir)),
        "read_latency": lambda: read_latency(labels, quick),
    }
    for key, fn in parts.items():
        try:
            print(f"gpu_check: timings: {key} ({budget.left():.0f} s left)", flush=True)
            result[key] = fn()
        except Exception as exc:  # noqa: BLE001 - one part's failure leaves the others
            result[key] = {"error": f"{type(exc).__name__}: {exc}"}
            for label in labels:  # a failure mid-measurement can leave a GPU backend active
                use(label)
                sync()
    if webgpu_before is not None:
        after = _webgpu_counters()
        result["webgpu_compile"] = {
            "programs": after["programs"] - webgpu_before["programs"],
            "compile_ms": after["compile_ms"] - webgpu_before["compile_ms"],
        }
    result["memory"] = {}
    for label in labels:
        use(label)
        mem = nf.memory()
        after = mem._asdict() if hasattr(mem, "_asdict") else vars(mem)
        result["memory"][label] = {
            "before": {k: memory_before[label].get(k) for k in ("num_tensors", "num_bytes")},
            "after": {k: after.get(k) for k in ("num_tensors", "num_bytes")},
            "leak": after.get("num_tensors") != memory_before[label].get("num_tensors"),
        }
    use("cpu")
    return result


def _models_dir(models_dir: Path | None) -> Path | None:
    return models_dir if models_dir is not None and models_dir.exists() else None


def _webgpu_counters() -> dict[str, float]:
    backend = nf.find_backend("webgpu")
    return {"programs": backend.num_compiled_programs, "compile_ms": backend.compile_ms}
