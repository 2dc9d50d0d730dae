"""The cpu kernels that dominate the control-flow models (handtrack's NonMaxSuppression over 12804
anchors, rvm's ResizeBilinear up-sampling) against straightforward references.

Hard NMS is checked against TF.js's algorithm written plainly (candidates popped best first, ties by
the smaller index, each compared with the boxes selected so far); bilinear resizing against the
per-pixel formula of TF.js's cpu kernel in float64, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from box_util import iou

import ndflow as nf
from ndflow.backends.cpu.kernels import nms


def _reference_nms(boxes: np.ndarray, scores: np.ndarray, max_out: int, iou_thr: float, score_thr: float) -> list:
    b, s = boxes.astype(np.float64), scores.astype(np.float64)
    order = sorted((i for i in range(s.size) if s[i] > score_thr), key=lambda i: (-s[i], i))
    selected: list[int] = []
    for c in order:
        if len(selected) >= max_out:
            break
        if all(iou(b, c, j) < iou_thr for j in reversed(selected)):
            selected.append(c)
    return selected


def _boxes(rng: np.random.Generator, n: int, size: float) -> np.ndarray:
    corner = rng.random((n, 2))
    return np.concatenate([corner, corner + rng.random((n, 2)) * size], axis=1).astype(np.float32)


@pytest.mark.parametrize("seed", range(12))
def test_hard_nms_matches_the_greedy_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    boxes = _boxes(rng, n, float(rng.choice([0.05, 0.3, 1.0])))
    if seed % 3 == 0:
        boxes = boxes[:, [2, 3, 0, 1]]  # the other corner order
    if seed % 4 == 0 and n:
        boxes[rng.integers(0, n, n // 5)] = 0.25  # empty boxes: IoU 0
    scores = (rng.choice([0.1, 0.5, 0.9], n) if seed % 2 else rng.random(n)).astype(np.float32)  # ties
    max_out = int(rng.integers(0, 120))
    iou_thr = float(rng.choice([0.0, 0.3, 0.5, 1.0]))
    score_thr = float(rng.choice([-np.inf, 0.3]))
    got, got_scores = nms.suppress(boxes, scores, max_out, iou_thr, score_thr)
    want = _reference_nms(boxes, scores, max_out, iou_thr, score_thr)
    assert got.tolist() == want
    np.testing.assert_array_equal(got_scores, scores.astype(np.float64)[want])


@pytest.mark.parametrize("head", [8, 1024])
def test_hard_nms_on_many_anchors_reaches_past_the_first_candidates(head, monkeypatch):
    """More candidates than ``4 * _HEAD``: the best ones are ordered first (ties at the cut included),
    the rest only when NMS gets to them (here: heavy overlap, so it does)."""
    monkeypatch.setattr(nms, "_HEAD", head)
    rng = np.random.default_rng(7)
    n = 5000
    boxes = _boxes(rng, n, 0.6)
    scores = (rng.integers(0, 40, n) / 40).astype(np.float32)  # many ties everywhere
    got, _ = nms.suppress(boxes, scores, 60, 0.2, 0.05)
    assert got.tolist() == _reference_nms(boxes, scores, 60, 0.2, 0.05)


def test_nms_op_on_the_cpu_backend():
    rng = np.random.default_rng(3)
    boxes, scores = _boxes(rng, 400, 0.3), rng.random(400).astype(np.float32)
    previous = nf.get_backend()
    nf.set_backend("cpu")
    try:
        b, s = nf.tensor(boxes), nf.tensor(scores)
        result = nf.image.non_max_suppression_with_score(b, s, 50, 0.4, 0.1)
        want = _reference_nms(boxes, scores, 50, 0.4, 0.1)
        assert result.selected_indices.numpy().tolist() == want
        np.testing.assert_allclose(result.selected_scores.numpy(), scores[want])
        nf.dispose([b, s, result.selected_indices, result.selected_scores])
    finally:
        nf.set_backend(previous)


def _reference_resize(x: np.ndarray, size: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    """TF.js's cpu ResizeBilinear per pixel, vectorized: float64 arithmetic, float32 result."""
    _, height, width, _ = x.shape

    def axis(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ratio = (n_in - 1) / (n_out - 1) if align and n_out > 1 else n_in / n_out
        i = np.arange(n_out, dtype=np.float64)
        src = ratio * (i + 0.5) - 0.5 if half else ratio * i
        lo = np.maximum(0.0, np.floor(src))
        return lo.astype(int), np.minimum(n_in - 1, np.ceil(src)).astype(int), src - lo

    r0, r1, rf = axis(height, size[0])
    c0, c1, cf = axis(width, size[1])
    v = x.astype(np.float64)
    cf, rf = cf[None, None, :, None], rf[None, :, None, None]
    tl, tr, bl, br = v[:, r0][:, :, c0], v[:, r0][:, :, c1], v[:, r1][:, :, c0], v[:, r1][:, :, c1]
    top, bottom = tl + (tr - tl) * cf, bl + (br - bl) * cf
    return (top + (bottom - top) * rf).astype(np.float32)


@pytest.mark.parametrize(
    "shape, size",
    [
        ((1, 94, 94, 32), (188, 188)),  # rvm's largest up-sampling: several row blocks
        ((1, 224, 224, 3), (187, 187)),
        ((1, 300, 40, 2), (3, 5)),  # strong down-sampling: only the rows read
        ((70, 6, 6, 3), (9, 4)),  # many small images in one block
        ((2, 5, 7, 3), (1, 1)),
        ((1, 1, 1, 2), (4, 4)),
        ((3, 17, 9, 5), (6, 31)),
    ],
)
@pytest.mark.parametrize("align, half", [(False, False), (True, False), (False, True)])
def test_resize_bilinear_is_the_per_pixel_formula(shape, size, align, half):
    x = (np.random.default_rng(1).standard_normal(shape) * 10).astype(np.float32)
    previous = nf.get_backend()
    nf.set_backend("cpu")
    try:
        t = nf.tensor(x)
        got = nf.image.resize_bilinear(t, list(size), align, half)
        assert got.dtype == "float32"
        np.testing.assert_array_equal(got.numpy(), _reference_resize(x, size, align, half))
        nf.dispose([t, got])
    finally:
        nf.set_backend(previous)
