"""TF.js's op registry for graph models: ``nf.register_op``, ``nf.get_registered_op``, ``nf.deregister_op``.

TF.js's contract (tfjs-converter's ``registerOp``): the function is called with one node object holding
``inputs`` (the node's input tensors, in order) and ``attrs`` (every attribute of the node, decoded: numbers,
strings lowercased, booleans, dtype names, shapes, lists of these, tensors), and returns a tensor or a list
of tensors (or an awaitable of one, for ``execute_async``). A registered op takes precedence over ndflow's own
mapper of the same TF op while it is registered (graphs that use such an op load without the load-time
optimizer, which could otherwise fold or fuse the op away); ``deregister_op`` brings the built-in one back. As
in TF.js, register before loading the model.

ndflow's lower-level mapper contract (``fn(node, inputs, ctx)``, ``nf.converter.register_op``) stays as it is.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import coroutines
from ..core.tensor import Tensor
from .load import registry
from .load.graph import TF_DTYPES, Node, decode_string

OpExecutor = Callable[["GraphNode"], Any]

__all__ = ["GraphNode", "OpMapper", "deregister_op", "get_registered_op", "register_op"]


@dataclass
class GraphNode:
    """The node a registered op function receives: ``inputs`` (tensors) and ``attrs`` (decoded attributes), plus
    the node's ``name`` and ``op`` (ndflow additions)."""

    inputs: list[Tensor]
    attrs: dict[str, Any]
    name: str = ""
    op: str = ""


@dataclass
class OpMapper:
    """What :func:`get_registered_op` returns, as TF.js's ``OpMapper`` of a custom op."""

    tf_op_name: str
    custom_executor: OpExecutor
    category: str = "custom"
    inputs: list[Any] = field(default_factory=list)
    attrs: list[Any] = field(default_factory=list)


_CUSTOM: dict[str, OpMapper] = {}
_BUILTIN: dict[str, tuple[registry.Mapper | None, bool]] = {}


def register_op(name: str, op_func: OpExecutor) -> None:
    """Run TF op ``name`` of graph models with ``op_func(node)``; replaces an earlier registration of ``name``."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_op: argument 'name' must be a TF op name (a non-empty str), got {name!r}")
    if not callable(op_func):
        raise TypeError(f"register_op: argument 'op_func' must be callable, got {type(op_func).__name__}")
    if name not in _CUSTOM:
        _BUILTIN[name] = (registry.get_mapper(name), registry.needs_async(name))
    _CUSTOM[name] = OpMapper(name, op_func)
    mapper = _mapper(name, op_func)
    mapper.overrides_builtin = _BUILTIN[name][0] is not None  # type: ignore[attr-defined]  # read by the optimizer
    registry.register_op(name, mapper, needs_async=False)


def get_registered_op(name: str) -> OpMapper | None:
    """The registration of ``name`` made with :func:`register_op` (``None`` if there is none)."""
    return _CUSTOM.get(name)


def deregister_op(name: str) -> None:
    """Forget the registration of ``name``; ndflow's own mapper of that op (if any) runs it again."""
    if _CUSTOM.pop(name, None) is None:
        return
    builtin, is_async = _BUILTIN.pop(name)
    if builtin is None:
        registry.unregister_op(name)
    else:
        registry.register_op(name, builtin, is_async)


def _mapper(name: str, op_func: OpExecutor) -> registry.Mapper:
    def run(node: Node, inputs: list[Tensor | None], ctx: Any) -> Any:
        graph_node = GraphNode([t for t in inputs if t is not None], node_attrs(node, ctx), node.name, node.op)
        result = op_func(graph_node)
        if inspect.isawaitable(result):
            result = coroutines.drive_without_loop(
                _awaited(result), f"custom op '{name}': its function awaited something that suspends"
            )
        if isinstance(result, Tensor):
            return result
        if isinstance(result, list | tuple) and all(isinstance(t, Tensor) for t in result):
            return list(result)
        raise TypeError(
            f"custom op '{name}': the registered function must return a Tensor or a list of Tensors, "
            f"got {type(result).__name__}"
        )

    run.__name__ = f"custom_op_{name}"
    return run


async def _awaited(value: Any) -> Any:
    return await value


def node_attrs(node: Node, ctx: Any = None) -> dict[str, Any]:
    """A node's attributes decoded as TF.js's custom-op node gives them."""
    return {key: _attr_value(node, key, raw, ctx) for key, raw in node.attr.items() if isinstance(raw, Mapping)}


def _attr_value(node: Node, key: str, raw: Mapping[str, Any], ctx: Any) -> Any:
    if raw.get("tensor") is not None:
        return _tensor_attr(node, key, ctx)
    if raw.get("i") is not None or raw.get("f") is not None:
        value = raw["i"] if raw.get("i") is not None else raw["f"]
        return value if isinstance(value, int | float) and not isinstance(value, bool) else _js_number(value)
    if raw.get("s") is not None:
        return decode_string(raw["s"]).lower()
    if raw.get("b") is not None:
        return bool(raw["b"])
    if raw.get("shape") is not None:
        return node.shape(key)
    if raw.get("type") is not None:
        return TF_DTYPES.get(raw["type"])
    listed = raw.get("list")
    if isinstance(listed, Mapping):
        if listed.get("i") is not None or listed.get("f") is not None:
            values = listed["i"] if listed.get("i") is not None else listed["f"]
            return [_js_number(v) if isinstance(v, str) else v for v in values]
        if listed.get("s") is not None:
            return [decode_string(v).lower() for v in listed["s"]]
        if listed.get("shape") is not None:
            return [
                None if s.get("unknownRank") else [int(d.get("size", -1)) for d in s.get("dim", [])]
                for s in listed["shape"]
            ]
        if listed.get("b") is not None:
            return [bool(v) for v in listed["b"]]
        if listed.get("type") is not None:
            return [TF_DTYPES.get(v) for v in listed["type"]]
    return None


def _tensor_attr(node: Node, key: str, ctx: Any) -> Any:
    weights = getattr(ctx, "weights", None)
    if isinstance(weights, Mapping):
        return weights.get(key)
    return None


def _js_number(value: Any) -> float | int:
    """A JSON number sent as a string (int64 attributes): an int when it has no fraction, as JS's parse does."""
    number = float(value)
    return int(number) if number.is_integer() else number
