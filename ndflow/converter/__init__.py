"""``nf.converter``: run TF.js graph models (``tensorflowjs_converter`` output).

``load_graph_model(url)`` -> :class:`GraphModel` with ``predict``/``execute`` (plain graphs) and
``predict_async``/``execute_async`` (control flow, dynamic shapes). Modules: ``graph`` (nodes and
attributes), ``plan`` (graph structure, validation, execution plans), ``executor`` (running a graph),
``control_flow`` (frames, hash tables), ``tensor_array``/``tensor_list`` (loop state), ``registry``
and ``mappers/`` (how each TF op runs as ndflow ops), ``graph_model`` (loading, the public API).
"""

from __future__ import annotations

from .graph_model import GraphModel, ModelTensorInfo, load_graph_model
from .registry import op, register_op, supported_ops

__all__ = ["GraphModel", "ModelTensorInfo", "load_graph_model", "op", "register_op", "supported_ops"]
