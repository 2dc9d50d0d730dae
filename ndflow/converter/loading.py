"""``load_graph_model`` / ``load_graph_model_async``: TF.js's ``tf.loadGraphModel`` (a path, URL, IO handler or
artifacts in memory -> a loaded :class:`~ndflow.converter.graph_model.GraphModel`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import io
from .graph_model import GraphModel

__all__ = ["load_graph_model", "load_graph_model_async"]


def load_graph_model(model_url: Any, options: Mapping[str, Any] | None = None) -> GraphModel:
    """Load a graph model (TF.js ``tf.loadGraphModel``); returns the model, also awaitable
    (``model = await nf.load_graph_model(url)`` ports unchanged).

    Args:
        model_url: a path or URL of ``model.json`` (``file://``, ``http(s)://``, a registered router's scheme), an
            IO handler (anything with ``load()``), or artifacts in memory.
        options: ``from_tf_hub``, ``request_init``, ``on_progress``, ``weight_path_prefix``, ``fetch_func``, and
            ``optimize`` (ndflow: fold constants and fuse ops at load; default: the ``GRAPH_MODEL_OPTIMIZE``
            flag, true).

    Example::

        model = nf.load_graph_model('file://./web_model/model.json')
        y = model.predict(nf.zeros([1, 224, 224, 3]))
    """
    model = _new_graph_model(model_url, options)
    model.load()
    return model


async def load_graph_model_async(model_url: Any, options: Mapping[str, Any] | None = None) -> GraphModel:
    """:func:`load_graph_model` as a coroutine: the files are read (or downloaded) in a worker thread while the
    event loop keeps running, then the graph is built. Same arguments and result as :func:`load_graph_model`.

    Example::

        model = await nf.load_graph_model_async('https://example.com/web_model/model.json')
    """
    model = _new_graph_model(model_url, options)
    await model.load_async()
    return model


def _new_graph_model(model_url: Any, options: Mapping[str, Any] | None) -> GraphModel:
    """The (not yet loaded) ``GraphModel`` of a ``load_graph_model`` call."""
    if model_url is None:
        raise ValueError(
            "modelUrl in load_graph_model() cannot be None. Please provide a url or an IOHandler that loads the model"
        )
    options = dict(options or {})
    if options.get("from_tf_hub") and isinstance(model_url, str):
        model_url = (model_url if model_url.endswith("/") else model_url + "/") + "model.json?tfjs-format=file"
    if isinstance(model_url, io.ModelArtifacts) or (
        isinstance(model_url, Mapping) and ("modelTopology" in model_url or "model_topology" in model_url)
    ):
        model_url = io.from_memory(model_url)
    return GraphModel(model_url, options)
