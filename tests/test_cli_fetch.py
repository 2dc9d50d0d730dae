"""``ndflow fetch PACKAGE[@VERSION]`` against a fake npm registry (a loopback server in a thread)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "io"))

from npm_fake import fake_registry, make_tarball, model_files, sri  # noqa: E402

from ndflow.cli import main  # noqa: E402


@pytest.fixture
def registry(monkeypatch, tmp_path):
    with fake_registry() as reg:
        reg.add("demo", "1.0.0", make_tarball(model_files()))
        reg.add("@scope/empty", "0.0.1", make_tarball({"package.json": b"{}"}))
        monkeypatch.setenv("NDFLOW_NPM_REGISTRY", reg.url)
        monkeypatch.setenv("NDFLOW_CACHE_DIR", str(tmp_path / "cache"))
        yield reg


def test_fetch_lists_models(registry, tmp_path, capsys):
    assert main(["fetch", "demo"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"demo@1.0.0: {tmp_path / 'cache' / 'npm' / 'demo' / '1.0.0'}"
    graph = next(line for line in out if "models/graph/model.json" in line).split()
    layers = next(line for line in out if "models/layers/model.json" in line).split()
    assert graph[:2] == ["npm://demo@1.0.0/models/graph/model.json", "graph"] and graph[-1] == "KB"
    assert layers[:2] == ["npm://demo@1.0.0/models/layers/model.json", "layers"]
    assert out[-1].startswith("2 models;")
    assert main(["fetch", "demo@1.0.0"]) == 0  # from the cache now
    assert len(registry.tarball_requests()) == 1


def test_fetch_cache_dir_and_empty_package(registry, tmp_path, capsys):
    assert main(["fetch", "@scope/empty@0.0.1", "--cache-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "d" / "npm" / "@scope" / "empty" / "0.0.1") in out and "no model.json files" in out
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fetch", "nope"], "'nope' not found in the registry"),
        (["fetch", "demo@2.0.0"], "no version '2.0.0'"),
        (["fetch", "demo@^1.0.0"], "semver ranges are not supported"),
        (["fetch", "demo@1.0.0/models/graph/model.json"], "not a path inside it"),
        (["fetch", "bad@1.0.0"], "integrity check failed"),
        (["fetch"], "the following arguments are required: package"),
        (["fetch", "demo", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_fetch_errors(registry, tmp_path, capsys, argv, message):
    registry.add("bad", "1.0.0", make_tarball(model_files()), integrity=sri(b"other"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ndflow fetch: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "cache" / "npm" / "bad").exists()


@pytest.mark.parametrize("path", ["models/graph/model.json", "models/layers/model.json"])
def test_predict_takes_an_npm_url(registry, capsys, path):
    """``ndflow predict npm://...`` loads a graph or a layers model straight from the package."""
    assert main(["predict", f"npm://demo@1.0.0/{path}", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"npm://demo@1.0.0/{path} [{path.split('/')[1]}]" in out


def test_predict_names_a_missing_npm_path(registry, capsys):
    assert main(["predict", "npm://demo@1.0.0/models/none.json"]) != 0
    assert "has no file 'models/none.json'" in capsys.readouterr().err
