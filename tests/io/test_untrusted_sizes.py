"""Untrusted model files: shard sizes are compared with the manifest before any read, weights over the size
limit and over-deep JSON are refused with a ValueError (issue 24, point 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ndflow as nf
from ndflow.io.handlers import check_group_sizes
from ndflow.io.model_json import MAX_JSON_DEPTH, json_depth, parse_model_json
from ndflow.io.weights import group_byte_range

GIB = 1024**3


def _save_weights(folder, quantize=None) -> dict:
    """A model.json (a bare weights manifest in a layers-less file) with one 2x3 float32 weight."""
    data, specs = nf.io.encode_weights({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, quantize=quantize)
    (folder / "group1-shard1of1.bin").write_bytes(data)
    model_json = {"modelTopology": {"class_name": "Sequential", "config": {"layers": []}}, "format": "layers-model"}
    model_json["weightsManifest"] = [{"paths": ["group1-shard1of1.bin"], "weights": specs}]
    (folder / "model.json").write_text(json.dumps(model_json))
    return model_json


def _run_limited(code: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run ``code`` in a child whose address space is limited to 1 GiB (only the child is limited)."""
    prelude = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout
    )


def test_a_sparse_20_gib_shard_is_refused_before_any_read(tmp_path):
    _save_weights(tmp_path)
    shard = tmp_path / "group1-shard1of1.bin"
    os.truncate(shard, 20 * GIB)  # sparse: takes no disk
    code = f"""
        import time, ndflow as nf
        start = time.perf_counter()
        try:
            nf.io.file_system({str(tmp_path)!r}).load()
        except ValueError as exc:
            print("REFUSED", time.perf_counter() - start, exc)
    """
    out = _run_limited(code)
    assert out.returncode == 0, out.stderr
    assert "REFUSED" in out.stdout, out.stdout + out.stderr
    seconds = float(out.stdout.split()[1])
    assert seconds < 5.0
    assert "group1-shard1of1.bin" in out.stdout
    assert str(20 * GIB) in out.stdout and "24 bytes" in out.stdout


def test_shard_size_mismatch_names_the_file_sizes_and_expected_size(tmp_path):
    _save_weights(tmp_path)
    (tmp_path / "group1-shard1of1.bin").write_bytes(b"\0" * 20)
    with pytest.raises(ValueError, match=r"'group1-shard1of1.bin' \(20 bytes\).*describe 24 bytes"):
        nf.io.file_system(str(tmp_path)).load()


def test_quantized_weights_are_expected_smaller(tmp_path):
    _save_weights(tmp_path, quantize="uint8")
    artifacts = nf.io.file_system(str(tmp_path)).load()
    assert len(artifacts.weight_data) == 6
    (tmp_path / "group1-shard1of1.bin").write_bytes(b"\0" * 24)  # float32-sized data for uint8 specs
    with pytest.raises(ValueError, match="describe 6 bytes"):
        nf.io.file_system(str(tmp_path)).load()


def test_load_weights_checks_sizes_before_reading(tmp_path):
    model_json = _save_weights(tmp_path)
    os.truncate(tmp_path / "group1-shard1of1.bin", 20 * GIB)
    with pytest.raises(ValueError, match="group1-shard1of1.bin"):
        nf.io.load_weights(model_json["weightsManifest"], str(tmp_path))


def test_group_byte_range_and_strings():
    specs = [
        {"name": "a", "shape": [2, 3], "dtype": "float32"},
        {"name": "b", "shape": [4], "dtype": "float32", "quantization": {"dtype": "float16"}},
    ]
    assert group_byte_range(specs) == (32, 32)
    strings = [{"name": "s", "shape": [3], "dtype": "string"}]
    assert group_byte_range(strings) == (12, None)
    check_group_sizes(0, {"paths": ["x.bin"], "weights": strings}, [100])  # strings: only a lower bound
    with pytest.raises(ValueError, match="at least 12 bytes"):
        check_group_sizes(0, {"paths": ["x.bin"], "weights": strings}, [5])


def test_weight_spec_over_the_size_limit_is_refused():
    manifest = [{"paths": ["a.bin"], "weights": [{"name": "huge", "shape": [10**9, 10**9], "dtype": "float32"}]}]
    with pytest.raises(ValueError, match="huge.*MAX_WEIGHT_BYTES"):
        nf.io.check_weights_manifest(manifest)


def test_http_shard_larger_than_its_group_is_refused_by_content_length(tmp_path, http_server):
    _save_weights(tmp_path)
    (tmp_path / "group1-shard1of1.bin").write_bytes(b"\0" * (1 << 20))
    http_server.serve_folder(tmp_path, "/m/")
    with pytest.raises(ValueError, match=r"Content-Length is 1048576 bytes.*describe 24"):
        nf.io.http(f"{http_server.url}/m/model.json").load()


def test_deep_json_is_a_value_error_naming_the_file_and_limit(tmp_path):
    (tmp_path / "model.json").write_text("[" * 100000)
    with pytest.raises(ValueError, match=rf"model.json.*nests too deeply.*{MAX_JSON_DEPTH} levels"):
        nf.io.file_system(str(tmp_path)).load()
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(ValueError, match=rf"\({MAX_JSON_DEPTH + 1} levels\)"):
        parse_model_json(deep, "deep.json")


def test_json_depth_ignores_brackets_in_strings_and_real_models_pass():
    assert json_depth('{"a": [1, "[[[\\"[", {"b": []}]}') == 4
    start = time.perf_counter()
    layers = [{"class_name": "Dense", "config": {"units": 2, "name": f"d{i}"}} for i in range(2000)]
    text = json.dumps({"modelTopology": {"class_name": "Sequential", "config": {"layers": layers}}})
    assert parse_model_json(text)["modelTopology"]["class_name"] == "Sequential"
    assert time.perf_counter() - start < 2.0
