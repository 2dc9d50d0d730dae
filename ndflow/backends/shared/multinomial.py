"""TF.js's multinomial sampling (tfjs-backend-cpu's ``multinomial``), value for value, shared by the backends.

The probabilities are the rows themselves (``normalized``) or their softmax computed as TF.js's cpu kernels
do (max, float32 subtract, ``Math.exp`` rounded to float32, a float64 running sum rounded to float32, float32
divide). Each row's cumulative sums are float32; every row draws from a new ``seedrandom.alea(seed)`` of the
same seed string, and a draw ``r`` picks the first event whose cumulative probability exceeds it (the last
event when none does).
"""

from __future__ import annotations

import numpy as np

from ...core.alea import Alea

__all__ = ["sample_multinomial"]


def _softmax(logits: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = (logits - logits.max(axis=-1, keepdims=True)).astype(np.float32)
        e = np.exp(shifted.astype(np.float64)).astype(np.float32)
        total = np.cumsum(e, axis=-1, dtype=np.float64)[:, -1:].astype(np.float32)  # JS's left-to-right sum
        return e / total


def _draws(seed: str, count: int) -> np.ndarray:
    gen = Alea(seed)
    return np.array([gen.random() for _ in range(count)], np.float64)


def sample_multinomial(logits: np.ndarray, num_samples: int, seed: str, normalized: bool) -> np.ndarray:
    """``num_samples`` int32 event indices per row of the float32 ``logits`` [batch, events]."""
    logits = logits.astype(np.float32)
    probs = logits if normalized else _softmax(logits)
    batch, events = probs.shape
    result = np.full((batch, num_samples), events - 1, np.int32)
    if events < 2 or num_samples == 0:
        return result
    cdf = np.cumsum(probs[:, :-1], axis=1, dtype=np.float32)  # float32 running sums; the last event is implicit
    draws = _draws(seed, num_samples)  # the same stream for every row
    for b in range(batch):
        # the first cumulative probability above r: the count of those <= r, unless a NaN breaks the order
        row = cdf[b].astype(np.float64)
        if np.all(np.diff(row) >= 0):
            picked = np.searchsorted(row, draws, side="right")
        else:
            hit = draws[:, None] < row[None, :]
            picked = np.where(hit.any(axis=1), hit.argmax(axis=1), events - 1)
        result[b] = picked
    return result
