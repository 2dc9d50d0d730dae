"""A small data-parallel training run for tests/distributed (launched with torchrun, or alone for the reference).

    python -m torch.distributed.run --nproc_per_node 2 tests/distributed/dp_train.py --out w.npz
    python tests/distributed/dp_train.py --out ref.npz --single

Writes the final weights (rank 0) to ``--out``. ``--kill-epoch K``: rank 1 kills itself at the start of epoch K
on the first attempt (a marker file beside ``--out`` says it did), so that torchrun restarts the job, which
resumes from rank 0's last checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import signal

import numpy as np

import ndflow as nf
from ndflow.distributed.data_parallel import DataParallel

SAMPLES, BATCH = 96, 16


def build(kind: str) -> object:
    if kind == "cnn":
        layers = [
            nf.layers.conv2d(filters=4, kernel_size=3, activation="relu", input_shape=[8, 8, 1]),
            nf.layers.max_pooling2d(pool_size=2),
            nf.layers.flatten(),
            nf.layers.dense(units=3, activation="softmax"),
        ]
    else:
        layers = [
            nf.layers.dense(units=8, activation="relu", input_shape=[6]),
            nf.layers.dense(units=3, activation="softmax"),
        ]
    model = nf.sequential(layers=layers)
    model.compile(optimizer=nf.train.adam(0.01), loss="categoricalCrossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(123)
    current = model.get_weights()
    model.set_weights([rng.normal(0, 0.3, t.shape).astype(np.float32) for t in current])
    nf.dispose(current)
    return model


def data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(SAMPLES, 8, 8, 1) if kind == "cnn" else (SAMPLES, 6)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, SAMPLES)]
    return x, y


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--model", default="dense", choices=("dense", "cnn"))
    p.add_argument("--mode", default="fit", choices=("fit", "dataset"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--shuffle", action="store_true")
    p.add_argument("--single", action="store_true", help="one process, no distribution (the reference)")
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--kill-epoch", type=int, default=None)
    args = p.parse_args()
    model = build(args.model)
    x, y = data(args.model)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    dist = None if args.single else DataParallel(checkpoint_dir=args.checkpoint_dir, seed=11)
    marker = args.out + ".killed"
    callbacks = []
    if args.kill_epoch is not None and not os.path.exists(marker):

        def on_epoch_begin(epoch: int, logs: object = None) -> None:
            if epoch == args.kill_epoch and dist is not None and dist.rank == 1:
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)

        callbacks.append({"on_epoch_begin": on_epoch_begin})
    if args.mode == "fit":
        if args.single and args.shuffle:  # the permutations DataParallel draws: seed 11, per epoch
            hist = {"loss": []}
            for epoch in range(args.epochs):
                order = np.random.default_rng([11, epoch]).permutation(SAMPLES)
                h = model.fit(x[order], y[order], batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
                hist["loss"] += h.history["loss"]
        else:
            h = model.fit(x, y, batch_size=BATCH, epochs=args.epochs, shuffle=args.shuffle, verbose=0,
                          callbacks=callbacks, distribution=dist)  # fmt: skip
            hist = h.history
    else:
        per_rank = BATCH // (1 if args.single else world)
        ds = nf.data.from_numpy(x, y).batch(per_rank)
        h = model.fit_dataset(ds, epochs=args.epochs, verbose=0, callbacks=callbacks, distribution=dist)
        hist = h.history
    if dist is None or dist.rank == 0:
        weights = model.get_weights()
        np.savez(args.out, *[np.asarray(t.numpy()) for t in weights])
        nf.dispose(weights)
        with open(args.out + ".json", "w") as f:
            json.dump({"history": hist, "stats": None if dist is None else dist.stats,
                       "resumed_from": None if dist is None else dist.resumed_from}, f)  # fmt: skip
    if dist is not None:
        dist.close()
    model.dispose()


if __name__ == "__main__":
    main()
