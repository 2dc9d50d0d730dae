"""Creation ops (TF.js converter category ``creation``): fills, ranges, one-hot and random tensors.

Random ops draw TF.js's seeded streams with the seed TF.js's converter passes: the node's ``seed`` attribute
(``seed2`` is ignored, as TF.js does), so a graph model gives TF.js's values. As in TF.js, ``RandomUniform``
is never seeded; a missing ``seed`` is 0 for ``RandomUniformInt`` and ``RandomStandardNormal`` (0 is a real
seed for the uniform ops, "unseeded" for the normal ones) and absent for the others.
"""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import attr_num, ints, mapper, num


def _seed(node: Node, default: int | None = None) -> int | None:
    """The ``seed`` attribute as TF.js's converter reads it (``default`` when the node has none)."""
    value = attr_num(node, "seed", default)  # type: ignore[arg-type]
    return None if value is None else int(value)


@mapper("Fill")
def fill(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """A tensor of shape ``dims`` filled with the scalar ``value``."""
    dims, value = inputs
    return nf.fill(ints(dims), num(value), node.dtype("T", value.dtype))


@mapper("Zeros", "Ones")
def zeros_ones(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Zeros or ones of the shape given by the input."""
    make = nf.zeros if node.op == "Zeros" else nf.ones
    return make(ints(inputs[0]), node.dtype("T", "float32"))


@mapper("ZerosLike", "OnesLike")
def zeros_ones_like(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Zeros or ones of the input's shape and dtype."""
    return (nf.zeros_like if node.op == "ZerosLike" else nf.ones_like)(inputs[0])


@mapper("LinSpace")
def linspace(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    start, stop, n = inputs
    return nf.linspace(num(start), num(stop), int(num(n)))


@mapper("Range")
def range_(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``[start, start + delta, ...)`` up to ``limit``, of dtype ``Tidx``."""
    start, limit, delta = inputs
    return nf.range(num(start), num(limit), num(delta), node.dtype("Tidx", start.dtype))


@mapper("OneHot")
def one_hot(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """One-hot vectors of ``depth`` along ``axis`` (default last; TF.js ignores ``axis``)."""
    indices, depth, on, off = inputs
    y = nf.one_hot(indices, int(num(depth)), num(on), num(off), node.dtype("T", "float32"))
    axis = int(attr_num(node, "axis", -1))
    if axis < 0 or axis == y.rank - 1:
        return y
    return nf.transpose(y, [*range(axis), y.rank - 1, *range(axis, y.rank - 1)])


@mapper("RandomStandardNormal")
def random_standard_normal(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Normal(0, 1) values of the given shape."""
    return nf.random_standard_normal(ints(inputs[0]), node.dtype("dtype", "float32"), _seed(node, 0))


@mapper("TruncatedNormal")
def truncated_normal(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Normal values within two standard deviations (``means``/``stddev`` attributes as TF.js)."""
    mean, std = attr_num(node, "means", 0), attr_num(node, "stddev", 1)
    return nf.truncated_normal(ints(inputs[0]), mean, std, node.dtype("dtype", "float32"), _seed(node))


@mapper("RandomUniform")
def random_uniform(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Uniform values in ``[minval, maxval)`` (attributes as TF.js; TF's op draws in ``[0, 1)``)."""
    lo, hi = attr_num(node, "minval", 0), attr_num(node, "maxval", 1)
    return nf.random_uniform(ints(inputs[0]), lo, hi, node.dtype("dtype", "float32"))  # TF.js: never seeded


@mapper("RandomUniformInt")
def random_uniform_int(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Integers in ``[minval, maxval)``: bounds from inputs 1 and 2 as in TF (TF.js reads attributes)."""
    if len(inputs) >= 3:
        lo, hi = int(num(inputs[1])), int(num(inputs[2]))
    else:
        lo, hi = int(attr_num(node, "minval", 0)), int(attr_num(node, "maxval", 0))
    return nf.random_uniform_int(ints(inputs[0]), lo, hi, _seed(node, 0))


@mapper("Multinomial")
def multinomial(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """``num_samples`` class indices per row of ``logits`` (int32)."""
    logits, n = inputs
    return nf.multinomial(logits, int(num(n)), _seed(node))
