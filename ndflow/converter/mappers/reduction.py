"""Reduction ops (TF.js converter category ``reduction``): sums, extrema, arg-extrema, scans, bincounts."""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import axes, mapper, num

_REDUCE = {
    "Sum": nf.sum,
    "Max": nf.max,
    "Min": nf.min,
    "Mean": nf.mean,
    "Prod": nf.prod,
    "All": nf.all,
    "Any": nf.any,
}


@mapper(*_REDUCE)
def reduce(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Reduce over the axes given by the second input (``[]`` reduces nothing), with ``keep_dims``."""
    x, axis = inputs
    return _REDUCE[node.op](x, axes(axis), bool(node.bool("keep_dims", False)))


@mapper("ArgMax", "ArgMin")
def arg_extremum(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Index of the largest (smallest) value along ``dimension`` (int32)."""
    x, dim = inputs
    return (nf.arg_max if node.op == "ArgMax" else nf.arg_min)(x, int(num(dim)))


@mapper("Cumsum", "Cumprod")
def cumulative(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Running sum (product) along ``axis``, optionally ``exclusive`` and/or ``reverse``."""
    x, axis = inputs
    fn = nf.cumsum if node.op == "Cumsum" else nf.cumprod
    return fn(x, int(num(axis)), bool(node.bool("exclusive", False)), bool(node.bool("reverse", False)))


@mapper("Bincount")
def bincount(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Counts (or summed ``weights``) of each value of ``arr`` in ``[0, size)``: inputs
    ``(arr, size, weights)``."""
    x, size, weights = inputs
    return nf.bincount(x, weights, int(num(size)))


@mapper("DenseBincount")
def dense_bincount(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Bincount of a 1-D or 2-D (per row) input, optionally ``binary_output``."""
    x, size, weights = inputs
    return nf.dense_bincount(x, weights, int(num(size)), bool(node.bool("binary_output", False)))
