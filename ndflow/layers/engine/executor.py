"""Eager execution of a graph of layers: feed values for some symbolic tensors, fetch others.

``execute(fetches, feed_dict, kwargs)`` sorts the symbolic tensors the fetches depend on
topologically and applies each layer once per node, in order. Unless ``kwargs['training']`` is
set (a gradient needs the intermediates), each intermediate value is disposed as soon as its
last consumer has run, as TF.js does. Masks travel with their tensors. The sort is cached per
(fetches, feeds) combination, like TF.js's LRU cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ...core.tensor import Tensor
from ...ops import cast
from ..utils import singleton_or_list, to_list
from .topology import SymbolicTensor

_CACHE_MAX_ENTRIES = 100
_sorted_cache: OrderedDict[tuple, tuple[list[SymbolicTensor], dict[int, int]]] = OrderedDict()


class FeedDict:
    """Values (and masks) for symbolic tensors, keyed by the symbolic tensor."""

    def __init__(self, feeds: Sequence[tuple[SymbolicTensor, Tensor]] | FeedDict | None = None) -> None:
        self._values: dict[int, Tensor] = {}
        self._masks: dict[int, Tensor | None] = {}
        self._name_to_id: dict[str, int] = {}
        if isinstance(feeds, FeedDict):
            self._values.update(feeds._values)
            self._masks.update(feeds._masks)
            self._name_to_id.update(feeds._name_to_id)
        elif feeds is not None:
            for key, value in feeds:
                self.add(key, value)

    def add(self, key: SymbolicTensor, value: Tensor, mask: Tensor | None = None) -> FeedDict:
        """Feed ``value`` for ``key`` (cast to the key's dtype if needed)."""
        if key.id in self._values:
            raise ValueError(f"Duplicate key: name={key.name}, id={key.id}")
        if not isinstance(value, Tensor):
            raise TypeError(f"the value fed for {key.name} must be a Tensor, got {type(value).__name__}")
        if key.dtype is not None and key.dtype != value.dtype:
            try:
                value = cast(value, key.dtype)
            except Exception as exc:
                raise ValueError(
                    f"The dtype of the feed ({value.dtype}) can not be cast to the dtype of the key "
                    f"'{key.name}' ({key.dtype})."
                ) from exc
        self._values[key.id] = value
        self._name_to_id[key.name] = key.id
        if mask is not None:
            self._masks[key.id] = mask
        return self

    def has_key(self, key: SymbolicTensor) -> bool:
        """Whether ``key`` has a value."""
        return key.id in self._values

    def names(self) -> list[str]:
        """The names of the fed symbolic tensors."""
        return list(self._name_to_id)

    def get_value(self, key: SymbolicTensor | str) -> Tensor:
        """The value fed for ``key`` (a symbolic tensor or its name)."""
        key_id = key.id if isinstance(key, SymbolicTensor) else self._name_to_id.get(key)
        if key_id is None or key_id not in self._values:
            name = key.name if isinstance(key, SymbolicTensor) else key
            raise ValueError(f"No value is fed for the symbolic tensor {name!r}")
        return self._values[key_id]

    def get_mask(self, key: SymbolicTensor | str) -> Tensor | None:
        """The mask fed for ``key``, if any."""
        key_id = key.id if isinstance(key, SymbolicTensor) else self._name_to_id.get(key)
        return self._masks.get(key_id)


def _topological_sort(
    fetches: list[SymbolicTensor], feed_dict: FeedDict
) -> tuple[list[SymbolicTensor], dict[int, int]]:
    """The symbolic tensors needed for ``fetches`` in dependency order, and how many consumers each has.

    TF.js's iterative depth-first sort, keyed by tensor id rather than by name (names can repeat
    across graphs, ids cannot).
    """
    sorted_all: list[SymbolicTensor] = []
    seen: set[int] = set()
    recipients: dict[int, set[int]] = {}
    feeds = set(feed_dict._values)
    for fetch in fetches:
        visited = set(feeds)
        stack = [fetch]
        marks: list[int] = []
        while stack:
            top = stack[-1]
            if top.id in visited:
                stack.pop()
                continue
            top_is_marked = bool(marks) and marks[-1] == len(stack) - 1
            if not top.inputs or top_is_marked:
                stack.pop()
                if top.id not in seen:
                    sorted_all.append(top)
                    seen.add(top.id)
                visited.add(top.id)
                if top_is_marked:
                    marks.pop()
            else:
                marks.append(len(stack) - 1)
                for x in top.inputs:
                    recipients.setdefault(x.id, set()).add(top.id)
                    if x.id not in visited:
                        stack.append(x)
    return sorted_all, {key: len(users) for key, users in recipients.items()}


def _sorted(fetches: list[SymbolicTensor], feed_dict: FeedDict) -> tuple[list[SymbolicTensor], dict[int, int]]:
    key = (tuple(f.id for f in fetches), tuple(sorted(feed_dict._values)))
    hit = _sorted_cache.get(key)
    if hit is not None:
        _sorted_cache.move_to_end(key)
        return hit
    result = _topological_sort(fetches, feed_dict)
    _sorted_cache[key] = result
    if len(_sorted_cache) > _CACHE_MAX_ENTRIES:
        _sorted_cache.popitem(last=False)
    return result


def _node_outputs(symbolic: SymbolicTensor) -> list[SymbolicTensor]:
    """Every output of the node that produced ``symbolic``."""
    layer = symbolic.source_layer
    if symbolic.node_index is not None and symbolic.node_index < len(layer.inbound_nodes):
        node = layer.inbound_nodes[symbolic.node_index]
        if any(t is symbolic for t in node.output_tensors):
            return list(node.output_tensors)
    for node in layer.inbound_nodes:
        if any(t is symbolic for t in node.output_tensors):
            return list(node.output_tensors)
    return [symbolic]


def execute(
    fetches: SymbolicTensor | Sequence[SymbolicTensor], feed_dict: FeedDict, kwargs: dict[str, Any] | None = None
) -> Any:
    """The values of ``fetches`` given the values in ``feed_dict`` (a list if ``fetches`` is a list)."""
    from .inputs import InputLayer

    kwargs = {k: v for k, v in (kwargs or {}).items() if k != "mask"}  # masks travel with their tensors
    training = bool(kwargs.get("training", False))
    fetch_list = to_list(fetches)
    if not fetch_list:
        raise ValueError("execute: expected at least one fetch, got none")
    output_ids = [t.id for t in fetch_list]
    final: list[Tensor | None] = [feed_dict._values.get(key) for key in output_ids]
    ordered, counts = _sorted(fetch_list, feed_dict)
    remaining = {} if training else dict(counts)
    internal = FeedDict(feed_dict)
    for symbolic in ordered:
        layer = symbolic.source_layer
        if isinstance(layer, InputLayer):
            if not internal.has_key(symbolic):
                raise ValueError(f"No value is provided for the model's input {symbolic.name!r}")
            continue
        values, masks, to_dispose = [], [], []
        for x in symbolic.inputs:
            value = internal.get_value(x)
            values.append(value)
            masks.append(internal.get_mask(x))
            if not training:
                remaining[x.id] -= 1
                if (
                    remaining[x.id] == 0
                    and not feed_dict.has_key(x)
                    and x.id not in output_ids
                    and not value.is_disposed
                    and not x.source_layer.stateful
                ):
                    to_dispose.append(value)
        node_kwargs = {k: v for k, v in symbolic.call_args.items() if k != "mask"}
        node_kwargs.update(kwargs)
        if any(m is not None for m in masks):
            node_kwargs["mask"] = singleton_or_list(masks)
        layer_inputs = singleton_or_list(values)
        outputs = to_list(layer.apply(layer_inputs, node_kwargs))
        output_mask = layer.compute_mask(layer_inputs, node_kwargs.get("mask")) if layer.supports_masking else None
        output_masks = to_list(output_mask) if isinstance(output_mask, list | tuple) else [output_mask] * len(outputs)
        for i, out_symbolic in enumerate(_node_outputs(symbolic)):
            if not internal.has_key(out_symbolic):
                internal.add(out_symbolic, outputs[i], output_masks[i] if i < len(output_masks) else None)
            for j, key in enumerate(output_ids):
                if key == out_symbolic.id:
                    final[j] = outputs[i]
        for value in to_dispose:
            if all(value is not v for v in final):
                value.dispose()
    return final if isinstance(fetches, list | tuple) else final[0]


__all__ = ["FeedDict", "execute"]
