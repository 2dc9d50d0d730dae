"""A small program on ndflow's public API, written for a type checker: ``mypy --strict examples/typed_usage.py``
passes (CI runs it), and every tensor below has the static type ``nf.Tensor``.

Tensors and ops, ``tidy``, a sequential model (compile, fit, predict), a graph model loaded from disk, and an
``nf.data`` pipeline feeding ``fit_dataset``. Run: ``python examples/typed_usage.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

import ndflow as nf
from ndflow.core.types import TensorLike


def standardize(x: TensorLike) -> nf.Tensor:
    """(x - mean) / std over all values: a user function typed with ndflow's ``TensorLike``."""

    def compute() -> nf.Tensor:
        t = nf.tensor(x) if not isinstance(x, nf.Tensor) else x
        return (t - nf.mean(t)) / nf.sqrt(nf.moments(t).variance + 1e-6)

    return nf.tidy(compute)


def tensors_and_ops() -> None:
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = nf.tensor(np.eye(2, dtype=np.float32))
    c: nf.Tensor = nf.tidy(lambda: nf.mat_mul(a, b).add(1).square().reshape([4]))
    print("ops:", c.array_sync())
    image = nf.ones([1, 4, 4, 1])
    kernel = nf.ones([2, 2, 1, 1])
    conv = nf.conv2d(image, kernel, 1, "valid")
    resized = nf.image.resize_bilinear(conv, [2, 2])
    print("conv2d then resize_bilinear:", resized.shape, resized.data_sync().tolist())
    z = standardize([1.0, 2.0, 3.0])
    print("standardized:", [round(float(v), 3) for v in z.data_sync()])
    nf.dispose([a, b, c, image, kernel, conv, resized, z])


def sequential_model() -> None:
    model = nf.sequential()
    model.add(nf.layers.dense(units=1, input_shape=[2]))
    model.compile(optimizer=nf.train.sgd(0.1), loss="meanSquaredError")
    xs = nf.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 1.0]])
    ys = nf.tensor([[1.0], [1.0], [2.0], [3.0]])
    model.fit(xs, ys, epochs=50, verbose=0)
    query = nf.tensor([[3.0, 3.0]])
    prediction = model.predict(query)  # one tensor per output: a single-output model gives one Tensor
    assert isinstance(prediction, nf.Tensor)
    print("sequential predicts (about 6):", round(float(prediction.data_sync()[0]), 1))
    nf.dispose([xs, ys, query, prediction])
    model.dispose()


def graph_model(folder: Path) -> None:
    # A one-op graph model (relu of a [-1, 3] input), as TF.js's converter writes model.json.
    topology = {
        "node": [
            {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}}},
            {"name": "relu", "op": "Relu", "attr": {"T": {"type": "DT_FLOAT"}}, "input": ["x"]},
        ],
        "versions": {"producer": 1},
    }
    spec = {"format": "graph-model", "modelTopology": topology, "weightsManifest": []}
    (folder / "model.json").write_text(json.dumps(spec))
    model = nf.load_graph_model(str(folder / "model.json"))
    x = nf.tensor([[-1.0, 0.5, 2.0]])
    y = model.predict(x)
    assert isinstance(y, nf.Tensor)
    print("graph model relu:", y.array_sync())
    nf.dispose([x, y])
    model.dispose()


def data_pipeline() -> None:
    features = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 1.0]], dtype=np.float32)
    targets = features.sum(axis=1, keepdims=True)
    rows = nf.data.array([{"xs": f.tolist(), "ys": t.tolist()} for f, t in zip(features, targets, strict=True)])
    batches = rows.map(lambda row: (row["xs"], row["ys"])).batch(2)
    model = nf.sequential()
    model.add(nf.layers.dense(units=1, input_shape=[2]))
    model.compile(optimizer="sgd", loss="meanSquaredError")
    history = model.fit_dataset(batches, epochs=3, verbose=0)
    print("fit_dataset epochs:", len(history.history["loss"]))
    model.dispose()


def main() -> None:
    before = nf.memory().num_tensors
    tensors_and_ops()
    sequential_model()
    with tempfile.TemporaryDirectory() as tmp:
        graph_model(Path(tmp))
    data_pipeline()
    print("tensors left:", nf.memory().num_tensors - before)


if __name__ == "__main__":
    main()
