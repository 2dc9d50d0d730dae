"""Helpers for the graph-optimization tests: models loaded with and without optimizations, compared."""

from __future__ import annotations

import base64

import numpy as np
from gm_helpers import artifacts, attr_str

import ndflow as nf
from ndflow.converter import load_graph_model

F = {"T": {"type": "DT_FLOAT"}}
RNG = np.random.default_rng(7)


def ilist(*values: int) -> dict:
    return {"list": {"i": [str(v) for v in values]}}


def slist(*values: str) -> dict:
    return {"list": {"s": [base64.b64encode(v.encode()).decode() for v in values]}}


def conv_attrs(**extra) -> dict:
    return {"strides": ilist(1, 1, 1, 1), "padding": attr_str("SAME"), "data_format": attr_str("NHWC"), **F, **extra}


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def both(nodes: list[dict], weights: dict, **kw):
    """The model loaded with and without optimizations."""
    fast = load_graph_model(nf.io.from_memory(artifacts(nodes, weights, **kw)))
    slow = load_graph_model(nf.io.from_memory(artifacts(nodes, weights, **kw)), {"optimize": False})
    return fast, slow


def ops_of(model) -> dict[str, str]:
    return {name: n.op for name, n in model.executor.graph.nodes.items()}


def same_outputs(fast, slow, feed, outputs=None, rtol: float = 1e-5) -> list[np.ndarray]:
    """Run both models; assert equal outputs; return them."""
    a = fast.execute(feed, outputs)
    b = slow.execute(feed, outputs)
    a, b = (x if isinstance(x, list) else [x] for x in (a, b))
    got = [t.numpy() for t in a]
    want = [t.numpy() for t in b]
    nf.dispose(a + b)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(1.0, float(np.abs(w).max())))
    return got


def dispose(*models) -> None:
    for m in models:
        m.dispose()
