"""Two deeplearn.js 0.x math methods that are not plain ops: ``math.copy2D`` and ``math.elementWiseMulBroadcast``.

``copy2D`` is the one 0.x op that writes into an existing array: it copies a ``sourceSize`` window of ``source``
(row by row) into a ``destSize`` window of ``dest`` of the same area. ndflow's tensors are immutable, so ``dest``
is given new data holding the copy (the engine's ``assign`` path, as a variable's), and every reference to
``dest`` sees the new values; other arrays that shared its old data keep theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ops
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .math import OPS, NDArrayMath, _math_method


def _rank2(x: object, op: str, which: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"Error in {op}: {which} argument must be an Array2D, got {type(x).__name__}")
    if x.rank != 2:
        raise ValueError(f"Error in {op}: {which} argument must be rank 2, but got rank {x.rank}.")
    return x


def _pair(value: Sequence[int], op: str, name: str) -> tuple[int, int]:
    if not isinstance(value, Sequence) or len(value) != 2 or not all(isinstance(v, int) and v >= 0 for v in value):
        raise ValueError(f"Error in {op}: {name} must be [row, column] of two integers >= 0, got {value!r}")
    return int(value[0]), int(value[1])


def copy2D(  # noqa: N802 - deeplearn.js's name
    source: Tensor,
    sourceBegin: Sequence[int],  # noqa: N803
    sourceSize: Sequence[int],  # noqa: N803
    dest: Tensor,
    destBegin: Sequence[int],  # noqa: N803
    destSize: Sequence[int],  # noqa: N803
) -> None:
    """Copy the ``sourceSize`` window of ``source`` at ``sourceBegin`` into the ``destSize`` window of ``dest`` at
    ``destBegin``, element by element in row-major order (the two windows need the same area, not shape)."""
    op = "copy2D"
    source, dest = _rank2(source, op, "source"), _rank2(dest, op, "dest")
    (sr, sc), (sh, sw) = _pair(sourceBegin, op, "sourceBegin"), _pair(sourceSize, op, "sourceSize")
    (dr, dc), (dh, dw) = _pair(destBegin, op, "destBegin"), _pair(destSize, op, "destSize")
    if sr + sh > source.shape[0] or sc + sw > source.shape[1]:
        raise ValueError(
            f"Error in copy2D: requested source start position {[sr, sc]} and source size {[sh, sw]} would "
            f"overflow source NDArray of shape {list(source.shape)}."
        )
    if dr + dh > dest.shape[0] or dc + dw > dest.shape[1]:
        raise ValueError(
            f"Error in copy2D: requested dest start position {[dr, dc]} and source size {[dh, dw]} would overflow "
            f"dest NDArray of shape {list(dest.shape)}."
        )
    if sh * sw != dh * dw:
        raise ValueError(
            f"copy2D shapes have different areas:\n  sourceSize [{sh}, {sw}], area {sh * sw}\n"
            f"  destSize [{dh}, {dw}], area {dh * dw}"
        )
    window = source.data_sync().reshape(source.shape)[sr : sr + sh, sc : sc + sw]
    values = dest.numpy()
    values[dr : dr + dh, dc : dc + dw] = window.reshape(dh, dw).astype(values.dtype)
    replacement = ops.tensor(values, list(dest.shape), dest.dtype)
    ENGINE.assign_variable(dest, replacement)  # type: ignore[arg-type]  # any tensor's data can be swapped
    replacement.dispose()


def elementWiseMulBroadcast(a: Tensor, b: Tensor) -> Tensor:  # noqa: N802 - deeplearn.js's name
    """``a * b`` for two rank-2 arrays, with broadcasting."""
    op = "elementWiseMulBroadcast"
    return ops.mul(_rank2(a, op, "first"), _rank2(b, op, "second"))


for _name, _fn in (("copy2D", copy2D), ("elementWiseMulBroadcast", elementWiseMulBroadcast)):
    OPS[_name] = _fn
    setattr(NDArrayMath, _name, _math_method(_name, _fn))
