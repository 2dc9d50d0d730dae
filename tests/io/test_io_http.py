"""The HTTP handler against a real loopback server (127.0.0.1, http.server in a thread)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ndflow import io

TOPOLOGY = {"class_name": "Sequential", "config": {"name": "s", "layers": []}}


def _saved_model(tmp_path, shard_size_bytes=16):
    w = np.arange(10, dtype=np.float32)
    data, specs = io.encode_weights({"w": w, "s": np.array(["a", "bcd"], dtype=object)})
    artifacts = io.ModelArtifacts(model_topology=TOPOLOGY, format="layers-model", weight_specs=specs, weight_data=data)
    io.file_system(tmp_path, shard_size_bytes=shard_size_bytes).save(artifacts)
    return artifacts


def test_load_model_json_then_shards_relative_to_it(tmp_path, http_server):
    artifacts = _saved_model(tmp_path)
    http_server.serve_folder(tmp_path, "/models/m1/")
    url = f"{http_server.url}/models/m1/model.json"
    progress: list[float] = []
    [handler] = io.get_load_handlers(
        url, {"request_init": {"headers": {"Authorization": "Bearer t"}}, "on_progress": progress.append}
    )
    loaded = handler.load()
    assert loaded.weight_specs == artifacts.weight_specs and loaded.weight_data == artifacts.weight_data
    paths = [r["path"] for r in http_server.requests]
    shards = json.loads((tmp_path / "model.json").read_text())["weightsManifest"][0]["paths"]
    assert len(shards) == 4
    assert paths == ["/models/m1/model.json", *[f"/models/m1/{p}" for p in shards]]
    assert all(r["headers"].get("Authorization") == "Bearer t" for r in http_server.requests)
    assert progress == [0.25, 0.5, 0.75, 1.0]


def test_query_string_is_kept_and_weight_path_prefix(tmp_path, http_server):
    _saved_model(tmp_path, shard_size_bytes=1 << 20)
    http_server.serve_folder(tmp_path, "/m/")
    http_server.files = {k.replace("/m/group", "/alt/group"): v for k, v in http_server.files.items()}
    http_server.files["/m/model.json?v=2"] = http_server.files.pop("/m/model.json")
    handler = io.http(f"{http_server.url}/m/model.json?v=2", weight_path_prefix=f"{http_server.url}/alt/")
    http_server.files["/alt/group1-shard1of1.bin?v=2"] = http_server.files.pop("/alt/group1-shard1of1.bin")
    loaded = handler.load()
    assert [r["path"] for r in http_server.requests] == ["/m/model.json?v=2", "/alt/group1-shard1of1.bin?v=2"]
    assert io.decode_arrays(loaded.weight_data, loaded.weight_specs)["w"][9] == 9


def test_weight_url_converter_and_fetch_func(tmp_path):
    artifacts = _saved_model(tmp_path, shard_size_bytes=1 << 20)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    seen = []

    def fetch(url, init):
        seen.append((url, init.get("headers")))
        return files[url.rsplit("/", 1)[1]]

    handler = io.http(
        "https://example.invalid/x/model.json",
        fetch_func=fetch,
        request_init={"headers": {"X-Key": "1"}},
        weight_url_converter=lambda name: "https://cdn.invalid/" + name,
    )
    loaded = handler.load()
    assert loaded.weight_data == artifacts.weight_data
    assert seen == [
        ("https://example.invalid/x/model.json", {"X-Key": "1"}),
        ("https://cdn.invalid/group1-shard1of1.bin", {"X-Key": "1"}),
    ]


def test_missing_shard_and_bad_status(tmp_path, http_server):
    _saved_model(tmp_path)
    http_server.serve_folder(tmp_path, "/m/")
    del http_server.files["/m/group1-shard3of4.bin"]
    with pytest.raises(ValueError, match=r"weight file 'group1-shard3of4.bin' is missing: .* status code 404"):
        io.http(f"{http_server.url}/m/model.json").load()
    with pytest.raises(ValueError, match=r"Request to .*/nope/model.json failed with status code 404"):
        io.http(f"{http_server.url}/nope/model.json").load()


def test_wrong_shard_length_and_malformed_json(tmp_path, http_server):
    _saved_model(tmp_path)
    http_server.serve_folder(tmp_path, "/m/")
    http_server.files["/m/group1-shard4of4.bin"] += b"\0"
    with pytest.raises(ValueError, match="shard files hold 53 bytes but the specs describe 52"):
        io.http(f"{http_server.url}/m/model.json").load()
    http_server.files["/m/model.json"] = b"<html>not json</html>"
    with pytest.raises(ValueError, match="Failed to parse model JSON"):
        io.http(f"{http_server.url}/m/model.json").load()


@pytest.mark.parametrize("path", ["../secret.bin", "http://127.0.0.1:1/x.bin", "/abs.bin", "a/../../b.bin"])
def test_weight_paths_escaping_the_model_url_raise_before_fetching(http_server, path):
    spec = {"name": "w", "shape": [1], "dtype": "float32"}
    http_server.files["/m/model.json"] = json.dumps({"modelTopology": TOPOLOGY, "weightsManifest": [
        {"paths": [path], "weights": [spec]}]}).encode()  # fmt: skip
    with pytest.raises(ValueError, match="weight path"):
        io.http(f"{http_server.url}/m/model.json").load()
    assert [r["path"] for r in http_server.requests] == ["/m/model.json"]


def test_save_posts_multipart_as_tfjs(http_server, parse_multipart):
    w = np.float32([1, -2, 0.5])
    data, specs = io.encode_weights({"w": w})
    artifacts = io.ModelArtifacts(
        model_topology=TOPOLOGY, format="layers-model", generated_by="ndflow", weight_specs=specs, weight_data=data
    )
    [handler] = io.get_save_handlers(f"{http_server.url}/upload")
    result = handler.save(artifacts)
    assert result.responses[0].status == 200 and result.model_artifacts_info.weight_data_bytes == 12
    [req] = http_server.requests
    assert req["method"] == "POST" and req["path"] == "/upload"
    parts = parse_multipart(req["body"], req["headers"]["Content-Type"])
    assert [(p["field"], p["filename"], p["type"]) for p in parts] == [
        ("model.json", "model.json", "application/json"),
        ("model.weights.bin", "model.weights.bin", "application/octet-stream"),
    ]
    model_json = json.loads(parts[0]["data"])
    assert model_json["weightsManifest"] == [{"paths": ["./model.weights.bin"], "weights": specs}]
    assert model_json["modelTopology"] == TOPOLOGY and model_json["format"] == "layers-model"
    assert parts[1]["data"] == data


def test_save_method_headers_and_failure(http_server):
    artifacts = io.ModelArtifacts(model_topology=TOPOLOGY)
    io.http(f"{http_server.url}/up", request_init={"method": "PUT"}).save(artifacts)
    assert http_server.requests[-1]["method"] == "PUT"
    handler = io.http(f"{http_server.url}/up", request_init={"headers": {"X-A": "b"}})
    handler.save(artifacts)
    assert http_server.requests[-1]["method"] == "POST" and http_server.requests[-1]["headers"]["X-A"] == "b"
    assert http_server.requests[-1]["headers"]["Content-Type"].startswith("multipart/form-data; boundary=")
    http_server.post_status = 500
    with pytest.raises(OSError, match="failed due to HTTP response status 500"):
        handler.save(artifacts)


def test_http_option_validation():
    with pytest.raises(ValueError, match="no pre-existing body"):
        io.http("http://127.0.0.1/m.json", request_init={"body": b"x"})
    with pytest.raises(TypeError, match="unknown load options"):
        io.http("http://127.0.0.1/m.json", fetchFunc=None)
    with pytest.raises(ValueError, match="must not be None or empty"):
        io.HTTPRequest("")
    assert io.parse_url("http://h/a/b/model.json?x=1") == ("http://h/a/b/", "?x=1")
    assert io.is_http_scheme("HTTPS://h/x") and not io.is_http_scheme("file:///x")
    with pytest.raises(ValueError, match="unsupported URL scheme 'ftp'"):
        io.load_weights([{"paths": ["a.bin"], "weights": []}], "ftp://h/")
    with pytest.raises(ValueError, match="only http"):
        io.http("ftp://h/m.json").load()
