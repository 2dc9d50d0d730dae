"""Random sampling kernels: Multinomial.

(TF.js builds ``random_normal``, ``random_uniform``, ``random_gamma``... in the op itself, not in a
kernel; ndflow's ops do the same, see ``ndflow/ops/random.py``.)
"""

from __future__ import annotations

from ....core import kernel_names as kn
from ...shared.multinomial import sample_multinomial
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel(kn.Multinomial)
def multinomial(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    """``num_samples`` draws per row of ``logits`` [batch, events] (int32 event indices), TF.js's cpu values.

    ``seed`` is the seed string the op made (TF.js's ``seed.toString()``); ``normalized``: the rows are
    probabilities already (else their softmax is taken).
    """
    (x,) = inputs
    num_samples, seed = int(attrs["num_samples"]), str(attrs["seed"])
    picked = sample_multinomial(values_of(backend, x), num_samples, seed, attrs["normalized"])
    return out(backend, picked, "int32")
