"""``_NdflowAbsPrelu(x, c)``, written by ndflow's graph optimizer (converter/passes/abs_prelu.py)."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.broadcast_util import broadcasts_to
from ...core.engine import ENGINE
from ...core.kernel_registry import get_kernel
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import mapper


@mapper("_NdflowAbsPrelu")
def abs_prelu(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``x + (x - |x|) * c``: the backend's one-pass kernel where it has one (and the operands fit it: float32,
    ``c`` broadcast to ``x``'s shape), else the four ops the optimizer replaced."""
    x, c = inputs
    fits = isinstance(x, Tensor) and x.dtype == "float32" and c.dtype == "float32" and broadcasts_to(c.shape, x.shape)
    if fits and get_kernel("_NdflowAbsPrelu", ENGINE.backend_name or "") is not None:
        return ENGINE.run_kernel("_NdflowAbsPrelu", (x, c), {})
    return nf.add(x, nf.mul(nf.sub(x, nf.abs(x)), c))
