"""Training step of a small CNN: ndflow (Layers API and nf.train) on each backend vs the same model in eager PyTorch.

    python benchmarks/train.py [--backends cpu,torch] [--steps 20] [--warmup 3] [--batch 32] [--optimizer sgd|adam]

The model: conv 3x3 (8) + relu, max-pool 2x2, conv 3x3 (16) + relu, flatten, dense 10 + softmax, on 28x28x1
inputs, a batch of 32, softmax cross-entropy, plain SGD (lr 0.01) or Adam (lr 0.001). Three ways to train it
from the same initial weights and the same batch:

- ``layers``: ``model.train_on_batch(x, y)`` of an ``nf.sequential`` model compiled with the optimizer;
- ``nf.train``: ``optimizer.minimize(loss)`` over ``nf.variable`` weights, the forward pass written with ops;
- ``pytorch``: ``torch.nn.Sequential`` (NCHW, as an eager PyTorch program writes it), ``loss.backward()`` and
  ``torch.optim`` (``zero_grad(set_to_none=True)``; Adam's epsilon set to TF.js's 1e-7).

A step is forward, backward and update, with the loss read back as a Python float. The ndflow ways and
PyTorch are timed in alternating steps (median ms after warm-up); the first losses must agree (same
weights, same batch) or the run stops. Issue 10's target: ndflow within 2x of PyTorch's time per step.
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin for a while after each torch op; measured in one process next to the cpu
# backend (OpenBLAS threads), the spinning made cpu figures up to 10x too slow. Passive waiting ends that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from machine import describe

import ndflow as nf

HW, CLASSES = 28, 10


def layers_model(optimizer: str) -> nf.layers.Layer:
    """The CNN as an ``nf.sequential`` model, compiled."""
    model = nf.sequential()
    model.add(nf.layers.conv2d(filters=8, kernel_size=3, activation="relu", input_shape=[HW, HW, 1]))
    model.add(nf.layers.max_pooling2d(pool_size=2))
    model.add(nf.layers.conv2d(filters=16, kernel_size=3, activation="relu"))
    model.add(nf.layers.flatten())
    model.add(nf.layers.dense(units=CLASSES, activation="softmax"))
    model.compile(optimizer=make_optimizer(optimizer), loss="categoricalCrossentropy")
    return model


def make_optimizer(name: str) -> nf.train.Optimizer:
    return nf.train.sgd(0.01) if name == "sgd" else nf.train.adam(0.001)


class OpsModel:
    """The same CNN as ``nf.variable`` weights and ops, trained with ``optimizer.minimize``."""

    def __init__(self, weights: list[np.ndarray], optimizer: str) -> None:
        self.vars = [nf.tidy(lambda w=w: nf.variable(nf.tensor(w))) for w in weights]
        self.optimizer = make_optimizer(optimizer)

    def loss(self, x: nf.Tensor, y: nf.Tensor) -> nf.Tensor:
        k1, b1, k2, b2, k3, b3 = self.vars
        h = nf.relu(nf.add(nf.conv2d(x, k1, 1, "valid"), b1))
        h = nf.max_pool(h, 2, 2, "valid")
        h = nf.relu(nf.add(nf.conv2d(h, k2, 1, "valid"), b2))
        logits = nf.add(nf.mat_mul(nf.reshape(h, [h.shape[0], -1]), k3), b3)
        return nf.losses.softmax_cross_entropy(y, logits)

    def step(self, x: nf.Tensor, y: nf.Tensor) -> float:
        cost = self.optimizer.minimize(lambda: self.loss(x, y), return_cost=True)
        value = float(cost.data_sync()[0])
        cost.dispose()
        return value

    def dispose(self) -> None:
        nf.dispose(self.vars)
        self.optimizer.dispose()


def torch_model(weights: list[np.ndarray]) -> torch.nn.Sequential:
    """The CNN in PyTorch (NCHW) with the ndflow model's weights (HWIO filters -> OIHW; the dense rows from
    NHWC flattening order to NCHW's)."""
    k1, b1, k2, b2, k3, b3 = weights
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(k3.shape[0], CLASSES),
    )
    side = int(round((k3.shape[0] // 16) ** 0.5))
    dense = k3.reshape(side, side, 16, CLASSES).transpose(2, 0, 1, 3).reshape(-1, CLASSES)
    with torch.no_grad():
        for param, value in zip(
            model.parameters(), [k1.transpose(3, 2, 0, 1), b1, k2.transpose(3, 2, 0, 1), b2, dense.T, b3], strict=True
        ):
            param.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    return model


def torch_step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> float:
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def timed(step: Callable[[], float]) -> tuple[float, float]:
    """(ms, loss) of one step."""
    start = time.perf_counter()
    loss = step()
    return (time.perf_counter() - start) * 1000, loss


def run(backend: str, args: argparse.Namespace) -> list[tuple[str, float, float]]:
    """[(way, median ms per step, first loss)] for ndflow's two ways on ``backend`` and for PyTorch."""
    nf.set_backend(backend)
    rng = np.random.default_rng(0)
    x_np = rng.random((args.batch, HW, HW, 1), dtype=np.float32)
    labels = rng.integers(0, CLASSES, args.batch)
    y_np = np.eye(CLASSES, dtype=np.float32)[labels]
    model = layers_model(args.optimizer)
    copies = model.get_weights()  # new tensors (the variables' values), the caller's to dispose
    weights = [w.numpy() for w in copies]
    nf.dispose(copies)
    ops = OpsModel(weights, args.optimizer)
    net = torch_model(weights)
    opt = (torch.optim.SGD(net.parameters(), lr=0.01) if args.optimizer == "sgd"
           else torch.optim.Adam(net.parameters(), lr=0.001, eps=1e-7))  # fmt: skip
    x, y = nf.tensor(x_np), nf.tensor(y_np)
    xt, yt = torch.from_numpy(x_np).permute(0, 3, 1, 2).contiguous(), torch.from_numpy(labels)
    ways: dict[str, Callable[[], float]] = {
        "layers train_on_batch": lambda: float(model.train_on_batch(x, y)),
        "nf.train minimize": lambda: ops.step(x, y),
        "pytorch eager": lambda: torch_step(net, opt, xt, yt),
    }
    times: dict[str, list[float]] = {k: [] for k in ways}
    first: dict[str, float] = {}
    try:
        for i in range(args.warmup + args.steps):
            for name, step in ways.items():
                ms, loss = timed(step)
                first.setdefault(name, loss)
                if i >= args.warmup:
                    times[name].append(ms)
    finally:
        nf.dispose([x, y])
        ops.dispose()
        model.optimizer.dispose()  # an optimizer passed to compile() as an object is the caller's (as in TF.js)
        model.dispose()
    ref = first["pytorch eager"]
    for name, loss in first.items():
        if abs(loss - ref) > 1e-4 * max(1.0, abs(ref)):
            raise SystemExit(f"{backend}: {name}'s first loss {loss} differs from PyTorch's {ref}: not the same model")
    return [(name, statistics.median(t), first[name]) for name, t in times.items()]


def table(results: dict[str, list[tuple[str, float, float]]]) -> str:
    """Markdown: per ndflow backend, each way's ms per step and its ratio to PyTorch's in the same run."""
    lines = ["| ndflow backend | way | ms / step | vs PyTorch | first loss |", "|---|---|---|---|---|"]
    for backend, rows in results.items():
        torch_ms = next(ms for name, ms, _ in rows if name == "pytorch eager")
        for name, ms, loss in rows:
            ratio = "1.00x" if name == "pytorch eager" else f"{ms / torch_ms:.2f}x"
            lines.append(f"| {backend} | {name} | {ms:.2f} | {ratio} | {loss:.6f} |")
    return "\n".join(lines)


def ratios(results: dict[str, list[tuple[str, float, float]]]) -> dict[tuple[str, str], float]:
    """(backend, way) -> ndflow's ms per step over PyTorch's."""
    out = {}
    for backend, rows in results.items():
        torch_ms = next(ms for name, ms, _ in rows if name == "pytorch eager")
        out.update({(backend, name): ms / torch_ms for name, ms, _ in rows if name != "pytorch eager"})
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="cpu,torch")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    return p


def run_all(args: argparse.Namespace) -> dict[str, list[tuple[str, float, float]]]:
    """Every backend named that initializes here."""
    backends = [b for b in args.backends.split(",") if b and nf.find_backend(b) is not None]
    previous = nf.get_backend()
    try:
        return {backend: run(backend, args) for backend in backends}
    finally:
        nf.set_backend(previous)


def main() -> None:
    args = parser().parse_args()
    print(describe())
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads; batch {args.batch}, {args.optimizer}, "
          f"median of {args.steps} alternating steps after {args.warmup} warm-up\n")  # fmt: skip
    print(table(run_all(args)))
    print(f"\ntensors left: {nf.memory().num_tensors} (the target: ndflow within 2x of PyTorch per step)")


if __name__ == "__main__":
    main()
