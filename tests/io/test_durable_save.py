"""Durable saves: a killed or failed save leaves the old model or the new one, never a mix; no stale shards; files
the previous model.json did not name are never overwritten or removed."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import sys
import time

import numpy as np
import pytest

from ndflow import io

TOPOLOGY = {"class_name": "Sequential", "config": {"name": "m", "layers": []}}


def _artifacts(seed: int, n: int) -> io.ModelArtifacts:
    data = np.random.default_rng(seed).standard_normal(n).astype("float32")
    specs = [{"name": "w", "shape": [n], "dtype": "float32"}]
    return io.ModelArtifacts(
        model_topology=TOPOLOGY, format="layers-model", weight_specs=specs, weight_data=data.tobytes()
    )


def _weights(folder) -> bytes:
    return bytes(io.file_system(folder).load().weight_data)


def _shards(folder) -> list[str]:
    return json.loads((folder / "model.json").read_text())["weightsManifest"][0]["paths"]


def test_two_then_one_shard_leaves_no_stale_shard(tmp_path):
    io.file_system(tmp_path, shard_size_bytes=40).save(_artifacts(0, 20))  # 80 bytes: 2 shards
    assert sorted(os.listdir(tmp_path)) == ["group1-shard1of2.bin", "group1-shard2of2.bin", "model.json"]
    io.file_system(tmp_path, shard_size_bytes=40).save(_artifacts(1, 8))  # 32 bytes: 1 shard
    names = _shards(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted([*names, "model.json"]) and len(names) == 1
    assert _weights(tmp_path) == bytes(_artifacts(1, 8).weight_data)
    assert names == ["group1-shard1of1.bin"]  # the plain name was free
    io.file_system(tmp_path).save(_artifacts(2, 8))  # now it is taken: a fresh name, the old shard removed
    assert sorted(os.listdir(tmp_path)) == sorted([*_shards(tmp_path), "model.json"]) != sorted([*names, "model.json"])
    io.file_system(tmp_path).save(_artifacts(3, 8))  # and free again
    assert sorted(os.listdir(tmp_path)) == ["group1-shard1of1.bin", "model.json"]


def test_resave_same_names_uses_fresh_shard_names(tmp_path):
    io.file_system(tmp_path).save(_artifacts(0, 8))
    io.file_system(tmp_path).save(_artifacts(1, 8))
    (name,) = _shards(tmp_path)
    assert (
        name.startswith("group1-shard1of1.") and name.endswith(".bin") and len(name) == len("group1-shard1of1.bin") + 9
    )
    assert sorted(os.listdir(tmp_path)) == sorted([name, "model.json"])
    assert _weights(tmp_path) == bytes(_artifacts(1, 8).weight_data)


def test_unrelated_file_is_never_overwritten_or_removed(tmp_path):
    (tmp_path / "group1-shard1of1.bin").write_bytes(b"not mine")
    (tmp_path / "notes.txt").write_bytes(b"keep")
    io.file_system(tmp_path / "foo.json").save(_artifacts(0, 8))
    io.file_system(tmp_path / "foo.json").save(_artifacts(1, 8))
    assert (tmp_path / "group1-shard1of1.bin").read_bytes() == b"not mine"
    assert (tmp_path / "notes.txt").read_bytes() == b"keep"
    assert _weights(tmp_path / "foo.json") == bytes(_artifacts(1, 8).weight_data)
    assert sorted(p for p in os.listdir(tmp_path) if not p.startswith(".")) == sorted(
        [
            "group1-shard1of1.bin",
            "notes.txt",
            "foo.json",
            *json.loads((tmp_path / "foo.json").read_text())["weightsManifest"][0]["paths"],
        ]
    )


def test_old_manifest_outside_folder_is_never_removed(tmp_path):
    (tmp_path / "outside.bin").write_bytes(b"x")
    model = tmp_path / "m"
    model.mkdir()
    manifest = [{"paths": ["../outside.bin"], "weights": []}]
    (model / "model.json").write_text(json.dumps({"modelTopology": TOPOLOGY, "weightsManifest": manifest}))
    io.file_system(model).save(_artifacts(0, 8))
    assert (tmp_path / "outside.bin").read_bytes() == b"x"


@pytest.mark.parametrize("target", ["write", "fsync", "replace"])
def test_injected_failure_leaves_old_model(tmp_path, monkeypatch, target):
    old, new = _artifacts(0, 30), _artifacts(1, 12)
    io.file_system(tmp_path, shard_size_bytes=40).save(old)
    before = sorted(os.listdir(tmp_path))
    real = getattr(os, target)
    for fail_at in range(1, 8):
        calls = []

        def failing(*args, _real=real, _calls=calls, _n=fail_at):
            _calls.append(1)
            if len(_calls) == _n:
                raise OSError(errno.ENOSPC, "No space left on device")
            return _real(*args)

        monkeypatch.setattr(os, target, failing)
        try:
            io.file_system(tmp_path, shard_size_bytes=40).save(new)
        except OSError as e:
            monkeypatch.setattr(os, target, real)
            assert e.errno == errno.ENOSPC and str(tmp_path) in str(e)
            assert sorted(os.listdir(tmp_path)) == before  # no temp file, no new shard left behind
            assert _weights(tmp_path) == bytes(old.weight_data)
            continue
        monkeypatch.setattr(os, target, real)
        assert _weights(tmp_path) == bytes(new.weight_data)  # the failure came after the commit
        break


def _save_forever(folder: str, a: io.ModelArtifacts, b: io.ModelArtifacts) -> None:
    while True:
        io.file_system(folder, shard_size_bytes=32 * 1024).save(b)
        io.file_system(folder, shard_size_bytes=32 * 1024).save(a)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork")
def test_killed_save_leaves_old_or_new_model(tmp_path):
    # same size and shard names: an in-place rewrite would mix them (old model.json, some new shards)
    a, b = _artifacts(0, 100_000), _artifacts(1, 100_000)  # 400 kB in 13 shards each
    io.file_system(tmp_path, shard_size_bytes=32 * 1024).save(a)
    expected = {bytes(a.weight_data), bytes(b.weight_data)}
    rng = random.Random(24)
    seen = set()
    for _ in range(50):  # 50 saves killed at random moments
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                _save_forever(str(tmp_path), a, b)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.0, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        got = _weights(tmp_path)
        assert got in expected
        seen.add(got)
        names = set(_shards(tmp_path))
        leftovers = {p for p in os.listdir(tmp_path) if not p.startswith(".")} - names - {"model.json"}
        # a kill between renaming shards in and the model.json commit leaves unnamed new shards; never named ones
        assert all(".bin" in p for p in leftovers)
    assert len(seen) >= 1
