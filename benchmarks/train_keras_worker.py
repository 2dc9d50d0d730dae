"""Keras 3 on TensorFlow as a peer of ``benchmarks/train_peers.py``: a worker process that trains on request.

    python benchmarks/train_keras_worker.py --threads N

TensorFlow is a benchmark-only peer that cannot share a process with torch, so ``train_peers.py`` runs this
script with another Python (one with ``tensorflow`` and ``keras``; neither ndflow nor torch is needed here)
and talks to it by JSON lines: one request a line on stdin, one answer a line on stdout (anything else that
writes to stdout is sent to stderr). TensorFlow's thread pools are sized before it initializes: ``N`` intra-op
threads and one inter-op thread. Requests:

- ``{"op": "build", "model": "cnn" | "mlp" | "lstm", "npz": path}``: the model in Keras (the same layers as
  ``train_peers.py``'s), compiled with Keras's default settings (Adam, learning rate 0.001 and epsilon 1e-7),
  its weights and the batch ``x``, ``y`` read from the ``.npz`` file (weights ``w0``, ``w1``, ... in Keras's
  order, which is ndflow's);
- ``{"op": "steps", "n": k}``: ``k`` steps of ``model.train_on_batch(x, y)``, each timed (the loss read back
  as a Python float): ``{"ok": true, "ms": [...], "losses": [...]}``;
- ``{"op": "quit"}``.

The first answer, before any request, names the versions: ``{"ok": true, "tensorflow": ..., "keras": ...}``.
A failed request answers ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, TextIO

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def protocol_stream() -> TextIO:
    """A stream on the original stdout for the answers; fd 1 (and ``sys.stdout``) then point at stderr, so that
    what TensorFlow or Keras print cannot break the protocol."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def build(name: str, npz: str) -> tuple[Any, Any, Any]:
    """(compiled Keras model with the file's weights, x, y)."""
    import keras
    import numpy as np

    if name == "cnn":
        model = keras.Sequential(
            [
                keras.Input((28, 28, 1)),
                keras.layers.Conv2D(32, 3, activation="relu"),
                keras.layers.MaxPooling2D(2),
                keras.layers.Conv2D(64, 3, activation="relu"),
                keras.layers.Flatten(),
                keras.layers.Dense(10, activation="softmax"),
            ]
        )
        loss = "categorical_crossentropy"
    elif name == "mlp":
        model = keras.Sequential(
            [
                keras.Input((784,)),
                keras.layers.Dense(256, activation="relu"),
                keras.layers.Dense(128, activation="relu"),
                keras.layers.Dense(10, activation="softmax"),
            ]
        )
        loss = "categorical_crossentropy"
    elif name == "lstm":
        model = keras.Sequential(
            [
                keras.Input((50,), dtype="int32"),
                keras.layers.Embedding(10000, 64),
                keras.layers.LSTM(128, recurrent_activation="sigmoid"),
                keras.layers.Dense(1, activation="sigmoid"),
            ]
        )
        loss = "binary_crossentropy"
    else:
        raise ValueError(f"unknown model {name!r} (cnn, mlp, lstm)")
    with np.load(npz) as data:
        weights = [data[f"w{i}"] for i in range(sum(1 for k in data.files if k.startswith("w")))]
        x, y = data["x"], data["y"]
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001, epsilon=1e-7), loss=loss)
    return model, x, y


def steps(model: Any, x: Any, y: Any, n: int) -> dict[str, Any]:
    ms, losses = [], []
    for _ in range(n):
        start = time.perf_counter()
        loss = float(model.train_on_batch(x, y))
        ms.append((time.perf_counter() - start) * 1000)
        losses.append(loss)
    return {"ok": True, "ms": ms, "losses": losses}


def serve(out: TextIO) -> None:
    """Answer requests from stdin until ``quit`` or end of input."""
    import keras
    import tensorflow as tf

    out.write(json.dumps({"ok": True, "tensorflow": tf.__version__, "keras": keras.__version__}) + "\n")
    current: tuple[Any, Any, Any] | None = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request.get("op")
            if op == "quit":
                break
            if op == "build":
                current = None
                keras.backend.clear_session()
                current = build(str(request["model"]), str(request["npz"]))
                answer: dict[str, Any] = {"ok": True}
            elif op == "steps":
                if current is None:
                    raise ValueError("'steps' before a model was built")
                answer = steps(*current, int(request["n"]))
            else:
                raise ValueError(f"unknown op {op!r} (build, steps, quit)")
        except Exception as exc:  # noqa: BLE001 (every failure goes back to the caller as an answer)
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/train_keras_worker.py", description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True, help="TensorFlow's intra-op threads")
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error(f"--threads must be a positive count, got {args.threads}")
    out = protocol_stream()
    try:
        import tensorflow as tf
    except ImportError as exc:
        out.write(json.dumps({"ok": False, "error": f"tensorflow is not installed in {sys.executable}: {exc}"}) + "\n")
        return 1
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    try:
        import keras  # noqa: F401
    except ImportError as exc:
        out.write(json.dumps({"ok": False, "error": f"keras is not installed in {sys.executable}: {exc}"}) + "\n")
        return 1
    serve(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
