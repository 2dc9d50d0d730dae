"""A TF.js model of either kind from a path or a URL: what the ``ndflow`` commands, ``ndflow serve`` and the
distributed predictor take as "a model".

``load_any_model(source)`` reads ``model.json`` once to tell a graph model (its topology has ``node``) from a layers
model, and loads it with ``load_graph_model`` or ``load_layers_model``. ``source`` is a ``model.json`` path, a folder
holding one, or a URL (``npm://``, ``http(s)://``, ``file://``); a URL's artifacts are fetched once and loaded from
memory."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")


def load_any_model(source: str | os.PathLike[str], load_options: Mapping[str, Any] | None = None) -> tuple[str, Any]:
    """``("graph", GraphModel)`` or ``("layers", LayersModel)`` from ``source``; ``load_options``: the loaders'
    options (``load_graph_model``'s: ``fetch_func``, ``request_init``, ...). ``FileNotFoundError`` when there is no
    ``model.json`` there, ``ValueError`` naming the file when it is not JSON."""
    from ..converter import load_graph_model
    from ..io import from_memory, is_graph_model, resolve_load_handler
    from .engine.saving import load_layers_model

    source = os.fspath(source)
    if _URL.match(source) and not source.startswith("file://"):
        artifacts = resolve_load_handler(source, load_options).load()
        topology = artifacts.model_topology
        if isinstance(topology, dict) and "node" in topology:
            return "graph", load_graph_model(from_memory(artifacts), load_options)
        return "layers", load_layers_model(from_memory(artifacts))
    local = source[len("file://") :] if source.startswith("file://") else source
    model_json = os.path.join(local, "model.json") if os.path.isdir(local) else local
    if not os.path.isfile(model_json):
        raise FileNotFoundError(f"no model.json at {model_json!r}")
    with open(model_json, "rb") as f:
        try:
            parsed = json.loads(f.read())
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{model_json} is not a model.json (not JSON: {exc})") from None
    if isinstance(parsed, dict) and is_graph_model(parsed):
        return "graph", load_graph_model(model_json, load_options)
    return "layers", load_layers_model(model_json)


__all__ = ["load_any_model"]
