"""model.save / nf.layers.load_layers_model: interop with real TF.js (committed fixtures), round trips, errors.

Fixtures (``tests/fixtures/gen_layers_models.py``): ``layers_models/tfjs/<name>`` are models built, trained and
saved by TF.js 4.22 (``tfjs.json``: data, TF.js's predictions, and its predictions after one more training step
for models saved with their optimizer); ``layers_models/ndflow/<folder>`` are the same architectures trained and
saved by ndflow, and ``ndflow_in_tfjs.json`` what TF.js predicted after loading them.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import io
from ndflow.layers import saving
from ndflow.layers.serialization import _CLASS_NAME_MAP

L = nf.layers
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "layers_models"
TFJS = json.loads((FIXTURES / "tfjs.json").read_text())["models"]
NDFLOW_IN_TFJS = json.loads((FIXTURES / "ndflow_in_tfjs.json").read_text())["models"]
ARCHITECTURES = ["dense", "cnn", "batchnorm", "rnn", "functional"]


# -- helpers -------------------------------------------------------------------------------------------
def tensors(records: list[dict]) -> list[nf.Tensor]:
    return [nf.tensor(np.asarray(r["values"], np.float32).reshape(r["shape"])) for r in records]


def one(ts: list) -> object:
    return ts[0] if len(ts) == 1 else ts


def predict(model: nf.LayersModel, xs: list[nf.Tensor]) -> list[np.ndarray]:
    out = model.predict(one(xs))
    outs = out if isinstance(out, list) else [out]
    values = [o.numpy().reshape(-1) for o in outs]
    nf.dispose(outs)
    return values


def train_step_then_predict(model: nf.LayersModel, rec: dict) -> list[np.ndarray]:
    """One train_on_batch on the first 4 samples (as the JS generator does), then predict."""
    xs, ys, px = tensors(rec["xs"]), tensors(rec["ys"]), tensors(rec["predict_x"])
    bx = [x[:4] for x in xs]
    by = [y[:4] for y in ys]
    model.train_on_batch(one(bx), one(by))
    out = predict(model, px)
    nf.dispose(xs + ys + px + bx + by)
    return out


def free(model: nf.LayersModel) -> None:
    optimizer = model.optimizer
    model.dispose()
    if optimizer is not None:
        optimizer.dispose()


def close(actual: list[np.ndarray], expected: list[list[float]], tol: float = 1e-5) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, np.asarray(e, np.float32), rtol=tol, atol=tol)


def capture(model: nf.LayersModel, **options) -> io.ModelArtifacts:
    """Save to memory (``nf.io.with_save_handler``) and return the artifacts."""
    box: list[io.ModelArtifacts] = []
    model.save(io.with_save_handler(box.append), **options)
    return box[0]


def round_trip(model: nf.LayersModel, xs: list[np.ndarray], tol: float = 1e-6, **options) -> nf.LayersModel:
    """Save to memory and load back: same topology, weights, predictions; returns the loaded model (weights within
    1 ulp: TF.js applies a kernel constraint when a weight is written)."""
    loaded = L.load_layers_model(capture(model, **options))
    # as in TF.js, a layer built from a config with batch_input_shape gets a dtype (Embedding adds the shape itself)
    assert _no_dtype(loaded.to_json(None, False)) == _no_dtype(model.to_json(None, False))
    assert capture(loaded).model_topology == loaded.to_json(None, False)
    assert [w.original_name for w in loaded.weights] == [w.original_name for w in model.weights]
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
        nf.dispose([a, b])
    inputs = [nf.tensor(x) for x in xs]
    np.testing.assert_allclose(
        np.concatenate(predict(loaded, inputs)), np.concatenate(predict(model, inputs)), rtol=1e-6, atol=max(tol, 1e-6)
    )
    nf.dispose(inputs)
    return loaded


def _no_dtype(config: object) -> object:
    if isinstance(config, dict):
        return {k: _no_dtype(v) for k, v in config.items() if k != "dtype"}
    return [_no_dtype(v) for v in config] if isinstance(config, list) else config


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# -- 1. models trained and saved by TF.js load in ndflow and predict the same ---------------------------
@pytest.mark.parametrize("name", [*ARCHITECTURES, "cnn_old"])
def test_load_tfjs_saved_model_predicts_as_tfjs(name):
    rec = TFJS[name.removesuffix("_old")]
    model = L.load_layers_model(str(FIXTURES / "tfjs" / name))
    xs = tensors(rec["predict_x"])
    close(predict(model, xs), rec["predict"])
    nf.dispose(xs)
    if rec["include_optimizer"]:  # the optimizer state came along: one more step matches TF.js's step
        assert model.optimizer is not None
        assert model.optimizer.iterations == rec["epochs"] * -(-rec["xs"][0]["shape"][0] // 4)
        close(train_step_then_predict(model, rec), rec["after_step"])
    else:
        assert model.optimizer is None
    free(model)


def test_old_layout_reads_as_current():
    raw = json.loads((FIXTURES / "tfjs" / "cnn_old" / "model.json").read_text())
    assert "format" not in raw and "model_config" in raw["modelTopology"]
    old = L.load_layers_model(FIXTURES / "tfjs" / "cnn_old")
    new = L.load_layers_model(FIXTURES / "tfjs" / "cnn")
    assert old.to_json() == new.to_json()
    free(old)
    free(new)


# -- 2. models trained and saved by ndflow load in TF.js (recorded) and predict the same ----------------
@pytest.mark.parametrize("folder", sorted(NDFLOW_IN_TFJS))
def test_ndflow_saved_model_predicts_in_tfjs_as_in_ndflow(folder):
    tfjs = NDFLOW_IN_TFJS[folder]
    rec = TFJS[folder.split("_")[0]]
    model = L.load_layers_model(f"file://{FIXTURES / 'ndflow' / folder}")
    assert [w.original_name for w in model.weights] == tfjs["weights"]
    xs = tensors(rec["predict_x"])
    close(predict(model, xs), tfjs["predict"])
    nf.dispose(xs)
    assert (model.optimizer is not None) == tfjs["compiled"]
    if tfjs["compiled"]:  # TF.js restored ndflow's optimizer state: the next step agrees
        close(train_step_then_predict(model, rec), tfjs["after_step"])
    free(model)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_ndflow_writes_the_model_json_tfjs_writes(name):
    """The same architecture saved by TF.js and by ndflow: identical topology, trainingConfig, weight specs."""
    tfjs = json.loads((FIXTURES / "tfjs" / name / "model.json").read_text())
    ours = json.loads((FIXTURES / "ndflow" / name / "model.json").read_text())
    assert ours["format"] == tfjs["format"] == "layers-model"
    assert ours["generatedBy"] == tfjs["generatedBy"] == "TensorFlow.js tfjs-layers v4.22.0"
    assert ours["convertedBy"] is None and tfjs["convertedBy"] is None
    assert ours["modelTopology"] == tfjs["modelTopology"]
    assert ours.get("trainingConfig") == tfjs.get("trainingConfig")
    assert ours["weightsManifest"][0]["weights"] == tfjs["weightsManifest"][0]["weights"]


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_resave_writes_the_committed_files(name, tmp_path):
    """Loading ndflow's fixture and saving it again writes byte-identical weights and the same model.json."""
    src = FIXTURES / "ndflow" / name
    model = L.load_layers_model(src)
    model.save(tmp_path, include_optimizer=model.optimizer is not None)
    assert json.loads((tmp_path / "model.json").read_text()) == json.loads((src / "model.json").read_text())
    assert (tmp_path / "group1-shard1of1.bin").read_bytes() == (src / "group1-shard1of1.bin").read_bytes()
    free(model)


# -- model.json contents ---------------------------------------------------------------------------------
def test_save_writes_tfjs_fields_and_no_training_config_without_optimizer(tmp_path):
    model = nf.sequential([L.dense(units=2, input_shape=[3])])
    model.compile(optimizer="sgd", loss="meanSquaredError")
    result = model.save(str(tmp_path))
    assert result.model_artifacts_info.weight_data_bytes == (3 * 2 + 2) * 4
    written = json.loads((tmp_path / "model.json").read_text())
    assert list(written) == ["modelTopology", "format", "generatedBy", "convertedBy", "weightsManifest"]
    assert written["modelTopology"]["keras_version"] == "tfjs-layers 4.22.0"
    assert written["modelTopology"]["backend"] == "tensor_flow.js"
    assert written["weightsManifest"] == [
        {
            "paths": ["group1-shard1of1.bin"],
            "weights": [
                {"name": "dense_Dense1/kernel", "shape": [3, 2], "dtype": "float32"},
                {"name": "dense_Dense1/bias", "shape": [2], "dtype": "float32"},
            ],
        }
    ]
    loaded = L.load_layers_model(tmp_path)
    assert loaded.optimizer is None  # TF.js writes trainingConfig only with include_optimizer
    free(loaded)
    free(model)


def test_trainable_only_and_user_defined_metadata():
    model = nf.sequential([L.dense(units=2, input_shape=[3]), L.batch_normalization()])
    model.set_user_defined_metadata({"purpose": "test", "n": [1, 2]})
    a = capture(model, trainable_only=True)
    assert [s["name"] for s in a.weight_specs] == [
        "dense_Dense1/kernel", "dense_Dense1/bias",
        "batch_normalization_BatchNormalization1/gamma", "batch_normalization_BatchNormalization1/beta",
    ]  # fmt: skip
    assert a.user_defined_metadata == {"purpose": "test", "n": [1, 2]}
    with pytest.raises(ValueError, match="weights are not set"):
        L.load_layers_model(a)
    loaded = L.load_layers_model(a, strict=False)
    assert loaded.get_user_defined_metadata() == {"purpose": "test", "n": [1, 2]}
    free(loaded)
    with pytest.raises(TypeError, match="JSON object"):
        model.set_user_defined_metadata([1, 2])
    free(model)


# -- round trips within ndflow for every layer family ------------------------------------------------------
def _cnn() -> tuple[nf.LayersModel, list[np.ndarray]]:
    m = nf.sequential(
        [
            L.conv2d(filters=3, kernel_size=3, padding="same", input_shape=[6, 6, 2], kernel_regularizer="l1l2"),
            L.depthwise_conv2d(kernel_size=3, depth_multiplier=2),
            L.separable_conv2d(filters=4, kernel_size=2, activation="relu"),
            L.conv2d_transpose(filters=2, kernel_size=2, strides=2),
            L.cropping2d(cropping=1),
            L.zero_padding2d(padding=1),
            L.up_sampling2d(size=[2, 2]),
            L.max_pooling2d(pool_size=2),
            L.average_pooling2d(pool_size=2),
            L.batch_normalization(),
            L.layer_normalization(),
            L.prelu(),
            L.global_max_pooling2d(),
            L.dense(units=3, kernel_constraint="maxNorm"),
            L.leaky_relu(),
            L.softmax(),
        ]
    )
    return m, [rand(2, 6, 6, 2)]


def _cnn_1d_3d() -> tuple[nf.LayersModel, list[np.ndarray]]:
    a = nf.input(shape=[8, 3])
    b = nf.input(shape=[4, 4, 4, 1])
    ha = L.conv1d(filters=4, kernel_size=3).apply(a)
    ha = L.max_pooling1d(pool_size=2).apply(ha)
    ha = L.average_pooling1d(pool_size=1).apply(ha)
    ha = L.global_average_pooling1d().apply(ha)
    hb = L.conv3d(filters=2, kernel_size=2).apply(b)
    hb = L.conv3d_transpose(filters=2, kernel_size=2).apply(hb)
    hb = L.max_pooling3d(pool_size=2).apply(hb)
    hb = L.average_pooling3d(pool_size=2).apply(hb)
    hb = L.flatten().apply(hb)
    out = L.dense(units=2).apply(L.concatenate().apply([ha, hb]))
    out = L.elu().apply(out)
    return nf.model(inputs=[a, b], outputs=out), [rand(2, 8, 3), rand(2, 4, 4, 4, 1, seed=1)]


def _recurrent() -> tuple[nf.LayersModel, list[np.ndarray]]:
    a = nf.input(shape=[5, 3])
    h = L.masking(mask_value=0.0).apply(a)
    h = L.simple_rnn(units=4, return_sequences=True).apply(h)
    h = L.bidirectional(layer=L.lstm(units=3, return_sequences=True), merge_mode="concat").apply(h)
    h = L.time_distributed(layer=L.dense(units=2)).apply(h)
    h = L.gru(units=2, go_backwards=True).apply(h)
    c = nf.input(shape=[3, 4, 4, 1])
    g = L.conv_lstm2d(filters=2, kernel_size=2).apply(c)
    g = L.flatten().apply(g)
    r = L.rnn(cell=[L.simple_rnn_cell(units=2), L.gru_cell(units=2)]).apply(a)
    out = L.concatenate().apply([h, g, r])
    return nf.model(inputs=[a, c], outputs=out), [rand(2, 5, 3), rand(2, 3, 4, 4, 1, seed=2)]


def _misc() -> tuple[nf.LayersModel, list[np.ndarray]]:
    ids = nf.input(shape=[6])
    e = L.embedding(input_dim=10, output_dim=4).apply(ids)
    e = L.spatial_dropout1d(rate=0.2).apply(e)
    e = L.permute(dims=[2, 1]).apply(e)
    e = L.flatten().apply(e)
    x = nf.input(shape=[4])
    y = nf.input(shape=[4])
    merged = [
        L.add().apply([x, y]), L.subtract().apply([x, y]), L.multiply().apply([x, y]), L.average().apply([x, y]),
        L.maximum().apply([x, y]), L.minimum().apply([x, y]), L.dot(axes=1).apply([x, y]),
    ]  # fmt: skip
    h = L.concatenate().apply([e, *merged])
    h = L.dense(units=6, activation="tanh", bias_regularizer="l2").apply(h)
    h = L.dropout(rate=0.5).apply(h)
    h = L.gaussian_noise(stddev=0.1).apply(h)
    h = L.gaussian_dropout(rate=0.1).apply(h)
    h = L.alpha_dropout(rate=0.1).apply(h)
    h = L.thresholded_relu(theta=0.1).apply(h)
    h = L.relu(max_value=1.0).apply(h)
    h = L.repeat_vector(n=2).apply(h)
    h = L.reshape(target_shape=[3, 4]).apply(h)
    h = L.activation(activation="sigmoid").apply(h)
    img = nf.input(shape=[6, 6, 3])
    p = L.rescaling(scale=1 / 255, offset=-0.5).apply(img)
    p = L.center_crop(height=4, width=4).apply(p)
    p = L.resizing(height=3, width=4).apply(p)
    out = L.concatenate().apply([h, L.reshape(target_shape=[3, 12]).apply(p)])
    x_ids = np.array([[1, 2, 3, 9, 0, 4], [5, 6, 7, 8, 1, 2]], np.float32)
    return nf.model(inputs=[ids, x, y, img], outputs=out), [
        x_ids,
        rand(2, 4),
        rand(2, 4, seed=3),
        np.abs(rand(2, 6, 6, 3, seed=4)) * 100,
    ]


def _nested() -> tuple[nf.LayersModel, list[np.ndarray]]:
    a = nf.input(shape=[3])
    inner = nf.model(inputs=a, outputs=L.dense(units=4, activation="relu").apply(a), name="inner")
    shared = L.dense(units=4, name="shared")
    b = nf.input(shape=[3])
    h = inner.apply(b)
    out = L.add().apply([shared.apply(h), shared.apply(L.dense(units=4).apply(b))])
    func = nf.model(inputs=b, outputs=out)
    return nf.sequential([func, L.dense(units=2)]), [rand(3, 3)]


@pytest.mark.parametrize("make", [_cnn, _cnn_1d_3d, _recurrent, _misc, _nested])
def test_round_trip_every_layer_family(make):
    model, xs = make()
    loaded = round_trip(model, xs)
    free(loaded)
    free(model)


@pytest.mark.parametrize(("dtype", "tol"), [("uint8", 0.02), ("uint16", 1e-4), ("float16", 3e-3)])
def test_quantized_round_trip(dtype, tol, tmp_path):
    model, xs = _cnn()
    model.save(tmp_path, quantization_dtype=dtype)
    specs = json.loads((tmp_path / "model.json").read_text())["weightsManifest"][0]["weights"]
    assert all(s["quantization"]["dtype"] == dtype for s in specs if s["dtype"] == "float32")
    assert (tmp_path / "group1-shard1of1.bin").stat().st_size < sum(
        4 * int(np.prod(s["shape"])) for s in specs
    )  # smaller than float32
    loaded = L.load_layers_model(tmp_path)
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
        nf.dispose([a, b])
    free(loaded)
    free(model)


def test_quantize_some_weights_by_name():
    model = nf.sequential([L.dense(units=3, input_shape=[2]), L.dense(units=1)])
    a = capture(model, quantization_dtype={"float16": ["*kernel"]})
    assert [("quantization" in s) for s in a.weight_specs] == [True, False, True, False]
    free(model)


def test_include_optimizer_round_trip(tmp_path):
    x = nf.tensor(rand(8, 4))
    y = nf.tensor(rand(8, 2, seed=1))
    model = nf.sequential([L.dense(units=3, input_shape=[4], activation="relu"), L.dense(units=2)])
    model.compile(optimizer=nf.train.adam(0.01), loss="meanSquaredError", metrics=["mse"])
    model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    model.save(str(tmp_path), include_optimizer=True)
    saved = json.loads((tmp_path / "model.json").read_text())
    assert saved["trainingConfig"] == {
        "loss": "mean_squared_error",
        "metrics": ["mse"],
        "optimizer_config": {
            "class_name": "Adam",
            "config": {"learningRate": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-07},
        },
    }
    groups = [s.get("group") for s in saved["weightsManifest"][0]["weights"]]
    assert groups == [None] * 4 + ["optimizer"] * 9
    loaded = L.load_layers_model(tmp_path)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert loaded.optimizer.iterations == model.optimizer.iterations == 4
    before, after = model.optimizer.get_weights(), loaded.optimizer.get_weights()
    assert [w["name"] for w in after] == [w["name"] for w in before]
    for a, b in zip(after, before, strict=True):
        np.testing.assert_array_equal(a["tensor"].numpy(), b["tensor"].numpy())
    nf.dispose([w["tensor"] for w in before + after])
    for m in (model, loaded):  # both continue training the same way
        m.train_on_batch(x, y)
    pa, pb = model.predict(x), loaded.predict(x)
    np.testing.assert_allclose(pa.numpy(), pb.numpy(), rtol=1e-6, atol=1e-6)
    nf.dispose([x, y, pa, pb])
    free(loaded)
    free(model)


def test_sharded_weights_4mib(tmp_path):
    model = nf.sequential([L.dense(units=1100, input_shape=[1000], use_bias=False)])
    model.save(tmp_path)
    manifest = json.loads((tmp_path / "model.json").read_text())["weightsManifest"]
    assert manifest[0]["paths"] == ["group1-shard1of2.bin", "group1-shard2of2.bin"]
    assert (tmp_path / "group1-shard1of2.bin").stat().st_size == 4 * 1024 * 1024
    loaded = L.load_layers_model(tmp_path / "model.json")
    a, b = loaded.get_weights()[0], model.get_weights()[0]
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    nf.dispose([a, b])
    free(loaded)
    free(model)


# -- sources: path, file://, http(s)://, memory, handlers --------------------------------------------------
@pytest.fixture
def http_folder():
    """Serve a folder on 127.0.0.1; yields ``serve(folder) -> base URL``."""
    servers = []

    def serve(folder: Path) -> str:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield serve
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_load_over_http(http_folder):
    url = http_folder(FIXTURES / "tfjs")
    progress: list[float] = []
    model = L.load_layers_model(f"{url}/dense/model.json", on_progress=progress.append)
    assert progress and progress[-1] == 1.0
    rec = TFJS["dense"]
    xs = tensors(rec["predict_x"])
    close(predict(model, xs), rec["predict"])
    nf.dispose(xs)
    free(model)
    model = L.load_layers_model(f"{url}/dense/model.json", {"strict": True, "request_init": {"headers": {"X": "1"}}})
    free(model)


def test_load_from_memory_handler_and_dict(tmp_path):
    model = nf.sequential([L.dense(units=2, input_shape=[3])])
    artifacts = capture(model)
    for source in (artifacts, artifacts.to_dict(), io.from_memory(artifacts)):
        loaded = L.load_layers_model(source)
        assert loaded.to_json() == model.to_json()
        free(loaded)
    model.save(io.file_system(tmp_path / "sub" / "m.json"))
    loaded = L.load_layers_model(io.file_system(tmp_path / "sub" / "m.json"))
    free(loaded)
    free(model)


def test_bare_topology_builds_an_initialized_model(tmp_path):
    model = nf.sequential([L.dense(units=2, input_shape=[3])])
    (tmp_path / "model.json").write_text(model.to_json())
    loaded = L.load_layers_model(tmp_path)
    assert loaded.to_json() == model.to_json() and len(loaded.weights) == 2
    free(loaded)
    free(model)


# -- errors ------------------------------------------------------------------------------------------------
@pytest.fixture
def dense_copy(tmp_path):
    """A writable copy of TF.js's dense model folder, inside ``tmp_path/model``."""
    folder = tmp_path / "model"
    shutil.copytree(FIXTURES / "tfjs" / "dense", folder)
    return folder


def _edit(folder: Path, fn) -> None:
    path = folder / "model.json"
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj))


def test_missing_shard(dense_copy):
    (dense_copy / "weights.bin").unlink()
    with pytest.raises(ValueError, match="weights.bin' is missing"):
        L.load_layers_model(dense_copy)


def test_wrong_byte_length(dense_copy):
    data = (dense_copy / "weights.bin").read_bytes()
    (dense_copy / "weights.bin").write_bytes(data[:-8])
    with pytest.raises(ValueError, match="wrong byte length|do not fit|bytes"):
        L.load_layers_model(dense_copy)


def test_unknown_dtype(dense_copy):
    _edit(dense_copy, lambda o: o["weightsManifest"][0]["weights"][0].update(dtype="float64"))
    with pytest.raises(ValueError, match="float64"):
        L.load_layers_model(dense_copy)


@pytest.mark.parametrize("bad", ["../secret.bin", "/etc/passwd", "sub/../../secret.bin", "http://evil/x.bin"])
def test_weight_path_escaping_the_folder(dense_copy, bad):
    (dense_copy.parent / "secret.bin").write_bytes((dense_copy / "weights.bin").read_bytes())
    _edit(dense_copy, lambda o: o["weightsManifest"][0].update(paths=[bad]))
    with pytest.raises(ValueError, match="model's folder|URL"):
        L.load_layers_model(dense_copy)


def test_symlink_out_of_the_folder(dense_copy):
    (dense_copy.parent / "secret.bin").write_bytes((dense_copy / "weights.bin").read_bytes())
    (dense_copy / "weights.bin").unlink()
    (dense_copy / "weights.bin").symlink_to(dense_copy.parent / "secret.bin")
    with pytest.raises(ValueError, match="outside the model's folder"):
        L.load_layers_model(dense_copy)


def test_unknown_layer_class_names_it(dense_copy):
    _edit(dense_copy, lambda o: o["modelTopology"]["config"]["layers"][1].update(class_name="MyDense"))
    with pytest.raises(ValueError, match=r"Unknown layer: MyDense(.|\n)*register_class"):
        L.load_layers_model(dense_copy)

    class MyDense(L.Dense):
        class_name = "MyDense"

    model = L.load_layers_model(dense_copy, custom_objects={"MyDense": MyDense})
    assert type(model.layers[1]) is MyDense
    free(model)
    nf.serialization.register_class(MyDense)
    try:
        model = L.load_layers_model(dense_copy)
        assert type(model.layers[1]) is MyDense
        free(model)
    finally:
        _CLASS_NAME_MAP.pop("MyDense", None)


def test_weight_names_must_match_when_strict(dense_copy):
    _edit(dense_copy, lambda o: o["weightsManifest"][0]["weights"][0].update(name="other/kernel"))
    with pytest.raises(ValueError, match="no target variable: other/kernel"):
        L.load_layers_model(dense_copy)
    model = L.load_layers_model(dense_copy, strict=False)
    free(model)


def test_graph_model_and_missing_topology_are_refused(tmp_path):
    graph = {"format": "graph-model", "modelTopology": {"node": []}, "weightsManifest": []}
    with pytest.raises(ValueError, match="graph model"):
        L.load_layers_model(io.from_memory(io.artifacts_for_model_json(graph, [], b"")))
    with pytest.raises(ValueError, match="no modelTopology"):
        L.load_layers_model(io.ModelArtifacts(weight_specs=[], weight_data=b""))
    with pytest.raises(ValueError, match="weight data, but not weight specs"):
        L.load_layers_model(io.ModelArtifacts(model_topology=json.loads(nf.sequential().to_json()), weight_data=b""))
    with pytest.raises(ValueError, match="not a model"):
        L.load_layers_model(io.ModelArtifacts(model_topology={"class_name": "Dense", "config": {"units": 1}}))
    with pytest.raises(FileNotFoundError):
        L.load_layers_model(tmp_path / "nowhere")


def test_save_errors(tmp_path):
    model = nf.sequential([L.dense(units=1, input_shape=[1])])
    with pytest.raises(ValueError, match="does not have the `save` attribute"):
        model.save(object())
    with pytest.raises(ValueError, match="Cannot find any save handlers"):
        model.save("ftp://x/y")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        model.save(tmp_path / "file")
    free(model)


def test_exports():
    assert L.load_layers_model is saving.load_layers_model
    assert nf.LayersModel.save is saving.save_model
