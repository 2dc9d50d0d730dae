"""deeplearn.js 0.x's ``Session``: evaluates a ``Graph`` and trains its variables.

``session.eval(tensor, feedEntries)`` runs the nodes that ``tensor`` depends on, with the
placeholders fed by feed entries. ``session.train(cost, feedEntries, batchSize, optimizer,
costReduction)`` reads ``batchSize`` examples from the feed entries' input providers, runs the
graph once per example and takes one optimizer step on the mean cost of the batch (deeplearn.js
summed the per-example gradients and scaled the step by ``1 / batchSize``: the same update).

It runs on the modern engine: the graph's variables become ``nf.variable``s on first use (the
session owns them: ``dispose()`` frees them and the optimizers' state), gradients come from
``nf.variable_grads`` through ``optimizer.minimize``, and every intermediate array is freed by
``nf.tidy``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import ops
from ..core.engine import ENGINE
from ..core.globals import keep
from ..core.tensor import Tensor, Variable
from .graph import ConstantNode, Graph, Node, PlaceholderNode, SymbolicTensor, VariableNode
from .ndarray import to_legacy


class CostReduction(enum.IntEnum):
    """What ``Session.train`` returns: nothing (a zero), the batch's summed cost, or its mean."""

    NONE = 0
    SUM = 1
    MEAN = 2


@dataclass
class FeedEntry:
    """Feeds ``data`` (an NDArray, numpy values, or an input provider) to the symbolic ``tensor``."""

    tensor: SymbolicTensor
    data: Any


def _is_provider(data: Any) -> bool:
    return callable(getattr(data, "getNextCopy", None)) and callable(getattr(data, "disposeCopy", None))


def _entries(feedEntries: Sequence[FeedEntry | Mapping[str, Any]] | None) -> list[FeedEntry]:
    """Feed entries as ``FeedEntry`` objects (plain dicts ``{'tensor': t, 'data': d}`` are accepted)."""
    out: list[FeedEntry] = []
    for i, entry in enumerate(feedEntries or ()):
        if isinstance(entry, Mapping):
            if "tensor" not in entry or "data" not in entry:
                raise TypeError(f"feed entry {i} must have 'tensor' and 'data', got keys {sorted(entry)}")
            entry = FeedEntry(entry["tensor"], entry["data"])
        if not isinstance(entry, FeedEntry):
            raise TypeError(f"feed entry {i} must be a FeedEntry or a dict, got {type(entry).__name__}")
        if not isinstance(entry.tensor, SymbolicTensor):
            raise TypeError(f"feed entry {i}: 'tensor' must be a graph tensor, got {type(entry.tensor).__name__}")
        if any(e.tensor is entry.tensor for e in out):
            raise ValueError(f"feed entry {i}: tensor {entry.tensor.id} is fed twice")
        out.append(entry)
    return out


class Session:
    """Runs and trains a ``Graph``: ``Session(graph, math)``."""

    def __init__(self, graph: Graph, math: Any = None) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"Session: graph must be a Graph, got {type(graph).__name__}")
        self.graph = graph
        self.math = math
        self._variables: dict[int, Variable] = {}
        self._constants: dict[int, Tensor] = {}
        self._optimizers: list[Any] = []
        self._orders: dict[tuple[tuple[int, ...], tuple[int, ...]], list[Node]] = {}

    # -- public API --------------------------------------------------------------------------------
    def eval(self, tensor: SymbolicTensor, feedEntries: Sequence[FeedEntry | Mapping[str, Any]] | None = None) -> Any:
        """The value of ``tensor`` given the feed entries (a new array, disposed by the enclosing scope)."""
        return self.evalAll([tensor], feedEntries)[0]

    def evalAll(
        self, tensors: Sequence[SymbolicTensor], feedEntries: Sequence[FeedEntry | Mapping[str, Any]] | None = None
    ) -> list[Any]:
        """The values of several tensors, computed in one pass."""
        self._check_safe("eval")
        entries = _entries(feedEntries)
        order = self._order(list(tensors), {e.tensor.id for e in entries})

        def run() -> list[Tensor]:
            values, copies = self._load(entries)
            borrowed = {t.id for t in values.values()}
            self._forward(order, values)
            results = [values[t.id] for t in tensors]
            # hand out new arrays, never the caller's feeds nor the graph's variables and constants
            results = [ops.clone(r) if r.id in borrowed or isinstance(r, Variable) or r.kept else r for r in results]
            for provider, copy in copies:
                provider.disposeCopy(copy)
            return results

        return to_legacy(ENGINE.tidy("Session.eval", run, (), {}))

    def train(
        self,
        costTensor: SymbolicTensor,
        feedEntries: Sequence[FeedEntry | Mapping[str, Any]],
        batchSize: int,
        optimizer: Any,
        costReduction: CostReduction | int = CostReduction.NONE,
    ) -> Any:
        """Train one batch; returns the batch's cost as ``costReduction`` says (a zero for ``NONE``)."""
        self._check_safe("train")
        if not isinstance(costTensor, SymbolicTensor) or costTensor.shape != []:
            shape = getattr(costTensor, "shape", None)
            raise ValueError(f"train: the cost tensor for training must be a scalar value, got shape {shape}")
        if isinstance(batchSize, bool) or not isinstance(batchSize, int) or batchSize < 1:
            raise ValueError(f"train: batchSize must be a positive integer, got {batchSize!r}")
        reduction = CostReduction(costReduction)
        entries = _entries(feedEntries)
        for e in entries:
            if not _is_provider(e.data):
                raise TypeError(
                    "train: training requires feed entries whose data are input providers, not arrays "
                    f"(tensor {e.tensor.id} is fed a {type(e.data).__name__})"
                )
        order = self._order([costTensor], {e.tensor.id for e in entries})
        specified = getattr(optimizer, "specifiedVariableList", None)
        if specified is not None:
            nodes = [n.node if isinstance(n, SymbolicTensor) else n for n in specified]
        else:
            nodes = [n for n in order if isinstance(n, VariableNode)]
        if not nodes or not all(isinstance(n, VariableNode) for n in nodes):
            raise ValueError("train: the cost depends on no variable to train (or specifiedVariableList is not nodes)")
        var_list = [self._variable(n) for n in nodes]
        if all(o is not optimizer for o in self._optimizers):
            self._optimizers.append(optimizer)

        def run() -> Tensor:
            batch = [self._load(entries) for _ in range(batchSize)]

            def mean_cost() -> Tensor:
                total = None
                for feeds, _ in batch:
                    values = dict(feeds)
                    self._forward(order, values)
                    cost = values[costTensor.id]
                    total = cost if total is None else ops.add(total, cost)
                return ops.div(total, batchSize)

            mean = optimizer.minimize(mean_cost, True, var_list)
            for _, copies in batch:
                for provider, copy in copies:
                    provider.disposeCopy(copy)
            if reduction is CostReduction.MEAN:
                return mean
            if reduction is CostReduction.SUM:
                return ops.mul(mean, batchSize)
            return ops.scalar(0)

        return to_legacy(ENGINE.tidy("Session.train", run, (), {}))

    def dispose(self) -> None:
        """Free the variables this session made of the graph's, its constants and its optimizers' state."""
        for v in self._variables.values():
            v.dispose()
        for c in self._constants.values():
            c.dispose()
        for optimizer in self._optimizers:
            optimizer.dispose()
        self._variables, self._constants, self._optimizers = {}, {}, []

    # -- internals ---------------------------------------------------------------------------------
    def _check_safe(self, op: str) -> None:
        check = getattr(self.math, "_check_safe", None)
        if check is not None:
            check(f"Session.{op}")

    def _order(self, tensors: list[SymbolicTensor], fed: set[int]) -> list[Node]:
        """The nodes to run, inputs first; fed tensors cut the graph (their inputs are not needed)."""
        for t in tensors:
            if not isinstance(t, SymbolicTensor) or t.node is None or t.node.graph is not self.graph:
                raise ValueError(f"eval: {t!r} is not a tensor of this session's graph")
        key = (tuple(sorted(t.id for t in tensors)), tuple(sorted(fed)))
        cached = self._orders.get(key)
        if cached is not None:
            return cached
        order: list[Node] = []
        seen: set[int] = set()
        stack: list[tuple[Node, bool]] = [(t.node, False) for t in reversed(tensors)]  # type: ignore[misc]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node.id in seen:
                continue
            seen.add(node.id)
            stack.append((node, True))
            if node.output.id in fed:
                continue
            stack.extend((t.node, False) for t in reversed(node.inputs.values()) if t.node.id not in seen)
        for node in order:
            if isinstance(node, PlaceholderNode) and node.output.id not in fed:
                raise ValueError(f'Placeholder node "{node.name}" {node.output.shape} not present in feed dictionary')
        self._orders[key] = order
        return order

    def _load(self, entries: list[FeedEntry]) -> tuple[dict[int, Tensor], list[tuple[Any, Tensor]]]:
        """The arrays of one example: ``{tensor id: array}`` and the provider copies to give back."""
        values: dict[int, Tensor] = {}
        copies: list[tuple[Any, Tensor]] = []
        for e in entries:
            if _is_provider(e.data):
                t = e.data.getNextCopy()
                copies.append((e.data, t))
            elif isinstance(e.data, Tensor):
                t = e.data
            else:
                t = ops.tensor(e.data)
            if list(t.shape) != e.tensor.shape:
                raise ValueError(
                    f"Error loading FeedEntry: feeding NDArray of shape {list(t.shape)} does not match "
                    f"Tensor (id: {e.tensor.id}) shape: {e.tensor.shape}"
                )
            values[e.tensor.id] = t
        return values, copies

    def _forward(self, order: list[Node], values: dict[int, Tensor]) -> None:
        for node in order:
            if node.output.id in values:
                continue
            if isinstance(node, VariableNode):
                values[node.output.id] = self._variable(node)
            elif isinstance(node, ConstantNode):
                values[node.output.id] = self._constant(node)
            else:
                inputs = {name: values[t.id] for name, t in node.inputs.items()}
                values[node.output.id] = node.forward(inputs)  # type: ignore[attr-defined]

    def _variable(self, node: VariableNode) -> Variable:
        """The variable holding ``node``'s value, made from its data on first use."""
        data = node.data
        if data.is_disposed:
            raise RuntimeError(
                f"variable '{node.name}' is disposed (the session that trained it was disposed, or graph.dispose())"
            )
        if isinstance(data, Variable):  # made by this session, or by another session on the same graph
            return data
        name, n = node.name, 1
        while name in ENGINE.variables:
            name, n = f"{node.name}_{n}", n + 1
        v = to_legacy(ops.variable(data, True, name))
        data.dispose()  # the graph owned it; the variable now holds the value
        node.data = v
        self._variables[node.id] = v
        return v

    def _constant(self, node: ConstantNode) -> Tensor:
        if isinstance(node.data, Tensor):
            return node.data
        t = self._constants.get(node.id)
        if t is None:
            t = self._constants[node.id] = to_legacy(keep(ops.tensor(node.data, None, "float32")))
        return t
