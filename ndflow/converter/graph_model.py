"""``GraphModel``: TF.js graph models (``tensorflowjs_converter`` output) in ndflow.

Loading reads model.json and the weight shards through ``nf.io`` (paths, ``file://``, ``http(s)://``,
an IO handler or in-memory artifacts), dequantizes the weights, builds the graph and checks it: inputs
that name no node, cycles outside loops, Const nodes without a weight and, in one error, every op
type that ndflow cannot run. ``execute``/``predict`` run plain graphs; ``execute_async``/
``predict_async`` run any graph (control flow, NonMaxSuppression, Where, ...). ``converter/loading.py`` holds
``load_graph_model`` and ``load_graph_model_async``.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import io, ops
from ..core.awaitable import Resolved, finish, is_pending, resolved
from ..core.coroutines import drive_without_loop
from ..core.engine import ENGINE
from ..core.globals import next_frame
from ..core.tensor import Tensor
from ..core.types import ModelOutput
from ..io.model_json import is_graph_topology
from . import mappers  # noqa: F401  (importing it registers every op mapper)
from .load.graph import TF_DTYPES
from .load.plan import Graph, build_graph, validate
from .passes.optimize import optimize_enabled, optimize_graph
from .passes.rewrite import Stats
from .runtime.executor import GraphExecutor

Inputs = Tensor | Sequence[Any] | Mapping[str, Any] | np.ndarray


@dataclass(frozen=True)
class ModelTensorInfo:
    """An input or output of a model: node ``name``, ``shape`` (-1 for unknown dims, None for an unknown
    rank) and ``dtype`` (None when the graph does not say)."""

    name: str
    shape: list[int] | None
    dtype: str | None


def _signature_info(entry: Any) -> tuple[list[int] | None, str | None]:
    if not isinstance(entry, Mapping):
        return None, None
    dtype = TF_DTYPES.get(entry.get("dtype", ""), None)
    shape_proto = entry.get("tensorShape")
    shape = None
    if isinstance(shape_proto, Mapping) and not shape_proto.get("unknownRank"):
        shape = [int(d.get("size", -1)) for d in shape_proto.get("dim", [])]
    return shape, dtype


def run_to_completion(coro: Any, what: str = "the model initializer waits on asynchronous work") -> Any:
    """Drive a coroutine that never really suspends (ndflow's CPU reads) without an event loop."""
    return drive_without_loop(coro, f"{what}; use the asynchronous API (model.execute_async) instead")


class GraphModel(Resolved):
    """A graph model: ``predict``/``execute`` (plain graphs), ``predict_async``/``execute_async`` (any).

    As TF.js's Promises port (ndflow/core/awaitable.py): the model ``load_graph_model`` returns is awaitable
    (``model = await nf.load_graph_model(url)``), so are the tensors, lists and dicts ``predict`` / ``execute``
    return (``await model.predict(x)``); ``execute_async`` / ``predict_async`` are coroutines, as TF.js's
    ``executeAsync`` returns a Promise (``await`` them, or ``asyncio.run(model.execute_async(x))``).
    """

    def __init__(self, model_url: Any, load_options: Mapping[str, Any] | None = None) -> None:
        self.model_url = model_url
        self.load_options = dict(load_options or {})
        self.version = "n/a"
        self.artifacts: io.ModelArtifacts | None = None
        self.signature: dict[str, Any] | None = None
        self.structured_output_keys: list[str] | None = None
        self.executor: GraphExecutor | None = None
        self.initializer: GraphExecutor | None = None
        self.initializer_signature: dict[str, Any] | None = None
        self._captured: dict[Any, Tensor] | None = None
        self._disposed = False
        self.optimization: Stats | None = None  # what the load-time optimizations did (None when off)

    # -- loading ---------------------------------------------------------------------------------
    def _handler(self) -> Any:
        url = self.model_url
        if hasattr(url, "load") and not isinstance(url, str | os.PathLike):
            return url
        options = {k: v for k, v in self.load_options.items() if k not in ("from_tf_hub", "optimize")}
        if options.get("request_init") is not None and isinstance(url, str) and io.is_http_scheme(url):
            return io.http(url, **options)
        return io.resolve_load_handler(url, options)

    def load(self) -> bool:
        """Load the artifacts, weights and graph (TF.js ``GraphModel.load``)."""
        handler = self._handler()
        if not callable(getattr(handler, "load", None)):
            raise ValueError(
                "Cannot proceed with model loading because the IOHandler provided does not have the `load` "
                "method implemented."
            )
        artifacts = handler.load()
        if is_pending(artifacts):  # an asynchronous handler that does not really wait
            artifacts = run_to_completion(artifacts, "the IO handler's load() waits on asynchronous work")
        if isinstance(artifacts, Mapping):
            artifacts = io.ModelArtifacts.from_dict(artifacts)
        return self.load_artifacts(artifacts)

    async def load_async(self) -> bool:
        """``load`` as a coroutine: the handler's ``load`` runs in a worker thread (or is awaited when it is a
        coroutine), so the event loop keeps running while the files are read or downloaded."""
        handler = self._handler()
        load = getattr(handler, "load", None)
        if not callable(load):
            raise ValueError(
                "Cannot proceed with model loading because the IOHandler provided does not have the `load` "
                "method implemented."
            )
        if inspect.iscoroutinefunction(load):
            artifacts = await load()
        else:
            import asyncio  # here: asyncio is tens of ms of the first load's imports

            artifacts = await asyncio.to_thread(load)
        if is_pending(artifacts):
            artifacts = await artifacts
        if isinstance(artifacts, Mapping):
            artifacts = io.ModelArtifacts.from_dict(artifacts)
        await next_frame()
        return self.load_artifacts(artifacts)

    def load_artifacts(self, artifacts: io.ModelArtifacts) -> bool:
        """Build the model from loaded artifacts (graph checked before any weight tensor is made)."""
        source = f"graph model {self.model_url}" if isinstance(self.model_url, str | os.PathLike) else "graph model"
        topology = artifacts.model_topology
        if not is_graph_topology(topology):
            kind = "a layers model (use nf.load_layers_model)" if isinstance(topology, Mapping) else "not a GraphDef"
            raise ValueError(f"{source}: modelTopology is {kind}; load_graph_model needs a graph model")
        signature = artifacts.signature
        metadata = artifacts.user_defined_metadata or {}
        if metadata.get("signature") is not None:
            signature = metadata["signature"]
        if metadata.get("structuredOutputKeys") is not None:
            self.structured_output_keys = list(metadata["structuredOutputKeys"])
        versions = topology.get("versions") or {}
        if not isinstance(versions, Mapping):
            raise ValueError(f"{source}: modelTopology.versions must be an object, got {type(versions).__name__}")
        if not topology.get("node"):
            raise ValueError(f"{source}: the graph has no nodes")
        graph = build_graph(topology, signature)
        specs = artifacts.weight_specs or []
        names = [spec["name"] for spec in specs]
        validate(graph, names, source)
        init_graph = None
        init = artifacts.model_initializer
        if isinstance(init, Mapping) and init.get("node") is not None:
            init_graph = build_graph(init)
            # As TF.js, check only what the initializer runs: the nodes its outputs need (and its init
            # nodes), and the functions they call; its library may hold functions it never calls.
            init_outputs = _initializer_output_names(init_graph, artifacts.initializer_signature)
            validate(init_graph, names, f"{source} (modelInitializer)", init_outputs)
        weights = io.decode_weights(artifacts.weight_data or b"", specs) if specs else {}
        try:
            self._build(artifacts, signature, versions, graph, weights, init_graph)
        except BaseException:
            ENGINE.dispose(list(weights.values()))  # a failed load keeps no tensor
            self.executor = self.initializer = None
            raise
        return True

    def _build(
        self,
        artifacts: io.ModelArtifacts,
        signature: Any,
        versions: Mapping[str, Any],
        graph: Graph,
        weights: dict[str, Tensor],
        init_graph: Graph | None,
    ) -> None:
        """The executors (and optimized graph, and initializer) of checked artifacts and decoded weights."""
        self.artifacts = artifacts
        self.signature = dict(signature) if signature is not None else None
        self.version = f"{_js(versions.get('producer'))}.{_js(versions.get('minConsumer'))}"
        self.executor = self._make_executor(graph, weights)
        if optimize_enabled(self.load_options.get("optimize")):
            self._optimize(graph, weights)
        self._precompile()
        if init_graph is not None:
            self.initializer = GraphExecutor(init_graph)
            self.initializer.weights = weights
            self.initializer.resources = self.executor.resources
            self.initializer_signature = artifacts.initializer_signature

    def _make_executor(self, graph: Graph, weights: dict[str, Tensor]) -> GraphExecutor:
        executor = GraphExecutor(graph)
        executor.weights = weights
        for key, info in ((self.signature or {}).get("inputs") or {}).items():
            if isinstance(info, Mapping) and isinstance(info.get("name"), str):
                executor.signature_inputs[key] = info["name"]
        for key, info in ((self.signature or {}).get("outputs") or {}).items():
            if isinstance(info, Mapping) and isinstance(info.get("name"), str):
                executor.signature_outputs[key] = info["name"]
        return executor

    def _optimize(self, graph: Graph, weights: dict[str, Tensor]) -> None:
        """Run the optimized graph (folded, fused), keeping the original for what it cannot serve."""
        original = self._ready()
        try:
            optimized = optimize_graph(graph, weights)
        except Exception as exc:  # an optimizer bug must not make a model unloadable: run it as loaded
            logging.getLogger("ndflow").warning("graph model: optimizations skipped (%s: %s)", type(exc).__name__, exc)
            return
        executor = self._make_executor(optimized.graph, optimized.weights)
        executor.fallback, executor.baked = original, optimized.baked
        original.resources = executor.resources
        self.executor = executor
        self.optimization = optimized.stats

    def _precompile(self) -> None:
        """Plan the default execution (model inputs -> model outputs) at load, when it needs no async."""
        executor = self._ready()
        names = [executor.signature_inputs.get(n, n) for n in self.input_nodes]
        outputs = executor.map_outputs(self.output_nodes)
        if executor.needs_async(names, outputs):
            return
        try:
            executor.plan_for(names, outputs)
        except ValueError:
            pass  # inputs missing from the signature: execute() reports it

    def _original(self) -> GraphExecutor:
        """The executor of the graph as loaded (metadata and weights come from it)."""
        executor = self._ready()
        return executor.fallback if executor.fallback is not None else executor

    def _ready(self) -> GraphExecutor:
        if self._disposed:
            raise RuntimeError("GraphModel: the model has been disposed")
        if self.executor is None:
            raise RuntimeError("GraphModel: the model is not loaded; call load() or use nf.load_graph_model")
        return self.executor

    # -- metadata --------------------------------------------------------------------------------
    @property
    def model_version(self) -> str:
        """``"producer.minConsumer"`` of the GraphDef's versions (TF.js writes ``undefined`` for missing)."""
        return self.version

    @property
    def input_nodes(self) -> list[str]:
        """Input names: signature keys, or placeholder names."""
        graph = self._ready().graph
        return [graph.input_keys.get(n, n) for n in graph.inputs]

    @property
    def output_nodes(self) -> list[str]:
        """Output names: signature keys, or ``node`` / ``node:index`` names."""
        graph = self._ready().graph
        out = []
        for ref in graph.outputs:
            key = graph.output_keys.get(ref)
            out.append(key if key is not None else (f"{ref[0]}:{ref[1]}" if ref[1] else ref[0]))
        return out

    def _info(self, name: str, entry: Any) -> ModelTensorInfo:
        node = self._original().graph.nodes[name]
        sig_shape, sig_dtype = _signature_info(entry)
        shape = node.shape("shape") if node.has("shape") else sig_shape
        # a hash-table input (DT_RESOURCE, fed the table's handle) has no dtype, as in TF.js
        resource = (node.attr.get("dtype") or {}).get("type") == "DT_RESOURCE"
        dtype = None if resource else node.dtype("dtype") if node.has("dtype") else sig_dtype
        return ModelTensorInfo(name, shape, dtype)

    @property
    def inputs(self) -> list[ModelTensorInfo]:
        """Name, shape and dtype of each input (from the placeholders, else the signature)."""
        graph = self._ready().graph
        sig = (self.signature or {}).get("inputs") or {}
        return [self._info(n, sig.get(graph.input_keys.get(n, ""))) for n in graph.inputs]

    @property
    def outputs(self) -> list[ModelTensorInfo]:
        """Name, shape and dtype of each output (shape and dtype from the signature when it has them)."""
        graph = self._ready().graph
        sig = (self.signature or {}).get("outputs") or {}
        return [self._info(n, sig.get(graph.output_keys.get((n, i), ""))) for n, i in graph.outputs]

    @property
    def weights(self) -> dict[str, Tensor]:
        """The weights by Const node name (TF.js's ``weights`` holds one-element lists), as loaded."""
        return self._original().weights

    @property
    def metadata(self) -> dict[str, Any] | None:
        """``userDefinedMetadata`` of the model.json."""
        return self.artifacts.user_defined_metadata if self.artifacts is not None else None

    @property
    def model_signature(self) -> dict[str, Any] | None:
        """The signature (inputs and outputs by key), from the model.json or its metadata."""
        return self.signature

    @property
    def model_structured_output_keys(self) -> list[str] | None:
        """``userDefinedMetadata.structuredOutputKeys``: predict returns a dict with these keys."""
        return self.structured_output_keys

    # -- running ---------------------------------------------------------------------------------
    def _normalize_inputs(self, inputs: Inputs, made: list[Tensor]) -> dict[str, Tensor]:
        """A dict name -> Tensor from a tensor, a list (in ``input_nodes`` order) or a dict; arrays converted."""

        def as_tensor(value: Any) -> Tensor:
            if isinstance(value, Tensor):
                return value
            t = ops.tensor(np.asarray(value))
            made.append(t)
            return t

        captured = self._captured or {}
        sig_inputs = (self.signature or {}).get("inputs") or {}
        if isinstance(inputs, Mapping):
            feed = {str(k): as_tensor(v) for k, v in inputs.items()}
            for key, info in sig_inputs.items():
                rid = info.get("resourceId") if isinstance(info, Mapping) else None
                if rid is not None and rid in captured:
                    feed[key] = captured[rid]
            return feed
        values = [inputs] if isinstance(inputs, Tensor | np.ndarray) else list(inputs)
        names = self.input_nodes
        resource = {k for k, v in sig_inputs.items() if isinstance(v, Mapping) and v.get("resourceId") is not None}
        if len(values) + len(resource) != len(names):
            raise ValueError(
                f"Input tensor count mismatch, the graph model has {len(names) - len(resource)} non-resource "
                f"placeholders, while there are {len(values)} input tensors provided."
            )
        feed, it = {}, iter(values)
        for name in names:
            rid = sig_inputs.get(name, {}).get("resourceId") if name in resource else None
            feed[name] = captured[rid] if rid is not None else as_tensor(next(it))
        return feed

    @staticmethod
    def _normalize_outputs(outputs: str | Sequence[str] | None, default: list[str]) -> list[str]:
        if outputs is None:
            return default
        return [outputs] if isinstance(outputs, str) else list(outputs)

    def _initializer_outputs(self) -> list[str]:
        assert self.initializer is not None
        return _initializer_output_names(self.initializer.graph, self.initializer_signature)

    def _set_captured(self, outputs: list[Tensor]) -> None:
        self._captured = {}
        sig_outputs = (self.initializer_signature or {}).get("outputs") or {}
        for info, t in zip(sig_outputs.values(), outputs, strict=False):
            rid = info.get("resourceId") if isinstance(info, Mapping) else None
            if rid is not None:
                self._captured[rid] = t
        captured = {id(t) for t in self._captured.values()}
        tables = self._ready().resources.tables  # a table's handle stays with the table (freed with the model)
        for t in outputs:
            if id(t) not in captured and t.id not in tables:
                t.dispose()

    def _init_sync(self) -> None:
        if self._captured is None:
            if self.initializer is None:
                self._captured = {}
            else:
                self._set_captured(run_to_completion(self._init_async_outputs()))

    async def _init_async(self) -> None:
        if self._captured is None:
            if self.initializer is None:
                self._captured = {}
            else:
                self._set_captured(await self._init_async_outputs())

    async def _init_async_outputs(self) -> list[Tensor]:
        assert self.initializer is not None
        return await self.initializer.execute_async({}, self._initializer_outputs())

    @staticmethod
    def _unwrap(result: list[Tensor]) -> Tensor | list[Tensor]:
        return result[0] if len(result) == 1 else resolved(list(result))  # a list that awaits to itself

    def execute(self, inputs: Inputs, outputs: str | Sequence[str] | None = None) -> Tensor | list[Tensor]:
        """Run the graph: one tensor for one output, else a list (RuntimeError when it needs execute_async)."""
        executor = self._ready()
        self._init_sync()
        made: list[Tensor] = []
        try:
            feed = self._normalize_inputs(inputs, made)
            result = executor.execute(feed, self._normalize_outputs(outputs, self.output_nodes))
        finally:
            for t in made:
                t.dispose()
        return self._unwrap(result)

    async def execute_async(self, inputs: Inputs, outputs: str | Sequence[str] | None = None) -> Tensor | list[Tensor]:
        """Run any graph (control flow, dynamic shapes): one tensor for one output, else a list."""
        executor = self._ready()
        await self._init_async()
        made: list[Tensor] = []
        try:
            feed = self._normalize_inputs(inputs, made)
            result = await executor.execute_async(feed, self._normalize_outputs(outputs, self.output_nodes))
        finally:
            for t in made:
                t.dispose()
        return self._unwrap(result)

    def _structured(self, out: Tensor | list[Tensor]) -> Any:
        if not self.structured_output_keys:
            return out
        values = [out] if isinstance(out, Tensor) else out
        return resolved(dict(zip(self.structured_output_keys, values, strict=False)))

    def predict(self, inputs: Inputs, config: Mapping[str, Any] | None = None) -> ModelOutput:
        """``execute`` on the model's outputs (a dict when the model has structured output keys)."""
        return self._structured(self.execute(inputs, self.output_nodes))

    async def predict_async(self, inputs: Inputs, config: Mapping[str, Any] | None = None) -> Any:
        """``execute_async`` on the model's outputs (a dict when the model has structured output keys)."""
        return self._structured(await self.execute_async(inputs, self.output_nodes))

    def needs_async(self) -> bool:
        """Whether computing the model's outputs from its inputs needs ``execute_async``."""
        executor = self._ready()
        names = [executor.signature_inputs.get(n, n) for n in self.input_nodes]
        return executor.needs_async(names, executor.map_outputs(self.output_nodes))

    def save(self, handler_or_url: Any, config: Mapping[str, Any] | None = None) -> io.SaveResult:
        """Save the model's artifacts as loaded (TF.js ``GraphModel.save``)."""
        if self.artifacts is None:
            raise RuntimeError("GraphModel.save: the model is not loaded")
        return finish(io.resolve_save_handler(handler_or_url).save(self.artifacts), "GraphModel.save")

    def dispose(self) -> None:
        """Free every weight, the initializer's outputs and the hash tables."""
        if self._disposed:
            return
        self._disposed = True
        if self.executor is not None:
            self.executor.dispose()
            self.executor.resources.dispose()
        for t in (self._captured or {}).values():
            t.dispose()

    def __repr__(self) -> str:
        if self.executor is None or self._disposed:
            return f"GraphModel({self.model_url!r}, {'disposed' if self._disposed else 'not loaded'})"
        nodes = len(self._original().graph.nodes)
        return f"GraphModel({self.model_url!r}, nodes={nodes}, inputs={self.input_nodes})"


def _initializer_output_names(graph: Graph, signature: Mapping[str, Any] | None) -> list[str]:
    """What the initializer computes (TF.js's ``executeInitializerGraph``): the keys of the initializer
    signature's outputs, else (no signature, or one that names no output) the graph's default outputs (its
    sink nodes), as its run does."""
    names = list(((signature or {}).get("outputs") or {}).keys())
    return names or [f"{n}:{i}" if i else n for n, i in graph.outputs]


def _js(value: Any) -> str:
    """A value as JS template literals print it (``undefined`` for a missing one)."""
    return "undefined" if value is None else str(value)
