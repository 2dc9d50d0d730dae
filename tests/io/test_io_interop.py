"""Interop with real TF.js 4.22 (fixtures from tests/fixtures/gen_io.py; no node needed here).

TF.js -> ndflow: ndflow decodes TF.js's encodeWeights bytes and loads models TF.js saved, to the same values.
ndflow -> TF.js: TF.js decoded ndflow's bytes, loaded ndflow's sharded (and quantized) model folders and parsed
ndflow's http POST at generation time; its results are in interop.json, and ndflow still writes those files.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import io

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "io"
INTEROP = json.loads((FIXTURES / "interop.json").read_text())
_SPECIAL = {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf, "-0": -0.0}


def _gen():
    spec = importlib.util.spec_from_file_location("gen_io", FIXTURES.parent / "gen_io.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tfjs_array(record: dict) -> np.ndarray:
    """A TF.js-recorded tensor ({shape, dtype, values}) as numpy (strings: a list of bytes)."""
    dtype, shape, values = record["dtype"], tuple(record["shape"]), record["values"]
    if dtype == "string":
        return [bytes(v) for v in values]
    if dtype == "bool":
        return np.array(values, dtype=bool).reshape(shape)
    flat = np.array([_SPECIAL.get(v, v) if isinstance(v, str) else v for v in values], dtype=np.float64)
    if dtype == "complex64":
        return (flat[0::2] + 1j * flat[1::2]).astype(np.complex64).reshape(shape)
    return flat.astype(np.float32 if dtype == "float32" else np.int32).reshape(shape)


def _assert_same(ours: np.ndarray, theirs, dtype: str) -> None:
    if dtype == "string":
        assert [v if isinstance(v, bytes) else v.encode() for v in np.asarray(ours).reshape(-1)] == theirs
        return
    np.testing.assert_array_equal(ours, theirs)
    if dtype == "float32":  # bit-exact, -0 and NaN included
        assert np.array_equal(np.asarray(ours).view(np.int32), np.asarray(theirs).view(np.int32))


def _forward(w: dict[str, np.ndarray], x) -> np.ndarray:
    """The fixture model (Dense 4->3 relu, Dense 3->2) in numpy."""
    h = np.maximum(np.asarray(x, np.float64) @ w["d1/kernel"] + w["d1/bias"], 0)
    return (h @ w["d2/kernel"] + w["d2/bias"]).reshape(-1)


# -- TF.js -> ndflow ---------------------------------------------------------------------------------


def test_decode_tfjs_encoded_weights_every_dtype():
    record = json.loads((FIXTURES / "tfjs" / "weights.json").read_text())
    data = (FIXTURES / "tfjs" / "weights.bin").read_bytes()
    tensors = io.decode_weights(data, record["specs"])
    try:
        assert sorted(tensors) == sorted(record["values"])
        for name, rec in record["values"].items():
            t = tensors[name]
            assert t.dtype == rec["dtype"] and list(t.shape) == rec["shape"]
            ours = t.bytes_sync() if t.dtype == "string" else t.numpy()
            _assert_same(np.array(ours, dtype=object) if t.dtype == "string" else ours, _tfjs_array(rec), t.dtype)
    finally:
        nf.dispose(list(tensors.values()))


def test_encode_reproduces_tfjs_bytes():
    record = json.loads((FIXTURES / "tfjs" / "weights.json").read_text())
    arrays = {}
    for name, rec in record["values"].items():
        value = _tfjs_array(rec)
        arrays[name] = np.array(value, dtype=object).reshape(rec["shape"]) if rec["dtype"] == "string" else value
    data, specs = io.encode_weights(arrays)
    assert specs == record["specs"]
    assert data == (FIXTURES / "tfjs" / "weights.bin").read_bytes()


@pytest.mark.parametrize("folder", ["layers_model", "layers_model_old"])
def test_load_tfjs_saved_layers_model(folder):
    artifacts = io.resolve_load_handler(str(FIXTURES / "tfjs" / folder)).load()
    if folder == "layers_model":
        assert artifacts.format == "layers-model" and artifacts.converted_by is None
        assert artifacts.generated_by == "TensorFlow.js tfjs-layers v4.22.0"
        assert artifacts.user_defined_metadata == {"purpose": "ndflow io fixture"}
        assert artifacts.model_topology["class_name"] == "Sequential"
    else:  # the older Keras-JSON layout: no format, topology under model_config
        assert artifacts.format is None and artifacts.model_topology["model_config"]["class_name"] == "Sequential"
    weights = io.decode_arrays(artifacts.weight_data, artifacts.weight_specs)
    assert [s["name"] for s in artifacts.weight_specs] == ["d1/kernel", "d1/bias", "d2/kernel", "d2/bias"]
    produced = INTEROP["produce"]
    np.testing.assert_allclose(_forward(weights, produced["input"]), produced["layers_model_predict"], rtol=1e-5)


def test_load_tfjs_model_saved_with_optimizer():
    artifacts = io.file_system("file://" + str(FIXTURES / "tfjs" / "layers_model_optimizer" / "model.json")).load()
    assert artifacts.training_config["loss"] == "mean_squared_error"
    assert artifacts.training_config["optimizer_config"]["class_name"] == "Adam"
    groups = {s["name"]: s.get("group") for s in artifacts.weight_specs}
    assert groups["iter"] == "optimizer" and groups["d1/kernel"] is None
    weights = io.decode_arrays(artifacts.weight_data, artifacts.weight_specs)
    assert weights["iter"].dtype == np.int32 and int(weights["iter"]) == 1
    produced = INTEROP["produce"]
    np.testing.assert_allclose(
        _forward(weights, produced["input"]), produced["layers_model_optimizer_predict"], rtol=1e-5
    )


def test_tfjs_http_post_body_parses_like_ndflows_and_loads(tmp_path, parse_multipart):
    post = INTEROP["produce"]["http_post"]
    assert post["method"] == "POST"
    parts = parse_multipart((FIXTURES / "tfjs" / "http_post.bin").read_bytes(), post["content_type"])
    assert [(p["field"], p["filename"], p["type"]) for p in parts] == [
        ("model.json", "model.json", "application/json"),
        ("model.weights.bin", "model.weights.bin", "application/octet-stream"),
    ]
    # what a server receiving TF.js's POST would store loads in ndflow
    for p in parts:
        (tmp_path / p["filename"]).write_bytes(p["data"])
    loaded = io.file_system(tmp_path).load()
    reference = io.file_system(FIXTURES / "tfjs" / "layers_model").load()
    assert loaded.weight_specs == reference.weight_specs and loaded.weight_data == reference.weight_data
    # ndflow's POST has the same structure
    ours = parse_multipart(*_gen().capture_http_post(reference.model_topology)[:2])
    assert [(p["field"], p["filename"], p["type"]) for p in ours] == [
        (p["field"], p["filename"], p["type"]) for p in parts
    ]


# -- ndflow -> TF.js ---------------------------------------------------------------------------------


def test_tfjs_decoded_ndflow_bytes_to_the_same_values():
    specs = json.loads((FIXTURES / "ndflow" / "weights.json").read_text())["specs"]
    ours = io.decode_arrays((FIXTURES / "ndflow" / "weights.bin").read_bytes(), specs)
    theirs = INTEROP["consume"]["decoded"]
    assert sorted(ours) == sorted(theirs)
    for spec in specs:
        name = spec["name"]
        assert theirs[name]["dtype"] == spec["dtype"] and theirs[name]["shape"] == spec["shape"]
        _assert_same(ours[name], _tfjs_array(theirs[name]), spec["dtype"])
    assert {s["quantization"]["dtype"] for s in specs if "quantization" in s} == {"uint8", "uint16", "float16"}


def test_ndflow_still_writes_the_bytes_tfjs_decoded():
    data, specs = _gen().encode_ndflow_weights()
    assert specs == json.loads((FIXTURES / "ndflow" / "weights.json").read_text())["specs"]
    assert data == (FIXTURES / "ndflow" / "weights.bin").read_bytes()


def test_quantized_values_tfjs_decoded_are_within_the_bound():
    sources, _ = _gen().ndflow_weight_sources()
    specs = {s["name"]: s for s in json.loads((FIXTURES / "ndflow" / "weights.json").read_text())["specs"]}
    for name in ("q_u8", "q_u16", "q_pos", "q_const"):
        theirs = _tfjs_array(INTEROP["consume"]["decoded"][name])
        assert np.abs(theirs - sources[name]).max() <= specs[name]["quantization"]["scale"] / 2 + 1e-6
    np.testing.assert_array_equal(_tfjs_array(INTEROP["consume"]["decoded"]["q_i32"]), [-3, -2, -2, -1, 0, 0, 1, 125])


@pytest.mark.parametrize("name, quantize", [("model", None), ("model_uint8", "uint8"), ("model_float16", "float16")])
def test_tfjs_loaded_ndflow_sharded_models(tmp_path, name, quantize):
    folder = FIXTURES / "ndflow" / name
    artifacts = io.file_system(folder).load()
    ours = io.decode_arrays(artifacts.weight_data, artifacts.weight_specs)
    result = INTEROP["consume"]["models"][name]
    for wname, rec in result["weights"].items():
        _assert_same(ours[wname], _tfjs_array(rec), "float32")
    np.testing.assert_allclose(_forward(ours, INTEROP["produce"]["input"]), result["predict"], rtol=1e-5, atol=1e-6)
    if quantize is None:
        manifest = json.loads((folder / "model.json").read_text())["weightsManifest"]
        assert len(manifest[0]["paths"]) == 3  # weights span 32-byte shards
    # ndflow still writes these exact files
    topology = json.loads((FIXTURES / "tfjs" / "layers_model" / "model.json").read_text())["modelTopology"]
    _gen().save_ndflow_model(tmp_path / name, topology, quantize)
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == sorted(p.name for p in folder.iterdir())
    for p in folder.iterdir():
        assert (tmp_path / name / p.name).read_bytes() == p.read_bytes(), p.name


def test_tfjs_parsed_ndflow_http_post():
    parsed = INTEROP["consume"]["http_post"]
    assert [(p["field"], p["filename"], p["type"]) for p in parsed] == [
        ("model.json", "model.json", "application/json"),
        ("model.weights.bin", "model.weights.bin", "application/octet-stream"),
    ]
    manifest = parsed[0]["json"]["weightsManifest"]
    assert manifest == [
        {"paths": ["./model.weights.bin"], "weights": [{"name": "w", "shape": [3], "dtype": "float32"}]}
    ]
    assert parsed[1]["floats"] == [1.0, -2.0, 0.5]


def test_ndflow_loads_what_it_posted(tmp_path, parse_multipart):
    body = (FIXTURES / "ndflow" / "http_post.bin").read_bytes()
    meta = json.loads((FIXTURES / "ndflow" / "http_post.json").read_text())
    for p in parse_multipart(body, meta["content_type"]):
        (tmp_path / p["filename"]).write_bytes(p["data"])
    loaded = io.file_system(tmp_path).load()
    np.testing.assert_array_equal(io.decode_arrays(loaded.weight_data, loaded.weight_specs)["w"], [1, -2, 0.5])
