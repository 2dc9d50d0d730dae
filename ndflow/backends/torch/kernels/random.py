"""Random sampling kernels: Multinomial.

The draws come from numpy's generator with the op's seed, as on the cpu backend, so that a seeded
``multinomial`` gives the same samples on every backend.
"""

from __future__ import annotations

import numpy as np
import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from .common import Output, from_numpy, out, torch_kernel, values_of


@torch_kernel(kn.Multinomial)
def multinomial(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """``num_samples`` draws per row of ``logits`` [batch, events] (int32 event indices).

    Like TF.js: a draw ``r`` in [0, 1) picks the first event whose cumulative probability exceeds
    ``r``, and the last event when none does. ``normalized``: the rows are probabilities already.
    """
    (x,) = inputs
    num_samples, seed = int(attrs["num_samples"]), int(attrs["seed"])
    logits = values_of(backend, x).to(torch.float32)
    probs = logits if attrs["normalized"] else torch.softmax(logits, dim=-1)
    batch, events = probs.shape
    shape = (batch, num_samples)
    if events < 2:  # a single event: every draw picks it
        return out(backend, torch.zeros(shape, dtype=torch.int32, device=backend.device), "int32", shape)
    cdf = torch.cumsum(probs[:, :-1], dim=1)  # the last event is implicit
    draws = from_numpy(backend, np.random.default_rng(seed).random(shape)).to(torch.float32)
    # the number of cumulative probabilities <= r is the index of the first one above r
    picked = torch.searchsorted(cdf.contiguous(), draws, right=True)
    return out(backend, picked, "int32", shape)
