"""The cpu backend's hard non-maximum suppression, compiled (``ndflow.backends.cpu.numba._nms_kernels``) and numpy
(blocks resolved by a fixed point), against TF.js's greedy loop transcribed literally.

Every case runs ``suppress`` with the flag ``CPU_JIT`` off and on and compares indices and scores exactly: random
boxes in either corner order, tie-heavy scores (three levels, duplicated boxes), degenerate boxes (zero width,
points), a detector's dense anchors, negative scores and non-finite coordinates (a NaN IoU zeroes a score in
TF.js's loop instead of dropping the box), with thresholds at their ends (IoU 0 and 1, score -inf).
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from jit_util import needs_numba

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.kernels import nms

# ----------------------------------------------------------------------------- the reference


def _js_min(a: float, b: float) -> float:
    return math.nan if a != a or b != b else min(a, b)


def _js_max(a: float, b: float) -> float:
    return math.nan if a != a or b != b else max(a, b)


def _iou(boxes: list, i: int, j: int) -> float:
    """TF.js's intersection over union of boxes ``i`` and ``j`` (``Math.min``/``Math.max``: NaN wins)."""
    a, b = boxes[i], boxes[j]
    ay0, ax0, ay1, ax1 = _js_min(a[0], a[2]), _js_min(a[1], a[3]), _js_max(a[0], a[2]), _js_max(a[1], a[3])
    by0, bx0, by1, bx1 = _js_min(b[0], b[2]), _js_min(b[1], b[3]), _js_max(b[0], b[2]), _js_max(b[1], b[3])
    area_a = (ay1 - ay0) * (ax1 - ax0)
    area_b = (by1 - by0) * (bx1 - bx0)
    if area_a <= 0 or area_b <= 0:
        return 0.0
    inter = _js_max(_js_min(ay1, by1) - _js_max(ay0, by0), 0.0) * _js_max(_js_min(ax1, bx1) - _js_max(ax0, bx0), 0.0)
    with np.errstate(all="ignore"):
        return float(np.float64(inter) / np.float64(area_a + area_b - inter))


def reference_hard_nms(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_thr: float, score_thr: float):
    """TF.js's loop with soft-NMS sigma 0, one candidate at a time: a list sorted ascending (score, then larger
    index first), popped from the end; a candidate compared with the boxes selected since its last visit, most
    recent first; weight 1 below the IoU threshold, 0 above it (only a NaN IoU gets there without being dropped)."""
    b = boxes.astype(np.float64).tolist()
    cands = [[float(s), i, 0] for i, s in enumerate(scores.astype(np.float64).tolist()) if s > score_thr]
    cands.sort(key=lambda c: (c[0], -c[1]))
    selected: list[int] = []
    kept: list[float] = []
    while len(selected) < max_out and cands:
        cand = cands.pop()
        original, i, begin = cand
        ignore = False
        for j in range(len(selected) - 1, begin - 1, -1):
            o = _iou(b, i, selected[j])
            if o >= iou_thr:
                ignore = True
                break
            cand[0] = cand[0] * (1.0 if o <= iou_thr else 0.0)
            if cand[0] <= score_thr:
                break
        cand[2] = len(selected)
        if not ignore:
            if cand[0] == original:
                selected.append(i)
                kept.append(cand[0])
            elif cand[0] > score_thr:
                cands.append(cand)
                cands.sort(key=lambda c: (c[0], -c[1]))
    return selected, kept


# ----------------------------------------------------------------------------- cases


def _random_boxes(rng: np.random.Generator, n: int, lo: float = 0.02, hi: float = 0.4) -> np.ndarray:
    centers = rng.uniform(0, 1, (n, 2))
    sizes = rng.uniform(lo, hi, (n, 2))
    boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], 1).astype(np.float32)
    flip = rng.random(n) < 0.3  # some boxes given by the other diagonal
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes


def _anchors(rng: np.random.Generator, grid: int, per_cell: int) -> np.ndarray:
    """A detector's dense anchors: ``per_cell`` sizes on a ``grid`` x ``grid`` lattice, jittered."""
    c = (np.arange(grid) + 0.5) / grid
    cy, cx = np.meshgrid(c, c, indexing="ij")
    out = []
    for k in range(per_cell):
        s = (k + 1) * 1.5 / grid
        jitter = rng.normal(0, 0.1 / grid, (grid, grid, 4))
        out.append(np.stack([cy - s, cx - s, cy + s, cx + s], -1) + jitter)
    return np.concatenate(out).reshape(-1, 4).astype(np.float32)


def _case(name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "random":
        n = int(rng.integers(1, 120))
        return _random_boxes(rng, n), rng.uniform(0, 1, n).astype(np.float32)
    if name == "ties":
        n = int(rng.integers(2, 120))
        boxes = _random_boxes(rng, n)
        dup = rng.integers(0, n, n // 3)
        boxes[rng.integers(0, n, n // 3)] = boxes[dup]  # identical boxes
        return boxes, rng.choice(np.float32([0.2, 0.5, 0.9]), n)
    if name == "degenerate":
        n = int(rng.integers(2, 80))
        boxes = _random_boxes(rng, n)
        low = rng.random(n) < 0.2
        boxes[low, 2] = boxes[low, 0]  # zero height
        flat = rng.random(n) < 0.2
        boxes[flat, 3] = boxes[flat, 1]  # zero width
        point = rng.random(n) < 0.1
        boxes[point] = boxes[point][:, [0, 1, 0, 1]]  # a point
        return boxes, np.round(rng.uniform(-1, 1, n), 1).astype(np.float32)
    if name == "anchors":
        boxes = _anchors(rng, 12, 3)
        return boxes, rng.uniform(0.05, 0.15, boxes.shape[0]).astype(np.float32)
    if name == "nonfinite":
        n = int(rng.integers(4, 60))
        boxes = _random_boxes(rng, n)
        where = rng.random((n, 4)) < 0.06
        boxes[where] = rng.choice(np.float32([np.nan, np.inf, -np.inf]), int(where.sum()))
        return boxes, np.round(rng.uniform(-0.5, 1, n), 1).astype(np.float32)
    raise ValueError(name)


PARAMS = [  # (max_out, iou threshold, score threshold); max_out None: every box
    (None, 0.5, -math.inf),
    (None, 0.3, 0.0),
    (7, 0.7, 0.25),
    (1, 0.5, -math.inf),
    (0, 0.5, -math.inf),
    (None, 0.0, -math.inf),
    (None, 1.0, -0.5),
]


def _suppress(boxes, scores, max_out, iou_thr, score_thr, on: bool):
    nf.env().set("CPU_JIT", on)
    try:
        assert (jit.kernels() is not None) == on, jit.status()
        with np.errstate(all="ignore"):  # as the kernel wrapper runs it (NaN and inf coordinates warn)
            return nms.suppress(boxes, scores, max_out, iou_thr, score_thr)
    finally:
        nf.env().reset()


def _check(boxes, scores, max_out, iou_thr, score_thr, flags=(False, True)):
    want_idx, want_scores = reference_hard_nms(boxes, scores, max_out, iou_thr, score_thr)
    for on in flags:
        idx, kept = _suppress(boxes, scores, max_out, iou_thr, score_thr, on)
        assert idx.dtype == np.int32
        assert idx.tolist() == want_idx, f"CPU_JIT={on}"
        assert kept.tolist() == want_scores, f"CPU_JIT={on}"


@pytest.mark.parametrize("name", ["random", "ties", "degenerate", "anchors", "nonfinite"])
@pytest.mark.parametrize("seed", range(4))
def test_hard_nms_matches_the_tfjs_loop(name, seed):
    boxes, scores = _case(name, seed)
    flags = (False, True) if jit.numba_available() else (False,)
    for max_out, iou_thr, score_thr in PARAMS:
        _check(boxes, scores, boxes.shape[0] if max_out is None else max_out, iou_thr, score_thr, flags)


def test_hard_nms_on_many_anchors_and_long_suppression_chains():
    """Thousands of candidates (the numpy path's blocks grow to their largest), and a chain of boxes each
    overlapping the next only (the fixed point needs many rounds and hands over to the per-box loop)."""
    flags = (False, True) if jit.numba_available() else (False,)
    rng = np.random.default_rng(7)
    boxes = _anchors(rng, 24, 3)
    scores = rng.uniform(0, 1, boxes.shape[0]).astype(np.float32)
    _check(boxes, scores, 300, 0.4, 0.05, flags)
    n = 400
    y = np.arange(n, dtype=np.float32) * 0.6
    chain = np.stack([y, np.zeros(n, np.float32), y + 1, np.ones(n, np.float32)], 1)
    _check(chain, np.linspace(1, 0.5, n).astype(np.float32), n, 0.2, -math.inf, flags)


def test_hard_nms_empty_and_single_inputs():
    flags = (False, True) if jit.numba_available() else (False,)
    _check(np.zeros((0, 4), np.float32), np.zeros(0, np.float32), 0, 0.5, -math.inf, flags)
    _check(np.float32([[0, 0, 1, 1]]), np.float32([0.3]), 1, 0.5, 0.5, flags)  # below the score threshold
    _check(np.float32([[0, 0, 1, 1]]), np.float32([0.7]), 1, 0.5, 0.5, flags)


@needs_numba
def test_compiled_kernel_takes_int_and_float64_boxes():
    rng = np.random.default_rng(3)
    boxes = (_random_boxes(rng, 50) * 100).round()
    scores = rng.uniform(0, 1, 50).astype(np.float32)
    want = reference_hard_nms(boxes, scores, 50, 0.4, -math.inf)
    for dtype in (np.int32, np.float64):
        idx, kept = _suppress(boxes.astype(dtype), scores, 50, 0.4, -math.inf, True)
        assert (idx.tolist(), kept.tolist()) == want


@needs_numba
def test_the_flag_picks_the_path(monkeypatch):
    boxes, scores = _case("random", 1)
    numpy_result = _suppress(boxes, scores, 10, 0.5, -math.inf, False)

    def numpy_path(*args):
        raise AssertionError("the numpy path ran with the JIT on")

    monkeypatch.setattr(nms, "_hard", numpy_path)
    compiled_result = _suppress(boxes, scores, 10, 0.5, -math.inf, True)
    assert compiled_result[0].tolist() == numpy_result[0].tolist()


@pytest.mark.parametrize("on", [False, True])
def test_nms_ops_through_the_cpu_kernels(on):
    """V3, V4 (padded) and V5 (sigma 0) on the cpu backend give the reference's indices with either path."""
    if on and not jit.numba_available():
        pytest.skip("numba is not installed")
    boxes, scores = _case("ties", 5)
    n = boxes.shape[0]
    want_idx, want_scores = reference_hard_nms(boxes, scores, 6, 0.45, 0.1)
    previous = nf.get_backend()
    nf.set_backend("cpu")
    nf.env().set("CPU_JIT", on)
    try:
        tb, ts = nf.tensor(boxes), nf.tensor(scores)
        v3 = nf.image.non_max_suppression(tb, ts, 6, 0.45, 0.1)
        v4 = asyncio.run(nf.image.non_max_suppression_padded_async(tb, ts, n + 3, 0.45, 0.1, True))
        v5 = nf.image.non_max_suppression_with_score(tb, ts, 6, 0.45, 0.1, 0.0)
        assert v3.numpy().tolist() == want_idx
        all_idx, _ = reference_hard_nms(boxes, scores, n + 3, 0.45, 0.1)
        padded = v4.selected_indices.numpy().tolist()
        assert int(v4.valid_outputs.numpy()) == len(all_idx)
        assert padded == all_idx + [0] * (len(padded) - len(all_idx))
        assert v5.selected_indices.numpy().tolist() == want_idx
        np.testing.assert_array_equal(v5.selected_scores.numpy(), np.float32(want_scores))
        nf.dispose([tb, ts, v3, v4, v5])
    finally:
        nf.env().reset()
        nf.set_backend(previous)
