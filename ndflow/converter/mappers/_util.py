"""Helpers shared by the op mappers: registration, reading small tensors and TF attributes.

TF.js's converter reads "number" and "number[]" inputs (an axis, a shape, paddings) from their
tensors synchronously (``dataSync``); :func:`num`, :func:`ints` and :func:`nested` do the same.
TF string attributes come lowercased in TF.js (``'SAME'`` -> ``'same'``); :func:`lower_str` reads
them that way where case carries no meaning, while patterns and separators keep their case.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ... import ops as nf
from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.registry import Mapper, op
from ..runtime.constants import remembered


def mapper(*tf_ops: str, needs_async: bool = False) -> Callable[[Mapper], Mapper]:
    """Register ``fn`` for ``tf_ops``; it runs in a tidy scope and never returns one of its inputs.
    The registered function's ``untidied`` attribute is ``fn`` itself, for executors that track what
    each node makes on their own (``converter.program``)."""

    def wrap(fn: Mapper) -> Mapper:
        """Register the wrapped ``fn``."""

        @functools.wraps(fn)
        def run(node: Node, inputs: list[Any], ctx: Any) -> Any:
            return ENGINE.tidy(None, _call, (fn, node, inputs, ctx), {})

        run.untidied = fn  # type: ignore[attr-defined]
        op(*tf_ops, needs_async=needs_async)(run)
        return run

    return wrap


def _call(fn: Mapper, node: Node, inputs: list[Any], ctx: Any) -> Any:
    return fresh(fn(node, inputs, ctx), inputs)


def fresh(out: Any, inputs: Sequence[Any]) -> Any:
    """``out`` with any tensor that is also an input replaced by a clone (the executor disposes
    inputs and outputs on their own schedules, so they must be distinct tensors). Kept tensors
    (resource handles) pass through: their identity is what they mean."""
    ids = {id(t) for t in inputs if isinstance(t, Tensor) and not t.kept}
    if isinstance(out, list | tuple):
        return [nf.clone(t) if id(t) in ids else t for t in out]
    return nf.clone(out) if id(out) in ids else out


# -- small tensors read synchronously (constants' values remembered: ``runtime.constants``) --------
def _num(t: Tensor) -> Any:
    value = t.data_sync()[0]
    return value.item() if hasattr(value, "item") else value


def _copy(value: Any) -> Any:
    return [_copy(v) for v in value] if isinstance(value, list) else value


def num(t: Tensor) -> Any:
    """The first element of ``t`` as a Python number (TF.js's ``number`` input: ``dataSync()[0]``)."""
    return remembered(t, "num", _num)


def ints(t: Tensor) -> list[int]:
    """``t``'s elements as a flat list of ints (a shape, an axis list, block sizes)."""
    return list(remembered(t, "ints", lambda x: tuple(int(v) for v in x.data_sync())))


def nested(t: Tensor) -> Any:
    """``t`` as nested lists (paddings ``[[before, after], ...]``)."""
    return _copy(remembered(t, "nested", lambda x: x.array_sync()))


def axes(t: Tensor) -> int | list[int]:
    """A reduction axis input: a scalar becomes an int, a vector a list (``[]`` reduces nothing)."""
    return int(num(t)) if t.rank == 0 else ints(t)


# -- attributes --------------------------------------------------------------------------------
def attr_num(node: Node, name: str, default: float = 0) -> float:
    """A number attribute read as TF.js does: its ``i`` field, else its ``f`` field, else ``default``."""
    value = node.attr.get(name) or {}
    if value.get("i") is not None:
        return int(value["i"])
    if value.get("f") is not None:
        return float(value["f"])
    return default


def lower_str(node: Node, name: str, default: str | None = None) -> str | None:
    """A string attribute, lowercased (``padding``, ``mode``, ``method``: TF.js lowercases them)."""
    value = node.str(name)
    return default if value is None else value.lower()


def data_format(node: Node, default: str = "NHWC") -> str:
    """The ``data_format`` attribute, uppercased."""
    return (node.str("data_format") or default).upper()


def channels_first(node: Node) -> bool:
    """Whether ``data_format`` puts channels before the spatial axes (NCHW, NCDHW, NCW)."""
    fmt = data_format(node)
    return len(fmt) > 2 and fmt[1] == "C"


def spatial(values: Sequence[int], node: Node, n: int = 2) -> list[int]:
    """The ``n`` spatial entries of a per-dimension attribute (``strides``, ``ksize``, ``dilations``)
    given in the node's data-format order."""
    start = 2 if channels_first(node) else 1
    if len(values) == 1:
        return [int(values[0])] * n
    if len(values) == n:
        return [int(v) for v in values]
    return [int(v) for v in values[start : start + n]]


def padding(node: Node, rank: int = 4) -> Any:
    """``'same'``, ``'valid'`` or explicit pairs (one per dimension, in data-format order) from
    ``padding`` and ``explicit_paddings``."""
    pad = lower_str(node, "padding", "valid")
    if pad != "explicit":
        return pad
    flat = node.ints("explicit_paddings", []) or []
    if len(flat) != 2 * rank:
        raise ValueError(
            f"graph model: node '{node.name}' ({node.op}) has padding EXPLICIT but explicit_paddings "
            f"holds {len(flat)} values, expected {2 * rank}"
        )
    return [[flat[2 * i], flat[2 * i + 1]] for i in range(rank)]


def to_channels_last(x: Tensor) -> Tensor:
    """NC... -> N...C."""
    return nf.transpose(x, [0, *range(2, x.rank), 1])


def to_channels_first(x: Tensor) -> Tensor:
    """N...C -> NC...."""
    return nf.transpose(x, [0, x.rank - 1, *range(1, x.rank - 1)])


def fail(node: Node, message: str) -> ValueError:
    """A ValueError naming the node and its op."""
    return ValueError(f"graph model: node '{node.name}' ({node.op}): {message}")
