"""nf.version: TF.js's tf.version mapping, while ndflow.version stays an importable module."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path

import pytest

import ndflow as nf

TFJS = json.loads((Path(__file__).parent / "fixtures" / "tfjs_surface.json").read_text())["version"]


def test_version_reads_like_tfjs() -> None:
    assert nf.version["tfjs-core"] == TFJS["tfjs-core"] == "4.22.0"
    for key in ("tfjs-core", "tfjs-backend-cpu", "tfjs-data", "tfjs-layers", "tfjs-converter", "tfjs"):
        assert nf.version[key] == TFJS[key]
    assert nf.version["ndflow"] == nf.__version__
    assert "tfjs-backend-webgl" not in nf.version  # ndflow has no WebGL backend
    assert isinstance(nf.version, Mapping)
    assert dict(nf.version) == {
        **{k: v for k, v in TFJS.items() if k != "tfjs-backend-webgl"},
        "ndflow": nf.__version__,
    }
    assert nf.version == dict(nf.version) and len(nf.version) == 7 and list(nf.version)[0] == "tfjs-core"
    assert nf.version.get("nope") is None
    assert repr(nf.version).startswith("{'tfjs-core': '4.22.0'")
    with pytest.raises(KeyError, match="nf.version: no package 'tfjs-node'"):
        nf.version["tfjs-node"]


def test_version_module_still_imports() -> None:
    import ndflow.version as module
    from ndflow.version import __version__

    assert module is nf.version
    assert __version__ == nf.__version__ == module.__version__
    assert importlib.import_module("ndflow.version") is nf.version
    assert isinstance(hash(nf.version), int)
