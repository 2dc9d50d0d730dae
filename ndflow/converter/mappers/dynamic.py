"""Ops with data-dependent output shapes (TF.js converter category ``dynamic``): non-maximum suppression,
``Where``, ``ListDiff``. They read their inputs' values, so a graph with them needs ``execute_async``.

Beyond TF.js: ``NonMaxSuppressionV5`` also outputs ``valid_outputs`` (TF's third output).
"""

from __future__ import annotations

import math
from typing import Any

from ... import ops
from ...core.globals import tidy
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.registry import op


def _num(t: Tensor | None, default: float) -> float:
    if t is None:
        return default
    value = t.data_sync()[0]
    return float(value.item() if hasattr(value, "item") else value)


def _nms_args(node: Node, inputs: list[Any]) -> tuple[Tensor, Tensor, int, float, float]:
    if len(inputs) < 4 or any(t is None for t in inputs[:4]):
        raise ValueError(f"graph model: node '{node.name}' ({node.op}) needs at least 4 inputs, got {len(inputs)}")
    boxes, scores = inputs[0], inputs[1]
    max_output = int(_num(inputs[2], 0))
    iou = _num(inputs[3], 0.5)
    score = _num(inputs[4] if len(inputs) > 4 else None, -math.inf)
    return boxes, scores, max_output, iou, score


@op("NonMaxSuppressionV2", "NonMaxSuppressionV3", needs_async=True)
async def non_max_suppression(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Selected box indices (int32)."""
    boxes, scores, max_output, iou, score = _nms_args(node, inputs)
    return await ops.image.non_max_suppression_async(boxes, scores, max_output, iou, score)


@op("NonMaxSuppressionV4", needs_async=True)
async def non_max_suppression_padded(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Selected indices (padded with ``pad_to_max_output_size``) and how many are valid."""
    boxes, scores, max_output, iou, score = _nms_args(node, inputs)
    pad = bool(node.bool("pad_to_max_output_size", False))
    result = await ops.image.non_max_suppression_padded_async(boxes, scores, max_output, iou, score, pad)
    return list(result)


@op("NonMaxSuppressionV5", needs_async=True)
async def non_max_suppression_with_score(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Selected indices, their (Soft-NMS) scores, and how many there are."""
    boxes, scores, max_output, iou, score = _nms_args(node, inputs)
    sigma = _num(inputs[5] if len(inputs) > 5 else None, 0.0)
    result = await ops.image.non_max_suppression_with_score_async(boxes, scores, max_output, iou, score, sigma)
    indices, selected = result[0], result[1]
    return [indices, selected, ops.scalar(indices.shape[0], "int32")]


@op("Where", needs_async=True)
async def where(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Coordinates of the true (non-zero) entries, int32 ``[n, rank]``."""
    if not inputs or inputs[0] is None:
        raise ValueError(f"graph model: node '{node.name}' (Where) needs its condition input")
    condition = tidy(lambda: ops.cast(inputs[0], "bool"))
    try:
        return await ops.where_async(condition)
    finally:
        condition.dispose()


@op("ListDiff", needs_async=True)
async def list_diff(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Values of ``x`` not in ``y`` and their indices in ``x``."""
    if len(inputs) < 2 or inputs[0] is None or inputs[1] is None:
        raise ValueError(f"graph model: node '{node.name}' (ListDiff) needs inputs x and y")
    return list(await ops.setdiff1d_async(inputs[0], inputs[1]))
