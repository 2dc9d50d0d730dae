"""``nf.converter``: run TF.js graph models (``tensorflowjs_converter`` output).

``load_graph_model(url)`` -> :class:`GraphModel` with ``predict``/``execute`` (plain graphs) and
``predict_async``/``execute_async`` (control flow, dynamic shapes). By stage, each depending only on those
before it:

- ``load/``: nodes and attributes (``graph``), the op registry (``registry``), the graph's structure,
  validation and execution plans (``plan``);
- ``runtime/``: running a graph (``executor``, ``program``, ``scheduler``, ...) and its state
  (``control_flow``, ``tensor_array``, ``tensor_list``);
- ``mappers/``: how each TF op runs as ndflow ops (registered in ``load.registry`` on import);
- ``passes/``: load-time optimizations (constant folding, fusion, ...; their order in ``passes/__init__``);
- ``graph_model``: loading a model.json through ``nf.io`` and the public API, on top of the four.
"""

from __future__ import annotations

from .graph_model import GraphModel, ModelTensorInfo
from .load.registry import op, register_op, supported_ops
from .loading import load_graph_model, load_graph_model_async

__all__ = [
    "GraphModel", "ModelTensorInfo", "load_graph_model", "load_graph_model_async", "op", "register_op", "supported_ops",
]  # fmt: skip
