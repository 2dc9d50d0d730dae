"""Op mappers: how each TF op type of a graph model runs as ndflow ops.

A mapper is ``fn(node, inputs, ctx) -> Tensor | list[Tensor]``: ``node`` is the graph
:class:`~ndflow.converter.load.graph.Node` (attributes through ``node.int(...)``, ``node.str(...)``...),
``inputs`` its data inputs in order (tensors, or ``None`` where a control-flow branch produced
nothing), and ``ctx`` the execution context (weights, TensorArrays/TensorLists, control-flow frame,
the model's functions). Mapper modules in ``ndflow/converter/mappers/`` register with
:func:`register_op` when imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Mapper = Callable[..., Any]

_MAPPERS: dict[str, Mapper] = {}
_ASYNC: set[str] = set()


def register_op(tf_op: str, fn: Mapper, needs_async: bool = False) -> None:
    """Register the mapper of a TF op type; ``needs_async`` ops (NonMaxSuppression*, Where, control
    flow whose result depends on data) make a model need ``execute_async``."""
    _MAPPERS[tf_op] = fn
    if needs_async:
        _ASYNC.add(tf_op)


def op(*tf_ops: str, needs_async: bool = False) -> Callable[[Mapper], Mapper]:
    """Decorator form: ``@op("Conv2D")``."""

    def wrap(fn: Mapper) -> Mapper:
        for name in tf_ops:
            register_op(name, fn, needs_async)
        return fn

    return wrap


def unregister_op(tf_op: str) -> Mapper | None:
    """Remove the mapper of ``tf_op`` (returned; ``None`` if it had none)."""
    _ASYNC.discard(tf_op)
    return _MAPPERS.pop(tf_op, None)


def get_mapper(tf_op: str) -> Mapper | None:
    return _MAPPERS.get(tf_op)


def supported_ops() -> list[str]:
    return sorted(_MAPPERS)


def needs_async(tf_op: str) -> bool:
    return tf_op in _ASYNC
