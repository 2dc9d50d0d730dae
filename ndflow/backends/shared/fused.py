"""What the fused kernels (_FusedMatMul, FusedConv2D, FusedDepthwiseConv2D) of every backend share: the
activations they apply and the split of their inputs."""

from __future__ import annotations

ACTIVATIONS = ("linear", "relu", "relu6", "elu", "leakyrelu", "prelu", "sigmoid")


def split_inputs(inputs: tuple, activation: str) -> tuple[tuple, object, object]:
    """``(main inputs, bias or None, prelu weights or None)`` from a fused kernel's inputs."""
    main, rest = inputs[:2], list(inputs[2:])
    prelu = rest.pop() if activation == "prelu" and rest else None
    bias = rest[0] if rest else None
    return main, bias, prelu
