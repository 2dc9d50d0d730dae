"""numba kernel of hard non-maximum suppression (imported by :mod:`..kernels.nms` once :func:`..numba.kernels` says
the JIT is on; nothing else imports it).

It follows TF.js's greedy loop step for step: candidates (score above the threshold) come off a heap best score
first, ties to the smaller box index; each is compared with the boxes selected since it was last looked at, most
recent first; an IoU >= the threshold drops it, and a weight (1 below the threshold, 0 for a NaN IoU) multiplies
its score; a candidate whose score did not change is selected, one whose score changed goes back on the heap while
it stays above the score threshold. IoU runs in float64 with JavaScript's ``Math.min``/``Math.max`` (NaN wins).

With finite coordinates on both sides no IoU is NaN, so no score changes and the comparison with the selected
boxes reduces to "any IoU >= threshold": a first loop with no exit, no NaN handling and no division (it
vectorises) finds whether any pair can reach the threshold, and the exact IoUs run only if one can. The
sequential loop runs only for a candidate or a selected box with a non-finite coordinate.
"""

from __future__ import annotations

import numpy as np
from numba import njit

U = np.uint64


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _before(score_a, id_a, score_b, id_b):  # pragma: no cover - compiled
    """Whether candidate a leaves the heap before candidate b: a higher score, or the same and a smaller index."""
    return score_a > score_b or (score_a == score_b and id_a < id_b)


@njit(cache=True, nogil=True, error_model="numpy")
def _sift_down(key, ids, pos, size):  # pragma: no cover - compiled
    s, i = key[pos], ids[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _before(key[child + 1], ids[child + 1], key[child], ids[child]):
            child += 1
        if not _before(key[child], ids[child], s, i):
            break
        key[pos], ids[pos] = key[child], ids[child]
        pos = child
    key[pos], ids[pos] = s, i


@njit(cache=True, nogil=True, error_model="numpy")
def _sift_up(key, ids, pos):  # pragma: no cover - compiled
    s, i = key[pos], ids[pos]
    while pos > 0:
        parent = (pos - 1) // 2
        if not _before(s, i, key[parent], ids[parent]):
            break
        key[pos], ids[pos] = key[parent], ids[parent]
        pos = parent
    key[pos], ids[pos] = s, i


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _js_min(a, b):  # pragma: no cover - compiled
    if a != a or b != b:
        return np.nan
    return a if a < b else b


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _js_max(a, b):  # pragma: no cover - compiled
    if a != a or b != b:
        return np.nan
    return a if a > b else b


@njit(cache=True, nogil=True, error_model="numpy")
def _corners(boxes, i, into, k):  # pragma: no cover - compiled
    """Row ``k`` of ``into`` (ymin, xmin, ymax, xmax, area): box ``i``, in float64; whether it is all finite."""
    y1, x1 = np.float64(boxes[i, 0]), np.float64(boxes[i, 1])
    y2, x2 = np.float64(boxes[i, 2]), np.float64(boxes[i, 3])
    into[k, 0] = _js_min(y1, y2)
    into[k, 1] = _js_min(x1, x2)
    into[k, 2] = _js_max(y1, y2)
    into[k, 3] = _js_max(x1, x2)
    into[k, 4] = (into[k, 2] - into[k, 0]) * (into[k, 3] - into[k, 1])
    return np.isfinite(y1) and np.isfinite(x1) and np.isfinite(y2) and np.isfinite(x2)


@njit(cache=True, nogil=True, error_model="numpy")
def _iou(c, sel, j):  # pragma: no cover - compiled
    """TF.js's IoU of corners ``c`` (5 values) and row ``j`` of ``sel``, NaN-propagating."""
    if c[4] <= 0 or sel[j, 4] <= 0:
        return 0.0
    h = _js_max(_js_min(c[2], sel[j, 2]) - _js_max(c[0], sel[j, 0]), 0.0)
    w = _js_max(_js_min(c[3], sel[j, 3]) - _js_max(c[1], sel[j, 1]), 0.0)
    inter = h * w
    return inter / (c[4] + sel[j, 4] - inter)


@njit(cache=True, nogil=True, error_model="numpy")
def _any_overlap(c, ys0, xs0, ys1, xs1, areas, begin, end, threshold):  # pragma: no cover - compiled
    """Whether any finite selected box ``begin:end`` has an IoU >= ``threshold`` with the finite corners ``c``.

    A first pass without divisions flags the pairs with ``inter >= threshold * (1 - 1e-9) * union``: every pair
    whose rounded IoU reaches the threshold (the margin exceeds the roundings), and rarely others. The exact IoU
    (TF.js's arithmetic) runs from the first flagged pair on, up to the first hit."""
    cy0, cx0, cy1, cx1, ca = c[0], c[1], c[2], c[3], c[4]
    loose = threshold * (1.0 - 1e-9)
    stop = U(end)
    first = stop  # the first flagged pair
    for j in range(U(begin), stop):  # unsigned: no wrap-around test, so LLVM vectorises the loop (6x faster)
        h = min(cy1, ys1[j]) - max(cy0, ys0[j])
        w = min(cx1, xs1[j]) - max(cx0, xs0[j])
        inter = max(h, 0.0) * max(w, 0.0)
        first = min(first, j if inter >= loose * (ca + areas[j] - inter) else stop)
    for j in range(first, stop):
        sa = areas[j]
        if ca <= 0 or sa <= 0:
            iou = 0.0
        else:
            h = min(cy1, ys1[j]) - max(cy0, ys0[j])
            w = min(cx1, xs1[j]) - max(cx0, xs0[j])
            inter = max(h, 0.0) * max(w, 0.0)
            iou = inter / (ca + sa - inter)
        if iou >= threshold:
            return True
    return False


@njit(cache=True, nogil=True, error_model="numpy")
def nms_hard(
    boxes, scores, max_output_size, iou_threshold, score_threshold, selected, selected_scores
):  # pragma: no cover
    """Greedy hard NMS of ``boxes`` ``(n, 4)`` by ``scores`` ``(n,)``; the selected indices and their scores go to
    ``selected`` (int32) and ``selected_scores`` (float64), in order of selection. Returns how many."""
    n = scores.size
    key = np.empty(n)
    ids = np.empty(n, np.int64)
    size = 0
    for i in range(n):
        s = np.float64(scores[i])
        if s > score_threshold:
            key[size] = s
            ids[size] = i
            size += 1
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(key, ids, pos, size)
    limit = min(max_output_size, size)
    sel = np.empty((max(limit, 1), 5))  # corners of the selected boxes (rows), for the sequential loop
    cols = np.empty((5, max(limit, 1)))  # the same, by column, for the vectorised one
    non_finite = np.zeros(max(limit, 1) + 1, np.int64)  # non_finite[k]: selected boxes 0..k-1 with one
    begin_of = np.zeros(n, np.int64)  # where each candidate's comparisons resume (TF.js's suppressBeginIndex)
    cand = np.empty((1, 5))
    c = cand[0]
    count = 0
    while count < limit and size > 0:
        original, i = key[0], ids[0]
        size -= 1
        key[0], ids[0] = key[size], ids[size]
        _sift_down(key, ids, 0, size)
        finite = _corners(boxes, i, cand, 0)
        begin = begin_of[i]
        ignore = False
        score = original
        if finite and non_finite[count] == non_finite[begin]:
            ignore = _any_overlap(c, cols[0], cols[1], cols[2], cols[3], cols[4], begin, count, iou_threshold)
        else:
            for j in range(count - 1, begin - 1, -1):
                iou = _iou(c, sel, j)
                if iou >= iou_threshold:
                    ignore = True
                    break
                score = score * (1.0 if iou <= iou_threshold else 0.0)
                if score <= score_threshold:
                    break
        begin_of[i] = count
        if ignore:
            continue
        if score == original:
            selected[count] = i
            selected_scores[count] = score
            for t in range(5):
                sel[count, t] = c[t]
                cols[t, count] = c[t]
            non_finite[count + 1] = non_finite[count] + (0 if finite else 1)
            count += 1
        elif score > score_threshold:
            key[size], ids[size] = score, i
            size += 1
            _sift_up(key, ids, size - 1)
    return count
