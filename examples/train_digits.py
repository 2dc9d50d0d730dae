#!/usr/bin/env python3
"""Train a small CNN on real handwritten digits (the 8x8 UCI / scikit-learn digits set) with ``fit``.

The data (1797 images, CC BY 4.0, see ``examples/data/README.md``) ship with the repository as
``examples/data/digits.npz``. A fixed permutation puts 1437 images in the training set and 360 in
the test set. The model is a TF.js-style Sequential:

    conv2d(16, 3x3, same, relu) -> max_pooling2d(2) -> conv2d(32, 3x3, relu) -> flatten -> dense(10, softmax)

compiled with ``optimizer='adam', loss='categoricalCrossentropy', metrics=['accuracy']`` and trained
with ``batch_size=32`` for 10 epochs, 10% of the training set held out for validation. The same
architecture and schedule in TF.js 4.22 (measured by ``tests/fixtures/gen_training.py --digits-full``)
reach the same accuracy (``TFJS_REFERENCE``): from the same seeded weights without shuffling, TF.js and
ndflow print the same per-epoch loss and accuracy (to 4 decimals) and both classify 96.9% of the test
images; from random weights with shuffling, TF.js's three runs averaged 95.4% and ndflow's 96.5%.

    python examples/train_digits.py [--epochs 10] [--batch-size 32] [--verbose 1]
        [--tensorboard DIR] [--plot history.png]

``--tensorboard DIR`` logs the losses and accuracies to TensorBoard event files under ``DIR``
(``nf.node.tensor_board``; view them with ``tensorboard --logdir DIR``), ``--plot out.png`` draws the
training curves with ``nf.vis.show.history`` (``pip install 'ndflow[tensorboard,vis]'``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

import ndflow as nf

DATA = Path(__file__).resolve().parent / "data" / "digits.npz"
NUM_TRAIN = 1437
#: Test accuracy of the same model and schedule in TF.js 4.22 (cpu backend), measured by
#: tests/fixtures/gen_training.py --digits-full: from seeded weights without shuffling, and three random-init runs.
TFJS_REFERENCE = {"seeded_unshuffled": 0.9694, "random_init_runs": [0.9611, 0.9444, 0.9556]}


def load_digits(split_seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_train, y_train, x_test, y_test)``: images in [0, 1] as ``[n, 8, 8, 1]`` float32, one-hot labels."""
    with np.load(DATA) as data:
        images, labels = data["images"], data["labels"]
    order = np.random.default_rng(split_seed).permutation(len(labels))
    x = (images[order].astype(np.float32) / 16.0)[..., None]
    y = np.eye(10, dtype=np.float32)[labels[order]]
    return x[:NUM_TRAIN], y[:NUM_TRAIN], x[NUM_TRAIN:], y[NUM_TRAIN:]


def build_model() -> nf.Sequential:
    """The CNN (the same layers as the TF.js reference)."""
    model = nf.sequential(
        layers=[
            nf.layers.conv2d(filters=16, kernel_size=3, padding="same", activation="relu", input_shape=[8, 8, 1]),
            nf.layers.max_pooling2d(pool_size=2),
            nf.layers.conv2d(filters=32, kernel_size=3, activation="relu"),
            nf.layers.flatten(),
            nf.layers.dense(units=10, activation="softmax"),
        ]
    )
    model.compile(optimizer="adam", loss="categoricalCrossentropy", metrics=["accuracy"])
    return model


def accuracy(model: nf.Sequential, x: np.ndarray, y: np.ndarray) -> float:
    """The fraction of ``x`` classified as ``y`` says."""
    probabilities = model.predict(x, batch_size=128)
    predicted = np.asarray(probabilities.numpy()).argmax(1)
    probabilities.dispose()
    return float((predicted == y.argmax(1)).mean())


def train(
    epochs: int = 10,
    batch_size: int = 32,
    verbose: int = 1,
    shuffle: bool = True,
    weights: list[np.ndarray] | None = None,
    validation_split: float = 0.1,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """Train from scratch (or from ``weights``); returns the history, the test accuracy and the time taken."""
    x_train, y_train, x_test, y_test = load_digits()
    model = build_model()
    if weights is not None:
        model.set_weights(weights)
    start = time.perf_counter()
    history = model.fit(
        x_train, y_train, batch_size=batch_size, epochs=epochs, verbose=verbose, shuffle=shuffle,
        validation_split=validation_split, callbacks=callbacks,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    result = {"history": history.history, "test_accuracy": accuracy(model, x_test, y_test), "seconds": seconds}
    model.dispose()
    return result


def short_demo(epochs: int = 3, print_fn: Any = print) -> float:
    """A few epochs of the digits CNN with the progress bar (for ``ndflow demo``); returns the test accuracy."""
    print_fn(f"digits CNN: {NUM_TRAIN} training images (8x8), conv2d/max_pooling2d/conv2d/dense, adam, {epochs} epochs")
    result = train(epochs=epochs, verbose=1)
    print_fn(f"test accuracy after {epochs} epochs: {result['test_accuracy']:.3f} ({result['seconds']:.1f}s)")
    return result["test_accuracy"]


def main() -> None:
    """Train and report the test accuracy next to TF.js's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--tensorboard", metavar="DIR", help="write TensorBoard event files under DIR")
    parser.add_argument("--plot", metavar="PNG", help="save the training curves (loss, accuracy) to this image")
    args = parser.parse_args()
    before = nf.memory().num_tensors
    callbacks = [nf.node.tensor_board(args.tensorboard)] if args.tensorboard else None
    result = train(args.epochs, args.batch_size, args.verbose, callbacks=callbacks)
    print(f"test accuracy: {result['test_accuracy']:.4f} after {args.epochs} epochs ({result['seconds']:.1f}s)")
    print(f"TF.js 4.22, same model and schedule: {TFJS_REFERENCE}")
    if args.tensorboard:
        print(f"TensorBoard logs: {args.tensorboard} (view them with: tensorboard --logdir {args.tensorboard})")
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        nf.vis.show.history(args.plot, result["history"], ["loss", "val_loss", "acc", "val_acc"])
        print(f"training curves: {args.plot}")
    print(f"tensors left: {nf.memory().num_tensors - before}")


if __name__ == "__main__":
    main()
