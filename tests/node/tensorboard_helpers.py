"""Shared by the TensorBoard tests: read event files back with TensorBoard's own reader, close cached writers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ndflow as nf

pytest.importorskip("tensorboardX", reason="writing event files needs tensorboardX (pip install 'ndflow[tensorboard]')")
event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator", reason="reading event files needs tensorboard"
)

from ndflow.node import summary_writer  # noqa: E402  (after the skips above)

X = (np.arange(24, dtype=np.float32).reshape(12, 2) / 24).tolist()
Y = [[a + b] for a, b in X]


def read_run(path: Path) -> event_accumulator.EventAccumulator:
    """Every event of the run in ``path`` (no sampling)."""
    acc = event_accumulator.EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def scalars(path: Path, tag: str) -> list[tuple[int, float]]:
    """``(step, value)`` of each point of scalar ``tag`` in the run ``path``."""
    return [(e.step, e.value) for e in read_run(path).Scalars(tag)]


def close_writers() -> None:
    """Close every cached writer (their files stay open otherwise, as in tfjs-node)."""
    for writer in list(summary_writer._cache.values()):
        writer.close()


def dense_model(metrics: list[str] | None = None) -> nf.Sequential:
    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[2], kernel_initializer="zeros")])
    model.compile(optimizer="sgd", loss="meanSquaredError", metrics=metrics or [])
    return model
