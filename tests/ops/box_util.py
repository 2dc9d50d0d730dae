"""Boxes in TF.js's layout ``[y1, x1, y2, x2]`` (corners in either order), for reference implementations."""

from __future__ import annotations

import numpy as np


def iou(b: np.ndarray, i: int, j: int) -> float:
    """Intersection over union of boxes ``i`` and ``j`` of ``b``; 0 when either has no area (as TF.js)."""
    ymin_i, ymax_i = min(b[i, 0], b[i, 2]), max(b[i, 0], b[i, 2])
    xmin_i, xmax_i = min(b[i, 1], b[i, 3]), max(b[i, 1], b[i, 3])
    ymin_j, ymax_j = min(b[j, 0], b[j, 2]), max(b[j, 0], b[j, 2])
    xmin_j, xmax_j = min(b[j, 1], b[j, 3]), max(b[j, 1], b[j, 3])
    area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i)
    area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j)
    if area_i <= 0 or area_j <= 0:
        return 0.0
    h = max(min(ymax_i, ymax_j) - max(ymin_i, ymin_j), 0.0)
    w = max(min(xmax_i, xmax_j) - max(xmin_i, xmin_j), 0.0)
    return h * w / (area_i + area_j - h * w)
