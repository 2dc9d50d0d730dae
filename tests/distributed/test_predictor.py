"""nf.distributed's engine-agnostic batch predictor: the batch kinds, files, pickling, memory, errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from helpers import GRAPH_MODEL, dense_model, image_model, reference

import ndflow as nf
from ndflow.distributed import batch_predictor as predictor_module
from ndflow.distributed.batch_predictor import Predictor, clear_cache, predictor


@pytest.fixture(autouse=True)
def fresh_cache():
    clear_cache()
    yield
    clear_cache()  # the models a test loaded (the leak check counts their weights)


@pytest.fixture
def dense(tmp_path):
    return dense_model(tmp_path / "dense")


def test_numpy_dict_batch_matches_predict_and_keeps_other_columns(dense):
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    p = Predictor(str(dense), input_columns="x")
    out = p({"x": x, "id": np.arange(5)})
    name = p.output_names()[0]
    assert list(out) == ["id", name]
    np.testing.assert_array_equal(out["id"], np.arange(5))
    np.testing.assert_allclose(out[name], reference(dense, x), rtol=1e-6)


def test_array_batch_gives_an_array_and_tensors_stay_flat(dense):
    p = predictor(str(dense))
    x = np.ones((4, 3), np.float32)
    first = p(x)
    counts = []
    for _ in range(3):
        assert p(x).shape == (4, 2)
        counts.append(nf.memory().num_tensors)
    assert first.shape == (4, 2) and len(set(counts)) == 1


def test_records_batch(dense):
    p = predictor(str(dense), input_columns="features", output_columns=["probs"])
    out = p([{"features": [0.0, 1.0, 2.0], "key": "a"}, {"features": [1.0, 1.0, 1.0], "key": "b"}])
    assert [r["key"] for r in out] == ["a", "b"] and out[0]["probs"].shape == (2,)


def test_lazy_predictor_pickles_its_settings_and_loads_once_per_process(dense, monkeypatch):
    p = predictor(str(dense))
    assert p._loaded is None
    loads = []
    real = predictor_module.load_model
    monkeypatch.setattr(predictor_module, "load_model", lambda *a: loads.append(1) or real(*a))
    copies = [pickle.loads(pickle.dumps(p)) for _ in range(3)]
    for c in copies:
        c(np.zeros((2, 3), np.float32))
    assert len(loads) == 1
    assert len(pickle.dumps(copies[0])) < 2000


def test_graph_model_with_named_input():
    p = predictor(str(GRAPH_MODEL), output_columns=["probs", "shape"])
    out = p({"x": np.ones((3, 3), np.float32)})  # the column named as the input
    assert out["probs"].shape == (3, 4)


def test_npy_and_image_files(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    folder = image_model(tmp_path / "img")
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "a.png")
    Image.fromarray(np.kron(pixels, np.ones((2, 2, 1), np.uint8))).save(tmp_path / "big.png")  # resized to 8x8
    np.save(tmp_path / "b.npy", pixels.astype(np.float32) / 255)
    want = reference(folder, (pixels.astype(np.float32) / 255)[None])
    p = predictor(str(folder))
    out = p({"path": np.array([str(tmp_path / "a.png"), str(tmp_path / "b.npy"), str(tmp_path / "big.png")])})
    name = p.output_names()[0]
    assert out[name].shape == (3, 3)
    np.testing.assert_allclose(out[name][0], out[name][1], rtol=1e-5)
    np.testing.assert_allclose(out[name][0], want[0], rtol=1e-5)
    uint8 = p({"image": pixels[None]})  # uint8 pixels are scaled as images are
    np.testing.assert_allclose(uint8[name][0], want[0], rtol=1e-5)


def test_pandas_and_arrow_batches(dense):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    x = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    p = predictor(str(dense), input_columns="x", output_columns=["y"])
    df = p(pd.DataFrame({"x": list(x), "k": range(4)}))
    assert list(df.columns) == ["k", "y"]
    table = p(pa.table({"x": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 3), "k": pa.array(range(4))}))
    assert table.column_names == ["k", "y"]
    got = np.stack(table.column("y").to_pylist())
    np.testing.assert_allclose(got, np.stack(df["y"].to_list()), rtol=1e-6)
    np.testing.assert_allclose(got, reference(dense, x), rtol=1e-6)


def test_errors_name_the_argument(dense, tmp_path):
    with pytest.raises(TypeError, match="model must be a path"):
        Predictor(3)
    with pytest.raises(ValueError, match="scale must be one of"):
        predictor(str(dense), scale="0-2")
    with pytest.raises(FileNotFoundError, match="no model.json"):
        Predictor(str(tmp_path / "nothing"))
    p = predictor(str(dense))
    with pytest.raises(TypeError, match="batch must be a dict of numpy columns"):
        p("not a batch")
    with pytest.raises(ValueError, match="input_columns: the model has 1 input"):
        p({"a": np.ones((1, 3)), "b": np.ones((1, 3))})
    with pytest.raises(ValueError, match="keep_columns: the batch has no column 'zz'"):
        predictor(str(dense), keep_columns=["zz"])({"x": np.ones((1, 3), np.float32)})
    assert p({"x": np.zeros((0, 3), np.float32)})[p.output_names()[0]].shape[0] == 0
