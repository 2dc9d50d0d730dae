"""Non-maximum suppression ops of ``nf.image`` (re-exported by ``ndflow.ops.image``).

``boxes`` is ``[num_boxes, 4]`` of ``[y1, x1, y2, x2]`` (either diagonal), ``scores`` is
``[num_boxes]``. Boxes are taken greedily by score; a box whose IoU with a kept box is
>= ``iou_threshold`` is dropped, and only boxes scoring above ``score_threshold`` are considered.
The ``*_async`` twins are coroutines, as in TF.js: they await the inputs' values before running.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, NamedTuple

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted


class NonMaxSuppressionWithScore(NamedTuple):
    """``non_max_suppression_with_score``'s result: kept box indices (int32) and their scores (float32)."""

    selected_indices: Tensor
    selected_scores: Tensor


class NonMaxSuppressionPadded(NamedTuple):
    """``non_max_suppression_padded``'s result: kept box indices (int32) and how many are real (int32 scalar)."""

    selected_indices: Tensor
    valid_outputs: Tensor


def _number(value: Any, default: float, arg: str, op: str) -> float:
    if value is None:  # TF.js's sanity check replaces null by the default
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{op}: argument '{arg}' must be a number, got {value!r}")
    return float(value)


@contextmanager
def _nms_inputs(
    boxes: Any,
    scores: Any,
    max_output_size: Any,
    iou_threshold: Any,
    score_threshold: Any,
    soft_nms_sigma: Any,
    op: str,
    float32_only: bool = False,
) -> Iterator[tuple[tuple[Tensor, Tensor], dict[str, Any]]]:
    """``((boxes, scores), attrs)``: the converted, checked inputs and the kernel attributes
    (TF.js's ``nonMaxSuppSanityCheck``)."""
    want = "float32" if float32_only else None
    with ExitStack() as stack:
        b = stack.enter_context(converted(boxes, "boxes", op, want))
        s = stack.enter_context(converted(scores, "scores", op, want))
        for t, arg in ((b, "boxes"), (s, "scores")):
            if float32_only and t.dtype != "float32":
                raise TypeError(f"{op}: argument '{arg}' must be a float32 tensor, got a {t.dtype} tensor")
            if t.dtype in ("string", "complex64"):
                raise TypeError(f"{op}: argument '{arg}' must be a real numeric tensor, got a {t.dtype} tensor")
        if isinstance(max_output_size, bool) or not isinstance(max_output_size, int | np.integer):
            raise TypeError(f"{op}: argument 'max_output_size' must be an int, got {max_output_size!r}")
        iou = _number(iou_threshold, 0.5, "iou_threshold", op)
        score = _number(score_threshold, -math.inf, "score_threshold", op)
        sigma = _number(soft_nms_sigma, 0.0, "soft_nms_sigma", op)
        if not 0 <= iou <= 1:
            raise ValueError(f"{op}: argument 'iou_threshold' must be in [0, 1], got {iou}")
        if b.rank != 2:
            raise ValueError(f"{op}: argument 'boxes' must be a 2-D tensor, got rank {b.rank} (shape {list(b.shape)})")
        if b.shape[1] != 4:
            raise ValueError(f"{op}: argument 'boxes' must have 4 columns, got shape {list(b.shape)}")
        if s.rank != 1:
            raise ValueError(f"{op}: argument 'scores' must be a 1-D tensor, got shape {list(s.shape)}")
        if s.shape[0] != b.shape[0]:
            raise ValueError(f"{op}: argument 'scores' must have {b.shape[0]} values (one per box), got {s.shape[0]}")
        if not 0 <= sigma <= 1:
            raise ValueError(f"{op}: argument 'soft_nms_sigma' must be in [0, 1], got {sigma}")
        attrs = {
            "max_output_size": min(int(max_output_size), b.shape[0]),
            "iou_threshold": iou,
            "score_threshold": score,
            "soft_nms_sigma": sigma,  # read by NonMaxSuppressionV5 only
        }
        yield (b, s), attrs


async def _ready(*tensors: Tensor) -> None:
    """Wait for the inputs' values without blocking (a GPU backend may still be computing them)."""
    for t in tensors:
        await t.data()


def non_max_suppression(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
) -> Tensor:
    """Indices (int32) of at most ``max_output_size`` boxes kept by greedy non-maximum suppression."""
    op = "non_max_suppression"
    with _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, None, op, True) as (inputs, at):
        return ENGINE.run_kernel(kn.NonMaxSuppressionV3, inputs, at)


async def non_max_suppression_async(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
) -> Tensor:
    """``non_max_suppression``, awaiting the inputs' values first."""
    op = "non_max_suppression_async"
    with _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, None, op) as (inputs, at):
        await _ready(*inputs)
        return ENGINE.run_kernel(kn.NonMaxSuppressionV3, inputs, at)


def non_max_suppression_with_score(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
    soft_nms_sigma: float = 0.0,
) -> NonMaxSuppressionWithScore:
    """Kept box indices and their scores; with ``soft_nms_sigma`` > 0, overlapping boxes' scores decay
    by ``exp(-0.5 * iou**2 / soft_nms_sigma)`` instead of being dropped (Soft-NMS)."""
    op = "non_max_suppression_with_score"
    args = (boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma, op)
    with _nms_inputs(*args) as (inputs, at):
        return NonMaxSuppressionWithScore(*ENGINE.run_kernel(kn.NonMaxSuppressionV5, inputs, at))


async def non_max_suppression_with_score_async(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
    soft_nms_sigma: float = 0.0,
) -> NonMaxSuppressionWithScore:
    """``non_max_suppression_with_score``, awaiting the inputs' values first."""
    op = "non_max_suppression_with_score_async"
    args = (boxes, scores, max_output_size, iou_threshold, score_threshold, soft_nms_sigma, op)
    with _nms_inputs(*args) as (inputs, at):
        await _ready(*inputs)
        return NonMaxSuppressionWithScore(*ENGINE.run_kernel(kn.NonMaxSuppressionV5, inputs, at))


def non_max_suppression_padded(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
    pad_to_max_output_size: bool = False,
) -> NonMaxSuppressionPadded:
    """Kept box indices, zero-padded to ``min(max_output_size, num_boxes)`` when
    ``pad_to_max_output_size``, and the number of real ones."""
    op = "non_max_suppression_padded"
    with _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, None, op) as (inputs, at):
        at["pad_to_max_output_size"] = bool(pad_to_max_output_size)
        return NonMaxSuppressionPadded(*ENGINE.run_kernel(kn.NonMaxSuppressionV4, inputs, at))


async def non_max_suppression_padded_async(
    boxes: TensorLike,
    scores: TensorLike,
    max_output_size: int,
    iou_threshold: float = 0.5,
    score_threshold: float = -math.inf,
    pad_to_max_output_size: bool = False,
) -> NonMaxSuppressionPadded:
    """``non_max_suppression_padded``, awaiting the inputs' values first."""
    op = "non_max_suppression_padded_async"
    with _nms_inputs(boxes, scores, max_output_size, iou_threshold, score_threshold, None, op) as (inputs, at):
        at["pad_to_max_output_size"] = bool(pad_to_max_output_size)
        await _ready(*inputs)
        return NonMaxSuppressionPadded(*ENGINE.run_kernel(kn.NonMaxSuppressionV4, inputs, at))
