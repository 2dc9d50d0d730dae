"""Random sampling kernels: Multinomial.

(TF.js builds ``random_normal``, ``random_uniform``, ``random_gamma``... in the op itself, not in a
kernel; ndflow's ops do the same, see ``ndflow/ops/random.py``.)
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of

_CHUNK = 1 << 24  # booleans compared at once (bounds the memory of one comparison)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


@cpu_kernel(kn.Multinomial)
def multinomial(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """``num_samples`` draws per row of ``logits`` [batch, events] (int32 event indices).

    Like TF.js: a draw ``r`` in [0, 1) picks the first event whose cumulative probability exceeds
    ``r``, and the last event when none does. ``normalized``: the rows are probabilities already.
    """
    (x,) = inputs
    num_samples, seed = int(attrs["num_samples"]), int(attrs["seed"])
    logits = values_of(backend, x).astype(np.float32)
    probs = logits if attrs["normalized"] else _softmax(logits)
    batch, events = probs.shape
    cdf = np.cumsum(probs[:, :-1], axis=1, dtype=np.float32)  # the last event is implicit
    draws = np.random.default_rng(seed).random((batch, num_samples))
    result = np.zeros((batch, num_samples), np.int32)
    if events < 2:  # a single event: every draw picks it
        return out(backend, result, "int32")
    step = max(1, _CHUNK // max(1, batch * (events - 1)))
    for s in range(0, num_samples, step):  # chunks of samples, to bound memory
        hit = draws[:, s : s + step, None] < cdf[:, None, :]
        result[:, s : s + step] = np.where(hit.any(axis=2), hit.argmax(axis=2), events - 1)
    return out(backend, result, "int32")
