"""Random sampling kernels: Multinomial.

The samples are TF.js's cpu backend's (seedrandom's alea streams): they are drawn on the host from the
logits' values, so a seeded ``multinomial`` gives the same samples on every backend.
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ...shared.multinomial import sample_multinomial
from ..backend import TorchBackend
from .common import Output, from_numpy, out, torch_kernel, values_of


@torch_kernel(kn.Multinomial)
def multinomial(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    """``num_samples`` draws per row of ``logits`` [batch, events] (int32 event indices), as on the cpu backend."""
    (x,) = inputs
    logits = values_of(backend, x).detach().float().cpu().numpy()
    picked = sample_multinomial(logits, int(attrs["num_samples"]), str(attrs["seed"]), attrs["normalized"])
    return out(backend, from_numpy(backend, picked), "int32", picked.shape)
