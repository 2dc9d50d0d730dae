"""model.json: layouts (current, older Keras JSON, bare topology, bare manifest), validation, artifacts both ways."""

from __future__ import annotations

import json

import pytest

from ndflow import io

KERAS = {"class_name": "Sequential", "config": {"name": "s", "layers": []}}
GRAPH = {"node": [{"name": "x", "op": "Placeholder"}], "versions": {"producer": 1}}
MANIFEST = [{"paths": ["group1-shard1of1.bin"], "weights": [{"name": "w", "shape": [2], "dtype": "float32"}]}]


def test_current_layout_keeps_every_field():
    doc = {
        "modelTopology": KERAS, "format": "layers-model", "generatedBy": "TensorFlow.js tfjs-layers v4.22.0",
        "convertedBy": None, "weightsManifest": MANIFEST, "trainingConfig": {"loss": "mse"},
        "signature": {"inputs": {}}, "userDefinedMetadata": {"a": 1}, "modelInitializer": {"node": []},
        "initializerSignature": {"outputs": {}},
    }  # fmt: skip
    model_json = io.parse_model_json(json.dumps(doc))
    artifacts = io.artifacts_for_model_json(model_json, weight_data=b"\0" * 8)
    assert artifacts.model_topology == KERAS and artifacts.format == "layers-model"
    assert artifacts.generated_by.startswith("TensorFlow.js") and artifacts.converted_by is None
    assert artifacts.training_config == {"loss": "mse"} and artifacts.signature == {"inputs": {}}
    assert artifacts.user_defined_metadata == {"a": 1} and artifacts.model_initializer == {"node": []}
    assert artifacts.initializer_signature == {"outputs": {}}
    assert artifacts.weight_specs == MANIFEST[0]["weights"] and artifacts.weight_data == b"\0" * 8
    back = io.model_json_for_artifacts(artifacts, MANIFEST)
    assert back == doc
    assert io.ModelArtifacts.from_dict(artifacts.to_dict()) == artifacts


def test_older_keras_layout_without_format():
    old = {"modelTopology": {"keras_version": "2.1.4", "model_config": KERAS}, "weightsManifest": MANIFEST}
    model_json = io.parse_model_json(json.dumps(old).encode())
    artifacts = io.artifacts_for_model_json(model_json, weight_data=bytes(8))
    assert artifacts.format is None and artifacts.model_topology["model_config"] == KERAS
    assert not io.is_graph_model(model_json)


@pytest.mark.parametrize("topology", [KERAS, {"keras_version": "2", "model_config": KERAS}, GRAPH])
def test_bare_topology(topology):
    model_json = io.parse_model_json(json.dumps(topology))
    assert model_json == {"modelTopology": topology}
    artifacts = io.artifacts_for_model_json(model_json)
    assert artifacts.model_topology == topology and artifacts.weight_specs is None


def test_bare_weights_manifest():
    model_json = io.parse_model_json(json.dumps(MANIFEST))
    assert model_json == {"weightsManifest": MANIFEST}


def test_graph_model_needs_a_weights_manifest():
    assert io.parse_model_json(json.dumps({"modelTopology": GRAPH, "format": "graph-model", "weightsManifest": []}))
    with pytest.raises(ValueError, match="graph model needs a 'weightsManifest'"):
        io.parse_model_json(json.dumps({"modelTopology": GRAPH, "format": "graph-model"}), "m/model.json")
    with pytest.raises(ValueError, match="graph model needs a 'weightsManifest'"):
        io.parse_model_json(json.dumps({"modelTopology": GRAPH}))  # older files: recognised by their GraphDef
    assert io.is_graph_model({"format": "graph-model"})


@pytest.mark.parametrize(
    "text, match",
    [
        ("{not json", "Failed to parse model JSON m.json"),
        ("", "Failed to parse model JSON"),
        (b"\xff\xfe", "not valid UTF-8"),
        ("42", "expected a JSON object"),
        ('{"foo": 1}', "neither model topology nor manifest"),
        ('{"modelTopology": [1]}', "'modelTopology' must be a JSON object"),
        ('{"modelTopology": {}, "weightsManifest": {}}', "must be a list of groups"),
        ('{"weightsManifest": [{"paths": "a.bin", "weights": []}]}', "'paths' must be a list"),
        ('{"weightsManifest": [{"paths": [], "weights": null}]}', "'weights' must be a list"),
        ('{"weightsManifest": [{"paths": [], "weights": [{"name": "w", "shape": [1], "dtype": "q"}]}]}',
         "unknown dtype"),
        ('{"weightsManifest": [{"paths": [], "weights": [{"name": "w", "shape": [1], "dtype": "int32"},'
         ' {"name": "w", "shape": [1], "dtype": "int32"}]}]}', "appears twice"),
    ],
)  # fmt: skip
def test_malformed_model_json_raises(text, match):
    with pytest.raises(ValueError, match=match):
        io.parse_model_json(text, "m.json")


def test_pb_hint():
    with pytest.raises(ValueError, match=r"\.pb models are not supported"):
        io.parse_model_json(b"\x08\x01garbage", "tensorflowjs_model.pb")


def test_dumps_is_compact_and_writes_non_finite_as_null():
    text = io.dumps_model_json({"a": [1.5, float("nan"), float("inf")], "b": "é"})
    assert text == '{"a":[1.5,null,null],"b":"é"}'


def test_artifacts_need_weight_data_when_there_is_a_manifest():
    with pytest.raises(ValueError, match="no weight data"):
        io.artifacts_for_model_json({"modelTopology": KERAS, "weightsManifest": MANIFEST})


def test_model_json_without_manifest_and_info():
    artifacts = io.ModelArtifacts(model_topology=KERAS, format="layers-model")
    assert "weightsManifest" not in io.model_json_for_artifacts(artifacts, None)
    artifacts.weight_specs, artifacts.weight_data = MANIFEST[0]["weights"], [b"\0" * 4, b"\0" * 4]
    info = io.model_artifacts_info(artifacts)
    assert info.model_topology_type == "JSON" and info.weight_data_bytes == 8
    assert info.model_topology_bytes == len(json.dumps(KERAS, separators=(",", ":")))
    with pytest.raises(ValueError, match="binary"):
        io.model_json_for_artifacts(io.ModelArtifacts(model_topology=b"\0"), None)
