"""Non-maximum suppression: NonMaxSuppressionV3, V4, V5 run on the host (cpu kernels).

Greedy selection is sequential (one step per selected box, each depending on the last); TF.js's
GPU backends read the boxes back and run the CPU implementation too. The outputs are torch tensors.
"""

from __future__ import annotations

from .common import host_kernel

for _name in ("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5"):
    host_kernel(_name, "sequential greedy selection (TF.js's GPU backends also run it on the CPU)")
