"""Recurrent layers' inference: ndflow's ``LayersModel.predict`` against Keras 3 on TensorFlow, in the same run.

    python benchmarks/rnn.py [--rounds 7] [--runs 10] [--steps 50] [--features 64] [--units 128] [--batches 1,32]

A model of one recurrent layer (``LSTM`` and ``GRU``, ``units``, ``return_sequences`` false, sigmoid recurrent
activation: Keras 3's default; the GRU in TF.js's form, ``reset_after`` false) over ``steps`` time steps of
``features`` values, built in both libraries with the same weights (ndflow's, copied into Keras), fed the same
seeded float32 input; numpy in and numpy out for both. Keras 3 is timed the fastest way it offers for a
single batch: ``predict_on_batch`` (its compiled predict function) and a direct call under ``tf.function``, the
faster of the two being the Keras figure. Rounds alternate the two libraries; a figure is the median over rounds
of each round's median. Keras (the ``tensorflow`` package) is a benchmark-only peer: without it the script prints
why and exits 0. Prints a Markdown table with the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from machine import describe, load  # noqa: E402

import ndflow as nf  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="benchmarks/rnn.py", description="ndflow RNN layers vs Keras 3 on TensorFlow")
    p.add_argument("--rounds", type=int, default=7, help="rounds, the libraries alternating (7)")
    p.add_argument("--runs", type=int, default=10, help="timed calls per round (10)")
    p.add_argument("--steps", type=int, default=50, help="time steps (50)")
    p.add_argument("--features", type=int, default=64, help="input values per step (64)")
    p.add_argument("--units", type=int, default=128, help="the layer's units (128)")
    p.add_argument("--batches", default="1,32", help="batch sizes, comma-separated (1,32)")
    p.add_argument("--layers", default="lstm,gru", help="layer kinds, comma-separated (lstm,gru)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.runs < 1 or args.steps < 1 or args.features < 1 or args.units < 1:
        p.error("--rounds, --runs, --steps, --features and --units must be positive")
    try:
        args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        p.error(f"--batches must be comma-separated integers, got {args.batches!r}")
    if not args.batches or min(args.batches) < 1:
        p.error("--batches must name positive batch sizes")
    args.layers = [k.strip().lower() for k in args.layers.split(",") if k.strip()]
    unknown = [k for k in args.layers if k not in ("lstm", "gru")]
    if unknown:
        p.error(f"--layers: unknown kind {unknown[0]!r} (lstm, gru)")
    return args


def ndflow_model(kind: str, steps: int, features: int, units: int) -> nf.LayersModel:
    factory = nf.layers.lstm if kind == "lstm" else nf.layers.gru
    model = nf.sequential()
    # Keras 3's recurrent activation (sigmoid; TF.js's default is hardSigmoid, whose Keras 3 form has another slope)
    model.add(factory(units=units, input_shape=[steps, features], recurrent_activation="sigmoid"))
    return model


def keras_model(kind: str, steps: int, features: int, units: int, weights: list[np.ndarray]):
    import keras

    layer = keras.layers.LSTM(units) if kind == "lstm" else keras.layers.GRU(units, reset_after=False)
    # (Keras builds LSTM and GRU on TensorFlow's fused kernels where its arguments allow, as they do here)
    model = keras.Sequential([keras.Input((steps, features)), layer])
    model.set_weights(weights)
    return model


def _median_time(fn, x, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(kind: str, batch: int, args: argparse.Namespace) -> dict[str, float]:
    import tensorflow as tf

    model = ndflow_model(kind, args.steps, args.features, args.units)
    weights = [w.read().data_sync().reshape(w.shape) for w in model.weights]
    km = keras_model(kind, args.steps, args.features, args.units, [np.asarray(w) for w in weights])
    x = np.random.default_rng(42).random((batch, args.steps, args.features), dtype=np.float32)

    def run_ndflow(a: np.ndarray) -> np.ndarray:
        t = nf.tensor(a)
        y = model.predict(t)
        out = y.data_sync().reshape(y.shape)
        nf.dispose([t, y])
        return out

    call = tf.function(lambda a: km(a, training=False))

    def run_keras_call(a: np.ndarray) -> np.ndarray:
        return call(tf.constant(a)).numpy()

    def run_keras_pob(a: np.ndarray) -> np.ndarray:
        return np.asarray(km.predict_on_batch(a))

    got, want = run_ndflow(x), run_keras_call(x)
    error = float(np.max(np.abs(got - want)))
    runners = {"ndflow": run_ndflow, "keras call": run_keras_call, "keras predict_on_batch": run_keras_pob}
    for fn in runners.values():
        for _ in range(3):
            fn(x)
    rounds: dict[str, list[float]] = {name: [] for name in runners}
    for r in range(args.rounds):
        names = list(runners)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            rounds[name].append(_median_time(runners[name], x, args.runs))
    model.dispose()
    result = {name: statistics.median(v) for name, v in rounds.items()}
    result["error"] = error
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import keras
        import tensorflow as tf
    except ImportError as exc:
        print(f"rnn.py: skipped: Keras 3 on TensorFlow is not installed ({exc}); pip install tensorflow-cpu")
        return 0
    nf.set_backend("cpu")
    print(describe())
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}; {load()}")
    print(f"{args.steps} steps of {args.features} values, {args.units} units, median of {args.rounds} rounds")
    print()
    print("| layer | batch | ndflow ms | Keras ms (fastest form) | ndflow / Keras | Keras call ms | "
          "Keras predict_on_batch ms | max abs diff |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.layers:
        for batch in args.batches:
            r = measure(kind, batch, args)
            keras_best = min(r["keras call"], r["keras predict_on_batch"])
            print(f"| {kind.upper()}({args.units}) | {batch} | {r['ndflow']:.3f} | {keras_best:.3f} | "
                  f"{r['ndflow'] / keras_best:.2f} | {r['keras call']:.3f} | {r['keras predict_on_batch']:.3f} | "
                  f"{r['error']:.1e} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
