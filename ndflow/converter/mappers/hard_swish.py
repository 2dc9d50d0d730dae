"""``_NdflowHardSwish(x, three, scale)``, written by ndflow's graph optimizer (converter/passes/hard_swish.py)."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.engine import ENGINE
from ...core.kernel_registry import get_kernel
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import lower_str, mapper


@mapper("_NdflowHardSwish")
def hard_swish(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The backend's one-pass kernel where it has one (and the operands fit it: float32 ``x``, one-value
    constants of lower rank), else the four ops the optimizer replaced, in the graph's order."""
    x, three, scale = inputs
    order = lower_str(node, "order", "scale_first")
    if order not in ("scale_first", "scale_last"):
        raise ValueError(f"attribute 'order' must be 'scale_first' or 'scale_last', got {order!r}")
    fits = (
        isinstance(x, Tensor)
        and x.dtype == "float32"
        and three.size == 1
        and scale.size == 1
        and max(three.rank, scale.rank) <= x.rank
    )
    if fits and get_kernel("_NdflowHardSwish", ENGINE.backend_name or "") is not None:
        return ENGINE.run_kernel("_NdflowHardSwish", (x, three, scale), {"order": order})
    t = nf.relu6(nf.add(x, three))
    return nf.mul(nf.mul(x, scale), t) if order == "scale_first" else nf.mul(nf.mul(x, t), scale)
