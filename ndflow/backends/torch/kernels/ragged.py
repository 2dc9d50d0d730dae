"""Ragged tensors: RaggedGather, RaggedRange, RaggedTensorToTensor run on the host (cpu kernels).

Their output shapes depend on the values of the row partitions, which are checked element by
element; TF.js's GPU backends run the same CPU implementations. The outputs are torch tensors.
"""

from __future__ import annotations

from .common import host_kernel

for _name in ("RaggedGather", "RaggedRange", "RaggedTensorToTensor"):
    host_kernel(_name, "value-dependent shapes and checks (TF.js's GPU backends also run it on the CPU)")
