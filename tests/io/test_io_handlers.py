"""File, memory and routed handlers; malformed model folders; weight paths that try to leave the model folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import io

TOPOLOGY = {"class_name": "Sequential", "config": {"name": "s", "layers": []}}


def _artifacts(weights: dict | None = None, quantize=None) -> io.ModelArtifacts:
    weights = (
        weights if weights is not None else {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.int32([7])}
    )
    data, specs = io.encode_weights(weights, quantize=quantize)
    return io.ModelArtifacts(
        model_topology=TOPOLOGY, format="layers-model", generated_by="ndflow", converted_by=None,
        weight_specs=specs, weight_data=data, training_config={"loss": "meanSquaredError"},
        user_defined_metadata={"k": [1, 2]},
    )  # fmt: skip


def _decoded(artifacts: io.ModelArtifacts) -> dict[str, np.ndarray]:
    return io.decode_arrays(artifacts.weight_data, artifacts.weight_specs)


def _write_model(folder: Path, manifest: list, files: dict[str, bytes], extra: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(
        json.dumps({"modelTopology": TOPOLOGY, "weightsManifest": manifest, **(extra or {})})
    )
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


# -- file system -------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["plain", "pathlike", "file_url", "json_path"])
def test_file_save_load_round_trip(tmp_path, form):
    target = {
        "plain": str(tmp_path / "m"), "pathlike": tmp_path / "m", "file_url": f"file://{tmp_path / 'm'}",
        "json_path": str(tmp_path / "m" / "model.json"),
    }[form]  # fmt: skip
    artifacts = _artifacts()
    [saver] = io.get_save_handlers(target)
    result = saver.save(artifacts)
    assert result.model_artifacts_info.weight_data_bytes == 28
    assert sorted(os.listdir(tmp_path / "m")) == ["group1-shard1of1.bin", "model.json"]
    written = json.loads((tmp_path / "m" / "model.json").read_text())
    assert list(written)[:5] == ["modelTopology", "format", "generatedBy", "convertedBy", "weightsManifest"]
    assert written["weightsManifest"][0]["paths"] == ["group1-shard1of1.bin"]
    [loader] = io.get_load_handlers(target)
    loaded = loader.load()
    assert loaded.model_topology == TOPOLOGY and loaded.training_config == {"loss": "meanSquaredError"}
    assert loaded.user_defined_metadata == {"k": [1, 2]} and loaded.format == "layers-model"
    assert loaded.weight_specs == artifacts.weight_specs and loaded.weight_data == artifacts.weight_data


def test_load_from_folder_or_model_json_path_and_custom_json_name(tmp_path):
    io.file_system(tmp_path / "x" / "my_model.json").save(_artifacts())
    assert (tmp_path / "x" / "my_model.json").is_file()
    loaded = io.file_system(tmp_path / "x" / "my_model.json").load()
    np.testing.assert_array_equal(_decoded(loaded)["b"], [7])
    with pytest.raises(FileNotFoundError, match="no model.json"):
        io.file_system(tmp_path / "x").load()  # a folder needs model.json


def test_weight_spanning_two_default_shards(tmp_path):
    big = np.arange(1024 * 1024 + 3, dtype=np.float32)  # 4 MiB + 12 bytes: crosses the 4 MiB boundary
    artifacts = _artifacts({"head": np.float32([1, 2]), "big": big})
    progress: list[float] = []
    io.file_system(tmp_path).save(artifacts)
    manifest = json.loads((tmp_path / "model.json").read_text())["weightsManifest"]
    assert manifest[0]["paths"] == ["group1-shard1of2.bin", "group1-shard2of2.bin"]
    assert (tmp_path / "group1-shard1of2.bin").stat().st_size == 4 * 1024 * 1024
    assert (tmp_path / "group1-shard2of2.bin").stat().st_size == 8 + 12
    loaded = io.file_system(tmp_path, on_progress=progress.append).load()
    arrays = _decoded(loaded)
    np.testing.assert_array_equal(arrays["big"], big)
    assert progress == [0.5, 1.0]


def test_small_shards_and_several_groups(tmp_path):
    a = np.arange(10, dtype=np.float32)
    data, specs = io.encode_weights({"a": a, "s": np.array(["xy", "z"], dtype=object)})
    io.file_system(tmp_path, shard_size_bytes=8).save(
        io.ModelArtifacts(model_topology=TOPOLOGY, weight_specs=specs, weight_data=data)
    )
    manifest = json.loads((tmp_path / "model.json").read_text())["weightsManifest"]
    assert len(manifest[0]["paths"]) == -(-len(data) // 8)
    # a second group written by hand: groups load in order and their specs concatenate
    extra, extra_specs = io.encode_weights({"c": np.bool_([True, False])})
    manifest.append({"paths": ["other.bin"], "weights": extra_specs})
    (tmp_path / "other.bin").write_bytes(extra)
    (tmp_path / "model.json").write_text(json.dumps({"modelTopology": TOPOLOGY, "weightsManifest": manifest}))
    loaded = io.file_system(tmp_path).load()
    arrays = _decoded(loaded)
    assert list(arrays) == ["a", "s", "c"] and list(arrays["s"]) == ["xy", "z"]
    tensors = io.load_weights(manifest, str(tmp_path), weight_names=["s", "c"])
    assert sorted(tensors) == ["c", "s"] and tensors["c"].array_sync() == [True, False]
    nf.dispose(list(tensors.values()))
    with pytest.raises(ValueError, match="Could not find weights in manifest with names: nope"):
        io.load_weights(manifest, str(tmp_path), weight_names=["nope"])


def test_save_without_weights_and_topology_only_load(tmp_path):
    io.file_system(tmp_path).save(io.ModelArtifacts(model_topology=TOPOLOGY, format="layers-model"))
    assert os.listdir(tmp_path) == ["model.json"]
    loaded = io.file_system(tmp_path).load()
    assert loaded.weight_specs is None and loaded.model_topology == TOPOLOGY


def test_quantized_save_load(tmp_path):
    w = np.linspace(-1, 1, 50, dtype=np.float32)
    io.file_system(tmp_path).save(_artifacts({"w": w}, quantize="uint8"))
    loaded = io.file_system(tmp_path).load()
    q = loaded.weight_specs[0]["quantization"]
    assert q["dtype"] == "uint8"
    assert np.abs(_decoded(loaded)["w"] - w).max() <= q["scale"] / 2 + 1e-7


def test_save_rejects_inconsistent_artifacts(tmp_path):
    bad = _artifacts()
    bad.weight_data = bad.weight_data[:-1]
    with pytest.raises(ValueError, match="weight data to save"):
        io.file_system(tmp_path / "m").save(bad)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        io.file_system(tmp_path / "file").save(_artifacts())


# -- malformed folders -------------------------------------------------------------------------------

SPEC = {"name": "w", "shape": [2], "dtype": "float32"}


@pytest.mark.parametrize(
    "manifest, files, match",
    [
        ([{"paths": ["w.bin"], "weights": [SPEC]}], {}, "weight file 'w.bin' is missing"),
        ([{"paths": ["a.bin", "b.bin"], "weights": [SPEC]}], {"a.bin": b"\0" * 8}, "'b.bin' is missing"),
        ([{"paths": ["w.bin"], "weights": [SPEC]}], {"w.bin": b"\0" * 7}, r"group 1.*'w.bin' \(7 bytes\).*describe 8"),
        ([{"paths": ["w.bin"], "weights": [SPEC]}], {"w.bin": b"\0" * 9}, r"'w.bin' has 9 bytes.*describe 8 bytes"),
        ([{"paths": ["w.bin"], "weights": [{**SPEC, "shape": [3]}]}], {"w.bin": b"\0" * 8}, r"shape \[3\]"),
        ([{"paths": ["w.bin"], "weights": [{**SPEC, "dtype": "float64"}]}], {"w.bin": b"\0" * 16}, "unknown dtype"),
        ([{"paths": ["w.bin"], "weights": [{**SPEC, "quantization": {"dtype": "int8"}}]}], {"w.bin": b"\0" * 2},
         "unknown quantization dtype"),
    ],
)  # fmt: skip
def test_malformed_model_folder_raises(tmp_path, manifest, files, match):
    _write_model(tmp_path, manifest, files)
    with pytest.raises(ValueError, match=match):
        io.file_system(tmp_path).load()


def test_malformed_json_file_raises(tmp_path):
    (tmp_path / "model.json").write_text('{"modelTopology": ')
    with pytest.raises(ValueError, match=r"Failed to parse model JSON .*model.json"):
        io.file_system(tmp_path).load()
    (tmp_path / "model.json").write_text(json.dumps({"format": "graph-model", "modelTopology": {"node": []}}))
    with pytest.raises(ValueError, match="graph model needs a 'weightsManifest'"):
        io.file_system(tmp_path).load()


@pytest.mark.parametrize(
    "path",
    ["../secret.bin", "sub/../../secret.bin", "/etc/passwd", "file:///etc/passwd", "http://evil/x.bin", "//host/x",
     "C:\\x.bin", "c:x.bin", "..\\secret.bin", "a\x00.bin", "", ".", "./", "sub/.."],
)  # fmt: skip
def test_weight_paths_escaping_the_folder_raise_before_reading(tmp_path, path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
    model = _write_model(tmp_path / "model", [{"paths": [path], "weights": [SPEC]}], {})
    with pytest.raises(ValueError, match="weight path"):
        io.file_system(model).load()
    with pytest.raises(ValueError, match="weight path"):
        io.load_weights([{"paths": [path], "weights": [SPEC]}], str(model))


def test_symlink_pointing_outside_is_refused(tmp_path):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 8)
    model = _write_model(tmp_path / "model", [{"paths": ["w.bin"], "weights": [SPEC]}], {})
    (model / "w.bin").symlink_to(tmp_path / "secret.bin")
    with pytest.raises(ValueError, match="resolves outside the model's folder"):
        io.file_system(model).load()


def test_dot_slash_and_subfolder_paths_are_fine(tmp_path):
    data, specs = io.encode_weights({"w": np.float32([1, 2])})
    (tmp_path / "sub").mkdir()
    _write_model(tmp_path, [{"paths": ["./sub/w.bin"], "weights": specs}], {"sub/w.bin": data})
    np.testing.assert_array_equal(_decoded(io.file_system(tmp_path).load())["w"], [1, 2])
    assert io.check_weight_path("./a/./b.bin") == "a/b.bin"


# -- memory, routers ---------------------------------------------------------------------------------


def test_from_memory_and_with_save_handler():
    artifacts = _artifacts()
    assert io.from_memory(artifacts).load() is artifacts
    from_dict = io.from_memory(artifacts.to_dict()).load()
    assert from_dict == artifacts
    from_snake = io.from_memory({"model_topology": TOPOLOGY, "weight_specs": []}).load()
    assert from_snake.model_topology == TOPOLOGY
    with pytest.warns(DeprecationWarning, match="only one argument"):
        legacy = io.from_memory(TOPOLOGY, artifacts.weight_specs, artifacts.weight_data, {"loss": "mse"}).load()
    assert legacy.weight_data == artifacts.weight_data and legacy.training_config == {"loss": "mse"}
    with pytest.warns(DeprecationWarning):
        assert io.from_memory(TOPOLOGY).load().model_topology == TOPOLOGY

    seen = []
    result = io.with_save_handler(seen.append).save(artifacts)
    assert seen == [artifacts] and result.model_artifacts_info.weight_data_bytes == 28
    custom = io.SaveResult(io.model_artifacts_info(artifacts), errors=["x"])
    assert io.with_save_handler(lambda a: custom).save(artifacts) is custom
    with pytest.raises(TypeError):
        io.with_save_handler(42)


def test_routers_by_scheme(tmp_path):
    assert [type(h).__name__ for h in io.get_load_handlers(str(tmp_path))] == ["FileSystem"]
    assert [type(h).__name__ for h in io.get_load_handlers("file:///x")] == ["FileSystem"]
    assert [type(h).__name__ for h in io.get_load_handlers("https://h/m.json")] == ["HTTPRequest"]
    assert [type(h).__name__ for h in io.get_save_handlers("http://h/upload")] == ["HTTPRequest"]
    assert io.get_load_handlers("indexeddb://m") == [] and io.get_save_handlers("localstorage://m") == []
    with pytest.raises(ValueError, match="Cannot find any load handlers for URL 'indexeddb://m'"):
        io.resolve_load_handler("indexeddb://m")
    with pytest.raises(ValueError, match="Cannot find any save handlers"):
        io.resolve_save_handler("downloads://m")
    memory = io.from_memory(_artifacts())
    assert io.resolve_load_handler(memory) is memory
    assert isinstance(io.file_system(tmp_path), io.IOHandler) and isinstance(io.http("http://h/m"), io.IOHandler)
    assert isinstance(memory, io.LoadHandler) and not isinstance(memory, io.SaveHandler)
    assert isinstance(io.with_save_handler(print), io.SaveHandler)


def test_register_custom_router():
    from ndflow.io import handlers

    stored = {}

    class Store:
        def __init__(self, key):
            self.key = key

        def save(self, artifacts):
            stored[self.key] = artifacts
            return io.SaveResult(io.model_artifacts_info(artifacts))

        def load(self):
            return stored[self.key]

    def router(url, load_options=None):
        return Store(url[len("mem://") :]) if isinstance(url, str) and url.startswith("mem://") else None

    io.register_load_router(router)
    io.register_save_router(router)
    try:
        io.resolve_save_handler("mem://m1").save(_artifacts())
        assert io.resolve_load_handler("mem://m1").load().model_topology == TOPOLOGY
        io.register_load_router(router)
        with pytest.raises(ValueError, match=r"Found more than one \(2\) load handlers"):
            io.resolve_load_handler("mem://m1")
    finally:
        handlers._load_routers[:] = [r for r in handlers._load_routers if r is not router]
        handlers._save_routers[:] = [r for r in handlers._save_routers if r is not router]
