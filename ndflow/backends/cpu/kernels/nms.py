"""Non-maximum suppression: NonMaxSuppressionV3 (indices), V4 (padded, with the valid count) and
V5 (with scores, soft-NMS).

Greedy selection in order of score (ties: the smaller box index first). With the JIT on
(``..numba``), hard NMS (no soft-NMS sigma) is TF.js's loop compiled (:mod:`..numba._nms_kernels`): a
heap of candidates, each compared with the boxes selected so far in one vectorised pass. The numpy
path walks the candidates in that order in blocks (64 growing to ``_BLOCK_MAX``): a block is first
checked against the boxes selected so far (one IoU matrix), then resolved within itself from a
second one (``_resolve``: a few matrix-vector rounds to a fixed point); only as many blocks as it
takes to select ``max_output_size`` boxes are looked at, so a detector's thousands of anchors cost a
few small matrices. Soft-NMS decays scores, so each selection computes the IoU of the new box with
every remaining candidate at once and follows TF.js's lazy heap exactly (see ``_refresh``); hard NMS
with a non-finite coordinate takes that path too (a NaN IoU zeroes a score rather than dropping the
box, as in TF.js).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import numpy as np

from ....core import kernel_names as kn
from .. import numba as jit
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


class _Boxes:
    """Corner-normalized boxes ``[y1, x1, y2, x2]`` (either corner order) and their areas, float64."""

    def __init__(self, boxes: np.ndarray) -> None:
        b = boxes.astype(np.float64).reshape(-1, 4)
        self.ymin, self.ymax = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
        self.xmin, self.xmax = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
        self.area = (self.ymax - self.ymin) * (self.xmax - self.xmin)

    def iou(self, i: int, others: np.ndarray) -> np.ndarray:
        """Intersection over union of box ``i`` with each box in ``others`` (0 where an area is <= 0)."""
        h = np.maximum(np.minimum(self.ymax[i], self.ymax[others]) - np.maximum(self.ymin[i], self.ymin[others]), 0.0)
        w = np.maximum(np.minimum(self.xmax[i], self.xmax[others]) - np.maximum(self.xmin[i], self.xmin[others]), 0.0)
        inter = h * w
        iou = inter / (self.area[i] + self.area[others] - inter)
        return np.where((self.area[i] <= 0) | (self.area[others] <= 0), 0.0, iou)


def _beats(value: np.ndarray, index: np.ndarray, best_value: float, best_index: int) -> np.ndarray:
    """Whether each ``(value, index)`` comes before ``(best_value, best_index)`` in TF.js's heap order."""
    return (value > best_value) | ((value == best_value) & (index < best_index))


def _refresh(ids: np.ndarray, key: np.ndarray, fresh: np.ndarray) -> None:
    """Bring stale scores up to date in the order TF.js's candidate heap pops them (in place).

    TF.js decays a candidate's score only when it reaches the top of the heap, then puts it back;
    the first candidate whose score did not change is selected. ``key`` is the score the heap
    holds, ``fresh`` the decayed one. When no decay raised a score (scores >= 0), updating every
    candidate at once selects the same box. Otherwise the stale candidates are taken best key
    first for as long as their key beats every up-to-date one (decay raises negative scores).
    """
    stale = np.flatnonzero(fresh != key)
    if stale.size == 0:
        return
    if np.all(fresh[stale] <= key[stale]):
        key[stale] = fresh[stale]
        return
    current = np.flatnonzero(fresh == key)
    if current.size:  # only stale keys above the best up-to-date one can reach the top
        top = current[np.argmax(key[current])]
        stale = stale[_beats(key[stale], ids[stale], key[top], ids[top])]
    stale = stale[np.lexsort((ids[stale], -key[stale]))]  # heap order: best score, then smaller index
    n = stale.size
    values = np.concatenate([key[stale], fresh[stale], key[top : top + 1] if current.size else []])
    owners = np.concatenate([ids[stale], ids[stale], ids[top : top + 1] if current.size else []])
    rank = np.empty(values.size, np.int64)
    rank[np.lexsort((owners, -values))] = np.arange(values.size)  # 0: the best (score, -index)
    best_up_to_date = rank[2 * n] if current.size else values.size
    before = np.minimum.accumulate(np.concatenate([[best_up_to_date], rank[n : 2 * n]]))[:-1]
    popped = np.logical_and.accumulate(rank[:n] < before)
    key[stale[popped]] = fresh[stale[popped]]


def suppress(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    score_threshold: float,
    soft_nms_sigma: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The selected box indices and their (possibly decayed) scores, in order of selection.

    A candidate is dropped when its IoU with a selected box is >= ``iou_threshold``; otherwise
    soft-NMS (``soft_nms_sigma`` > 0) multiplies its score by ``exp(-0.5 * iou**2 / sigma)`` and
    drops it once the score is <= ``score_threshold``.
    """
    if soft_nms_sigma <= 0:
        compiled = _compiled()
        if compiled is not None:
            return _hard_compiled(compiled, boxes, scores, max_output_size, iou_threshold, score_threshold)
    s = scores.astype(np.float64).reshape(-1)
    ids = np.flatnonzero(s > score_threshold)  # candidates, in index order
    flat = boxes.reshape(-1, 4)
    if soft_nms_sigma <= 0 and (np.isfinite(flat).all() or np.isfinite(flat[ids]).all()):
        selected_ids = _hard(flat, _by_score(s[ids], ids), max_output_size, iou_threshold)
        return selected_ids.astype(np.int32), s[selected_ids]
    # soft-NMS, or hard NMS with a non-finite coordinate (a NaN IoU zeroes a score instead of dropping the box)
    key = s[ids]
    fresh = key.copy()
    geometry = _Boxes(boxes)
    scale = -0.5 / soft_nms_sigma if soft_nms_sigma > 0 else 0.0
    selected: list[int] = []
    selected_scores: list[float] = []
    while len(selected) < max_output_size and ids.size:
        _refresh(ids, key, fresh)
        k = int(np.argmax(key))  # the first maximum: the smallest index among equal scores
        i = int(ids[k])
        selected.append(i)
        selected_scores.append(float(key[k]))
        ids, key, fresh = np.delete(ids, k), np.delete(key, k), np.delete(fresh, k)
        iou = geometry.iou(i, ids)
        fresh = fresh * np.where(iou <= iou_threshold, np.exp(scale * iou * iou), 0.0)
        alive = ~(iou >= iou_threshold) & (fresh > score_threshold)
        ids, key, fresh = ids[alive], key[alive], fresh[alive]
    return np.array(selected, np.int32), np.array(selected_scores, np.float64)


def _compiled() -> ModuleType | None:
    """The compiled NMS kernel's module, or None when the numpy paths must run (JIT off, numba missing or broken)."""
    if jit.kernels() is None:
        return None
    from ..numba import _nms_kernels  # noqa: PLC0415 - imports numba: only once the JIT is known to be on

    return _nms_kernels


def _hard_compiled(
    compiled: ModuleType,
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_size: int,
    iou_threshold: float,
    score_threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Hard NMS in the compiled kernel (TF.js's loop, see :mod:`..numba._nms_kernels`)."""
    b = np.ascontiguousarray(boxes).reshape(-1, 4)
    s = np.ascontiguousarray(scores).reshape(-1)
    limit = max(0, min(int(max_output_size), s.size))
    selected = np.empty(limit, np.int32)
    kept = np.empty(limit, np.float64)
    count = compiled.nms_hard(b, s, limit, float(iou_threshold), float(score_threshold), selected, kept)
    return selected[:count], kept[:count]


_HEAD = 1024  # candidates ordered first (with their ties); the rest are sorted only when NMS gets to them


def _by_score(key: np.ndarray, ids: np.ndarray) -> Iterator[np.ndarray]:
    """``ids`` best ``key`` first (ties: smaller index first), in pieces: the best ``_HEAD`` or so, then
    (only when asked for) the rest. Hard NMS rarely looks past the first piece of a detector's anchors."""
    if ids.size > 4 * _HEAD:
        top = key >= np.partition(key, ids.size - _HEAD)[ids.size - _HEAD]  # the best _HEAD, and their ties
        first = np.flatnonzero(top)
        yield ids[first[np.argsort(-key[first], kind="stable")]]
        rest = np.flatnonzero(~top)
        yield ids[rest[np.argsort(-key[rest], kind="stable")]]
    else:
        yield ids[np.argsort(-key, kind="stable")]


def _corners(boxes: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Rows ymin, xmin, ymax, xmax, area (float64) of boxes ``idx`` (``[y1, x1, y2, x2]``, either corner order)."""
    b = boxes[idx].astype(np.float64)
    c = np.empty((5, idx.size))
    np.minimum(b[:, 0], b[:, 2], out=c[0])
    np.minimum(b[:, 1], b[:, 3], out=c[1])
    np.maximum(b[:, 0], b[:, 2], out=c[2])
    np.maximum(b[:, 1], b[:, 3], out=c[3])
    c[4] = (c[2] - c[0]) * (c[3] - c[1])
    return c


def _overlaps(a: np.ndarray, b: np.ndarray, threshold: float) -> np.ndarray:
    """``IoU >= threshold`` for every pair of boxes of ``a`` (rows) and ``b`` (columns), from ``_corners``;
    the arithmetic of ``_Boxes.iou``. For ``threshold`` > 0 (the caller handles the rest): a pair with an area
    <= 0 has an IoU of 0, below it. Two scratch matrices, updated in place."""
    h = np.minimum(a[2][:, None], b[2])
    h -= np.maximum(a[0][:, None], b[0])
    np.maximum(h, 0.0, out=h)
    w = np.minimum(a[3][:, None], b[3])
    w -= np.maximum(a[1][:, None], b[1])
    np.maximum(w, 0.0, out=w)
    h *= w  # the intersection
    np.add(a[4][:, None], b[4], out=w)
    w -= h  # the union
    with np.errstate(divide="ignore", invalid="ignore"):
        h /= w
    hit = h >= threshold
    hit &= (a[4] > 0)[:, None]
    hit &= b[4] > 0
    return hit


_BLOCK_MAX = 256  # candidates resolved together: their IoU matrix (float64 scratch) stays in the L2 cache


_FIXED_POINT_STEPS = 12  # rounds of the vectorised block resolution before the one-step-per-box loop takes over


def _resolve(hit: np.ndarray, limit: int) -> np.ndarray:
    """The members of a block (best first) that greedy NMS keeps, at most ``limit``; ``hit[i, j]``: ``i``
    suppresses ``j`` if ``i`` is kept (only ``i < j`` is read).

    Member ``j`` is kept iff no kept ``i < j`` hits it. Starting from "all kept", each round recomputes every
    member from the previous round (one matrix-vector product); after ``t`` rounds the first ``t`` members
    are right, and a round that changes nothing has reached the greedy answer (the only fixed point). Chains
    of suppression are short in practice, so a few rounds do; if not, one Python step per kept member."""
    n = hit.shape[0]
    upper = np.triu(hit, 1).astype(np.float32)
    keep = np.ones(n, np.float32)
    for _ in range(_FIXED_POINT_STEPS):
        again = (keep @ upper == 0).astype(np.float32)
        if np.array_equal(again, keep):
            return np.flatnonzero(keep)[: max(0, limit)]
        keep = again
    alive = np.ones(n, bool)
    take = [0]
    j = 0
    while len(take) < limit and j + 1 < n:
        alive[j + 1 :] &= ~hit[j, j + 1 :]
        j += 1 + int(alive[j + 1 :].argmax())
        if not alive[j]:
            break
        take.append(j)
    return np.array(take[: max(0, limit)], np.int64)


def _hard(boxes: np.ndarray, pieces: Iterator[np.ndarray], max_output_size: int, iou_threshold: float) -> np.ndarray:
    """Greedy hard NMS over the candidates (best first, from ``_by_score``): the selected box indices.

    A candidate is kept when its IoU with every box kept before it is below ``iou_threshold``. Blocks
    of candidates (growing from 64 to ``_BLOCK_MAX``) are filtered by the boxes already kept, then resolved
    within themselves from one IoU matrix: each kept box removes the later block members it overlaps (one
    Python step per kept box). With ``iou_threshold`` <= 0 every IoU (>= 0) reaches it: the best box
    suppresses all others."""
    if iou_threshold <= 0:
        first = next((piece[:1] for piece in pieces if piece.size), np.empty(0, np.int64))
        return first[: max(0, max_output_size)].astype(np.int64)
    kept: list[int] = []
    kept_corners = np.empty((5, 0))
    size = 64
    for piece in pieces:
        pos = 0
        while pos < piece.size and len(kept) < max_output_size:
            block = piece[pos : pos + size]
            pos += block.size
            size = min(size * 2, _BLOCK_MAX)
            corners = _corners(boxes, block)
            if kept:
                free = ~_overlaps(kept_corners, corners, iou_threshold).any(axis=0)
                block, corners = block[free], corners[:, free]
            n = block.size
            if n == 0:
                continue
            take = _resolve(_overlaps(corners, corners, iou_threshold), max_output_size - len(kept))
            kept.extend(block[take].tolist())
            kept_corners = np.concatenate([kept_corners, corners[:, take]], axis=1)
        if len(kept) >= max_output_size:
            break
    return np.array(kept, np.int64)


def _inputs(backend: CPUBackend, inputs: tuple) -> tuple[np.ndarray, np.ndarray]:
    boxes, scores = inputs
    return values_of(backend, boxes), values_of(backend, scores)


@cpu_kernel(kn.NonMaxSuppressionV3)
def non_max_suppression_v3(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Indices (int32) of the boxes kept by greedy NMS."""
    boxes, scores = _inputs(backend, inputs)
    idx, _ = suppress(
        boxes, scores, int(attrs["max_output_size"]), float(attrs["iou_threshold"]), float(attrs["score_threshold"])
    )
    return out(backend, idx, "int32")


@cpu_kernel(kn.NonMaxSuppressionV4)
def non_max_suppression_v4(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Kept indices, zero-padded to ``max_output_size`` when asked, and how many are valid (int32 scalar)."""
    boxes, scores = _inputs(backend, inputs)
    max_out = int(attrs["max_output_size"])
    idx, _ = suppress(boxes, scores, max_out, float(attrs["iou_threshold"]), float(attrs["score_threshold"]))
    valid = idx.size
    if attrs.get("pad_to_max_output_size", False) and max_out > valid:
        idx = np.concatenate([idx, np.zeros(max_out - valid, np.int32)])
    return [out(backend, idx, "int32"), out(backend, np.array(valid, np.int32), "int32")]


@cpu_kernel(kn.NonMaxSuppressionV5)
def non_max_suppression_v5(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """Kept indices (int32) and their scores (float32), decayed by soft-NMS when ``soft_nms_sigma`` > 0."""
    boxes, scores = _inputs(backend, inputs)
    idx, kept = suppress(
        boxes,
        scores,
        int(attrs["max_output_size"]),
        float(attrs["iou_threshold"]),
        float(attrs["score_threshold"]),
        float(attrs.get("soft_nms_sigma", 0.0)),
    )
    return [out(backend, idx, "int32"), out(backend, kept, "float32")]
