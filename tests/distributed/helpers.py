"""Small models for tests/distributed, saved to a folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ndflow as nf

GRAPH_MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "graph_models" / "basic" / "model.json"


def dense_model(folder: Path) -> Path:
    """A layers model [n, 3] -> [n, 2] (softmax), saved to ``folder``; its folder."""
    model = nf.sequential(layers=[nf.layers.dense(units=2, input_shape=[3], activation="softmax")])
    rng = np.random.default_rng(3)
    current = model.get_weights()
    model.set_weights([rng.normal(0, 0.5, t.shape).astype(np.float32) for t in current])
    nf.dispose(current)
    model.save(str(folder))
    model.dispose()
    return folder


def image_model(folder: Path) -> Path:
    """A layers model on 8x8 RGB images -> [n, 3], saved to ``folder``; its folder."""
    model = nf.sequential(
        layers=[
            nf.layers.conv2d(filters=2, kernel_size=3, activation="relu", input_shape=[8, 8, 3]),
            nf.layers.global_average_pooling2d(),
            nf.layers.dense(units=3, activation="softmax"),
        ]
    )
    model.save(str(folder))
    model.dispose()
    return folder


def reference(folder: Path, x: np.ndarray) -> np.ndarray:
    """The saved model's own prediction for ``x``."""
    model = nf.load_layers_model(str(folder / "model.json"))
    x_t = nf.tensor(x)
    out = model.predict(x_t)
    values = out.numpy()
    nf.dispose([x_t, out])
    model.dispose()
    return values
